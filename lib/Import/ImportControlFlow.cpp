//===- ImportControlFlow.cpp - If, Loop and Scan ------------------------===//
//
// An If whose condition is known at import inlines the taken branch. The
// rest become graph functions (func.func with `ign.graph`) called by
// ign.if and ign.loop: the subgraph's inputs and the outer values it reads
// (captures) are the function's arguments, host constants materialize
// inside it. The launch plan runs them (docs/bundle-format.md).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "llvm/ADT/ScopeExit.h"

namespace ign::import {

/// How messages name a node: its name, else its first output's.
static std::string displayName(const onnx::NodeProto &node) {
  return node.name().empty() && node.output_size() ? node.output(0)
                                                   : node.name();
}

/// The subgraph attribute `name` of `node`, or null.
static const onnx::GraphProto *graphAttr(const onnx::NodeProto &node,
                                         llvm::StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name && a.has_g())
      return &a.g();
  return nullptr;
}

LogicalResult GraphImporter::importIf(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  if (node.input_size() < 1 || node.input(0).empty())
    return emitError(loc) << "If has no condition input";
  if (!constants.count(node.input(0)))
    return importRuntimeIf(node);
  NodeImporter ni(*this, node, loc, opset);
  auto cond = ni.requireConstInput(0, "cond");
  if (failed(cond))
    return failure();
  if ((*cond)->numElements() != 1)
    return emitError(loc) << "If condition must hold one element";
  bool taken = (*cond)->getInt(0) != 0;
  const onnx::GraphProto *branch =
      graphAttr(node, taken ? "then_branch" : "else_branch");
  if (!branch)
    return emitError(loc) << "If has no " << (taken ? "then" : "else")
                          << "_branch graph";
  if (branch->output_size() != node.output_size())
    return emitError(loc) << "If branch has " << branch->output_size()
                          << " outputs, the node " << node.output_size();
  for (const auto &init : branch->initializer())
    if (failed(addInitializer(const_cast<onnx::TensorProto &>(init))))
      return failure();
  if (failed(importNodes(*branch, opset)))
    return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &from = branch->output(i).name();
    const std::string &to = node.output(i);
    if (to.empty())
      continue;
    if (auto it = constants.find(from); it != constants.end()) {
      constants[to] = it->second;
      continue;
    }
    auto v = lookup(from, loc);
    if (failed(v))
      return failure();
    values[to] = *v;
  }
  return success();
}

/// The names `g` reads from enclosing scopes (nested subgraphs included),
/// each once, in the order of first use.
static void freeNames(const onnx::GraphProto &g, std::set<std::string> bound,
                      std::set<std::string> &seen,
                      std::vector<std::string> &out) {
  for (const auto &in : g.input())
    bound.insert(in.name());
  for (const auto &init : g.initializer())
    bound.insert(init.name());
  auto read = [&](const std::string &name) {
    if (!name.empty() && !bound.count(name) && seen.insert(name).second)
      out.push_back(name);
  };
  for (const auto &node : g.node()) {
    for (const auto &in : node.input())
      read(in);
    for (const auto &a : node.attribute())
      if (a.has_g())
        freeNames(a.g(), bound, seen, out);
    for (const auto &o : node.output())
      bound.insert(o);
  }
  for (const auto &o : g.output())
    read(o.name());
}

