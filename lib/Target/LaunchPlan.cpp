//===- LaunchPlan.cpp - launches, buffers and the arena of a model --------===//

#include "ign/Target/LaunchPlan.h"
#include "ign/Bundle/MemoryPlan.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace ign {

std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(1))
    return "bool";
  if (auto it = dyn_cast<IntegerType>(t))
    return (it.isUnsigned() ? "u" : "i") + std::to_string(it.getWidth());
  return "unknown";
}

namespace {

bundle::TensorSpec describe(Type type, llvm::StringRef name) {
  auto t = cast<ShapedType>(type);
  return {name.str(), dtypeName(t.getElementType()),
          std::vector<int64_t>(t.getShape().begin(), t.getShape().end())};
}

uint64_t byteSize(Type type) {
  auto t = cast<ShapedType>(type);
  return uint64_t(t.getNumElements()) * ((t.getElementTypeBitWidth() + 7) / 8);
}

/// Where a value lives before the arena is laid out.
struct Slot {
  enum Kind { Input, Weight, Buffer } kind;
  size_t index;        // input/weight index, or intermediate buffer id
  uint64_t offset = 0; // bytes into the buffer (a concat's part, a split's)
};

/// A launch argument whose buffer is resolved once all launches are known.
struct PendingArg {
  Slot slot;
  Type type;
};

struct PendingLaunch {
  using Kind = bundle::LaunchSpec::Kind;
  Kind kind = Kind::Kernel;
  size_t kernel = 0;
  std::vector<PendingArg> args;
  int64_t copyTo = -1;   // copies into a model output: its index
  size_t to = 0;         // Branch, Jump, Loop, Next: the launch to go on at
  int64_t maxTrips = -1; // Loop
  std::string at;        // Copy: "to" or "from" the slice args[2] indexes
  std::string message;   // Fail; Loop: the node that must run all trips
};

/// The launches of @main before the arena is laid out: where each value
/// lives, the intermediate buffers with their lifetimes, and the launches.
struct PendingPlan {
  llvm::DenseMap<Value, Slot> slots;
  std::vector<bundle::BufferLifetime> buffers;
  /// Per buffer: whether a kernel call of @main (not a branch or a loop
  /// body) defined it, and whether slots view it at an offset (then no
  /// output takes it over: an output argument has no offset).
  std::vector<bool> fromMainCall, viewed;
  /// Whether concats and splits of whole, contiguous pieces become views
  /// (no launch), and how deep in branches and loop bodies the walk is.
  bool aliasPieces = false;
  int depth = 0;
  std::vector<PendingLaunch> launches;
  llvm::StringMap<size_t> kernelIndex;
  llvm::DenseMap<Attribute, size_t> weightIndex;

  /// The slot of `v`, now read by launch `launch`.
  FailureOr<Slot> use(Value v, int64_t launch) {
    auto it = slots.find(v);
    if (it == slots.end())
      return failure();
    if (it->second.kind == Slot::Buffer)
      buffers[it->second.index].last = launch;
    return it->second;
  }
  /// A new intermediate of `type`, written first by launch `launch`.
  Slot buffer(Type type, int64_t launch) {
    Slot s{Slot::Buffer, buffers.size()};
    buffers.push_back({byteSize(type), launch, launch});
    fromMainCall.push_back(false);
    viewed.push_back(false);
    return s;
  }
  /// A new intermediate for `v`, written first by launch `launch`.
  Slot define(Value v, int64_t launch) {
    Slot s = buffer(v.getType(), launch);
    slots[v] = s;
    return s;
  }
  /// Keeps `s` (when an intermediate) alive until launch `launch`.
  void keep(Slot s, int64_t launch) {
    if (s.kind == Slot::Buffer)
      buffers[s.index].last = std::max(buffers[s.index].last, launch);
  }
  /// Appends a copy of `from` into `to` (views of types `fromType` and
  /// `toType`), at the slice `index` indexes when `at` is "to" or "from".
  void copy(Slot from, Type fromType, Slot to, Type toType,
            llvm::StringRef at = "", std::optional<Slot> index = {},
            Type indexType = {}) {
    PendingLaunch c;
    c.kind = PendingLaunch::Kind::Copy;
    c.args = {{from, fromType}, {to, toType}};
    if (index)
      c.args.push_back({*index, indexType});
    c.at = at.str();
    for (const PendingArg &a : c.args)
      keep(a.slot, next());
    launches.push_back(std::move(c));
  }
  int64_t next() const { return int64_t(launches.size()); }

