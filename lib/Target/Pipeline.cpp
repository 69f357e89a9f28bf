//===- Pipeline.cpp - the forward compile pipeline of every target -------===//

#include "ign/Target/Pipeline.h"
#include "ign/Target/LaunchPlan.h"
#include "ign/Target/TargetRegistry.h"
#include "ign/Transforms/GraphPipeline.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace ign::target {

TargetConfig configFor(const Target &where, const Target &selected,
                       const TargetConfig &config) {
  if (&where == &selected)
    return config;
  TargetConfig other = config;
  other.chip = &where == fallbackTarget() && !config.hostChip.empty()
                   ? config.hostChip
                   : where.defaultChip();
  return other;
}

const Target &placeKernel(const Target &selected, func::FuncOp kernel,
                          const TargetConfig &config) {
  const Target *host = fallbackTarget();
  if (!host || &selected == host)
    return selected;
  // The reference is the target-neutral lowering run on the host (DESIGN).
  if (config.schedule == "reference")
    return *host;
  std::string why;
  return selected.claims(kernel, config, why) ? selected : *host;
}

/// The graph stage with the selected target's policy.
static FailureOr<func::FuncOp>
formKernels(ModuleOp module, const Target &target, const TargetConfig &config) {
  GraphPolicy policy = target.graphPolicy(config);
  policy.fuse = config.fuse;
  return runGraphPipeline(module, policy);
}

FailureOr<std::vector<KernelSummary>>
planKernels(ModuleOp module, const Target &target, const TargetConfig &config) {
  auto main = formKernels(module, target, config);
  if (failed(main))
    return failure();
  return summarizeKernels(module, *main);
}

/// A module of its own for `kernel`, whose @main launches it once with all
/// its arguments as inputs ("arg0", ...) and results ("out0", ...); those
/// the model binds to weights are marked so (bindTaskWeights).
static OwningOpRef<ModuleOp> taskModule(func::FuncOp kernel,
                                        const std::vector<bool> &weights) {
  Location loc = kernel.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToEnd(module->getBody());
  b.clone(*kernel);
  FunctionType type = kernel.getFunctionType();
  auto entry = b.create<func::FuncOp>(loc, "main", type);
  OpBuilder body = OpBuilder::atBlockEnd(entry.addEntryBlock());
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    entry.setArgAttr(i, "ign.name", b.getStringAttr("arg" + std::to_string(i)));
    if (i < weights.size() && weights[i])
      entry.setArgAttr(i, kTaskWeightAttr, b.getUnitAttr());
  }
  auto call = body.create<func::CallOp>(loc, kernel, entry.getArguments());
  body.create<func::ReturnOp>(loc, call.getResults());
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    entry.setResultAttr(i, "ign.name",
                        b.getStringAttr("out" + std::to_string(i)));
  return module;
}

FailureOr<std::vector<PlacedTask>> extractTasks(ModuleOp module,
                                                const Target &target,
                                                const TargetConfig &config) {
  auto main = formKernels(module, target, config);
  if (failed(main))
    return failure();
  std::vector<PlacedTask> tasks;
  for (KernelSummary &summary : summarizeKernels(module, *main)) {
    auto kernel = module.lookupSymbol<func::FuncOp>(summary.name);
    PlacedTask placed;
    placed.target = &placeKernel(target, kernel, config);
    placed.task.module = taskModule(kernel, weightArguments(*main, kernel));
    placed.task.summary = std::move(summary);
    tasks.push_back(std::move(placed));
  }
  return tasks;
}

