//===- SystolicDevice.cpp - the simulator as libignrt's systolic driver ---===//
//
// Per launch of a device kernel: parse its descriptor (written by
// SystolicCompiler.cpp), build the GEMM operands in the layout the program
// expects, quantize them for an int8 machine (symmetric, one scale per
// tensor; the dequantization scale sa * sb goes into the program's
// CONFIG_ST, as a driver sets a register), run the program on the
// simulator once per batch item, and scatter the results into the output.
//
//===----------------------------------------------------------------------===//

#include "SystolicDevice.h"
#include "GemmMapping.h"
#include "JsonFields.h"
#include "Simulator.h"
#include "Text.h"
#include "ign/Runtime/ignrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ign::systolic {

namespace {

/// An operand: a launch argument, or floats stored after the program.
struct Source {
  int64_t arg = -1, offset = -1, count = 0;
  bool valid() const { return arg >= 0 || offset >= 0; }
};

struct Descriptor {
  bool weightLhs = false;
  int64_t batch = 1, M = 0, K = 0, N = 0;
  Source x, w, bias, residual;
  int64_t programBytes = 0;
  bool transW = false, relu = false;
  bool im2col = false;
  int64_t icArg = -1;
  ConvGeometry conv;
  GemmShape gemm;
  int64_t runs = 1;
  uint64_t a = 0, b = 0, c = 0, d = 0, dramBytes = 0;
  bool hasD = false, dBroadcast = false, implicitIm2col = false;
  int64_t configSt = -1;
  ArrayConfig machine;
};

/// Reads the descriptor's fields into \p d; false when one is missing or
/// has the wrong type.
bool readFields(const nlohmann::json &o, Descriptor &d) {
  using namespace jsonfields;
  bool ok = true;
  auto i64 = [&](const json *obj, const char *key, int64_t &out) {
    auto x = asInt(member(obj, key));
    if (x)
      out = *x;
    else
      ok = false;
  };
  auto u64 = [&](const json *obj, const char *key, uint64_t &out) {
    int64_t x = 0;
    i64(obj, key, x);
    if (x < 0)
      ok = false;
    out = uint64_t(x);
  };
  auto source = [&](const char *key, Source &out) {
    const json *v = member(&o, key);
    if (!v) {
      ok = false;
      return;
    }
    if (v->is_null())
      return;
    if (v->is_object() && member(v, "arg"))
      i64(v, "arg", out.arg);
    else if (v->is_object()) {
      i64(v, "const", out.offset);
      i64(v, "count", out.count);
    } else
      ok = false;
  };
  auto boolean = [&](const json *obj, const char *key, bool &out) {
    auto x = asBool(member(obj, key));
    if (x)
      out = *x;
    else
      ok = false;
  };
  for (auto [key, field] :
       {std::pair<const char *, int64_t *>{"batch", &d.batch},
        {"M", &d.M},
        {"K", &d.K},
        {"N", &d.N}})
    i64(&o, key, *field);
  source("x", d.x);
  source("w", d.w);
  source("bias", d.bias);
  source("residual", d.residual);
  i64(&o, "program_bytes", d.programBytes);
  boolean(&o, "implicit_im2col", d.implicitIm2col);
  boolean(&o, "trans_w", d.transW);
  boolean(&o, "relu", d.relu);
  i64(&o, "config_st", d.configSt);
  const json *g = member(&o, "gemm");
  for (auto [key, field] : {std::pair<const char *, int64_t *>{"M", &d.gemm.M},
                            {"K", &d.gemm.K},
                            {"N", &d.gemm.N},
                            {"runs", &d.runs}})
    i64(g, key, *field);
  const json *l = member(&o, "layout");
  for (auto [key, field] : {std::pair<const char *, uint64_t *>{"a", &d.a},
                            {"b", &d.b},
                            {"c", &d.c},
                            {"d", &d.d},
                            {"dram_bytes", &d.dramBytes}})
    u64(l, key, *field);
  boolean(l, "has_d", d.hasD);
  boolean(l, "d_broadcast", d.dBroadcast);
  const json *ic = member(&o, "im2col");
  if (ic && ic->is_object()) {
    d.im2col = true;
    for (auto [key, field] :
         {std::pair<const char *, int64_t *>{"arg", &d.icArg},
          {"C", &d.conv.C},
          {"H", &d.conv.H},
          {"W", &d.conv.W},
          {"kh", &d.conv.kh},
          {"kw", &d.conv.kw},
          {"sh", &d.conv.sh},
          {"sw", &d.conv.sw},
          {"ph", &d.conv.ph},
          {"pw", &d.conv.pw},
          {"dh", &d.conv.dh},
          {"dw", &d.conv.dw},
          {"oh", &d.conv.OH},
          {"ow", &d.conv.OW}})
      i64(ic, key, *field);
  }
  return ok;
}

Status parseDescriptor(const char *text, Descriptor &d) {
  using namespace jsonfields;
  auto bad = [](const std::string &why) {
    return fail("bad systolic kernel descriptor: " + why);
  };
  json o;
  try {
    o = json::parse(text);
  } catch (const json::exception &e) {
    return bad(e.what());
  }
  if (!o.is_object())
    return bad("not an object");
  const std::string *form = asString(member(&o, "form"));
  if (!form || (*form != "weight_lhs" && *form != "weight_rhs"))
    return bad("unknown form");
  d.weightLhs = *form == "weight_lhs";
  if (!readFields(o, d))
    return bad("a field is missing or has the wrong type");
  const json *m = member(&o, "machine");
  if (!m)
    return bad("no machine");
  Result<ArrayConfig> cfg = configFromJSON(*m);
  if (!cfg)
    return cfg.status();
  d.machine = *cfg;
  if (d.batch < 1 || d.M < 1 || d.K < 1 || d.N < 1 || d.runs < 1 ||
      d.gemm.M < 1 || d.gemm.K < 1 || d.gemm.N < 1)
    return bad("empty shapes");
  int64_t expectM = d.weightLhs ? d.N : d.M, expectN = d.weightLhs ? d.M : d.N;
  if (d.gemm.M != expectM || d.gemm.K != d.K || d.gemm.N != expectN ||
      d.runs != (d.weightLhs ? d.batch : 1))
    return bad("the GEMM does not match the product");
  return Status();
}

/// Symmetric per-tensor int8 scale: max |x| / 127 (1 for an all-zero x).
float int8Scale(const std::vector<float> &x) {
  float m = 0;
  for (float v : x)
    m = std::max(m, std::fabs(v));
  return m > 0 ? m / 127.0f : 1.0f;
}

/// A launch's operands: the GEMM's inputs as floats and the output.
struct Operands {
  const float *X = nullptr, *Wt = nullptr, *bias = nullptr, *res = nullptr;
  float *out = nullptr;
};

/// Finds the operands in the launch's arguments and the constants after
/// the program, checking their dtypes and sizes.
Status gatherOperands(const ignrt_device_call &call, const Descriptor &d,
                      Operands &ops) {
  size_t nargs = call.num_args;
  if (call.results != 1 || nargs < 2)
    return fail("a systolic kernel has inputs and one output");
  // Constants start after the program, at a multiple of 64 bytes.
  uint64_t constBase = (uint64_t(d.programBytes) + 63) / 64 * 64;
  if (d.programBytes <= 0 || constBase > call.blob_bytes)
    return fail("the device blob is shorter than its program");
  auto argFloats = [&](const Source &src, int64_t count,
                       const float *&out) -> Status {
    if (src.offset >= 0) {
      if (src.count != count ||
          constBase + uint64_t(src.offset + count) * 4 > call.blob_bytes)
        return fail(strFormat("a constant operand is not %lld floats inside "
                              "the device blob",
                              (long long)count));
      out = reinterpret_cast<const float *>(
                static_cast<const char *>(call.blob) + constBase) +
            src.offset;
      return Status();
    }
    int64_t index = src.arg;
    if (index < 0 || size_t(index) >= nargs - 1)
      return fail(strFormat("argument %lld does not exist", (long long)index));
    const ignrt_tensor_info &info = call.args[index];
    if (info.dtype != IGNRT_F32 || info.bytes != size_t(count) * 4)
      return fail(strFormat("argument %lld is not %lld f32 values",
                            (long long)index, (long long)count));
    out = static_cast<const float *>(call.data[index]);
    return Status();
  };
  const ignrt_tensor_info &outInfo = call.args[nargs - 1];
  if (outInfo.dtype != IGNRT_F32 ||
      outInfo.bytes != size_t(d.batch * d.M * d.N) * 4)
    return fail("the output is not the product's f32 tensor");
  ops.out = static_cast<float *>(call.data[nargs - 1]);

  const ConvGeometry &cg = d.conv;
  if (d.im2col) {
    if (cg.C * cg.kh * cg.kw != d.K || cg.OH * cg.OW != d.N || cg.C < 1 ||
        cg.H < 1 || cg.W < 1 || cg.kw < 1 || cg.kh < 1 || cg.OW < 1)
      return fail("im2col does not match the product");
    Source image;
    image.arg = d.icArg;
    if (Status s = argFloats(image, d.batch * cg.C * cg.H * cg.W, ops.X);
        !s.ok())
      return s;
  } else {
    // weight_lhs: X[B, K, P]; weight_rhs: X[..., M, K] (M counts the rows).
    int64_t count = d.weightLhs ? d.batch * d.K * d.N : d.M * d.K;
    if (Status s = argFloats(d.x, count, ops.X); !s.ok())
      return s;
  }
  if (Status s = argFloats(d.w, d.weightLhs ? d.M * d.K : d.K * d.N, ops.Wt);
      !s.ok())
    return s;
  int64_t channels = d.weightLhs ? d.M : d.N;
  if (d.bias.valid())
    if (Status s = argFloats(d.bias, channels, ops.bias); !s.ok())
      return s;
  if (d.residual.valid())
    if (Status s = argFloats(d.residual, d.batch * d.M * d.N, ops.res); !s.ok())
      return s;
  return Status();
}

/// The launch's program, checked against its descriptor.
Result<Program> launchProgram(const ignrt_device_call &call,
                              const Descriptor &d) {
  auto program = Program::deserialize(static_cast<const uint8_t *>(call.blob),
                                      size_t(d.programBytes));
  if (!program)
    return program.status();
  if (program->dramBytes != d.dramBytes || d.configSt < 0 ||
      size_t(d.configSt) >= program->instrs.size() ||
      program->instrs[d.configSt].op != Opcode::ConfigSt)
    return fail("the program does not match its descriptor");
  return program;
}

/// B (K x N of the GEMM): the weight, transposed where needed.
std::vector<float> weightMatrix(const Descriptor &d, const float *Wt) {
  const GemmShape &g = d.gemm;
  std::vector<float> B(g.K * g.N);
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t n = 0; n < g.N; ++n)
      B[k * g.N + n] = d.weightLhs ? Wt[n * d.K + k] // W[M,K]^T
                       : d.transW  ? Wt[n * d.K + k] // W[N,K]^T
                                   : Wt[k * g.N + n];
  return B;
}

