//===- RowLaunch.cpp - a row's chain of ops as one launch -----------------===//
//
// Finding chains (the ops over the same rows, each reading the chain's
// results at its own element) and emitting each as one launch: a
// workgroup per row, the ops in order, reductions through subgroups
// (RowLaunch.h).
//
//===----------------------------------------------------------------------===//

#include "RowLaunch.h"

#include "GpuCompile.h"
#include "GroupReduction.h"
#include "RegisterTiles.h"
#include "StagedGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>

using namespace mlir;

namespace ign::gpu {

namespace {

enum class Kind {
  Reduce, // a row into one value (loops P..., R; R reduced)
  Row,    // elementwise over the rows' elements (loops P..., R)
  Value,  // elementwise over the rows (loops P...)
};

struct ChainOp {
  mutable linalg::GenericOp op; // its accessors are not const
  Kind kind = Kind::Row;
  std::optional<Reduction> reduction;
  mutable linalg::FillOp fill; // a reduction's start, taken over
};

struct Chain {
  SmallVector<int64_t> rows; // P
  int64_t length = 0;        // R
  std::vector<ChainOp> ops;
  /// The chain's results by buffer (views looked through): a row's
  /// elements (each thread's in registers or rewritten and reread in
  /// memory), or a row's value (in registers; thread 0 stores it).
  llvm::DenseMap<Value, Kind> results;
  /// Buffers the chain reads that it does not write (at any element).
  llvm::DenseSet<Value> outside;
  int64_t reductions = 0;
};

/// `v` with expand_shape and collapse_shape views looked through.
Value baseOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// Whether `v` is a buffer the chain can tell apart from others: an
/// allocation, an argument or a global, or an expand_shape /
/// collapse_shape view of one (another view could alias a chain buffer
/// unseen).
bool isPlainBuffer(Value v) {
  Operation *def = baseOf(v).getDefiningOp();
  return !def || isa<memref::AllocOp, memref::GetGlobalOp>(def);
}

/// Ops a chain may step over: they neither read nor write memory.
bool isTransparent(Operation *op) {
  return isa<memref::AllocOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             arith::ConstantOp, memref::GetGlobalOp>(op);
}

/// Whether `map` reads element (d0, ..., d(rows-1)) of the value buffer
/// `base` through `view`: its results are the row loops in order, apart
/// from zeros at the view's unit dims.
bool readsOwnRow(AffineMap map, Value view, Value base, unsigned rows) {
  auto viewType = cast<MemRefType>(view.getType());
  auto baseType = cast<MemRefType>(base.getType());
  if (baseType.getRank() != int64_t(rows))
    return false;
  unsigned next = 0;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (c && c.getValue() == 0 && viewType.getDimSize(i) == 1)
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || d.getPosition() != next++)
      return false;
  }
  return next == rows;
}