  /// Moves buffer `old` into buffer `to` at byte `offset`: every launch
  /// and slot that used it uses that part of `to`, which is alive whenever
  /// `old` was.
  void moveInto(size_t old, size_t to, uint64_t offset) {
    auto moved = [&](Slot &s) {
      if (s.kind == Slot::Buffer && s.index == old)
        s = {Slot::Buffer, to, s.offset + offset};
    };
    for (PendingLaunch &l : launches)
      for (PendingArg &a : l.args)
        moved(a.slot);
    for (auto &[v, s] : slots)
      moved(s);
    buffers[to].first = std::min(buffers[to].first, buffers[old].first);
    buffers[to].last = std::max(buffers[to].last, buffers[old].last);
    buffers[old].bytes = 0; // no launch uses it any more
    viewed[to] = true;
  }

  /// Lets the launches from `from` on that write or read `v`'s buffer use
  /// the buffer `to` instead (no copy of a branch's result). False when
  /// `v`'s buffer is not an intermediate of those launches.
  bool retarget(Value v, Slot to, int64_t from) {
    auto it = slots.find(v);
    if (it == slots.end() || it->second.kind != Slot::Buffer ||
        to.kind != Slot::Buffer || buffers[it->second.index].first < from ||
        buffers[it->second.index].bytes != buffers[to.index].bytes)
      return false;
    size_t old = it->second.index;
    for (size_t l = size_t(from); l < launches.size(); ++l)
      for (PendingArg &a : launches[l].args)
        if (a.slot.kind == Slot::Buffer && a.slot.index == old)
          a.slot = {Slot::Buffer, to.index, a.slot.offset};
    buffers[to.index].last =
        std::max(buffers[to.index].last, buffers[old].last);
    buffers[old].bytes = 0; // no launch uses it any more
    it->second = to;
    return true;
  }
};

LogicalResult collectBody(func::FuncOp f, LaunchPlan &plan,
                          PendingPlan &pending,
                          SmallVectorImpl<Value> *returned);

/// The one op of kernel `call` calls when that is a `Op` of the kernel's
/// arguments, in order, returning its results (with `someResults`, only
/// some of them, in order: a split whose other pieces nothing reads); else
/// null.
template <typename Op>
Op soleOpOf(func::CallOp call, bool someResults = false) {
  auto callee = call->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
      call.getCalleeAttr());
  if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
    return {};
  Block &body = callee.getBody().front();
  auto op = dyn_cast<Op>(body.front());
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!op || std::next(body.begin()) != Block::iterator(ret) ||
      !llvm::equal(op->getOperands(), body.getArguments()))
    return {};
  if (llvm::equal(ret.getOperands(), op->getResults()))
    return op;
  // Each returned value a result of op, after the one returned before it.
  auto results = op->getResults();
  auto next = results.begin();
  for (Value v : ret.getOperands()) {
    next = std::find(next, results.end(), v);
    if (next == results.end())
      return {};
    ++next;
  }
  return someResults ? op : Op();
}

/// Whether the pieces along `axis` of a tensor of `type` (static) are each
/// one contiguous run of bytes: every dim before the axis is 1.
bool piecesAreContiguous(Type type, int64_t axis) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || axis < 0 || axis >= t.getRank())
    return false;
  return llvm::all_of(t.getShape().take_front(axis),
                      [](int64_t d) { return d == 1; });
}

