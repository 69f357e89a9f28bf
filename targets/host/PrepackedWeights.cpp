//===- PrepackedWeights.cpp - weights the host packed at compile time -----===//

#include "PrepackedWeights.h"
#include "PrepackedPanels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstring>
#include <map>

using namespace mlir;

namespace ign::host {

namespace {

/// The index of `k`'s spec in `contents.kernels`.
size_t kernelIndex(const target::PlacedKernel &k,
                   const bundle::BundleContents &contents) {
  return size_t(k.spec - contents.kernels.data());
}

/// The launches of kernel `index` (not copies).
template <typename Contents> auto launchesOf(size_t index, Contents &c) {
  std::vector<decltype(&c.launches.front())> launches;
  for (auto &l : c.launches)
    if (l.kind == bundle::LaunchSpec::Kind::Kernel && l.kernel == index)
      launches.push_back(&l);
  return launches;
}

/// Elements of a tensor of `shape`.
int64_t elementsOf(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Whether `a` is all of an f32, 8- or 16-bit weight of `c`, as stored or
/// reshaped (a 1x1 convolution's [F, C, 1, 1] read as [F, C]: the same
/// elements in the same order).
bool isWholePanelWeight(const bundle::LaunchArg &a,
                        const bundle::BundleContents &c) {
  return a.kind == "weight" &&
         (a.dtype == "f32" || a.dtype == "i8" || a.dtype == "i16") &&
         a.index < c.weights.size() &&
         c.weights[a.index].first.dtype == a.dtype &&
         elementsOf(c.weights[a.index].first.shape) == elementsOf(a.shape);
}

/// The weight holding `plan`'s panels of weight `source`: made once per
/// (weight, plan) and appended to the contents.
class PanelWeights {
public:
  explicit PanelWeights(bundle::BundleContents &contents)
      : contents(contents) {}

  FailureOr<uint64_t> get(uint64_t source, const PanelPlan &plan,
                          DictionaryAttr key, Location loc) {
    auto [it, added] = made.try_emplace({source, key.getAsOpaquePointer()}, 0);
    if (!added)
      return it->second;
    if (source >= contents.weights.size())
      return emitError(loc, "a panel's weight is not in the bundle");
    const auto &[spec, bytes] = contents.weights[source];
    int64_t rows = plan.transposed ? plan.n : plan.k;
    int64_t columns = plan.transposed ? plan.k : plan.n;
    std::vector<int64_t> shape{rows, columns};
    if (plan.pairDim >= 0 || !plan.permutation.empty())
      shape = plan.weightShape;
    int64_t elements = elementsOf(shape);
    size_t size = size_t(plan.weightElementBytes());
    if (spec.dtype != plan.weightDtype() ||
        elementsOf(spec.shape) != elements ||
        bytes.size() != size_t(elements) * size)
      return emitError(loc, "weight '")
             << spec.name << "' does not match its panels";
    auto packed =
        std::make_shared<const std::string>(packPanelBytes(plan, bytes.data()));
    std::string name = spec.name + ".panels";
    if (int count = ++packedFrom[source]; count > 1)
      name += "." + std::to_string(count);
    bundle::TensorSpec packedSpec{name, plan.dtype(), plan.shape()};
    contents.weightStorage.push_back(packed);
    contents.weights.push_back({packedSpec, std::string_view(*packed)});
    it->second = contents.weights.size() - 1;
    return it->second;
  }

private:
  bundle::BundleContents &contents;
  std::map<std::pair<uint64_t, const void *>, uint64_t> made;
  std::map<uint64_t, int> packedFrom; // panels made of each weight
};

/// Rebinds the launches of `kernel` (which gained `panels`, its arguments
/// from `inputs` on) and drops the weight arguments in `dropped`.
LogicalResult rebindLaunches(func::FuncOp kernel, size_t index, unsigned inputs,
                             llvm::ArrayRef<unsigned> dropped,
                             PanelWeights &weights,
                             bundle::BundleContents &contents) {
  for (bundle::LaunchSpec *launch : launchesOf(index, contents)) {
    if (launch->args.size() != inputs + kernel.getNumResults())
      return kernel.emitError("a launch does not match its kernel");
    std::vector<bundle::LaunchArg> args;
    for (unsigned i = 0; i < inputs; ++i)
      if (!llvm::is_contained(dropped, i))
        args.push_back(launch->args[i]);
    for (unsigned i = inputs; i < kernel.getNumArguments(); ++i) {
      auto attr = kernel.getArgAttr(i, kPanelsArgAttr);
      auto plan = PanelPlan::fromAttr(attr);
      if (!plan || plan->source >= int64_t(inputs) ||
          launch->args[plan->source].kind != "weight")
        return kernel.emitError("a panel argument without its weight");
      auto weight = weights.get(launch->args[plan->source].index, *plan,
                                cast<DictionaryAttr>(attr), kernel.getLoc());
      if (failed(weight))
        return failure();
      args.push_back({"weight", *weight, 0, plan->dtype(), plan->shape()});
    }
    args.insert(args.end(), launch->args.begin() + inputs, launch->args.end());
    launch->args = std::move(args);
  }
  return success();
}

/// Removes the weights no launch reads from `contents`.
void dropUnreadWeights(bundle::BundleContents &contents) {
  std::vector<bool> read(contents.weights.size(), false);
  for (const bundle::LaunchSpec &l : contents.launches)
    for (const bundle::LaunchArg &a : l.args)
      if (a.kind == "weight" && a.index < read.size())
        read[a.index] = true;
  std::vector<uint64_t> renumbered(read.size());
  std::vector<std::pair<bundle::TensorSpec, std::string_view>> kept;
  for (size_t i = 0; i < read.size(); ++i)
    if (read[i]) {
      renumbered[i] = kept.size();
      kept.push_back(std::move(contents.weights[i]));
    }
  contents.weights = std::move(kept);
  for (bundle::LaunchSpec &l : contents.launches)
    for (bundle::LaunchArg &a : l.args)
      if (a.kind == "weight" && a.index < read.size())
        a.index = renumbered[a.index];
}

} // namespace

void markWeightArguments(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                         const bundle::BundleContents &contents) {
  for (target::PlacedKernel &k : kernels) {
    auto launches = launchesOf(kernelIndex(k, contents), contents);
    if (launches.empty())
      continue;
    for (unsigned i = 0; i < k.kernel.getNumArguments(); ++i) {
      bool weight = true;
      for (const bundle::LaunchSpec *l : launches)
        weight &=
            i < l->args.size() && isWholePanelWeight(l->args[i], contents);
      if (weight)
        k.kernel.setArgAttr(i, kWeightArgAttr,
                            UnitAttr::get(k.kernel.getContext()));
    }
  }
}

FailureOr<std::vector<int64_t>>
bindPrepackedPanels(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                    bundle::BundleContents &contents) {
  PanelWeights weights(contents);
  std::vector<int64_t> counts;
  bool any = false;
  for (target::PlacedKernel &k : kernels) {
    func::FuncOp kernel = k.kernel;
    unsigned inputs = 0;
    while (inputs < kernel.getNumArguments() &&
           !kernel.getArgAttr(inputs, kPanelsArgAttr))
      ++inputs;
    counts.push_back(int64_t(kernel.getNumArguments() - inputs));
    if (counts.back() == 0)
      continue;
    any = true;
    // Weight arguments only the panels read are dropped.
    std::vector<unsigned> dropped;
    for (unsigned i = 0; i < inputs; ++i)
      if (kernel.getArgAttr(i, kWeightArgAttr) &&
          kernel.getArgument(i).use_empty())
        dropped.push_back(i);
    if (failed(rebindLaunches(kernel, kernelIndex(k, contents), inputs, dropped,
                              weights, contents)))
      return failure();
    for (unsigned i : llvm::reverse(dropped))
      kernel.eraseArgument(i);
  }
  for (target::PlacedKernel &k : kernels)
    for (unsigned i = 0; i < k.kernel.getNumArguments(); ++i) {
      k.kernel.removeArgAttr(i, kWeightArgAttr);
      k.kernel.removeArgAttr(i, kPanelsArgAttr);
    }
  if (any)
    dropUnreadWeights(contents);
  return counts;
}

} // namespace ign::host