/// A (M x K of the GEMM) of batch item \p run, or the image the program's
/// MVIN_IM2COLs read.
void inputMatrix(const Descriptor &d, const float *X, int64_t run,
                 std::vector<float> &A) {
  const GemmShape &g = d.gemm;
  const ConvGeometry &cg = d.conv;
  const int64_t image = cg.C * cg.H * cg.W;
  if (d.implicitIm2col) {
    const float *in = X + run * image;
    A.assign(in, in + image);
  } else if (d.im2col) {
    cg.rows(X + run * image, A.data());
  } else if (d.weightLhs) {
    const float *xb = X + run * d.K * d.N; // X_b [K, P]
    for (int64_t p = 0; p < g.M; ++p)
      for (int64_t k = 0; k < g.K; ++k)
        A[p * g.K + k] = xb[k * d.N + p];
  } else {
    std::copy(X, X + g.M * g.K, A.begin());
  }
}

/// D of batch item \p run: bias (broadcast row) and/or residual (full).
void addendMatrix(const Descriptor &d, const Operands &ops, int64_t run,
                  std::vector<float> &D) {
  const GemmShape &g = d.gemm;
  D.assign((d.dBroadcast ? 1 : g.M) * g.N, 0.0f);
  for (int64_t i = 0; i < (d.dBroadcast ? 1 : g.M); ++i)
    for (int64_t j = 0; j < g.N; ++j) {
      float v = ops.bias ? ops.bias[j] : 0.0f;
      if (ops.res)
        v += d.weightLhs ? ops.res[(run * d.M + j) * d.N + i] // R_b[M,P]^T
                         : ops.res[i * g.N + j];
      D[i * g.N + j] = v;
    }
}

