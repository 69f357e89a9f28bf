//===- GroupReduction.cpp - a workgroup per reduced output ----------------===//
//
// The analysis of a reduction as `out = combine(out, x)`, and its launch:
// strided partials, a tree in workgroup memory, one store (GroupReduction.h).
//
//===----------------------------------------------------------------------===//

#include "GroupReduction.h"

#include "GpuCompile.h"
#include "RegisterTiles.h"
#include "StagedGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

#include <algorithm>

using namespace mlir;

namespace ign::gpu {

std::optional<Reduction> analyzeReduction(linalg::LinalgOp op,
                                          std::string &why) {
  MemRefType out = staticOutput(op);
  if (!out || !out.getElementType().isIntOrFloat() ||
      op.getNumReductionLoops() == 0) {
    why = "not a reduction into one output on static buffers";
    return std::nullopt;
  }
  Block &body = *op.getBlock();
  Value acc = body.getArguments().back();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  Operation *combiner = yield && yield.getNumOperands() == 1
                            ? yield.getOperand(0).getDefiningOp()
                            : nullptr;
  std::optional<TypedAttr> identity =
      combiner ? arith::getNeutralElement(combiner) : std::nullopt;
  if (!identity || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
      (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc) ||
      !op.getIndexingMapsArray().back().isProjectedPermutation()) {
    why = "its body is not out = combine(out, x) with one associative op";
    return std::nullopt;
  }
  Reduction r;
  r.op = op;
  r.combiner = combiner;
  r.identity = *identity;
  Value x = combiner->getOperand(combiner->getOperand(0) == acc ? 1 : 0);
  FailureOr<GemmSide> side = bodyValue(op, x, why);
  if (failed(side))
    return std::nullopt;
  r.x = std::move(*side);
  r.ranges = op.getStaticLoopRanges();
  for (auto [l, kind] : llvm::enumerate(op.getIteratorTypesArray())) {
    bool reduced = kind == utils::IteratorType::reduction;
    (reduced ? r.reduced : r.parallel).push_back(unsigned(l));
    (reduced ? r.length : r.outputs) *= r.ranges[l];
  }
  // Each workgroup owns one output: the output reads every parallel loop
  // and no reduced one.
  AffineMap outMap = op.getIndexingMapsArray().back();
  for (unsigned l = 0; l < outMap.getNumDims(); ++l)
    if (outMap.isFunctionOfDim(l) != llvm::is_contained(r.parallel, l)) {
      why = "its output is not indexed by exactly its parallel loops";
      return std::nullopt;
    }
  return r;
}

std::optional<mlir::gpu::AllReduceOperation> subgroupKind(const Reduction &r) {
  using K = mlir::gpu::AllReduceOperation;
  Type t = r.combiner->getResult(0).getType();
  if (!t.isF32() && !t.isInteger(32))
    return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(r.combiner)
      .Case([](arith::AddFOp) { return K::ADD; })
      .Case([](arith::AddIOp) { return K::ADD; })
      .Case([](arith::MulFOp) { return K::MUL; })
      .Case([](arith::MulIOp) { return K::MUL; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Default([](Operation *) { return std::nullopt; });
}

Value combineWith(OpBuilder &b, const Reduction &r, Value a, Value y) {
  Value acc = r.op.getBlock()->getArguments().back();
  IRMapping mapping;
  for (Value operand : r.combiner->getOperands())
    mapping.map(operand, operand == acc ? a : y);
  return b.clone(*r.combiner, mapping)->getResult(0);
}

bool readsAlongOutputs(const Reduction &r) {
  OpOperand *largest = nullptr;
  int64_t most = -1;
  for (OpOperand *input : r.op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    int64_t n = type && type.hasStaticShape() ? type.getNumElements() : 0;
    if (n > most) {
      most = n;
      largest = input;
    }
  }
  AffineMap map = largest ? r.op.getMatchingIndexingMap(largest) : AffineMap();
  if (!map || map.getNumResults() == 0)
    return false;
  auto d = dyn_cast<AffineDimExpr>(map.getResults().back());
  return d && llvm::is_contained(r.parallel, d.getPosition()) &&
         r.ranges[d.getPosition()] > 1;
}

bool sharesOperands(const Reduction &r) {
  int skipping = 0;
  for (OpOperand *input : r.op.getDpsInputOperands()) {
    AffineMap map = r.op.getMatchingIndexingMap(input);
    skipping += llvm::any_of(r.parallel, [&](unsigned l) {
      return r.ranges[l] > 1 && !map.isFunctionOfDim(l);
    });
  }
  return skipping >= 2;
}

namespace {

/// Runs `body` under `cond` at `b` (an scf.if without results).
void when(OpBuilder &b, Location loc, Value cond,
          llvm::function_ref<void()> body) {
  b.create<scf::IfOp>(loc, cond, [&](OpBuilder &nb, Location) {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    body();
    b.create<scf::YieldOp>(loc);
  });
}

/// `v` reduced over its subgroup; a NaN anywhere gives NaN for maximumf
/// and minimumf (SPIR-V's FMax and FMin leave it undefined).
Value reduceSubgroup(OpBuilder &b, Location loc, Value v,
                     mlir::gpu::AllReduceOperation kind) {
  using K = mlir::gpu::AllReduceOperation;
  Value reduced = b.create<mlir::gpu::SubgroupReduceOp>(loc, v, kind);
  if (kind != K::MAXIMUMF && kind != K::MINIMUMF)
    return reduced;
  Value nan = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, v, v);
  Value flag = b.create<arith::ExtUIOp>(loc, b.getI32Type(), nan);
  Value any = b.create<mlir::gpu::SubgroupReduceOp>(loc, flag, K::MAXUI);
  Value anyNan =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, any,
                              b.create<arith::ConstantIntOp>(loc, 0, 32));
  auto type = cast<FloatType>(v.getType());
  Value quiet = b.create<arith::ConstantFloatOp>(
      loc, APFloat::getQNaN(type.getFloatSemantics()), type);
  return b.create<arith::SelectOp>(loc, anyNan, quiet, reduced);
}

} // namespace

Value subgroupTotal(OpBuilder &b, Location loc, const Reduction &r,
                    mlir::gpu::AllReduceOperation kind, Value tid,
                    int64_t threads, Value partial, Value shared,
                    bool broadcast) {
  auto c = [&](int64_t v) -> Value {
    return b.create<arith::ConstantIndexOp>(loc, v);
  };
  // The subgroup size is the device's (Vulkan's may differ from the
  // chip's), so lanes, subgroups and their count are computed from it.
  Value size = b.create<mlir::gpu::SubgroupSizeOp>(loc, b.getIndexType(),
                                                   /*upper_bound=*/nullptr);
  Value mine = reduceSubgroup(b, loc, partial, kind);
  Value lane = b.create<arith::RemUIOp>(loc, tid, size);
  Value lead =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, c(0));
  when(b, loc, lead, [&] {
    b.create<memref::StoreOp>(
        loc, mine, shared,
        ValueRange{b.create<arith::DivUIOp>(loc, tid, size)});
  });
  b.create<mlir::gpu::BarrierOp>(loc);
  Value inFirst =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, tid, size);
  Value identity = b.create<arith::ConstantOp>(loc, r.identity);
  auto first = b.create<scf::IfOp>(
      loc, inFirst,
      [&](OpBuilder &nb, Location) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value count = b.create<arith::DivUIOp>(
            loc, b.create<arith::AddIOp>(loc, c(threads - 1), size), size);
        auto loop =
            b.create<scf::ForOp>(loc, tid, count, size, ValueRange{identity});
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(loop.getBody());
          Value x =
              b.create<memref::LoadOp>(loc, shared, loop.getInductionVar());
          b.create<scf::YieldOp>(
              loc, combineWith(b, r, loop.getRegionIterArgs()[0], x));
        }
        b.create<scf::YieldOp>(loc,
                               reduceSubgroup(b, loc, loop.getResult(0), kind));
      },
      [&](OpBuilder &nb, Location) { nb.create<scf::YieldOp>(loc, identity); });
  Value total = first.getResult(0);
  if (!broadcast)
    return total;
  Value isFirst =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, c(0));
  when(b, loc, isFirst,
       [&] { b.create<memref::StoreOp>(loc, total, shared, c(threads)); });
  b.create<mlir::gpu::BarrierOp>(loc);
  return b.create<memref::LoadOp>(loc, shared, c(threads));
}

