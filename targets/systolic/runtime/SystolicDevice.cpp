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
#include "Simulator.h"
#include "ign/Runtime/ignrt.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace llvm;

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

Error parseDescriptor(const char *text, Descriptor &d) {
  auto bad = [](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "bad systolic kernel descriptor: " + why);
  };
  Expected<json::Value> v = json::parse(text);
  if (!v)
    return bad(toString(v.takeError()));
  const json::Object *o = v->getAsObject();
  if (!o)
    return bad("not an object");
  bool ok = true;
  auto i64 = [&](const json::Object *obj, StringRef key, int64_t &out) {
    auto x = obj ? obj->getInteger(key) : std::nullopt;
    if (x)
      out = *x;
    else
      ok = false;
  };
  auto u64 = [&](const json::Object *obj, StringRef key, uint64_t &out) {
    int64_t x = 0;
    i64(obj, key, x);
    if (x < 0)
      ok = false;
    out = uint64_t(x);
  };
  auto source = [&](StringRef key, Source &out) {
    const json::Value *v = o->get(key);
    if (!v) {
      ok = false;
      return;
    }
    if (v->getAsNull())
      return;
    const json::Object *s = v->getAsObject();
    if (s && s->get("arg"))
      i64(s, "arg", out.arg);
    else if (s) {
      i64(s, "const", out.offset);
      i64(s, "count", out.count);
    } else
      ok = false;
  };
  auto boolean = [&](const json::Object *obj, StringRef key, bool &out) {
    auto x = obj ? obj->getBoolean(key) : std::nullopt;
    if (x)
      out = *x;
    else
      ok = false;
  };
  auto form = o->getString("form");
  if (!form || (*form != "weight_lhs" && *form != "weight_rhs"))
    return bad("unknown form");
  d.weightLhs = *form == "weight_lhs";
  i64(o, "batch", d.batch);
  i64(o, "M", d.M);
  i64(o, "K", d.K);
  i64(o, "N", d.N);
  source("x", d.x);
  source("w", d.w);
  source("bias", d.bias);
  source("residual", d.residual);
  i64(o, "program_bytes", d.programBytes);
  boolean(o, "implicit_im2col", d.implicitIm2col);
  boolean(o, "trans_w", d.transW);
  boolean(o, "relu", d.relu);
  i64(o, "config_st", d.configSt);
  const json::Object *g = o->getObject("gemm");
  i64(g, "M", d.gemm.M);
  i64(g, "K", d.gemm.K);
  i64(g, "N", d.gemm.N);
  i64(g, "runs", d.runs);
  const json::Object *l = o->getObject("layout");
  u64(l, "a", d.a);
  u64(l, "b", d.b);
  u64(l, "c", d.c);
  u64(l, "d", d.d);
  u64(l, "dram_bytes", d.dramBytes);
  boolean(l, "has_d", d.hasD);
  boolean(l, "d_broadcast", d.dBroadcast);
  if (const json::Object *ic = o->getObject("im2col")) {
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
  if (!ok)
    return bad("a field is missing or has the wrong type");
  const json::Value *m = o->get("machine");
  if (!m)
    return bad("no machine");
  Expected<ArrayConfig> cfg = configFromJSON(*m);
  if (!cfg)
    return cfg.takeError();
  d.machine = *cfg;
  if (d.batch < 1 || d.M < 1 || d.K < 1 || d.N < 1 || d.runs < 1 ||
      d.gemm.M < 1 || d.gemm.K < 1 || d.gemm.N < 1)
    return bad("empty shapes");
  int64_t expectM = d.weightLhs ? d.N : d.M, expectN = d.weightLhs ? d.M : d.N;
  if (d.gemm.M != expectM || d.gemm.K != d.K || d.gemm.N != expectN ||
      d.runs != (d.weightLhs ? d.batch : 1))
    return bad("the GEMM does not match the product");
  return Error::success();
}

