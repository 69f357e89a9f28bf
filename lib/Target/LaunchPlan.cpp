//===- LaunchPlan.cpp - launches, buffers and the arena of a model --------===//

#include "ign/Target/LaunchPlan.h"
#include "ign/Bundle/MemoryPlan.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

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
  size_t index; // input/weight index, or intermediate buffer id
};

/// A launch argument whose buffer is resolved once all launches are known.
struct PendingArg {
  Slot slot;
  Type type;
};

struct PendingLaunch {
  size_t kernel = 0;
  bool copy = false;
  std::vector<PendingArg> args;
  size_t copyTo = 0; // copy launches: the output index
};

/// The launches of @main before the arena is laid out: where each value
/// lives, the intermediate buffers with their lifetimes, and the launches.
struct PendingPlan {
  llvm::DenseMap<Value, Slot> slots;
  std::vector<bundle::BufferLifetime> buffers;
  std::vector<PendingLaunch> launches;
};

/// Walks @main's body: its constants become weights, its reshapes views, and
/// each kernel call a launch whose results are new buffers.
LogicalResult collectLaunches(func::FuncOp main, LaunchPlan &plan,
                              PendingPlan &pending) {
  auto &slots = pending.slots;
  auto &buffers = pending.buffers;
  auto &launches = pending.launches;
  llvm::StringMap<size_t> kernelIndex;

  auto use = [&](Value v, int64_t launch) -> FailureOr<Slot> {
    auto it = slots.find(v);
    if (it == slots.end())
      return failure();
    if (it->second.kind == Slot::Buffer)
      buffers[it->second.index].last = launch;
    return it->second;
  };

  for (Operation &op : main.getBody().front()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto attr = dyn_cast<DenseResourceElementsAttr>(c.getValue());
      AsmResourceBlob *blob = attr ? attr.getRawHandle().getBlob() : nullptr;
      if (!blob)
        return c.emitError("a constant left in @main after outlining");
      slots[c.getResult()] = {Slot::Weight, plan.weights.size()};
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
      int64_t index = int64_t(launches.size());
      PendingLaunch launch;
      auto [it, inserted] =
          kernelIndex.try_emplace(call.getCallee(), plan.kernels.size());
      if (inserted)
        plan.kernels.push_back(call.getCallee().str());
      launch.kernel = it->second;
      for (Value v : call.getOperands()) {
        auto slot = use(v, index);
        if (failed(slot))
          return call.emitError("a kernel argument without a buffer");
        launch.args.push_back({*slot, v.getType()});
      }
      for (Value r : call.getResults()) {
        slots[r] = {Slot::Buffer, buffers.size()};
        buffers.push_back({byteSize(r.getType()), index, index});
        launch.args.push_back({slots[r], r.getType()});
      }
      launches.push_back(std::move(launch));
    } else if (!isa<func::ReturnOp>(op)) {
      return op.emitError("unexpected op in @main after kernel outlining");
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
        byteSize(v.getType()) == buffers[s.index].bytes) {
      bufferOutput[s.index] = int64_t(k);
      continue;
    }
    if (s.kind == Slot::Buffer)
      buffers[s.index].last = end;
    PendingLaunch copy;
    copy.copy = true;
    copy.copyTo = k;
    copy.args.push_back({s, v.getType()});
    launches.push_back(std::move(copy));
  }
  return bufferOutput;
}

} // namespace

FailureOr<LaunchPlan> buildLaunchPlan(func::FuncOp main) {
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
  }

  PendingPlan pending;
  for (BlockArgument arg : main.getArguments())
    pending.slots[arg] = {Slot::Input, arg.getArgNumber()};
  if (failed(collectLaunches(main, plan, pending)))
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
        arg.offset = memory.offsets[arenaIndex[a.slot.index]];
      }
      break;
    }
    return arg;
  };
  for (const PendingLaunch &p : launches) {
    bundle::LaunchSpec spec;
    spec.kernel = p.kernel;
    spec.copy = p.copy;
    for (const PendingArg &a : p.args)
      spec.args.push_back(resolve(a));
    if (p.copy) {
      bundle::LaunchArg to;
      to.kind = "output";
      to.index = p.copyTo;
      to.dtype = plan.outputs[p.copyTo].dtype;
      to.shape = plan.outputs[p.copyTo].shape;
      spec.args.push_back(to);
    }
    plan.launches.push_back(std::move(spec));
  }
  return plan;
}

} // namespace ign