namespace {

int64_t elementBytes(const Reduction &r) {
  Type t = cast<MemRefType>(r.op.getDpsInitOperand(0)->get().getType())
               .getElementType();
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// Whether `r` takes a group launch on `chip`: long enough, not a GEMM
/// (analyzeGemm's, gathered convolutions included) nor sharing operands
/// between outputs, a grid and a workgroup the chip allows, no thread's
/// loop past the driver's limit.
bool takesGroupReduction(const Reduction &r, const GpuChip &chip) {
  const ChipLimits &l = chip.limits;
  int64_t threads = groupThreads(r.length, l);
  std::string why;
  return r.length >= kMinGroupLength && !analyzeGemm(r.op, why) &&
         !sharesOperands(r) && !readsAlongOutputs(r) &&
         r.outputs <= l.maxWorkgroupCount[0] &&
         threads * elementBytes(r) <= l.sharedMemoryBytes &&
         (l.maxLoopIterations == 0 ||
          (r.length + threads - 1) / threads <= l.maxLoopIterations);
}

/// The launch replacing `r`'s op: workgroup o reduces output o.
class GroupReductionEmitter {
public:
  GroupReductionEmitter(const Reduction &r, int64_t threads, Value fill)
      : r(r), threads(threads), fill(fill), b(r.op), loc(r.op.getLoc()) {}

  /// The launch; with `useSubgroups`, subgroup reductions where the
  /// combiner has one (subgroupKind), else the tree in workgroup memory.
  mlir::gpu::LaunchOp emit(bool useSubgroups);

private:
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  /// combine(a, y): the body's combiner cloned on new operands.
  Value combine(Value a, Value y);
  /// Splits `linear` over `group`'s loops into `loops` (the last fastest).
  void delinearize(ArrayRef<unsigned> group, Value linear,
                   SmallVector<Value> &loops);
  /// This thread's partial: combine over elements tid, tid + threads, ...
  Value partial(Value tid, ArrayRef<Value> outputLoops);
  /// Halves the partials in `shared` down to element 0, a barrier a step;
  /// thread 0 then combines it into the output.
  void tree(Value tid, Value partial, Value shared);
  /// Each subgroup's partials reduced by one op (`kind`), their results
  /// through `shared` into the first subgroup, reduced again, and its
  /// first thread's combined into the output.
  void subgroups(Value tid, Value partial, Value shared,
                 mlir::gpu::AllReduceOperation kind);
  /// Under `cond`: combines `total` (made by `make` there) into the output.
  void storeTotal(Value cond, llvm::function_ref<Value()> make);
  void when(Value cond, llvm::function_ref<void()> body) {
    ign::gpu::when(b, loc, cond, body);
  }

  const Reduction &r;
  int64_t threads;
  Value fill;
  OpBuilder b;
  Location loc;
  SmallVector<Value> outputLoops;
};

Value GroupReductionEmitter::combine(Value a, Value y) {
  return combineWith(b, r, a, y);
}

void GroupReductionEmitter::delinearize(ArrayRef<unsigned> group, Value linear,
                                        SmallVector<Value> &loops) {
  for (unsigned l : llvm::reverse(group)) {
    if (l == group.front()) {
      loops[l] = linear;
      break;
    }
    loops[l] = b.create<arith::RemUIOp>(loc, linear, c(r.ranges[l]));
    linear = b.create<arith::DivUIOp>(loc, linear, c(r.ranges[l]));
  }
}

Value GroupReductionEmitter::partial(Value tid, ArrayRef<Value> outputLoops) {
  Value identity = b.create<arith::ConstantOp>(loc, r.identity);
  auto loop = b.create<scf::ForOp>(loc, tid, c(r.length), c(threads),
                                   ValueRange{identity});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> loops(outputLoops);
  delinearize(r.reduced, loop.getInductionVar(), loops);
  Value x = bodyValueAt(b, loc, r.op, r.x, loops);
  b.create<scf::YieldOp>(loc, combine(loop.getRegionIterArgs()[0], x));
  return loop.getResult(0);
}

void GroupReductionEmitter::storeTotal(Value cond,
                                       llvm::function_ref<Value()> make) {
  when(cond, [&] {
    Value out = r.op.getDpsInitOperand(0)->get();
    SmallVector<Value> at =
        indicesAt(b, loc, r.op.getIndexingMapsArray().back(), outputLoops);
    Value start = fill ? fill : b.create<memref::LoadOp>(loc, out, at);
    b.create<memref::StoreOp>(loc, combine(start, make()), out, at);
  });
}

void GroupReductionEmitter::tree(Value tid, Value partial, Value shared) {
  b.create<memref::StoreOp>(loc, partial, shared, tid);
  b.create<mlir::gpu::BarrierOp>(loc);
  for (int64_t step = threads / 2; step >= 1; step /= 2) {
    Value active =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, tid, c(step));
    when(active, [&] {
      Value mine = b.create<memref::LoadOp>(loc, shared, tid);
      Value other = b.create<memref::LoadOp>(
          loc, shared, ValueRange{b.create<arith::AddIOp>(loc, tid, c(step))});
      b.create<memref::StoreOp>(loc, combine(mine, other), shared, tid);
    });
    b.create<mlir::gpu::BarrierOp>(loc);
  }
  Value first =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, c(0));
  storeTotal(first,
             [&] { return b.create<memref::LoadOp>(loc, shared, c(0)); });
}