/// What `op` is over `rows` x `length` (nullopt: not a chain op).
std::optional<Kind> kindOver(linalg::GenericOp op, ArrayRef<int64_t> rows,
                             int64_t length) {
  if (!staticOutput(op) || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  AffineMap out = op.getIndexingMapsArray().back();
  unsigned k = rows.size();
  bool overRows = ranges.size() == k + 1 &&
                  ArrayRef<int64_t>(ranges).drop_back() == rows &&
                  ranges.back() == length;
  auto parallelUpTo = [&](unsigned n) {
    return llvm::all_of(ArrayRef(iterators).take_front(n), [](auto t) {
      return t == utils::IteratorType::parallel;
    });
  };
  if (overRows && parallelUpTo(k + 1) && out.isIdentity())
    return Kind::Row;
  if (overRows && parallelUpTo(k) &&
      iterators.back() == utils::IteratorType::reduction &&
      out == AffineMap::getMultiDimIdentityMap(k + 1, op.getContext())
                 .getMajorSubMap(k))
    return Kind::Reduce;
  if (ArrayRef<int64_t>(ranges) == rows && parallelUpTo(k) && out.isIdentity())
    return Kind::Value;
  return std::nullopt;
}

/// Whether `op`'s body is plain arithmetic: no regions or memory.
bool plainBody(linalg::GenericOp op) {
  for (Operation &o : op.getBlock()->without_terminator())
    if (o.getNumRegions() || !isMemoryEffectFree(&o))
      return false;
  return true;
}

/// Adds `op` to `chain` where it fits (false: it ends the chain). The
/// first op sets the rows.
bool extend(Chain &chain, linalg::GenericOp op) {
  if (chain.ops.empty()) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
      return false;
    chain.rows.assign(ranges.begin(), ranges.end() - 1);
    chain.length = ranges.back();
  }
  std::optional<Kind> kind = kindOver(op, chain.rows, chain.length);
  if (!kind || !plainBody(op) ||
      !llvm::all_of(op->getOperands(), isPlainBuffer))
    return false;
  ChainOp c{op, *kind, std::nullopt, nullptr};
  Value outArg = op.getBlock()->getArguments().back();
  if (*kind == Kind::Reduce) {
    std::string why;
    c.reduction = analyzeReduction(op, why);
    // Not a contraction whose outputs share operands (a GEMM's): register
    // tiles reuse them, a workgroup per output would read them again.
    if (!c.reduction || !subgroupKind(*c.reduction) ||
        !c.reduction->combiner->getResult(0).getType().isF32() ||
        sharesOperands(*c.reduction) || readsAlongOutputs(*c.reduction) ||
        analyzeGemm(op, why))
      return false;
    c.fill = fillBefore(op);
  } else if (!outArg.use_empty()) {
    return false;
  }
  unsigned k = chain.rows.size();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value base = baseOf(input->get());
    auto it = chain.results.find(base);
    if (it == chain.results.end())
      continue;
    AffineMap map = maps[input->getOperandNumber()];
    bool own = it->second == Kind::Row
                   ? *kind != Kind::Value && input->get() == base &&
                         map.isIdentity()
                   : readsOwnRow(map, input->get(), base, k);
    if (!own)
      return false;
  }
  // Its output must not be a buffer the chain reads at any element: other
  // threads may still read the elements it overwrites. (One of the
  // chain's results, reused, is read only at the element a thread
  // writes, or a row's value, which thread 0 writes.)
  Value out = baseOf(op.getDpsInitOperand(0)->get());
  if (out != op.getDpsInitOperand(0)->get() || chain.outside.count(out))
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value base = baseOf(input->get());
    if (!chain.results.count(base))
      chain.outside.insert(base);
  }
  if (chain.outside.count(out))
    return false;
  chain.results[out] = *kind == Kind::Row ? Kind::Row : Kind::Value;
  chain.reductions += *kind == Kind::Reduce;
  chain.ops.push_back(c);
  return true;
}

/// The chains of `kernel` that take a row launch on `chip`.
std::vector<Chain> chainsOf(func::FuncOp kernel, const GpuChip &chip) {
  std::vector<Chain> found;
  if (!chip.subgroupReductions)
    return found;
  const ChipLimits &l = chip.limits;
  Chain current;
  auto close = [&] {
    int64_t rows = 1;
    for (int64_t p : current.rows)
      rows *= p;
    int64_t threads = groupThreads(current.length, l);
    bool fits = rows <= l.maxWorkgroupCount[0] &&
                (threads + 1) * 4 <= l.sharedMemoryBytes &&
                (l.maxLoopIterations == 0 ||
                 (current.length + threads - 1) / threads <=
                     l.maxLoopIterations);
    if (current.reductions > 0 && current.ops.size() >= 2 &&
        current.length >= kMinRowLength && fits)
      found.push_back(std::move(current));
    current = Chain();
  };
  for (Operation &any : kernel.getBody().front()) {
    if (isTransparent(&any))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(&any);
    if (fill) {
      // A reduction's start right before it goes with it.
      auto next = dyn_cast_or_null<linalg::GenericOp>(fill->getNextNode());
      if (next && fillBefore(next) == fill)
        continue;
    }
    auto op = dyn_cast<linalg::GenericOp>(&any);
    if (op && extend(current, op))
      continue;
    close();
    if (op)
      extend(current, op);
  }
  close();
  return found;
}