/// Imports subgraph `g` as a private graph function: its arguments are
/// `leading` (the subgraph's own inputs; an empty name binds nothing), then
/// the captures; host constants it reads materialize inside it. A result
/// whose type differs from `expected[i]` (when given and not null) only in
/// shape is reshaped to it.
FailureOr<func::FuncOp> GraphImporter::importGraphFunction(
    const onnx::GraphProto &g, llvm::ArrayRef<GraphArg> leading,
    const Captures &captures, llvm::ArrayRef<Type> expected,
    llvm::StringRef name, Location loc) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(graphModule.getBody());
  SmallVector<Type> argTypes;
  for (const GraphArg &a : leading)
    argTypes.push_back(a.type);
  llvm::append_range(argTypes, ValueRange(captures.values).getTypes());
  auto func = builder.create<func::FuncOp>(
      loc, name, builder.getFunctionType(argTypes, {}));
  func.setPrivate();
  func->setAttr(kGraphAttr, builder.getUnitAttr());
  Block *entry = func.addEntryBlock();
  // The subgraph sees its arguments and constants only: a value of another
  // function cannot be used here.
  // Nor do run-time shapes flow out: a branch that fails to import is
  // erased, and an entry keyed by one of its values would dangle.
  llvm::StringMap<Value> outer = std::move(values);
  values = llvm::StringMap<Value>();
  auto outerShapes = std::move(runtimeShapes);
  runtimeShapes = decltype(runtimeShapes)();
  auto restore = llvm::make_scope_exit([&] {
    values = std::move(outer);
    runtimeShapes = std::move(outerShapes);
  });
  for (auto [a, arg] : llvm::zip(leading, entry->getArguments()))
    if (!a.name.empty())
      values[a.name] = arg;
  for (auto [n, arg] : llvm::zip(
           captures.names, entry->getArguments().drop_front(leading.size())))
    values[n] = arg;
  builder.setInsertionPointToEnd(entry);
  for (const auto &init : g.initializer())
    if (failed(addInitializer(const_cast<onnx::TensorProto &>(init))))
      return failure();
  if (failed(importNodes(g, opset)))
    return failure();
  SmallVector<Value> results;
  for (auto [i, out] : llvm::enumerate(g.output())) {
    auto v = lookup(out.name(), loc);
    if (failed(v))
      return failure();
    if (const RuntimeShape *s = runtimeShapeOf(*v))
      return emitError(loc) << "subgraph output '" << out.name()
                            << "' has a size known only at run time (an "
                               "output of "
                            << s->origin << "): not supported in a subgraph";
    auto want = i < expected.size() && expected[i]
                    ? dyn_cast<RankedTensorType>(expected[i])
                    : RankedTensorType();
    auto have = cast<RankedTensorType>(v->getType());
    if (want && have != want && have.hasStaticShape() &&
        want.getElementType() == have.getElementType() &&
        want.getNumElements() == have.getNumElements())
      *v = builder.create<ReshapeOp>(loc, want, *v,
                                     builder.getI64ArrayAttr(want.getShape()));
    results.push_back(*v);
  }
  builder.create<func::ReturnOp>(loc, results);
  func.setType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  return func;
}

/// The outer values the subgraphs read (each once): host constants and
/// names not known here are left to the subgraph (an error there if
/// unknown).
FailureOr<Captures> GraphImporter::captureOuterValues(
    llvm::ArrayRef<const onnx::GraphProto *> graphs, Location loc) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto *g : graphs)
    freeNames(*g, {}, seen, names);
  Captures captures;
  for (const std::string &n : names) {
    if (constants.count(n) || !isKnown(n))
      continue;
    auto v = lookup(n, loc);
    if (failed(v))
      return failure();
    if (const RuntimeShape *s = runtimeShapeOf(*v))
      return emitError(loc) << "a subgraph reads '" << n
                            << "', whose size is known only at run time (an "
                               "output of "
                            << s->origin << "): not supported";
    captures.names.push_back(n);
    captures.values.push_back(*v);
  }
  return captures;
}

/// Imports an If branch as a graph function. Where it does not import (its
/// shapes do not fit the model's: ONNX runtimes only check the branch they
/// take), returns failure with the first error in `error`, printing
/// nothing, and leaves the module as it was.
FailureOr<func::FuncOp> GraphImporter::importBranch(const onnx::GraphProto &g,
                                                    const Captures &captures,
                                                    llvm::StringRef name,
                                                    Location loc,
                                                    std::string &error) {
  Block *module = graphModule.getBody();
  Operation *last = module->empty() ? nullptr : &module->back();
  FailureOr<func::FuncOp> graph = failure();
  {
    ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure(); // warnings go on to the usual handler
      if (error.empty())
        error = d.str();
      return success();
    });
    graph = importGraphFunction(g, {}, captures, {}, name, loc);
  }
  if (succeeded(graph))
    return graph;
  while (!module->empty() && &module->back() != last)
    module->back().erase();
  if (error.empty())
    error = "it does not import";
  return failure();
}

