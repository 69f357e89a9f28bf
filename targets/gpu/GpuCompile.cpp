//===- GpuCompile.cpp - the backend-neutral half of a GPU compile ---------===//
//
// A kernel's copy through the shared start (reference lowering,
// bufferization), the GPU layer's preparation, schedule and mapping
// (GpuCompile.h).
//
//===----------------------------------------------------------------------===//

#include "GpuCompile.h"

#include "GroupReduction.h"
#include "RowLaunch.h"
#include "StagedGemm.h"

#include "ign/Conversion/KernelBufferization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::gpu {

namespace {

/// The kernel after the reference lowering and bufferization, in a module
/// of its own: arguments read-only, results as out-parameters.
FailureOr<func::FuncOp> bufferizedCopy(func::FuncOp kernel, ModuleOp module,
                                       std::string &why) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto copy = cast<func::FuncOp>(b.clone(*kernel));
  copy.setPublic();
  for (unsigned i = 0; i < copy.getNumArguments(); ++i)
    copy.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
  PassManager lowering(ctx);
  buildKernelLoweringPipeline(lowering);
  if (failed(lowering.run(module))) {
    why = "the reference lowering failed";
    return failure();
  }
  // A recurrent cell's steps, each a few dispatches: up to 64 steps of a
  // 16-op LSTM cell (longer sequences stay on the host until the steps
  // run as one persistent kernel).
  if (failed(unrollRecurrences(copy, /*maxOps=*/1024, why)))
    return failure();
  rewriteReshapesAsViews(copy);
  fuseElementwiseChains(copy);
  splitSmallReductions(copy);
  copyPassedThroughResults(copy);
  PassManager bufferizing(ctx);
  buildKernelBufferizationPipeline(bufferizing);
  if (failed(bufferizing.run(module))) {
    why = "bufferization failed";
    return failure();
  }
  peelForRegisterTiles(copy);
  return copy;
}

/// The kernel's module with its mapping script inside, as
/// `ign-opt --transform-interpreter` reads it; inputs are `// -----`
/// separated.
void appendReplay(ModuleOp module, llvm::StringRef script,
                  std::string &replay) {
  OwningOpRef<ModuleOp> transforms =
      parseSourceString<ModuleOp>(script, module.getContext());
  if (!transforms)
    return;
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  copy->getBody()->push_back(transforms.release());
  llvm::raw_string_ostream os(replay);
  if (!replay.empty())
    os << "// -----\n";
  copy->print(os);
  os << "\n";
}

/// The launches of one of the layer's own kinds (`emit`: staged GEMMs, row
/// launches, group reductions) added to `own` where `copy` has ops that
/// take them (`present`) and `knob` says so: `tuned`'s, or `before` for a
/// tuned record made before the knob existed (what it was measured with),
/// else `chipDefault`. Returns the knob's value, or nothing where no op
/// takes them.
std::optional<int64_t>
addLayerLaunches(func::FuncOp copy, const search::Schedule *tuned,
                 const char *knob, bool chipDefault, bool before, bool present,
                 OwnLaunches (*emit)(func::FuncOp, const GpuChip &),
                 const GpuChip &chip, OwnLaunches &own) {
  if (!present)
    return std::nullopt;
  int64_t on = chipDefault ? 1 : 0;
  if (tuned) {
    auto it = tuned->find(knob);
    on = it != tuned->end() ? (it->second != 0 ? 1 : 0) : (before ? 1 : 0);
  }
  if (on)
    for (auto &[launch, note] : emit(copy, chip))
      own[launch] = std::move(note);
  return on;
}

