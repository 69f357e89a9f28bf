//===- SystolicCompiler.cpp - ign kernels onto the systolic array ---------===//

#include "SystolicCompiler.h"
#include "Simulator.h"
#include "SystolicKnobs.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>

using namespace mlir;

namespace ign::systolic {

namespace {

RankedTensorType f32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || !t.getElementType().isF32())
    return nullptr;
  return t;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// Whether \p other broadcasts to \p shape along dimension \p channel only
/// (a per-channel bias).
bool perChannel(ArrayRef<int64_t> other, ArrayRef<int64_t> shape,
                size_t channel) {
  if (other.size() > shape.size())
    return false;
  size_t pad = shape.size() - other.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t o = d < pad ? 1 : other[d - pad];
    if (d == channel ? o != shape[d] : o != 1)
      return false;
  }
  return true;
}

nlohmann::json sourceJSON(const ArrayKernel::Source &s) {
  if (s.arg >= 0)
    return nlohmann::json{{"arg", s.arg}};
  if (s.offset >= 0)
    return nlohmann::json{{"const", s.offset}, {"count", s.count}};
  return nullptr;
}

/// \p machine's description as compact JSON text the way LLVM's JSON writer
/// printed it (sorted keys, numbers as %.17g), so that the fingerprint,
/// a tuning-database key, stays what it was.
std::string fingerprintText(const ArrayConfig &machine) {
  const nlohmann::json description = toJSON(machine);
  std::string text = "{";
  for (const auto &[key, value] : description.items()) {
    text += (text.size() > 1 ? ",\"" : "\"") + key + "\":";
    if (value.is_number_float()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", value.get<double>());
      text += buf;
    } else {
      text +=
          value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  return text + "}";
}

} // namespace

namespace {

/// Matches a kernel's ops, in order, against the array's kernel shape:
/// [im2col] -> product -> bias/residual adds -> ReLU or clip. Each step
/// fills `k` or says in `why` what does not fit.
class ArrayKernelMatcher {
public:
  ArrayKernelMatcher(func::FuncOp kernel, std::string &why)
      : body(kernel.getBody().front()), why(why) {}

  std::optional<ArrayKernel> match() {
    auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret || ret.getNumOperands() != 1)
      return fail("not a single-result kernel");
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    if (!allStaticF32())
      return fail("not all f32 tensors of static shape");
    // Constants feed the chain; they are not steps of it.
    llvm::erase_if(ops, [](Operation *op) { return isa<ConstantOp>(op); });
    if (!matchIm2col() || !matchProduct() || !matchEpilogue())
      return std::nullopt;
    if (ret.getOperand(0) != chain)
      return fail("the kernel returns an intermediate value");
    return k;
  }

private:
  std::nullopt_t fail(std::string reason) {
    why = std::move(reason);
    return std::nullopt;
  }
  bool reject(std::string reason) {
    why = std::move(reason);
    return false;
  }

  int argIndex(Value v) const {
    auto ba = dyn_cast<BlockArgument>(v);
    return ba && ba.getOwner() == &body ? int(ba.getArgNumber()) : -1;
  }

  bool allStaticF32() const {
    for (Operation *op : ops) {
      SmallVector<Value> values(op->getOperands());
      values.append(op->getResults().begin(), op->getResults().end());
      for (Value v : values)
        if (!f32Tensor(v))
          return false;
    }
    return true;
  }

  /// An operand's source: a kernel argument or a constant's values.
  bool source(Value v, ArrayKernel::Source &src) {
    if (int a = argIndex(v); a >= 0) {
      src.arg = a;
      return true;
    }
    auto c = v.getDefiningOp<ConstantOp>();
    if (!c)
      return false;
    auto type = f32Tensor(v);
    size_t n = size_t(type.getNumElements());
    std::vector<float> values;
    if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
      auto range = dense.getValues<float>();
      values.assign(range.begin(), range.end());
    } else if (auto res = dyn_cast<DenseResourceElementsAttr>(c.getValue())) {
      AsmResourceBlob *blob = res.getRawHandle().getBlob();
      if (!blob || blob->getData().size() != n * sizeof(float))
        return false;
      values.resize(n);
      std::memcpy(values.data(), blob->getData().data(), n * sizeof(float));
    } else {
      return false;
    }
    src.offset = int64_t(k.constants.size());
    src.count = int64_t(n);
    k.constants.insert(k.constants.end(), values.begin(), values.end());
    return true;
  }

  /// An optional im2col of a kernel argument first.
  bool matchIm2col() {
    auto im = next < ops.size() ? dyn_cast<Im2ColOp>(ops[next]) : Im2ColOp();
    if (!im)
      return true;
    auto in = f32Tensor(im.getInput());
    auto ks = toI64Vector(im.getKernelShape()),
         st = toI64Vector(im.getStrides()), pads = toI64Vector(im.getPads()),
         dil = toI64Vector(im.getDilations());
    int arg = argIndex(im.getInput());
    if (in.getRank() != 4 || ks.size() != 2 || arg < 0)
      return reject("not a 2-D convolution of a kernel argument");
    ConvGeometry c;
    c.C = in.getDimSize(1);
    c.H = in.getDimSize(2);
    c.W = in.getDimSize(3);
    c.kh = ks[0];
    c.kw = ks[1];
    c.sh = st[0];
    c.sw = st[1];
    c.ph = pads[0];
    c.pw = pads[1];
    c.dh = dil[0];
    c.dw = dil[1];
    c.OH = (c.H + pads[0] + pads[2] - (c.kh - 1) * c.dh - 1) / c.sh + 1;
    c.OW = (c.W + pads[1] + pads[3] - (c.kw - 1) * c.dw - 1) / c.sw + 1;
    auto out = f32Tensor(im.getResult());
    if (out.getRank() != 3 || out.getDimSize(1) != c.C * c.kh * c.kw ||
        out.getDimSize(2) != c.OH * c.OW)
      return reject("unexpected im2col shape");
    k.im2col = ArrayKernel::Im2col{arg, c};
    cols = im.getResult();
    ++next;
    return true;
  }

  /// The matrix product: a MatMul (weights on either side) or a Gemm.
  bool matchProduct() {
    if (next >= ops.size())
      return reject("no matrix product");
    Operation *op = ops[next];
    bool matched = false;
    if (auto mm = dyn_cast<MatMulOp>(op))
      matched = matchMatMul(mm);
    else if (auto g = dyn_cast<GemmOp>(op); g && !cols)
      matched = matchGemm(g);
    else
      return reject("starts with " + op->getName().getStringRef().str());
    if (!matched)
      return false;
    if (!k.x.valid() && !k.im2col)
      return reject("the product's input is computed inside the kernel");
    if (!k.w.valid())
      return reject("the product's weight is computed inside the kernel");
    chain = op->getResult(0);
    ++next;
    return true;
  }

  bool matchMatMul(MatMulOp mm) {
    auto lt = f32Tensor(mm.getLhs()), rt = f32Tensor(mm.getRhs());
    if (lt.getRank() == 2 && rt.getRank() == 3) {
      k.form = ArrayKernel::Form::WeightLhs;
      source(mm.getLhs(), k.w);
      if (!cols)
        source(mm.getRhs(), k.x);
      if (cols && mm.getRhs() != cols)
        return reject("im2col does not feed the product");
      k.M = lt.getDimSize(0);
      k.K = lt.getDimSize(1);
      k.batch = rt.getDimSize(0);
      k.N = rt.getDimSize(2);
      if (rt.getDimSize(1) != k.K)
        return reject("inner dimensions differ");
      k.gemm = {k.N, k.K, k.M}; // pixels x window x filters
      k.programRuns = k.batch;
      channel = 1;
      return true;
    }
    if (rt.getRank() == 2 && lt.getRank() >= 2 && !cols) {
      k.form = ArrayKernel::Form::WeightRhs;
      source(mm.getLhs(), k.x);
      source(mm.getRhs(), k.w);
      k.K = lt.getShape().back();
      k.M = product(lt.getShape().drop_back());
      k.N = rt.getDimSize(1);
      if (rt.getDimSize(0) != k.K)
        return reject("inner dimensions differ");
      k.gemm = {k.M, k.K, k.N};
      channel = size_t(lt.getRank() - 1);
      return true;
    }
    return reject("a product batched on both sides");
  }

  bool matchGemm(GemmOp g) {
    auto at = f32Tensor(g.getA()), bt = f32Tensor(g.getB());
    if (g.getTransA() || g.getAlpha().convertToFloat() != 1.0f ||
        (g.getC() && g.getBeta().convertToFloat() != 1.0f) ||
        at.getRank() != 2 || bt.getRank() != 2)
      return reject("Gemm with transA, alpha or beta");
    k.form = ArrayKernel::Form::WeightRhs;
    source(g.getA(), k.x);
    source(g.getB(), k.w);
    k.transW = g.getTransB();
    k.M = at.getDimSize(0);
    k.K = at.getDimSize(1);
    k.N = k.transW ? bt.getDimSize(0) : bt.getDimSize(1);
    k.gemm = {k.M, k.K, k.N};
    channel = 1;
    Value c = g.getC();
    if (!c)
      return true;
    auto ct = f32Tensor(c);
    auto outShape = f32Tensor(g.getResult()).getShape();
    ArrayKernel::Source src;
    if (!source(c, src))
      return reject("Gemm's C is computed");
    if (ct.getShape() == outShape)
      k.residual = src;
    else if (perChannel(ct.getShape(), outShape, 1))
      k.bias = src;
    else
      return reject("Gemm's C broadcasts along rows");
    return true;
  }

  /// Bias and residual adds, then at most one ReLU or Clip(0, max).
  bool matchEpilogue() {
    for (; next < ops.size(); ++next) {
      Operation *op = ops[next];
      if (k.relu)
        return reject("an op after the ReLU or clip");
      if (auto add = dyn_cast<AddOp>(op)) {
        if (!matchAdd(add))
          return false;
      } else if (auto relu = dyn_cast<ReluOp>(op);
                 relu && relu.getInput() == chain) {
        k.relu = true;
        chain = relu.getResult();
      } else if (auto clip = dyn_cast<ClipOp>(op);
                 clip && clip.getInput() == chain && clip.getMinAttr() &&
                 clip.getMinAttr().getValueAsDouble() == 0.0 &&
                 (!clip.getMaxAttr() ||
                  clip.getMaxAttr().getValueAsDouble() > 0.0)) {
        // Clip(0, max), e.g. ReLU6: ReLU and a clamp at mvout.
        k.relu = true;
        k.clampMax = clip.getMaxAttr()
                         ? float(clip.getMaxAttr().getValueAsDouble())
                         : 0.0f;
        chain = clip.getResult();
      } else {
        return reject(op->getName().getStringRef().str() + " in the epilogue");
      }
    }
    return true;
  }

  bool matchAdd(AddOp add) {
    Value other = add.getLhs() == chain   ? add.getRhs()
                  : add.getRhs() == chain ? add.getLhs()
                                          : Value();
    ArrayKernel::Source src;
    auto shape = f32Tensor(chain).getShape();
    if (!other || !source(other, src) ||
        f32Tensor(add.getResult()).getShape() != shape)
      return reject("an add of a value computed inside the kernel");
    auto oshape = f32Tensor(other).getShape();
    if (oshape == shape && !k.residual.valid())
      k.residual = src;
    else if (perChannel(oshape, shape, channel) && !k.bias.valid())
      k.bias = src;
    else
      return reject("an add that is neither a bias nor a residual");
    chain = add.getResult();
    return true;
  }

  Block &body;
  std::string &why;
  SmallVector<Operation *> ops;
  ArrayKernel k;
  size_t next = 0;    // the next op to match
  Value cols;         // the im2col columns, when the kernel starts so
  Value chain;        // the value the epilogue continues
  size_t channel = 0; // the product's output channel dim
};

} // namespace