/// A concat of whole intermediates of @main's kernel calls along an axis
/// whose pieces are contiguous (a channel concat at batch 1): no launch,
/// each input's buffer moved into the result's, so that its producer
/// writes its piece in place. False (nothing changed) otherwise.
bool concatInPlace(func::CallOp call, PendingPlan &pending) {
  auto concat = soleOpOf<ConcatOp>(call);
  if (!concat || !piecesAreContiguous(concat.getType(), concat.getAxis()))
    return false;
  llvm::SmallDenseSet<size_t, 8> seen;
  for (Value v : concat.getInputs()) {
    auto it = pending.slots.find(
        call.getOperand(cast<BlockArgument>(v).getArgNumber()));
    if (it == pending.slots.end())
      return false;
    const Slot &in = it->second;
    if (in.kind != Slot::Buffer || in.offset != 0 ||
        !pending.fromMainCall[in.index] ||
        pending.buffers[in.index].bytes != byteSize(v.getType()) ||
        !seen.insert(in.index).second)
      return false;
  }
  int64_t at = pending.next();
  Slot out = pending.define(call.getResult(0), at);
  pending.fromMainCall[out.index] = true;
  pending.buffers[out.index].last = 0; // the pieces' lifetimes make it up
  uint64_t offset = 0;
  for (Value in : call.getOperands()) {
    size_t piece = pending.slots[in].index;
    uint64_t bytes = pending.buffers[piece].bytes;
    pending.moveInto(piece, out.index, offset);
    offset += bytes;
  }
  pending.buffers[out.index].last =
      std::max(pending.buffers[out.index].last, at);
  return true;
}

/// A split of an intermediate along an axis whose pieces are contiguous:
/// no launch, each result a view of its piece of the input's buffer.
bool splitInPlace(func::CallOp call, PendingPlan &pending) {
  auto split = soleOpOf<SplitOp>(call, /*someResults=*/true);
  if (!split ||
      !piecesAreContiguous(split.getInput().getType(), split.getAxis()))
    return false;
  auto it = pending.slots.find(call.getOperand(0));
  if (it == pending.slots.end() || it->second.kind != Slot::Buffer)
    return false;
  Slot in = it->second;
  uint64_t offset = in.offset;
  // The kernel returns some of the pieces (the others dead), in order.
  Operation *ret = split->getBlock()->getTerminator();
  unsigned returned = 0;
  for (Value piece : split.getResults()) {
    if (returned < ret->getNumOperands() && ret->getOperand(returned) == piece)
      pending.slots[call.getResult(returned++)] = {Slot::Buffer, in.index,
                                                   offset};
    offset += byteSize(piece.getType());
  }
  pending.viewed[in.index] = true;
  pending.keep(in, pending.next());
  return true;
}

/// A kernel call: one launch whose results are new buffers.
LogicalResult collectCall(func::CallOp call, LaunchPlan &plan,
                          PendingPlan &pending) {
  if (pending.aliasPieces && pending.depth == 0 &&
      (concatInPlace(call, pending) || splitInPlace(call, pending)))
    return success();
  int64_t index = pending.next();
  PendingLaunch launch;
  auto [it, inserted] =
      pending.kernelIndex.try_emplace(call.getCallee(), plan.kernels.size());
  if (inserted)
    plan.kernels.push_back(call.getCallee().str());
  launch.kernel = it->second;
  for (Value v : call.getOperands()) {
    auto slot = pending.use(v, index);
    if (failed(slot))
      return call.emitError("a kernel argument without a buffer");
    launch.args.push_back({*slot, v.getType()});
  }
  for (Value r : call.getResults()) {
    launch.args.push_back({pending.define(r, index), r.getType()});
    pending.fromMainCall[launch.args.back().slot.index] = pending.depth == 0;
  }
  pending.launches.push_back(std::move(launch));
  return success();
}

/// The graph function `ref` names from `op`, or an error.
static FailureOr<func::FuncOp> graphOf(Operation *op, FlatSymbolRefAttr ref) {
  auto graph = op->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(ref);
  if (!graph || graph.isExternal() || !graph.getBody().hasOneBlock())
    return op->emitError("graph ") << ref << " is missing";
  return graph;
}