/// The backend's own launches of `copy` (bufferized), then the layer's:
/// staged GEMMs, row launches, then group reductions of what is left, each
/// where the kernel has ops that take them and its knob says so;
/// `schedule` receives those knobs. Whether the kernel has reductions for
/// group launches is decided before row launches take theirs, so that
/// turning row launches off leaves a knob for them (while row launches
/// take every such reduction, kGroupReduce changes nothing).
OwnLaunches ownLaunchesOf(func::FuncOp copy, const search::Schedule *tuned,
                          const GpuChip &chip, GpuSchedule &schedule) {
  OwnLaunches own;
  if (chip.ownLaunches)
    own = chip.ownLaunches(copy);
  schedule.stagedGemm = addLayerLaunches(
      copy, tuned, kStagedGemm, chip.stagedGemms, chip.stagedGemmsBefore,
      hasStagedGemms(copy, chip), emitStagedGemms, chip, own);
  bool groups = hasGroupReductions(copy, chip);
  schedule.rowLaunch = addLayerLaunches(
      copy, tuned, kRowLaunch, chip.subgroupReductions, /*before=*/false,
      hasRowLaunches(copy, chip), emitRowLaunches, chip, own);
  schedule.groupReduce = addLayerLaunches(
      copy, tuned, kGroupReduce, chip.groupReductions, /*before=*/false, groups,
      emitGroupReductions, chip, own);
  return own;
}

} // namespace

FailureOr<MappedKernel> mapKernelCopy(func::FuncOp kernel,
                                      const search::Schedule *tuned,
                                      const GpuChip &chip, std::string &why,
                                      std::string *replay) {
  MLIRContext *ctx = kernel.getContext();
  prepareGpuContext(ctx);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return success();
  });
  MappedKernel out;
  out.module = ModuleOp::create(kernel.getLoc());
  FailureOr<func::FuncOp> copy = bufferizedCopy(kernel, *out.module, why);
  if (failed(copy)) {
    why += diagnostics.empty() ? "" : ": " + diagnostics;
    return failure();
  }
  GpuSchedule layer;
  OwnLaunches own = ownLaunchesOf(*copy, tuned, chip, layer);
  bool known = chip.numbers.known();
  // Untuned: the model's pick where the chip has numbers.
  out.schedule = tuned || !known
                     ? scheduleFromKnobs(tuned, chip.limits)
                     : modelDefaultSchedule(*copy, chip.limits, chip.numbers);
  out.schedule.stagedGemm = layer.stagedGemm;
  out.schedule.groupReduce = layer.groupReduce;
  out.schedule.rowLaunch = layer.rowLaunch;
  std::string script =
      buildTransformScript(*copy, out.schedule, chip.limits, why, out.notes,
                           known ? &chip.numbers : nullptr, &own);
  if (script.empty())
    return failure();
  if (replay)
    appendReplay(*out.module, script, *replay);
  if (failed(mapKernelToGpu(*out.module, *copy, script, why)))
    return failure();
  out.kernel = *copy;
  llvm::append_range(out.argumentTypes, copy->getArgumentTypes());
  return out;
}

search::Schedule defaultKnobs(func::FuncOp kernel, const GpuChip &chip) {
  GpuSchedule fixed = defaultGpuSchedule(chip.limits);
  MLIRContext *ctx = kernel.getContext();
  prepareGpuContext(ctx);
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  std::string why;
  FailureOr<func::FuncOp> copy = bufferizedCopy(kernel, *module, why);
  if (failed(copy))
    return fixed.knobs();
  GpuSchedule layer;
  ownLaunchesOf(*copy, nullptr, chip, layer);
  GpuSchedule s = chip.numbers.known()
                      ? modelDefaultSchedule(*copy, chip.limits, chip.numbers)
                      : fixed;
  s.stagedGemm = layer.stagedGemm;
  s.groupReduce = layer.groupReduce;
  s.rowLaunch = layer.rowLaunch;
  return s.knobs();
}

namespace {

/// math.ipowi(b, e) on integers, branch-free: exponentiation by squaring
/// over every bit of e (wrapping multiplies give the same result as the
/// host's loop), and for e < 0 what math.ipowi defines: 1 for b = 1, +-1
/// for b = -1, 0 otherwise (and 0, where the host divides by zero, for
/// b = 0).
struct ExpandIPowI : OpRewritePattern<math::IPowIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::IPowIOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<IntegerType>(op.getType());
    if (!type)
      return failure();
    Location loc = op.getLoc();
    auto c = [&](int64_t v) -> Value {
      return rewriter.create<arith::ConstantOp>(
          loc, rewriter.getIntegerAttr(type, v));
    };
    Value base = op.getLhs(), exp = op.getRhs(), result = c(1);
    Value square = base, bits = exp, zero = c(0), one = c(1);
    for (unsigned i = 0; i < type.getWidth(); ++i) {
      Value bit = rewriter.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::ne,
          rewriter.create<arith::AndIOp>(loc, bits, one), zero);
      result = rewriter.create<arith::SelectOp>(
          loc, bit, rewriter.create<arith::MulIOp>(loc, result, square),
          result);
      square = rewriter.create<arith::MulIOp>(loc, square, square);
      bits = rewriter.create<arith::ShRUIOp>(loc, bits, one);
    }
    auto is = [&](Value x, int64_t v) -> Value {
      return rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, x,
                                            c(v));
    };
    Value odd = rewriter.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::ne,
        rewriter.create<arith::AndIOp>(loc, exp, one), zero);
    Value minusOne = rewriter.create<arith::SelectOp>(loc, odd, c(-1), one);
    Value negative = rewriter.create<arith::SelectOp>(
        loc, is(base, 1), one,
        rewriter.create<arith::SelectOp>(loc, is(base, -1), minusOne, zero));
    Value isNegative = rewriter.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::slt, exp, zero);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, isNegative, negative,
                                                 result);
    return success();
  }
};

} // namespace