std::optional<ArrayKernel> matchArrayKernel(func::FuncOp kernel,
                                            std::string &why) {
  return ArrayKernelMatcher(kernel, why).match();
}

std::optional<Instr::Im2col> implicitIm2col(const ArrayKernel &k) {
  return k.im2col ? k.im2col->g.instr() : std::nullopt;
}

GemmBuffers arrayKernelBuffers(const ArrayConfig &machine,
                               const ArrayKernel &k) {
  bool hasD = k.bias.valid() || k.residual.valid();
  bool broadcast = !k.residual.valid();
  GemmBuffers buf;
  if (std::optional<Instr::Im2col> g = implicitIm2col(k))
    buf = convGemmBuffers(machine, k.gemm, *g, ElemType::F32, hasD, broadcast);
  else
    buf = denseGemmBuffers(machine, k.gemm, ElemType::F32, hasD, broadcast);
  buf.relu = k.relu;
  buf.clampMax = k.clampMax;
  return buf;
}

namespace {
using namespace knobs;

int64_t knob(const search::Schedule &s, const char *name, int64_t fallback) {
  auto it = s.find(name);
  return it == s.end() ? fallback : it->second;
}
} // namespace

GemmMapping mappingFromSchedule(const ArrayConfig &machine,
                                const ArrayKernel &k,
                                const search::Schedule &s) {
  GemmMapping m;
  int64_t df = knob(s, kDataflow, int64_t(machine.dataflow));
  m.dataflow = Dataflow(std::clamp<int64_t>(df, 0, 2));
  m.accumulate = knob(s, kAccumulate, 1) != 0;
  m.resident = knob(s, kResident, 0) != 0;
  int64_t div = std::max<int64_t>(1, knob(s, kChunkDiv, 1));
  int64_t stream = m.dataflow == Dataflow::WS   ? k.gemm.M
                   : m.dataflow == Dataflow::IS ? k.gemm.N
                                                : k.gemm.K;
  m.chunk = div == 1 ? 0 : std::max<int64_t>(1, stream / div);
  int64_t pct = knob(s, kStreamPct, 0);
  if (pct > 0)
    m.streamSpadElems = machine.spadElems() * pct / 100;
  return m;
}