/// An If whose condition is computed at run time: both branches become
/// graph functions and the node an ign.if that the launch plan turns into a
/// conditional jump. A branch that does not import for the model's shapes
/// becomes an error the run reports if it takes that branch (a warning
/// now); both failing is an error now.
LogicalResult GraphImporter::importRuntimeIf(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  static const char *const kWhich[] = {"then", "else"};
  const onnx::GraphProto *branches[2];
  for (int i = 0; i < 2; ++i) {
    const char *which = kWhich[i];
    branches[i] = graphAttr(node, std::string(which) + "_branch");
    if (!branches[i])
      return emitError(loc) << "If has no " << which << "_branch graph";
    if (branches[i]->output_size() != node.output_size())
      return emitError(loc)
             << "If " << which << " branch has " << branches[i]->output_size()
             << " outputs, the node " << node.output_size();
  }
  auto cond = lookup(node.input(0), loc);
  if (failed(cond))
    return failure();
  auto condType = dyn_cast<RankedTensorType>(cond->getType());
  if (!condType || condType.getNumElements() != 1 ||
      !condType.getElementType().isIntOrIndex())
    return emitError(loc) << "If condition must hold one bool, got "
                          << cond->getType();
  // Both branches take every outer value either one reads.
  auto captures = captureOuterValues({branches[0], branches[1]}, loc);
  if (failed(captures))
    return failure();
  std::string base = "ign_if" + std::to_string(graphCounter++);
  FailureOr<func::FuncOp> graphs[2];
  std::string errors[2];
  for (int i = 0; i < 2; ++i)
    graphs[i] = importBranch(*branches[i], *captures, base + "_" + kWhich[i],
                             loc, errors[i]);
  if (failed(graphs[0]) && failed(graphs[1]))
    return emitError(loc) << "neither branch of the If imports: then: "
                          << errors[0] << "; else: " << errors[1];
  for (int i = 0; i < 2; ++i)
    if (failed(graphs[i]))
      emitWarning(loc) << "the " << kWhich[i]
                       << " branch does not compile for these shapes ("
                       << errors[i]
                       << "): a run that takes it fails with that message";
  auto resultTypes =
      (succeeded(graphs[0]) ? *graphs[0] : *graphs[1]).getResultTypes();
  if (succeeded(graphs[0]) && succeeded(graphs[1]))
    for (int i = 0; i < node.output_size(); ++i)
      if (resultTypes[i] != graphs[1]->getResultTypes()[i])
        return emitError(loc)
               << "If output " << i << " is " << resultTypes[i]
               << " in the then branch but " << graphs[1]->getResultTypes()[i]
               << " in the else branch: ign needs one static type per output";
  auto ref = [&](int i) {
    return succeeded(graphs[i])
               ? FlatSymbolRefAttr::get(graphs[i]->getSymNameAttr())
               : FlatSymbolRefAttr();
  };
  auto error = [&](int i) {
    return failed(graphs[i])
               ? builder.getStringAttr(
                     "If '" + displayName(node) + "': its " + kWhich[i] +
                     " branch does not compile for "
                     "the shapes the bundle was compiled for: " +
                     errors[i])
               : StringAttr();
  };
  auto op = builder.create<IfOp>(loc, resultTypes, *cond, captures->values,
                                 ref(0), ref(1), error(0), error(1));
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      values[node.output(i)] = op.getResult(i);
  return success();
}

/// Whether `t` is a one-element tensor of an integer (or bool) type.
static bool isOneInteger(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.hasStaticShape() && r.getNumElements() == 1 &&
         r.getElementType().isIntOrIndex();
}