/// One branch of an ign.if: its graph's launches and the copies of its
/// results into `results` (none where the last kernel can write them in
/// place), or a fail launch where the branch has an error instead.
static LogicalResult collectBranch(IfOp op, FlatSymbolRefAttr ref,
                                   StringAttr error, ArrayRef<Slot> results,
                                   LaunchPlan &plan, PendingPlan &pending) {
  if (!ref) {
    PendingLaunch fail;
    fail.kind = PendingLaunch::Kind::Fail;
    fail.message = error.str();
    pending.launches.push_back(std::move(fail));
    return success();
  }
  auto graph = graphOf(op, ref);
  if (failed(graph))
    return failure();
  for (auto [arg, capture] :
       llvm::zip(graph->getArguments(), op.getCaptures())) {
    auto slot = pending.use(capture, pending.next());
    if (failed(slot))
      return op.emitError("an If capture without a buffer");
    pending.slots[arg] = *slot;
  }
  SmallVector<Value> returned;
  int64_t bodyStart = pending.next();
  ++pending.depth;
  LogicalResult walked = collectBody(*graph, plan, pending, &returned);
  --pending.depth;
  if (failed(walked))
    return failure();
  for (auto [v, to, r] : llvm::zip(returned, results, op.getResults())) {
    if (pending.retarget(v, to, bodyStart))
      continue;
    auto from = pending.use(v, pending.next());
    if (failed(from))
      return op.emitError("an If result without a buffer");
    pending.copy(*from, v.getType(), to, r.getType());
  }
  return success();
}

/// An ign.if: a branch over the then graph's launches to the else graph's,
/// the then graph's ending in a jump past the else graph's.
LogicalResult collectIf(IfOp op, LaunchPlan &plan, PendingPlan &pending) {
  int64_t branchAt = pending.next();
  auto cond = pending.use(op.getCondition(), branchAt);
  if (failed(cond))
    return op.emitError("an If condition without a buffer");
  PendingLaunch branch;
  branch.kind = PendingLaunch::Kind::Branch;
  branch.args.push_back({*cond, op.getCondition().getType()});
  pending.launches.push_back(std::move(branch));
  // The results are alive from the branch on: neither graph's
  // intermediates may share their bytes.
  SmallVector<Slot> results;
  for (Value r : op.getResults())
    results.push_back(pending.define(r, branchAt));
  if (failed(collectBranch(op, op.getThenGraphAttr(), op.getThenErrorAttr(),
                           results, plan, pending)))
    return failure();
  size_t jumpAt = pending.launches.size();
  PendingLaunch jump;
  jump.kind = PendingLaunch::Kind::Jump;
  pending.launches.push_back(std::move(jump));
  pending.launches[branchAt].to = pending.launches.size();
  if (failed(collectBranch(op, op.getElseGraphAttr(), op.getElseErrorAttr(),
                           results, plan, pending)))
    return failure();
  pending.launches[jumpAt].to = pending.launches.size();
  return success();
}

/// The state an ign.loop keeps between iterations, in buffers of its own.
struct LoopState {
  Slot counter, cond;
  SmallVector<Slot> carried, scanOutputs, slices;
};

/// Sets up an ign.loop's state: the counter, the condition and the carried
/// values copied in (the carried values live in the op's result buffers),
/// the scan outputs' buffers, a slice buffer per scan input.
static FailureOr<LoopState> startLoop(LoopOp op, func::FuncOp body,
                                      PendingPlan &pending) {
  LoopState st;
  int64_t start = pending.next();
  Type i64 = body.getArgument(0).getType();
  st.counter = pending.buffer(i64, start);
  st.cond = pending.buffer(op.getCondition().getType(), start);
  auto from = pending.use(op.getCondition(), start);
  if (failed(from))
    return op.emitError("a loop condition without a buffer");
  pending.copy(*from, op.getCondition().getType(), st.cond,
               op.getCondition().getType());
  for (auto [init, r] : llvm::zip(op.getInits(), op.getResults())) {
    Slot carried = pending.define(r, start);
    auto in = pending.use(init, pending.next());
    if (failed(in))
      return op.emitError("a carried value without a buffer");
    pending.copy(*in, init.getType(), carried, r.getType());
    st.carried.push_back(carried);
  }
  for (Value r : op.getResults().drop_front(op.getInits().size()))
    st.scanOutputs.push_back(pending.define(r, start));
  size_t firstSlice = 2 + op.getInits().size();
  for (size_t i = 0; i < op.getScanInputs().size(); ++i)
    st.slices.push_back(
        pending.buffer(body.getArgument(firstSlice + i).getType(), start));
  return st;
}