void GroupReductionEmitter::subgroups(Value tid, Value partial, Value shared,
                                      mlir::gpu::AllReduceOperation kind) {
  Value total = subgroupTotal(b, loc, r, kind, tid, threads, partial, shared,
                              /*broadcast=*/false);
  Value first =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, c(0));
  storeTotal(first, [&] { return total; });
}

mlir::gpu::LaunchOp GroupReductionEmitter::emit(bool useSubgroups) {
  Value out = r.op.getDpsInitOperand(0)->get();
  Type element = cast<MemRefType>(out.getType()).getElementType();
  auto sharedType =
      MemRefType::get({threads}, element, MemRefLayoutAttrInterface(),
                      mlir::gpu::AddressSpaceAttr::get(
                          b.getContext(), mlir::gpu::AddressSpace::Workgroup));
  auto launch = b.create<mlir::gpu::LaunchOp>(
      loc, c(r.outputs), c(1), c(1), c(threads), c(1), c(1),
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange(), TypeRange{sharedType});
  launch->setAttr(kOwnLaunch, UnitAttr::get(b.getContext()));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  b.create<mlir::gpu::TerminatorOp>(loc);
  b.setInsertionPointToStart(&body);
  Value tid = launch.getThreadIds().x;
  Value shared = launch.getWorkgroupAttributions()[0];
  outputLoops.assign(r.ranges.size(), c(0));
  delinearize(r.parallel, launch.getBlockIds().x, outputLoops);
  Value mine = partial(tid, outputLoops);
  std::optional<mlir::gpu::AllReduceOperation> kind = subgroupKind(r);
  if (useSubgroups && kind)
    subgroups(tid, mine, shared, *kind);
  else
    tree(tid, mine, shared);
  return launch;
}