/// `t` with `trips` slices along a new first axis.
static RankedTensorType stackedType(Type t, int64_t trips) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape = {trips};
  llvm::append_range(shape, r.getShape());
  return RankedTensorType::get(shape, r.getElementType());
}

/// A constant true condition.
Value GraphImporter::trueCondition(Location loc) {
  auto type = RankedTensorType::get({}, builder.getI1Type());
  return constantValue(DenseElementsAttr::get(type, true), loc);
}

/// Checks that each carried value keeps its type through the body, whose
/// results from `first` on are the carried values.
LogicalResult GraphImporter::checkCarried(func::FuncOp body, size_t first,
                                          ValueRange inits, llvm::StringRef op,
                                          Location loc) {
  auto results = body.getResultTypes();
  for (auto [i, init] : llvm::enumerate(inits))
    if (results[first + i] != init.getType())
      return emitError(loc)
             << op << " carried value " << i << " is " << init.getType()
             << " before the loop but " << results[first + i]
             << " after an iteration: ign needs one static type";
  return success();
}

/// ONNX Loop: a for/while loop over a graph function. Scan outputs stack one
/// slice per iteration, so they need a trip count known at compile time;
/// where the condition may stop the loop sooner, such a run fails.
LogicalResult GraphImporter::importLoop(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  const onnx::GraphProto *body = graphAttr(node, "body");
  if (!body)
    return emitError(loc) << "Loop has no body graph";
  int carried = node.input_size() - 2;
  int scans = body->output_size() - 1 - carried;
  if (carried < 0 || body->input_size() != carried + 2 || scans < 0 ||
      node.output_size() != carried + scans)
    return emitError(loc) << "Loop has " << node.input_size() << " inputs and "
                          << node.output_size() << " outputs, its body "
                          << body->input_size() << " inputs and "
                          << body->output_size()
                          << " outputs: they do not match";
  // The trip count: a constant bounds the loop statically.
  Value trip;
  std::optional<int64_t> staticTrips;
  if (!node.input(0).empty()) {
    if (auto it = constants.find(node.input(0)); it != constants.end()) {
      if (it->second.numElements() != 1)
        return emitError(loc) << "Loop trip count must hold one element";
      staticTrips = std::max<int64_t>(0, it->second.getInt(0));
    } else {
      auto v = lookup(node.input(0), loc);
      if (failed(v))
        return failure();
      if (!isOneInteger(v->getType()))
        return emitError(loc)
               << "Loop trip count must be one integer, got " << v->getType();
      trip = *v;
    }
  }
  // The condition; without one the body's is ignored (ONNX).
  Value cond;
  bool bodyCond = !node.input(1).empty();
  bool alwaysTrue = !bodyCond;
  if (bodyCond) {
    if (auto it = constants.find(node.input(1)); it != constants.end())
      alwaysTrue = it->second.numElements() == 1 && it->second.getInt(0) != 0;
    auto v = lookup(node.input(1), loc);
    if (failed(v))
      return failure();
    if (!isOneInteger(v->getType()))
      return emitError(loc)
             << "Loop condition must be one bool, got " << v->getType();
    cond = *v;
  } else {
    cond = trueCondition(loc);
  }
  SmallVector<Value> inits;
  std::vector<GraphArg> leading = {
      {body->input(0).name(), RankedTensorType::get({}, builder.getI64Type())},
      {body->input(1).name(), cond.getType()}};
  SmallVector<Type> expected = {cond.getType()};
  for (int i = 0; i < carried; ++i) {
    auto v = lookup(node.input(2 + i), loc);
    if (failed(v))
      return failure();
    inits.push_back(*v);
    leading.push_back({body->input(2 + i).name(), v->getType()});
    expected.push_back(v->getType());
  }
  auto captures = captureOuterValues({body}, loc);
  if (failed(captures))
    return failure();
  auto graph =
      importGraphFunction(*body, leading, *captures, expected,
                          "ign_loop" + std::to_string(graphCounter++), loc);
  if (failed(graph))
    return failure();
  auto ret = cast<func::ReturnOp>(graph->getBody().front().getTerminator());
  if (ret.getOperand(0).getType() != cond.getType())
    return emitError(loc) << "Loop body's condition is "
                          << ret.getOperand(0).getType() << ", expected "
                          << cond.getType();
  if (failed(checkCarried(*graph, 1, inits, "Loop", loc)))
    return failure();
  // The body's condition cannot stop the loop when it passes its input on
  // or is a constant true.
  Value next = ret.getOperand(0);
  auto nextConst = next.getDefiningOp<ConstantOp>();
  auto nextAttr =
      nextConst ? dyn_cast<DenseElementsAttr>(nextConst.getValue()) : nullptr;
  bool runsAll =
      alwaysTrue && (!bodyCond || next == graph->getArgument(1) ||
                     (nextAttr && nextAttr.isSplat() &&
                      nextAttr.getSplatValue<APInt>().getBoolValue()));
  if (!bodyCond) { // ignored: the function returns the carried values first
    ret->eraseOperand(0);
    graph->setType(builder.getFunctionType(graph->getArgumentTypes(),
                                           ret.getOperandTypes()));
  }
  SmallVector<Type> resultTypes(ValueRange(inits).getTypes());
  StringAttr mustRunAll;
  if (scans > 0) {
    if (!staticTrips || trip)
      return emitError(loc)
             << "Loop scan outputs need a trip count known at compile time "
                "(their length would be known only at run time)";
    if (*staticTrips == 0)
      return emitError(loc) << "Loop with scan outputs runs no iteration";
    // A condition that may stop the loop early (a while loop's i < n, as
    // tf2onnx writes one): the outputs are sized for the trip count, and
    // a run where the condition stops it sooner fails, naming the node.
    if (!runsAll) {
      std::string name = "Loop '" + displayName(node) + "'";
      emitWarning(loc) << "its condition may stop it before its "
                       << *staticTrips
                       << " iterations; its scan outputs are compiled for "
                       << *staticTrips << ", and a run that stops sooner fails";
      mustRunAll = builder.getStringAttr(name);
    }
    for (Type t : ret.getOperands().take_back(scans).getTypes())
      resultTypes.push_back(stackedType(t, *staticTrips));
  }
  auto op = builder.create<LoopOp>(
      loc, resultTypes, trip, cond, inits, ValueRange(), captures->values,
      FlatSymbolRefAttr::get(graph->getSymNameAttr()),
      staticTrips ? builder.getI64IntegerAttr(*staticTrips) : IntegerAttr(),
      bodyCond ? builder.getUnitAttr() : UnitAttr(), mustRunAll);
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      values[node.output(i)] = op.getResult(i);
  return success();
}

