//===- KernelTasks.cpp - kernels as tuning tasks --------------------------===//

#include "ign/Transforms/KernelTasks.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"

#include <random>

using namespace mlir;

namespace ign {

std::string structuralKey(func::FuncOp kernel) {
  std::string key;
  llvm::raw_string_ostream os(key);
  StringAttr name = kernel.getSymNameAttr();
  kernel.setSymName("kernel");
  kernel.print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  kernel.setSymNameAttr(name);
  return key;
}

namespace {

uint64_t numElements(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : 0;
}

uint64_t bytes(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

uint64_t product(ArrayRef<int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string typeText(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  if (!shaped)
    return "?";
  std::string s;
  for (int64_t d : shaped.getShape())
    s += std::to_string(d) + "x";
  llvm::raw_string_ostream os(s);
  shaped.getElementType().print(os);
  return s;
}

std::string opText(Operation *op) {
  std::string s = op->getName().getStringRef().str() + " ";
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    s += (i ? ", " : "") + typeText(v.getType());
  s += " -> ";
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    s += (i ? ", " : "") + typeText(r.getType());
  return s;
}

} // namespace

uint64_t opFlops(Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  uint64_t out = numElements(op->getResult(0));
  auto dims = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  if (auto mm = dyn_cast<MatMulOp>(op))
    return 2 * out * dims(mm.getLhs()).back();
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto a = dims(gemm.getA());
    return 2 * out * (gemm.getTransA() ? a[0] : a[1]) + (gemm.getC() ? out : 0);
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto w = dims(conv.getWeight());
    // [F / T, C, k..., T] when blocked, [F, C, k...] otherwise.
    uint64_t window = conv.getFilterBlock()
                          ? product(w.drop_front().drop_back())
                          : product(w.drop_front());
    return 2 * out * window + (conv.getBias() ? out : 0);
  }
  if (auto conv = dyn_cast<ConvTransposeOp>(op)) {
    auto w = dims(conv.getWeight());
    return 2 * numElements(conv.getInput()) * w[1] * product(w.drop_front(2));
  }
  // A recurrent op: every step multiplies the input by W (unless X is
  // projected already) and the state by R (X [seq, batch, in]; the cells'
  // pointwise work is not counted).
  if (isa<LSTMOp, GRUOp, RNNOp>(op)) {
    auto x = dims(op->getOperand(0));
    uint64_t weights = 0;
    llvm::TypeSwitch<Operation *>(op).Case<LSTMOp, GRUOp, RNNOp>([&](auto r) {
      weights = numElements(r.getR()) + (r.getW() ? numElements(r.getW()) : 0);
    });
    return 2 * uint64_t(x[0] * x[1]) * weights;
  }
  if (op->hasTrait<Pointwise>())
    return out;
  if (isa<MaxPoolOp, AvgPoolOp, LpPoolOp>(op))
    if (auto k = op->getAttrOfType<ArrayAttr>("kernel_shape"))
      return out * product(toI64Vector(k));
  if (isa<SoftmaxOp, LogSoftmaxOp>(op))
    return 5 * out;
  if (isa<LayerNormOp, GroupNormOp, InstanceNormOp, BatchNormOp>(op))
    return 8 * out;
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
          ReduceL1Op, ReduceL2Op, ReduceLogSumOp, ReduceLogSumExpOp,
          ReduceSumSquareOp, ArgMaxOp, ArgMinOp>(op))
    return numElements(op->getOperand(0));
  return 0;
}

/// Calls `fn` on every kernel call of `main` and of the graph functions
/// (branches) it launches.
static void forEachLaunch(ModuleOp module, func::FuncOp main,
                          llvm::function_ref<void(func::CallOp)> fn) {
  main.walk(fn);
  for (auto graph : module.getOps<func::FuncOp>())
    if (graph->hasAttr(kGraphAttr))
      graph.walk(fn);
}

std::vector<KernelSummary> summarizeKernels(ModuleOp module,
                                            func::FuncOp main) {
  std::vector<KernelSummary> out;
  llvm::StringMap<size_t> index;
  forEachLaunch(module, main, [&](func::CallOp call) {
    auto kernel = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!kernel || !kernel->hasAttr(kKernelAttr))
      return;
    auto [it, inserted] = index.try_emplace(kernel.getSymName(), out.size());
    if (!inserted) {
      ++out[it->second].launches;
      return;
    }
    KernelSummary s;
    s.name = kernel.getSymName().str();
    s.launches = 1;
    s.task = llvm::utohexstr(llvm::xxh3_64bits(structuralKey(kernel)),
                             /*LowerCase=*/true, /*Width=*/16);
    for (Operation &op : kernel.getBody().front().without_terminator()) {
      if (isa<ConstantOp>(op))
        continue;
      s.ops.push_back(op.getName().getStringRef().str());
      s.opShapes.push_back(opText(&op));
      s.flops += opFlops(&op);
    }
    for (BlockArgument a : kernel.getArguments())
      s.bytesRead += bytes(a);
    for (Value r : kernel.getBody().front().getTerminator()->getOperands())
      s.bytesWritten += bytes(r);
    out.push_back(std::move(s));
  });
  return out;
}

/// Whether `v` is a constant f32 weight (a blob, as @main holds them).
static bool isF32Weight(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && isa<DenseResourceElementsAttr>(c.getValue()) &&
         cast<RankedTensorType>(c.getType()).getElementType().isF32();
}

std::vector<bool> weightArguments(func::FuncOp main, func::FuncOp kernel) {
  std::vector<bool> weights(kernel.getNumArguments(), true);
  bool called = false;
  forEachLaunch(main->getParentOfType<ModuleOp>(), main,
                [&](func::CallOp call) {
                  if (call.getCallee() != kernel.getSymName())
                    return;
                  called = true;
                  for (auto [i, v] : llvm::enumerate(call.getOperands()))
                    if (i < weights.size() && !isF32Weight(v))
                      weights[i] = false;
                });
  if (!called)
    weights.assign(weights.size(), false);
  return weights;
}

void bindTaskWeights(ModuleOp task) {
  auto main = task.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return;
  for (unsigned i = main.getNumArguments(); i-- > 0;) {
    auto type = dyn_cast<RankedTensorType>(main.getArgument(i).getType());
    if (!main.getArgAttr(i, kTaskWeightAttr) || !type ||
        !type.hasStaticShape() || !type.getElementType().isF32())
      continue;
    // Small values, as trained weights are; seeded by the argument, so a
    // candidate and the reference see the same weights.
    std::mt19937 rng(0x5eed0000u + i);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> values(size_t(type.getNumElements()));
    for (float &v : values)
      v = normal(rng);
    OpBuilder b = OpBuilder::atBlockBegin(&main.getBody().front());
    Value weight = makeWeight(b, main.getLoc(), type, std::move(values),
                              "task_weight" + std::to_string(i));
    main.getArgument(i).replaceAllUsesWith(weight);
    main.eraseArgument(i);
  }
}

} // namespace ign