/// Copies the body's results into the loop state: scan slices and values
/// that are themselves loop state go first (into temporaries), so that no
/// copy reads a state buffer an earlier copy of this iteration wrote.
static LogicalResult endIteration(LoopOp op, func::FuncOp body,
                                  ArrayRef<Value> returned, const LoopState &st,
                                  PendingPlan &pending) {
  Type i64 = body.getArgument(0).getType();
  size_t first = op.getBodyCond() ? 1 : 0;
  ArrayRef<Value> scans = returned.drop_front(first + st.carried.size());
  for (auto [v, out, r] :
       llvm::zip(scans, st.scanOutputs,
                 op.getResults().drop_front(op.getInits().size()))) {
    auto from = pending.use(v, pending.next());
    if (failed(from))
      return op.emitError("a scan output without a buffer");
    pending.copy(*from, v.getType(), out, r.getType(), "to", st.counter, i64);
  }
  SmallVector<std::pair<Value, Slot>> writes;
  if (op.getBodyCond())
    writes.push_back({returned[0], st.cond});
  for (auto [v, to] : llvm::zip(returned.drop_front(first), st.carried))
    writes.push_back({v, to});
  auto isState = [&](Slot s) {
    return s.kind == Slot::Buffer &&
           (s.index == st.cond.index || llvm::any_of(st.carried, [&](Slot c) {
              return c.index == s.index;
            }));
  };
  SmallVector<std::tuple<Slot, Slot, Type>> later;
  for (auto [v, to] : writes) {
    auto from = pending.use(v, pending.next());
    if (failed(from))
      return op.emitError("a loop-carried value without a buffer");
    if (from->kind == to.kind && from->index == to.index)
      continue; // carried unchanged
    if (!isState(*from)) {
      pending.copy(*from, v.getType(), to, v.getType());
      continue;
    }
    Slot temp = pending.buffer(v.getType(), pending.next());
    later.push_back({temp, to, v.getType()});
    pending.copy(*from, v.getType(), temp, v.getType());
  }
  // The direct copies above read no state; these read the temporaries.
  for (auto [temp, to, type] : later)
    pending.copy(temp, type, to, type);
  return success();
}

/// An ign.loop: its state set up, then a loop test (past the loop when the
/// trip count or condition says so), the scan inputs' slices of this
/// iteration, the body's launches, the copies into the state, and a next
/// that counts the iteration and goes back to the test.
LogicalResult collectLoop(LoopOp op, LaunchPlan &plan, PendingPlan &pending) {
  auto body = graphOf(op, op.getBodyAttr());
  if (failed(body))
    return failure();
  auto st = startLoop(op, *body, pending);
  if (failed(st))
    return failure();
  Type i64 = body->getArgument(0).getType();
  int64_t loopAt = pending.next();
  PendingLaunch test;
  test.kind = PendingLaunch::Kind::Loop;
  test.args = {{st->counter, i64}, {st->cond, op.getCondition().getType()}};
  std::optional<Slot> trip;
  if (Value t = op.getTripCount()) {
    auto slot = pending.use(t, loopAt);
    if (failed(slot))
      return op.emitError("a trip count without a buffer");
    trip = *slot;
    test.args.push_back({*slot, t.getType()});
  }
  test.maxTrips = op.getMaxTrips() ? int64_t(*op.getMaxTrips()) : -1;
  if (auto name = op.getMustRunAllAttr())
    test.message = name.str(); // stopping before maxTrips fails the run
  pending.launches.push_back(std::move(test));
  // The body's arguments: counter, condition, carried, slices, captures.
  SmallVector<Slot> outer;
  auto args = body->getArguments();
  pending.slots[args[0]] = st->counter;
  pending.slots[args[1]] = st->cond;
  for (auto [arg, s] : llvm::zip(args.drop_front(2), st->carried))
    pending.slots[arg] = s;
  size_t firstSlice = 2 + st->carried.size();
  for (auto [i, in] : llvm::enumerate(op.getScanInputs())) {
    auto from = pending.use(in, pending.next());
    if (failed(from))
      return op.emitError("a scan input without a buffer");
    outer.push_back(*from);
    Value arg = args[firstSlice + i];
    pending.copy(*from, in.getType(), st->slices[i], arg.getType(), "from",
                 st->counter, i64);
    pending.slots[arg] = st->slices[i];
  }
  for (auto [arg, capture] : llvm::zip(
           args.drop_front(firstSlice + st->slices.size()), op.getCaptures())) {
    auto slot = pending.use(capture, pending.next());
    if (failed(slot))
      return op.emitError("a loop capture without a buffer");
    outer.push_back(*slot);
    pending.slots[arg] = *slot;
  }
  SmallVector<Value> returned;
  ++pending.depth;
  LogicalResult walked = collectBody(*body, plan, pending, &returned);
  --pending.depth;
  if (failed(walked) || failed(endIteration(op, *body, returned, *st, pending)))
    return failure();
  PendingLaunch next;
  next.kind = PendingLaunch::Kind::Next;
  next.args = {{st->counter, i64}};
  next.to = size_t(loopAt);
  pending.launches.push_back(std::move(next));
  int64_t end = pending.next();
  pending.launches[loopAt].to = size_t(end);
  // What the iterations read and carry stays until the loop is over: the
  // body runs again after its last launch.
  for (Slot s : {st->counter, st->cond})
    pending.keep(s, end);
  for (const auto *list : {&st->carried, &st->scanOutputs, &st->slices, &outer})
    for (Slot s : *list)
      pending.keep(s, end);
  if (trip)
    pending.keep(*trip, end);
  return success();
}