/// `v` with its first axis reversed.
static FailureOr<Value> reverseFirstAxis(NodeImporter &ni, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1);
  starts[0] = t.getDimSize(0) - 1;
  steps[0] = -1;
  return ni.createValue<SliceOp>(v,
                                 {ni.named("starts", ni.i64Array(starts)),
                                  ni.named("sizes", ni.i64Array(t.getShape())),
                                  ni.named("steps", ni.i64Array(steps))});
}

/// `v` with axis `from` moved to position `to` (the others in order).
static FailureOr<Value> moveAxis(NodeImporter &ni, Value v, int64_t from,
                                 int64_t to) {
  if (from == to)
    return v;
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != from)
      perm.push_back(d);
  perm.insert(perm.begin() + to, from);
  return ni.createValue<TransposeOp>(v, {ni.named("perm", ni.i64Array(perm))});
}

/// `v` reshaped to `shape`.
static FailureOr<Value> reshapeTo(NodeImporter &ni, Value v,
                                  llvm::ArrayRef<int64_t> shape) {
  return ni.createValue<ReshapeOp>(v, {ni.named("shape", ni.i64Array(shape))});
}

/// A Scan's per-input or per-output axes and directions (opset 8: one
/// `directions` list, the scan axis after the batch axis).
struct ScanLayout {
  SmallVector<int64_t> inAxes, inDirections, outAxes, outDirections;
};