/// Symmetric per-tensor int8 scale: max |x| / 127 (1 for an all-zero x).
float int8Scale(const std::vector<float> &x) {
  float m = 0;
  for (float v : x)
    m = std::max(m, std::fabs(v));
  return m > 0 ? m / 127.0f : 1.0f;
}

Error runLaunch(const ignrt_device_call &call, ignrt_device_stats &stats) {
  Descriptor d;
  if (Error e = parseDescriptor(call.descriptor, d))
    return e;
  auto bad = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(), why);
  };
  size_t nargs = call.num_args;
  if (call.results != 1 || nargs < 2)
    return bad("a systolic kernel has inputs and one output");
  // Constants start after the program, at a multiple of 64 bytes.
  uint64_t constBase = (uint64_t(d.programBytes) + 63) / 64 * 64;
  if (d.programBytes <= 0 || constBase > call.blob_bytes)
    return bad("the device blob is shorter than its program");
  auto argFloats = [&](const Source &src, int64_t count,
                       const float *&out) -> Error {
    if (src.offset >= 0) {
      if (src.count != count ||
          constBase + uint64_t(src.offset + count) * 4 > call.blob_bytes)
        return bad(formatv("a constant operand is not {0} floats inside the "
                           "device blob",
                           count));
      out = reinterpret_cast<const float *>(
                static_cast<const char *>(call.blob) + constBase) +
            src.offset;
      return Error::success();
    }
    int64_t index = src.arg;
    if (index < 0 || size_t(index) >= nargs - 1)
      return bad(formatv("argument {0} does not exist", index));
    const ignrt_tensor_info &info = call.args[index];
    if (info.dtype != IGNRT_F32 || info.bytes != size_t(count) * 4)
      return bad(formatv("argument {0} is not {1} f32 values", index, count));
    out = static_cast<const float *>(call.data[index]);
    return Error::success();
  };
  const ignrt_tensor_info &outInfo = call.args[nargs - 1];
  if (outInfo.dtype != IGNRT_F32 ||
      outInfo.bytes != size_t(d.batch * d.M * d.N) * 4)
    return bad("the output is not the product's f32 tensor");
  float *out = static_cast<float *>(call.data[nargs - 1]);

  const float *X = nullptr, *Wt = nullptr, *bias = nullptr, *res = nullptr;
  const ConvGeometry &cg = d.conv;
  const int64_t image = cg.C * cg.H * cg.W;
  if (d.im2col) {
    if (cg.C * cg.kh * cg.kw != d.K || cg.OH * cg.OW != d.N || cg.C < 1 ||
        cg.H < 1 || cg.W < 1 || cg.kw < 1 || cg.kh < 1 || cg.OW < 1)
      return bad("im2col does not match the product");
    if (Error e = argFloats(Source{d.icArg}, d.batch * image, X))
      return e;
  } else {
    // weight_lhs: X[B, K, P]; weight_rhs: X[..., M, K] (M counts the rows).
    int64_t count = d.weightLhs ? d.batch * d.K * d.N : d.M * d.K;
    if (Error e = argFloats(d.x, count, X))
      return e;
  }
  if (Error e = argFloats(d.w, d.weightLhs ? d.M * d.K : d.K * d.N, Wt))
    return e;
  int64_t channels = d.weightLhs ? d.M : d.N;
  if (d.bias.valid())
    if (Error e = argFloats(d.bias, channels, bias))
      return e;
  if (d.residual.valid())
    if (Error e = argFloats(d.residual, d.batch * d.M * d.N, res))
      return e;

  const GemmShape g = d.gemm;
  const ArrayConfig &mc = d.machine;
  auto program = Program::deserialize(ArrayRef<uint8_t>(
      static_cast<const uint8_t *>(call.blob), size_t(d.programBytes)));
  if (!program)
    return program.takeError();
  if (program->dramBytes != d.dramBytes || d.configSt < 0 ||
      size_t(d.configSt) >= program->instrs.size() ||
      program->instrs[d.configSt].op != Opcode::ConfigSt)
    return bad("the program does not match its descriptor");

  // B (K x N of the GEMM): the weight, transposed where needed.
  std::vector<float> B(g.K * g.N);
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t n = 0; n < g.N; ++n)
      B[k * g.N + n] = d.weightLhs ? Wt[n * d.K + k] // W[M,K]^T
                       : d.transW  ? Wt[n * d.K + k] // W[N,K]^T
                                   : Wt[k * g.N + n];
  Machine machine(mc);
  int64_t cycles = 0, span = 0, macs = 0;
  std::vector<float> A(g.M * g.K), D;
  for (int64_t run = 0; run < d.runs; ++run) {
    // A (M x K of the GEMM), or the image the program's MVIN_IM2COLs read.
    if (d.implicitIm2col) {
      if (!d.im2col)
        return bad("implicit im2col without its geometry");
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
    // D: bias (broadcast row) and/or residual (full).
    if (d.hasD) {
      D.assign((d.dBroadcast ? 1 : g.M) * g.N, 0.0f);
      for (int64_t i = 0; i < (d.dBroadcast ? 1 : g.M); ++i)
        for (int64_t j = 0; j < g.N; ++j) {
          float v = bias ? bias[j] : 0.0f;
          if (res)
            v += d.weightLhs ? res[(run * d.M + j) * d.N + i] // R_b[M,P]^T
                             : res[i * g.N + j];
          D[i * g.N + j] = v;
        }
    }
    std::vector<uint8_t> &dram = machine.dram();
    dram.assign(d.dramBytes, 0);
    float scale = 1.0f;
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
    if (mc.inType == ElemType::I8) {
      float sa = int8Scale(A), sb = int8Scale(B);
      put(d.a, A, sa);
      put(d.b, B, sb);
      scale = sa * sb;
      for (size_t i = 0; i < D.size(); ++i) {
        int32_t q = int32_t(std::clamp(double(std::nearbyint(D[i] / scale)),
                                       -2147483647.0, 2147483647.0));
        std::memcpy(dram.data() + d.d + 4 * i, &q, 4);
      }
    } else {
      put(d.a, A, 1.0f);
      put(d.b, B, 1.0f);
      for (size_t i = 0; i < D.size(); ++i)
        std::memcpy(dram.data() + d.d + 4 * i, &D[i], 4);
    }
    Program p = *program;
    p.instrs[d.configSt].scale = scale;
    auto rep = machine.simulate(p);
    if (!rep)
      return rep.takeError();
    cycles += rep->totalCycles;
    span += rep->computeSpan;
    macs += rep->macs;
    // C (M x N of the GEMM, f32) into the output.
    const float *C = reinterpret_cast<const float *>(dram.data() + d.c);
    if (d.weightLhs) {
      float *ob = out + run * d.M * d.N; // [M filters, P pixels]
      for (int64_t pix = 0; pix < g.M; ++pix)
        for (int64_t f = 0; f < g.N; ++f)
          ob[f * d.N + pix] = C[pix * g.N + f];
    } else {
      std::memcpy(out, C, size_t(g.M * g.N) * 4);
    }
  }
  stats.cycles = cycles;
  stats.device_ns = double(cycles) * 1000.0 / mc.clockMHz;
  stats.utilization =
      span ? double(macs) / (double(mc.rows * mc.cols) * double(span)) : 0;
  return Error::success();
}

int systolicDriver(void *, const ignrt_device_call *call,
                   ignrt_device_stats *stats, char *error, size_t errorSize) {
  if (Error e = runLaunch(*call, *stats)) {
    std::snprintf(error, errorSize, "%s", toString(std::move(e)).c_str());
    return 1;
  }
  return 0;
}

} // namespace

void registerSystolicDevice() {
  ignrt_register_device("systolic", systolicDriver, nullptr);
}

} // namespace ign::systolic