/// The bundle's tables from the launch plan, one spec per kernel.
static bundle::BundleContents
contentsFromPlan(const LaunchPlan &plan, const Target &target,
                 const llvm::StringMap<const KernelSummary *> &summaryOf,
                 ModuleOp module) {
  bundle::BundleContents contents;
  contents.targetName = target.name();
  contents.inputs = plan.inputs;
  contents.outputs = plan.outputs;
  for (auto &[spec, bytes] : plan.weights)
    contents.weights.push_back(
        {spec, std::string_view(bytes.data(), bytes.size())});
  contents.launches = plan.launches;
  contents.arenaBytes = plan.arenaBytes;
  for (const std::string &name : plan.kernels) {
    bundle::KernelSpec spec;
    spec.name = name;
    spec.results = module.lookupSymbol<func::FuncOp>(name).getNumResults();
    if (auto it = summaryOf.find(name); it != summaryOf.end()) {
      const KernelSummary &s = *it->second;
      spec.ops = s.ops;
      spec.opShapes = s.opShapes;
      spec.task = s.task;
      spec.flops = s.flops;
      spec.bytesRead = s.bytesRead;
      spec.bytesWritten = s.bytesWritten;
    }
    contents.kernels.push_back(std::move(spec));
  }
  return contents;
}

FailureOr<bundle::BundleContents>
compileModule(ModuleOp module, const Target &target,
              const PipelineOptions &options) {
  const TargetConfig &config = options.compile.config;
  FailureOr<func::FuncOp> main =
      options.kernelsFormed
          ? FailureOr<func::FuncOp>(module.lookupSymbol<func::FuncOp>("main"))
          : formKernels(module, target, config);
  if (failed(main) || !*main)
    return module.emitError("no @main function to compile");
  std::vector<KernelSummary> summaries = summarizeKernels(module, *main);
  llvm::StringMap<const KernelSummary *> summaryOf;
  for (const KernelSummary &s : summaries)
    summaryOf[s.name] = &s;
  // Concats and splits in place on the host, whose kernels take any
  // address (a device's buffers may need aligned offsets).
  auto plan = buildLaunchPlan(*main, /*piecesInPlace=*/target.name() == "host");
  if (failed(plan))
    return failure();
  // @main and its graphs now live on as the bundle's launch list; only
  // kernels remain.
  eraseGraphs(module);
  bundle::BundleContents contents =
      contentsFromPlan(*plan, target, summaryOf, module);

  // Placement: the selected target's kernels first (a device target reads
  // them before the host lowers the module), then the host's.
  const Target &host = fallbackTarget() ? *fallbackTarget() : target;
  std::vector<PlacedKernel> onTarget, onHost;
  for (auto [name, spec] : llvm::zip(plan->kernels, contents.kernels)) {
    PlacedKernel placed;
    placed.kernel = module.lookupSymbol<func::FuncOp>(name);
    placed.spec = &spec;
    if (auto it = summaryOf.find(name); it != summaryOf.end())
      placed.summary = it->second;
    const Target &where = placeKernel(target, placed.kernel, config);
    if (&where != &target && options.compile.log) {
      std::string why = "--schedule=reference runs every kernel on the host";
      if (config.schedule != "reference")
        target.claims(placed.kernel, config, why);
      options.compile.log(name + ": " + where.name() + " (" + why + ")");
    }
    if (options.lookup && placed.summary && config.schedule == "default")
      placed.tuned = options.lookup(where, *placed.summary);
    (&where == &host ? onHost : onTarget).push_back(placed);
  }
  if (&target != &host) {
    if (failed(
            target.compileKernels(module, onTarget, options.compile, contents)))
      return failure();
    for (PlacedKernel &k : onTarget) {
      if (!k.declined) {
        k.kernel.erase();
        continue;
      }
      // The host runs it after all, with its own tuned schedule.
      k.declined = false;
      k.tuned = options.lookup && k.summary && config.schedule == "default"
                    ? options.lookup(host, *k.summary)
                    : nullptr;
      onHost.push_back(k);
    }
  }
  CompileOptions hostOptions = options.compile;
  hostOptions.config = configFor(host, target, config);
  if (failed(host.compileKernels(module, onHost, hostOptions, contents)))
    return failure();
  return contents;
}

} // namespace ign::target