static FailureOr<ScanLayout> scanLayout(NodeImporter &ni, bool opset8,
                                        int64_t scanInputs,
                                        int64_t scanOutputs) {
  ScanLayout l;
  auto list = [&](llvm::StringRef name, int64_t n,
                  SmallVector<int64_t> &out) -> LogicalResult {
    auto v = ni.attrInts(name, SmallVector<int64_t>(n, 0));
    if (failed(v))
      return failure();
    if (int64_t(v->size()) != n)
      return ni.error() << "Scan " << name << " has " << v->size()
                        << " entries, expected " << n;
    out.assign(v->begin(), v->end());
    return success();
  };
  if (opset8) {
    if (failed(list("directions", scanInputs, l.inDirections)))
      return failure();
    l.inAxes.assign(scanInputs, 0);
    l.outAxes.assign(scanOutputs, 0);
    l.outDirections.assign(scanOutputs, 0);
    return l;
  }
  if (failed(list("scan_input_axes", scanInputs, l.inAxes)) ||
      failed(list("scan_input_directions", scanInputs, l.inDirections)) ||
      failed(list("scan_output_axes", scanOutputs, l.outAxes)) ||
      failed(list("scan_output_directions", scanOutputs, l.outDirections)))
    return failure();
  return l;
}

/// ONNX Scan: a loop over slices of its scan inputs, as ign.loop with a
/// static trip count (the scan axis' length). Inputs scanned along another
/// axis or backwards are transposed or reversed first, outputs after.
/// Opset 8's batch axis is taken when it is 1 and no sequence_lens is given.
LogicalResult GraphImporter::importScan(const onnx::NodeProto &node,
                                        int64_t nodeOpset) {
  Location loc = nodeLoc(node);
  NodeImporter ni(*this, node, loc, nodeOpset);
  const onnx::GraphProto *body = graphAttr(node, "body");
  if (!body)
    return emitError(loc) << "Scan has no body graph";
  bool opset8 = nodeOpset < 9;
  if (opset8 && node.input_size() > 0 && !node.input(0).empty())
    return emitError(loc) << "Scan with sequence_lens (opset 8) is not "
                             "supported: the scans' lengths would differ per "
                             "batch entry";
  auto scanInputs = ni.attrInt("num_scan_inputs", -1);
  if (failed(scanInputs))
    return failure();
  int first = opset8 ? 1 : 0;
  int states = node.input_size() - first - int(*scanInputs);
  int scanOutputs = body->output_size() - states;
  if (*scanInputs < 1 || states < 0 ||
      body->input_size() != states + *scanInputs || scanOutputs < 0 ||
      node.output_size() != states + scanOutputs)
    return emitError(loc) << "Scan's inputs, outputs, num_scan_inputs and "
                             "body do not match";
  auto layout = scanLayout(ni, opset8, *scanInputs, scanOutputs);
  if (failed(layout))
    return failure();
  // Opset 8 has a batch axis first: only a batch of one, taken away.
  auto input = [&](int i) -> FailureOr<Value> {
    auto v = lookup(node.input(first + i), loc);
    if (failed(v) || !opset8)
      return v;
    auto t = cast<RankedTensorType>(v->getType());
    if (t.getRank() == 0 || t.getDimSize(0) != 1)
      return emitError(loc) << "Scan (opset 8) with a batch of "
                            << (t.getRank() ? t.getDimSize(0) : 0)
                            << " is not supported, only 1";
    return reshapeTo(ni, *v, t.getShape().drop_front());
  };
  SmallVector<Value> inits, scanned;
  std::vector<GraphArg> leading = {
      {"", RankedTensorType::get({}, builder.getI64Type())},
      {"", RankedTensorType::get({}, builder.getI1Type())}};
  for (int i = 0; i < states; ++i) {
    auto v = input(i);
    if (failed(v))
      return failure();
    inits.push_back(*v);
    leading.push_back({body->input(i).name(), v->getType()});
  }
  std::optional<int64_t> trips;
  for (int j = 0; j < *scanInputs; ++j) {
    auto v = input(states + j);
    if (failed(v))
      return failure();
    int64_t rank = cast<RankedTensorType>(v->getType()).getRank();
    int64_t axis =
        layout->inAxes[j] < 0 ? layout->inAxes[j] + rank : layout->inAxes[j];
    if (axis < 0 || axis >= rank)
      return emitError(loc) << "Scan input axis " << layout->inAxes[j]
                            << " is out of range for rank " << rank;
    auto front = moveAxis(ni, *v, axis, 0);
    if (failed(front))
      return failure();
    if (layout->inDirections[j] != 0 &&
        failed(front = reverseFirstAxis(ni, *front)))
      return failure();
    int64_t length = cast<RankedTensorType>(front->getType()).getDimSize(0);
    if (trips && *trips != length)
      return emitError(loc) << "Scan inputs have " << *trips << " and "
                            << length << " slices: they must agree";
    trips = length;
    scanned.push_back(*front);
    auto slice = cast<RankedTensorType>(front->getType());
    leading.push_back({body->input(states + j).name(),
                       RankedTensorType::get(slice.getShape().drop_front(),
                                             slice.getElementType())});
  }
  if (*trips == 0)
    return emitError(loc) << "Scan over no slices is not supported";
  auto captures = captureOuterValues({body}, loc);
  if (failed(captures))
    return failure();
  SmallVector<Type> expected(ValueRange(inits).getTypes());
  auto graph =
      importGraphFunction(*body, leading, *captures, expected,
                          "ign_scan" + std::to_string(graphCounter++), loc);
  if (failed(graph) || failed(checkCarried(*graph, 0, inits, "Scan", loc)))
    return failure();
  SmallVector<Type> resultTypes(ValueRange(inits).getTypes());
  for (Type t : graph->getResultTypes().drop_front(states))
    resultTypes.push_back(stackedType(t, *trips));
  auto op = builder.create<LoopOp>(
      loc, resultTypes, Value(), trueCondition(loc), inits, scanned,
      captures->values, FlatSymbolRefAttr::get(graph->getSymNameAttr()),
      builder.getI64IntegerAttr(*trips), UnitAttr(), StringAttr());
  return setScanOutputs(ni, op, states, *layout, opset8);
}