/// The launch replacing a chain.
class RowLaunchEmitter {
public:
  RowLaunchEmitter(const Chain &chain, int64_t threads)
      : chain(chain), threads(threads),
        perThread((chain.length + threads - 1) / threads),
        registers(perThread <= kMaxRowRegisters), b(chain.ops.back().op),
        loc(chain.ops.back().op.getLoc()) {
    b.setInsertionPointAfter(chain.ops.back().op);
    for (const ChainOp &o : chain.ops)
      chainOps.insert(o.op);
  }

  mlir::gpu::LaunchOp emit();

private:
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  /// `op`'s yielded value at `loops`, its output argument as `acc`; the
  /// chain's row elements in registers are this thread's `j`th.
  Value evaluate(linalg::GenericOp op, ArrayRef<Value> loops, Value acc,
                 int64_t j = -1);
  /// `body(r)` for r = tid, tid + threads, ... < R, carrying `init`.
  Value overRow(Value init, function_ref<Value(Value r, Value acc)> body);
  /// The same unrolled (registers): body(j, r) for this thread's `j`th
  /// element r, under an scf.if where r may be past the row (`orElse` the
  /// value there).
  Value atElement(int64_t j, Value orElse, function_ref<Value(Value r)> body);
  void emitRow(const ChainOp &op);
  void emitReduce(const ChainOp &op);
  void emitOp(const ChainOp &c);
  /// Thread 0 stores a row's value where the op wrote it.
  void storeValue(linalg::GenericOp op, Value v);
  SmallVector<Value> at(Value r) {
    SmallVector<Value> loops(row);
    loops.push_back(r);
    return loops;
  }

  const Chain &chain;
  int64_t threads;
  /// Each thread's elements of a row, and whether the chain keeps them in
  /// registers (few enough): then a row element is stored only where
  /// something after the chain reads it.
  int64_t perThread;
  bool registers;
  llvm::DenseSet<Operation *> chainOps;
  OpBuilder b;
  Location loc;
  Value tid, shared;
  SmallVector<Value> row; // this workgroup's row (P's loops)
  llvm::DenseMap<Value, Value> values; // a row's values, by buffer
  /// This thread's row elements in registers, by buffer.
  llvm::DenseMap<Value, SmallVector<Value>> elements;
};

/// Whether something other than the chain's ops reads or keeps `buffer`
/// (a kernel argument, or an allocation used elsewhere, views included).
bool usedAfter(Value buffer, const llvm::DenseSet<Operation *> &chainOps) {
  if (isa<BlockArgument>(buffer))
    return true;
  SmallVector<Value> work{buffer};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (chainOps.contains(user) || isa<memref::DeallocOp>(user))
        continue;
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
        work.push_back(user->getResult(0));
        continue;
      }
      return true;
    }
  }
  return false;
}

Value RowLaunchEmitter::evaluate(linalg::GenericOp op, ArrayRef<Value> loops,
                                 Value acc, int64_t j) {
  Block &body = *op.getBlock();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    unsigned i = input->getOperandNumber();
    Value base = baseOf(input->get());
    auto value = values.find(base);
    auto kept = elements.find(base);
    mapping.map(body.getArgument(i),
                value != values.end() ? value->second
                : kept != elements.end() && j >= 0
                    ? kept->second[j]
                    : b.create<memref::LoadOp>(
                           loc, input->get(), indicesAt(b, loc, maps[i], loops))
                          .getResult());
  }
  if (acc)
    mapping.map(body.getArguments().back(), acc);
  for (Operation &o : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(o))
      mapping.map(index.getResult(), loops[index.getDim()]);
    else
      b.clone(o, mapping);
  }
  return mapping.lookupOrDefault(body.getTerminator()->getOperand(0));
}