/// The model's time: the buffers once from DRAM, or each thread's
/// arithmetic (the body's ops per element) at the chip's fp32 rate,
/// whichever is longer, plus a launch.
void predict(DispatchNote &note, const Reduction &r, const ChipNumbers &n) {
  if (!n.known())
    return;
  double bytes = double(bytesRead(r.op, r.x)) +
                 2.0 * double(bufferBytes(r.op.getDpsInitOperand(0)->get()));
  double memoryS = bytes / (n.bandwidthGBs * 1e9);
  double ops =
      double(r.outputs) * double(r.length) * double(r.x.slice.size() + 1);
  double issueS = ops / (n.peakGflops * 1e9 / 2);
  note.predictedMs =
      std::max(memoryS, issueS) * 1e3 + kLaunchMicroseconds / 1e3;
  note.bound = memoryS >= issueS ? "memory" : "issue";
}

std::vector<Reduction> reductionsOf(func::FuncOp kernel, const GpuChip &chip) {
  std::vector<Reduction> found;
  for (Operation &any : kernel.getBody().front()) {
    auto op = dyn_cast<linalg::LinalgOp>(&any);
    std::string why;
    if (!op)
      continue;
    std::optional<Reduction> r = analyzeReduction(op, why);
    if (r && takesGroupReduction(*r, chip))
      found.push_back(std::move(*r));
  }
  return found;
}

} // namespace

int64_t groupThreads(int64_t length, const ChipLimits &limits) {
  // A power of two: the tree halves the partials (a device may allow 384).
  int64_t most = std::min(kMaxGroupThreads, limits.maxInvocations);
  most = int64_t(llvm::bit_floor(uint64_t(
      std::max<int64_t>(1, std::min(most, limits.maxWorkgroupSize[0])))));
  int64_t t =
      int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, length / 4))));
  return std::max<int64_t>(std::min(t, most),
                           std::min(limits.subgroupSize, most));
}

OwnLaunches emitGroupReductions(func::FuncOp kernel, const GpuChip &chip) {
  OwnLaunches out;
  for (Reduction &r : reductionsOf(kernel, chip)) {
    linalg::FillOp fill = fillBefore(r.op);
    int64_t threads = groupThreads(r.length, chip.limits);
    mlir::gpu::LaunchOp launch =
        GroupReductionEmitter(r, threads, fill ? fill.getInputs()[0] : Value())
            .emit(chip.subgroupReductions);
    if (fill)
      fill->erase();
    DispatchNote &note = out[launch];
    note.sharedBytes = threads * elementBytes(r);
    predict(note, r, chip.numbers);
    r.op->erase();
  }
  return out;
}

bool hasGroupReductions(func::FuncOp kernel, const GpuChip &chip) {
  return !reductionsOf(kernel, chip).empty();
}

} // namespace ign::gpu