std::optional<search::Schedule> scheduleOfMapping(const ArrayConfig &machine,
                                                  const ArrayKernel &k,
                                                  const GemmMapping &mapping) {
  if (mapping.streamSpadElems)
    return std::nullopt;
  for (int64_t div : kChunkDivs) {
    search::Schedule s = {{kDataflow, int64_t(mapping.dataflow)},
                          {kAccumulate, mapping.accumulate ? 1 : 0},
                          {kChunkDiv, div},
                          {kStreamPct, 0},
                          {kResident, mapping.resident ? 1 : 0}};
    if (mappingFromSchedule(machine, k, s).chunk == mapping.chunk)
      return s;
  }
  return std::nullopt;
}

search::ScheduleSpace arrayScheduleSpace(const ArrayConfig &machine,
                                         const ArrayKernel &k,
                                         const GemmMapping *heuristic) {
  search::ScheduleSpace space;
  search::Knob dataflows{kDataflow, {}};
  for (Dataflow d : {Dataflow::OS, Dataflow::WS, Dataflow::IS})
    if (machine.supports(d))
      dataflows.values.push_back(int64_t(d));
  space.knobs = {dataflows,
                 {kAccumulate, {0, 1}},
                 {kChunkDiv, {std::begin(kChunkDivs), std::end(kChunkDivs)}},
                 {kStreamPct, {std::begin(kStreamPcts), std::end(kStreamPcts)}},
                 {kResident, {0, 1}}};
  space.defaults = {{kDataflow, int64_t(machine.dataflow)},
                    {kAccumulate, 1},
                    {kChunkDiv, 1},
                    {kStreamPct, 0},
                    {kResident, 0}};
  if (heuristic)
    if (auto s = scheduleOfMapping(machine, k, *heuristic))
      space.defaults = *s;
  GemmBuffers buf = arrayKernelBuffers(machine, k);
  space.legal = [machine, k, buf](const search::Schedule &s) {
    GemmMapping m = mappingFromSchedule(machine, k, s);
    if (!machine.supports(m.dataflow) || !mappingComputesC(machine, k.gemm, m))
      return false;
    return bool(buildGemmProgram(machine, k.gemm, m, buf));
  };
  return space;
}