/// Writes A, B and D into \p dram in the machine's element type (int8
/// quantized for an int8 machine); returns the scale of C.
float stageOperands(const Descriptor &d, const ArrayConfig &mc,
                    std::vector<uint8_t> &dram, const std::vector<float> &A,
                    const std::vector<float> &B, const std::vector<float> &D) {
  dram.assign(d.dramBytes, 0);
  auto put = [&](uint64_t base, const std::vector<float> &v, float s) {
    for (size_t i = 0; i < v.size(); ++i) {
      uint8_t *p = dram.data() + base;
      switch (mc.inType) {
      case ElemType::I8:
        p[i] = uint8_t(
            int8_t(std::clamp(std::nearbyint(v[i] / s), -127.0f, 127.0f)));
        break;
      case ElemType::F16: {
        uint16_t h = floatToHalfBits(v[i]);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      default:
        std::memcpy(p + 4 * i, &v[i], 4);
        break;
      }
    }
  };
  if (mc.inType != ElemType::I8) {
    put(d.a, A, 1.0f);
    put(d.b, B, 1.0f);
    for (size_t i = 0; i < D.size(); ++i)
      std::memcpy(dram.data() + d.d + 4 * i, &D[i], 4);
    return 1.0f;
  }
  float sa = int8Scale(A), sb = int8Scale(B);
  put(d.a, A, sa);
  put(d.b, B, sb);
  float scale = sa * sb;
  for (size_t i = 0; i < D.size(); ++i) {
    int32_t q = int32_t(std::clamp(double(std::nearbyint(D[i] / scale)),
                                   -2147483647.0, 2147483647.0));
    std::memcpy(dram.data() + d.d + 4 * i, &q, 4);
  }
  return scale;
}

/// C (M x N of the GEMM, f32) of batch item \p run into the output.
void scatterResult(const Descriptor &d, const float *C, int64_t run,
                   float *out) {
  const GemmShape &g = d.gemm;
  if (d.weightLhs) {
    float *ob = out + run * d.M * d.N; // [M filters, P pixels]
    for (int64_t pix = 0; pix < g.M; ++pix)
      for (int64_t f = 0; f < g.N; ++f)
        ob[f * d.N + pix] = C[pix * g.N + f];
  } else {
    std::memcpy(out, C, size_t(g.M * g.N) * 4);
  }
}

Status runLaunch(const ignrt_device_call &call, ignrt_device_stats &stats) {
  Descriptor d;
  if (Status s = parseDescriptor(call.descriptor, d); !s.ok())
    return s;
  Operands ops;
  if (Status s = gatherOperands(call, d, ops); !s.ok())
    return s;
  Result<Program> program = launchProgram(call, d);
  if (!program)
    return program.status();
  if (d.implicitIm2col && !d.im2col)
    return fail("implicit im2col without its geometry");

  const GemmShape g = d.gemm;
  const ArrayConfig &mc = d.machine;
  std::vector<float> B = weightMatrix(d, ops.Wt);
  Machine machine(mc);
  int64_t cycles = 0, span = 0, macs = 0;
  std::vector<float> A(g.M * g.K), D;
  for (int64_t run = 0; run < d.runs; ++run) {
    inputMatrix(d, ops.X, run, A);
    if (d.hasD)
      addendMatrix(d, ops, run, D);
    std::vector<uint8_t> &dram = machine.dram();
    Program p = *program;
    p.instrs[d.configSt].scale = stageOperands(d, mc, dram, A, B, D);
    auto rep = machine.simulate(p);
    if (!rep)
      return rep.status();
    cycles += rep->totalCycles;
    span += rep->computeSpan;
    macs += rep->macs;
    scatterResult(d, reinterpret_cast<const float *>(dram.data() + d.c), run,
                  ops.out);
  }
  stats.cycles = cycles;
  stats.device_ns = double(cycles) * 1000.0 / mc.clockMHz;
  stats.utilization =
      span ? double(macs) / (double(mc.rows * mc.cols) * double(span)) : 0;
  return Status();
}

int systolicDriver(void *, const ignrt_device_call *call,
                   ignrt_device_stats *stats, char *error, size_t errorSize) {
  Status s;
  try {
    s = runLaunch(*call, *stats);
  } catch (const std::exception &e) { // e.g. std::bad_alloc
    s = fail(std::string("the systolic driver failed: ") + e.what());
  }
  if (!s.ok()) {
    std::snprintf(error, errorSize, "%s", s.message().c_str());
    return 1;
  }
  return 0;
}

} // namespace

void registerSystolicDevice() {
  ignrt_register_device("systolic", systolicDriver, nullptr);
}

} // namespace ign::systolic