/// Walks a graph function's body (@main or a branch): its constants become
/// weights, its reshapes views, each kernel call a launch whose results are
/// new buffers, each ign.if a branch. `returned` gets the values returned.
LogicalResult collectBody(func::FuncOp f, LaunchPlan &plan,
                          PendingPlan &pending,
                          SmallVectorImpl<Value> *returned) {
  auto &slots = pending.slots;
  for (Operation &op : f.getBody().front()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto attr = dyn_cast<DenseResourceElementsAttr>(c.getValue());
      AsmResourceBlob *blob = attr ? attr.getRawHandle().getBlob() : nullptr;
      if (!blob)
        return c.emitError("a constant left in a graph after outlining");
      // One weight per blob: graphs that read the same weight share it.
      auto [it, added] =
          pending.weightIndex.try_emplace(attr, plan.weights.size());
      slots[c.getResult()] = {Slot::Weight, it->second};
      if (added)
        plan.weights.push_back(
            {describe(c.getType(), attr.getRawHandle().getKey()),
             blob->getData()});
    } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      auto it = slots.find(reshape.getInput());
      if (it == slots.end())
        return reshape.emitError("reshape of a value without a buffer");
      // A view: same bytes. Copied out first: inserting into the DenseMap
      // may grow it and move the entry `it` points to (that read freed
      // memory and, now and then, wrote a garbage argument kind into the
      // bundle).
      Slot view = it->second;
      slots[reshape.getResult()] = view;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (failed(collectCall(call, plan, pending)))
        return failure();
    } else if (auto ifOp = dyn_cast<IfOp>(op)) {
      if (failed(collectIf(ifOp, plan, pending)))
        return failure();
    } else if (auto loop = dyn_cast<LoopOp>(op)) {
      if (failed(collectLoop(loop, plan, pending)))
        return failure();
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (returned)
        returned->append(ret.getOperands().begin(), ret.getOperands().end());
    } else {
      return op.emitError("unexpected op in a graph after kernel outlining");
    }
  }
  return success();
}