std::string systolicFingerprint(const ArrayConfig &machine,
                                llvm::StringRef ignVersion) {
  std::string text = fingerprintText(machine) + "|ignc " + ignVersion.str();
  return "systolic/" + machine.name + "/" +
         llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
}

std::optional<CompiledArrayKernel>
compileArrayKernel(const ArrayConfig &machine, func::FuncOp kernel,
                   const search::Schedule *tunedSchedule,
                   const std::function<void(const std::string &)> &log) {
  std::string name = kernel.getName().str(), why;
  auto say = [&](const std::string &line) {
    if (log)
      log(name + ": " + line);
  };
  std::optional<ArrayKernel> k = matchArrayKernel(kernel, why);
  if (!k) {
    say("host (" + why + ")");
    return std::nullopt;
  }
  GemmBuffers buf = arrayKernelBuffers(machine, *k);
  // A tuned schedule from the database, if it still builds and computes
  // the product; else the compile-time tuning.
  std::optional<TunedGemm> tuned;
  std::string kind = "mapping";
  if (const search::Schedule *s = tunedSchedule) {
    GemmMapping m = mappingFromSchedule(machine, *k, *s);
    if (mappingComputesC(machine, k->gemm, m)) {
      auto p = buildGemmProgram(machine, k->gemm, m, buf);
      if (p && checkGemmProgram(machine, k->gemm, buf, *p).ok()) {
        Machine sim(machine);
        auto rep = sim.simulate(*p, SimOptions{/*functional=*/false});
        if (rep) {
          tuned = TunedGemm{m, -1, rep->totalCycles, 1, 1, 0, *p};
          kind = "tuned";
        }
      }
    }
    if (!tuned)
      say("the tuned schedule " + search::scheduleToJson(*s) +
          " no longer applies; tuning at compile time");
  }
  if (!tuned) {
    auto t = tuneGemmMapping(machine, k->gemm, 8, &buf, /*check=*/true);
    if (!t) {
      say("host (" + t.message() + ")");
      return std::nullopt;
    }
    tuned = *t;
  }
  const Program *program = &tuned->program;
  std::vector<uint8_t> bytes = program->serialize();
  int64_t configSt = -1;
  for (auto [idx, in] : llvm::enumerate(program->instrs))
    if (in.op == Opcode::ConfigSt)
      configSt = int64_t(idx);
  nlohmann::json desc{{"form", k->form == ArrayKernel::Form::WeightLhs
                                   ? "weight_lhs"
                                   : "weight_rhs"},
                      {"batch", k->batch},
                      {"M", k->M},
                      {"K", k->K},
                      {"N", k->N},
                      {"x", sourceJSON(k->x)},
                      {"w", sourceJSON(k->w)},
                      {"trans_w", k->transW},
                      {"bias", sourceJSON(k->bias)},
                      {"residual", sourceJSON(k->residual)},
                      {"relu", k->relu},
                      {"clamp_max", double(k->clampMax)},
                      {"gemm", nlohmann::json{{"M", k->gemm.M},
                                              {"K", k->gemm.K},
                                              {"N", k->gemm.N},
                                              {"runs", k->programRuns}}},
                      {"layout", nlohmann::json{{"a", buf.a},
                                                {"b", buf.b},
                                                {"c", buf.c},
                                                {"d", buf.d},
                                                {"has_d", buf.hasD},
                                                {"d_broadcast", buf.dBroadcast},
                                                {"dram_bytes", buf.dramBytes}}},
                      {"config_st", configSt},
                      {"implicit_im2col", buf.implicitIm2col},
                      {"program_bytes", int64_t(bytes.size())},
                      {"machine", toJSON(machine)}};
  if (k->im2col) {
    const ConvGeometry &c = k->im2col->g;
    desc["im2col"] = nlohmann::json{{"arg", k->im2col->arg},
                                    {"C", c.C},
                                    {"H", c.H},
                                    {"W", c.W},
                                    {"kh", c.kh},
                                    {"kw", c.kw},
                                    {"sh", c.sh},
                                    {"sw", c.sw},
                                    {"ph", c.ph},
                                    {"pw", c.pw},
                                    {"dh", c.dh},
                                    {"dw", c.dw},
                                    {"oh", c.OH},
                                    {"ow", c.OW}};
  }
  nlohmann::json schedule{
      {"kind", kind},
      {"mapping", tuned->mapping.str()},
      {"dataflow", dataflowName(tuned->mapping.dataflow)},
      {"chunk", tuned->mapping.chunk},
      {"accumulate", tuned->mapping.accumulate},
      {"gemm",
       llvm::formatv("{0}x{1}x{2}", k->gemm.M, k->gemm.K, k->gemm.N).str()},
      {"runs", k->programRuns},
      {"cycles_per_run", tuned->cycles},
      {"candidates", tuned->candidates},
      {"simulated", tuned->simulated},
      {"rejected", tuned->rejected}};
  // The applied knobs, as every target's bundle records them.
  if (auto applied = scheduleOfMapping(machine, *k, tuned->mapping)) {
    nlohmann::json knobsJson = nlohmann::json::object();
    for (auto &[knobName, value] : *applied)
      knobsJson[knobName] = value;
    schedule["knobs"] = std::move(knobsJson);
  }
  CompiledArrayKernel out;
  auto compact = [](const nlohmann::json &v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  out.deviceJson = compact(desc);
  out.scheduleJson = compact(schedule);
  // The blob: the program, then (at program_bytes rounded up to 64) the
  // kernel's constants as f32.
  out.blob.assign(bytes.begin(), bytes.end());
  out.blob.resize((out.blob.size() + 63) / 64 * 64, '\0');
  out.blob.append(reinterpret_cast<const char *>(k->constants.data()),
                  k->constants.size() * sizeof(float));
  say(llvm::formatv("systolic, GEMM {0}x{1}x{2} x{3}, {4}, {5} cycles",
                    k->gemm.M, k->gemm.K, k->gemm.N, k->programRuns,
                    tuned->mapping.str(), tuned->cycles * k->programRuns)
          .str());
  return out;
}

} // namespace ign::systolic