Value RowLaunchEmitter::overRow(Value init,
                                function_ref<Value(Value, Value)> body) {
  SmallVector<Value> inits;
  if (init)
    inits.push_back(init);
  auto loop = b.create<scf::ForOp>(loc, tid, c(chain.length), c(threads),
                                   inits);
  OpBuilder::InsertionGuard guard(b);
  if (!init) { // the loop has its (empty) yield already
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar(), Value());
    return Value();
  }
  b.setInsertionPointToStart(loop.getBody());
  Value next = body(loop.getInductionVar(), loop.getRegionIterArgs()[0]);
  b.create<scf::YieldOp>(loc, next);
  return loop.getResult(0);
}

void RowLaunchEmitter::storeValue(linalg::GenericOp op, Value v) {
  Value first =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, c(0));
  b.create<scf::IfOp>(loc, first, [&](OpBuilder &nb, Location) {
    nb.create<memref::StoreOp>(loc, v, op.getDpsInitOperand(0)->get(), row);
    nb.create<scf::YieldOp>(loc);
  });
}

Value RowLaunchEmitter::atElement(int64_t j, Value orElse,
                                  function_ref<Value(Value r)> body) {
  Value r = b.create<arith::AddIOp>(loc, tid, c(j * threads));
  if ((j + 1) * threads <= chain.length) // every thread's is in the row
    return body(r);
  Value inRow = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, r,
                                        c(chain.length));
  auto branch = b.create<scf::IfOp>(
      loc, inRow,
      [&](OpBuilder &nb, Location) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        b.create<scf::YieldOp>(loc, body(r));
      },
      [&](OpBuilder &nb, Location) { nb.create<scf::YieldOp>(loc, orElse); });
  return branch.getResult(0);
}

void RowLaunchEmitter::emitRow(const ChainOp &op) {
  Value out = op.op.getDpsInitOperand(0)->get();
  if (!registers) {
    overRow(Value(), [&](Value r, Value) {
      SmallVector<Value> loops = at(r);
      b.create<memref::StoreOp>(loc, evaluate(op.op, loops, Value()), out,
                                loops);
      return Value();
    });
    return;
  }
  bool store = usedAfter(out, chainOps);
  Type type = cast<MemRefType>(out.getType()).getElementType();
  Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(type));
  SmallVector<Value> kept;
  for (int64_t j = 0; j < perThread; ++j)
    kept.push_back(atElement(j, zero, [&](Value r) {
      SmallVector<Value> loops = at(r);
      Value v = evaluate(op.op, loops, Value(), j);
      if (store)
        b.create<memref::StoreOp>(loc, v, out, loops);
      return v;
    }));
  elements[out] = std::move(kept);
}

void RowLaunchEmitter::emitReduce(const ChainOp &op) {
  const Reduction &r = *op.reduction;
  Value out = op.op.getDpsInitOperand(0)->get();
  // The start: the fill taken over, the row's value an earlier op left in
  // the buffer, or what was there (read before the barriers, thread 0
  // stores after them).
  Value start = op.fill ? op.fill.getInputs()[0]
                : values.count(out)
                    ? values.lookup(out)
                    : b.create<memref::LoadOp>(loc, out, row).getResult();
  Value partial = b.create<arith::ConstantOp>(loc, r.identity);
  if (!registers) {
    partial = overRow(partial, [&](Value i, Value acc) {
      return evaluate(op.op, at(i), acc);
    });
  } else {
    for (int64_t j = 0; j < perThread; ++j)
      partial = atElement(j, partial, [&](Value i) {
        return evaluate(op.op, at(i), partial, j);
      });
  }
  Value total = subgroupTotal(b, loc, r, *subgroupKind(r), tid, threads,
                              partial, shared, /*broadcast=*/true);
  Value v = combineWith(b, r, start, total);
  values[out] = v;
  storeValue(op.op, v);
}