/// Each output takes over the buffer that computes it, unless that buffer
/// is not an intermediate or already backs another output: then the value
/// is copied into the output after the last kernel. Returns, per buffer, the
/// output it backs (-1: none).
FailureOr<std::vector<int64_t>> assignOutputs(func::FuncOp main,
                                              PendingPlan &pending) {
  auto &slots = pending.slots;
  auto &buffers = pending.buffers;
  auto &launches = pending.launches;
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  std::vector<int64_t> bufferOutput(buffers.size(), -1);
  int64_t end = int64_t(launches.size());
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto it = slots.find(v);
    if (it == slots.end())
      return ret.emitError("an output without a buffer");
    Slot s = it->second;
    bool sameShape = v.getType() == main.getResultTypes()[k];
    if (s.kind == Slot::Buffer && bufferOutput[s.index] < 0 && sameShape &&
        s.offset == 0 && !pending.viewed[s.index] &&
        byteSize(v.getType()) == buffers[s.index].bytes) {
      bufferOutput[s.index] = int64_t(k);
      continue;
    }
    if (s.kind == Slot::Buffer)
      buffers[s.index].last = end;
    PendingLaunch copy;
    copy.kind = PendingLaunch::Kind::Copy;
    copy.copyTo = int64_t(k);
    copy.args.push_back({s, v.getType()});
    launches.push_back(std::move(copy));
  }
  return bufferOutput;
}

} // namespace

FailureOr<LaunchPlan> buildLaunchPlan(func::FuncOp main, bool piecesInPlace) {
  LaunchPlan plan;
  if (!main.getBody().hasOneBlock())
    return main.emitError("@main must have a single block");
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<StringAttr>(i, "ign.name");
    plan.inputs.push_back(
        describe(main.getArgumentTypes()[i], name ? name.getValue() : ""));
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "ign.name");
    plan.outputs.push_back(
        describe(main.getResultTypes()[i], name ? name.getValue() : ""));
    if (auto of = main.getResultAttrOfType<StringAttr>(i, kShapeOfAttr))
      plan.outputs.back().shapeOf = of.getValue().str();
  }

  PendingPlan pending;
  pending.aliasPieces = piecesInPlace;
  for (BlockArgument arg : main.getArguments())
    pending.slots[arg] = {Slot::Input, arg.getArgNumber()};
  if (failed(collectBody(main, plan, pending, /*returned=*/nullptr)))
    return failure();
  auto assigned = assignOutputs(main, pending);
  if (failed(assigned))
    return failure();
  const std::vector<int64_t> &bufferOutput = *assigned;
  const auto &buffers = pending.buffers;
  const auto &launches = pending.launches;

  // Only intermediates that no output took over go into the arena.
  std::vector<bundle::BufferLifetime> arenaBuffers;
  std::vector<size_t> arenaIndex(buffers.size(), 0);
  for (size_t b = 0; b < buffers.size(); ++b)
    if (bufferOutput[b] < 0) {
      arenaIndex[b] = arenaBuffers.size();
      arenaBuffers.push_back(buffers[b]);
    }
  bundle::MemoryPlan memory = bundle::planMemory(arenaBuffers);
  plan.arenaBytes = memory.arenaBytes;

  auto resolve = [&](const PendingArg &a) {
    bundle::LaunchArg arg;
    auto t = cast<ShapedType>(a.type);
    arg.dtype = dtypeName(t.getElementType());
    arg.shape.assign(t.getShape().begin(), t.getShape().end());
    switch (a.slot.kind) {
    case Slot::Input:
      arg.kind = "input", arg.index = a.slot.index;
      break;
    case Slot::Weight:
      arg.kind = "weight", arg.index = a.slot.index;
      break;
    case Slot::Buffer:
      if (bufferOutput[a.slot.index] >= 0) {
        arg.kind = "output", arg.index = uint64_t(bufferOutput[a.slot.index]);
      } else {
        arg.kind = "arena";
        arg.offset = memory.offsets[arenaIndex[a.slot.index]] + a.slot.offset;
      }
      break;
    }
    return arg;
  };
  for (const PendingLaunch &p : launches) {
    bundle::LaunchSpec spec;
    spec.kind = p.kind;
    spec.kernel = p.kernel;
    spec.to = p.to;
    spec.maxTrips = p.maxTrips;
    spec.at = p.at;
    spec.message = p.message;
    for (const PendingArg &a : p.args)
      spec.args.push_back(resolve(a));
    if (p.copyTo >= 0) {
      bundle::LaunchArg to;
      to.kind = "output";
      to.index = uint64_t(p.copyTo);
      to.dtype = plan.outputs[p.copyTo].dtype;
      to.shape = plan.outputs[p.copyTo].shape;
      spec.args.push_back(to);
    }
    plan.launches.push_back(std::move(spec));
  }
  return plan;
}

} // namespace ign