/// The Scan's outputs from its loop's results: states as they are, scan
/// outputs reversed and their axis moved where asked (opset 8: the batch
/// axis of one put back).
LogicalResult GraphImporter::setScanOutputs(NodeImporter &ni, LoopOp op,
                                            int states,
                                            const ScanLayout &layout,
                                            bool opset8) {
  const onnx::NodeProto &node = ni.node();
  for (int i = 0; i < node.output_size(); ++i) {
    FailureOr<Value> v = op.getResult(i);
    if (i >= states) {
      int j = i - states;
      int64_t rank = cast<RankedTensorType>(v->getType()).getRank();
      int64_t axis =
          layout.outAxes[j] < 0 ? layout.outAxes[j] + rank : layout.outAxes[j];
      if (axis < 0 || axis >= rank)
        return ni.error() << "Scan output axis " << layout.outAxes[j]
                          << " is out of range for rank " << rank;
      if (layout.outDirections[j] != 0 && failed(v = reverseFirstAxis(ni, *v)))
        return failure();
      if (failed(v = moveAxis(ni, *v, 0, axis)))
        return failure();
    }
    if (opset8) {
      SmallVector<int64_t> shape = {1};
      llvm::append_range(shape,
                         cast<RankedTensorType>(v->getType()).getShape());
      if (failed(v = reshapeTo(ni, *v, shape)))
        return failure();
    }
    if (!node.output(i).empty())
      values[node.output(i)] = *v;
  }
  return success();
}

} // namespace ign::import