void populateGpuMathExpansions(RewritePatternSet &patterns) {
  patterns.add<ExpandIPowI>(patterns.getContext());
  populateExpandTanPattern(patterns);
  populateExpandSinhPattern(patterns);
  populateExpandCoshPattern(patterns);
  populateExpandAsinhPattern(patterns);
  populateExpandAcoshPattern(patterns);
  populateExpandAtanhPattern(patterns);
  populateExpandFPowIPattern(patterns);
}

void markNegativePowNaN(Operation *gpuModule) {
  gpuModule->walk([](math::PowFOp pow) {
    OpBuilder b(pow->getContext());
    b.setInsertionPointAfter(pow);
    Location loc = pow.getLoc();
    Type t = pow.getType();
    Value x = pow.getLhs(), y = pow.getRhs();
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(t));
    Value negative =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, zero);
    Value fraction = b.create<arith::CmpFOp>(
        loc, arith::CmpFPredicate::ONE, b.create<math::FloorOp>(loc, y), y);
    Value nanCase = b.create<arith::AndIOp>(loc, negative, fraction);
    auto floatType = cast<FloatType>(t);
    Value nan = b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(t, APFloat::getNaN(floatType.getFloatSemantics())));
    auto select = b.create<arith::SelectOp>(loc, nanCase, nan, pow);
    pow.getResult().replaceAllUsesExcept(select, select);
  });
}

std::string scheduleJson(const GpuSchedule &schedule,
                         const std::vector<LaunchShape> &launches,
                         const std::vector<DispatchNote> &notes,
                         int64_t sharedBytes, std::optional<double> &predicted,
                         const std::vector<DispatchFields> &fields) {
  nlohmann::json knobs;
  for (auto &[name, value] : schedule.knobs())
    knobs[name] = value;
  nlohmann::json dispatches = nlohmann::json::array();
  bool noted = notes.size() == launches.size();
  for (auto [i, d] : llvm::enumerate(launches)) {
    nlohmann::json entry = {{"groups", d.groups}, {"local", d.local}};
    if (noted && !notes[i].oneThread.empty())
      entry["one_thread"] = notes[i].oneThread;
    if (noted && notes[i].registerOutputs > 0)
      entry["register_tile"] = notes[i].registerOutputs;
    if (noted && !notes[i].matrixUnits.empty())
      entry["matrix_units"] = notes[i].matrixUnits;
    if (noted && notes[i].sharedBytes > 0) {
      entry["shared_bytes"] = notes[i].sharedBytes;
      sharedBytes = std::max(sharedBytes, notes[i].sharedBytes);
    }
    if (noted && notes[i].predictedMs) {
      entry["predicted_ms"] = *notes[i].predictedMs;
      entry["bound"] = notes[i].bound;
      predicted = predicted.value_or(0) + *notes[i].predictedMs;
    }
    if (i < fields.size())
      for (auto &[name, value] : fields[i])
        entry[name] = value;
    dispatches.push_back(entry);
  }
  nlohmann::json j = {{"kind", "gpu"},
                      {"knobs", knobs},
                      {"shared_bytes", sharedBytes},
                      {"dispatches", dispatches}};
  if (predicted)
    j["predicted_ms"] = *predicted;
  return j.dump();
}

} // namespace ign::gpu