void RowLaunchEmitter::emitOp(const ChainOp &op) {
  switch (op.kind) {
  case Kind::Row:
    emitRow(op);
    return;
  case Kind::Value: {
    Value v = evaluate(op.op, row, Value());
    values[op.op.getDpsInitOperand(0)->get()] = v;
    storeValue(op.op, v);
    return;
  }
  case Kind::Reduce:
    emitReduce(op);
    return;
  }
}

mlir::gpu::LaunchOp RowLaunchEmitter::emit() {
  int64_t rows = 1;
  for (int64_t p : chain.rows)
    rows *= p;
  auto sharedType = MemRefType::get(
      {threads + 1}, b.getF32Type(), MemRefLayoutAttrInterface(),
      mlir::gpu::AddressSpaceAttr::get(b.getContext(),
                                       mlir::gpu::AddressSpace::Workgroup));
  auto launch = b.create<mlir::gpu::LaunchOp>(
      loc, c(rows), c(1), c(1), c(threads), c(1), c(1),
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange(), TypeRange{sharedType});
  launch->setAttr(kOwnLaunch, UnitAttr::get(b.getContext()));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  b.create<mlir::gpu::TerminatorOp>(loc);
  b.setInsertionPointToStart(&body);
  tid = launch.getThreadIds().x;
  shared = launch.getWorkgroupAttributions()[0];
  // The row's loops from the block id, the last fastest.
  row.assign(chain.rows.size(), Value());
  Value linear = launch.getBlockIds().x;
  for (int64_t d = int64_t(chain.rows.size()) - 1; d >= 0; --d) {
    row[d] = d == 0 ? linear
                    : b.create<arith::RemUIOp>(loc, linear, c(chain.rows[d]))
                          .getResult();
    if (d)
      linear = b.create<arith::DivUIOp>(loc, linear, c(chain.rows[d]));
  }
  for (const ChainOp &op : chain.ops)
    emitOp(op);
  return launch;
}

/// The model's time: every buffer the chain touches once from DRAM (the
/// row's elements it writes twice), or its arithmetic at the chip's fp32
/// rate, whichever is longer, plus one launch.
void predict(DispatchNote &note, const Chain &chain, const ChipNumbers &n) {
  if (!n.known())
    return;
  double bytes = 0, ops = 0;
  llvm::DenseSet<Value> counted;
  for (const ChainOp &c : chain.ops) {
    for (Value v : c.op->getOperands())
      if (counted.insert(baseOf(v)).second)
        bytes += double(bufferBytes(baseOf(v)));
    int64_t iterations = 1;
    for (int64_t r : c.op.getStaticLoopRanges())
      iterations *= r;
    ops += double(iterations) *
           double(std::distance(c.op.getBlock()->begin(),
                                c.op.getBlock()->end()));
  }
  double memoryS = bytes / (n.bandwidthGBs * 1e9);
  double issueS = ops / (n.peakGflops * 1e9 / 2);
  note.predictedMs =
      std::max(memoryS, issueS) * 1e3 + kLaunchMicroseconds / 1e3;
  note.bound = memoryS >= issueS ? "memory" : "issue";
}

} // namespace

OwnLaunches emitRowLaunches(func::FuncOp kernel, const GpuChip &chip) {
  OwnLaunches out;
  for (Chain &chain : chainsOf(kernel, chip)) {
    int64_t threads = groupThreads(chain.length, chip.limits);
    mlir::gpu::LaunchOp launch = RowLaunchEmitter(chain, threads).emit();
    DispatchNote &note = out[launch];
    note.sharedBytes = (threads + 1) * 4;
    predict(note, chain, chip.numbers);
    for (ChainOp &c : llvm::reverse(chain.ops)) {
      c.op->erase();
      if (c.fill)
        c.fill->erase();
    }
  }
  return out;
}

bool hasRowLaunches(func::FuncOp kernel, const GpuChip &chip) {
  return !chainsOf(kernel, chip).empty();
}

} // namespace ign::gpu
