//===- VulkanCompiler.cpp - one kernel -> SPIR-V dispatches ---------------===//
//
// A kernel's copy through the shared start (reference lowering,
// bufferization), the GPU layer's preparation, schedule and mapping, and
// the SPIR-V lowering; its descriptor, blob and schedule JSON
// (VulkanCompiler.h).
//
//===----------------------------------------------------------------------===//

#include "VulkanCompiler.h"

#include "GpuMapping.h"
#include "SpirvLowering.h"

#include "ign/Conversion/KernelBufferization.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::vulkan {

namespace {

bool storable(Type t, const VulkanChip &chip) {
  if (t.isF32() || (t.isF16() && chip.float16) || (t.isF64() && chip.float64))
    return true;
  auto i = dyn_cast<IntegerType>(t);
  return i && llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
}

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
  if (failed(gpu::unrollRecurrences(copy, /*maxOps=*/1024, why)))
    return failure();
  gpu::rewriteReshapesAsViews(copy);
  gpu::fuseElementwiseChains(copy);
  gpu::splitSmallReductions(copy);
  copyPassedThroughResults(copy);
  PassManager bufferizing(ctx);
  buildKernelBufferizationPipeline(bufferizing);
  if (failed(bufferizing.run(module))) {
    why = "bufferization failed";
    return failure();
  }
  gpu::peelForRegisterTiles(copy);
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

std::string summaryOf(const SpirvKernel &k) {
  const SpirvDispatch &d = k.dispatches.front();
  return llvm::formatv("vulkan, {0} dispatch{1}, first {2}x{3}x{4} groups of "
                       "{5}x{6}x{7}",
                       k.dispatches.size(),
                       k.dispatches.size() == 1 ? "" : "es", d.groups[0],
                       d.groups[1], d.groups[2], d.local[0], d.local[1],
                       d.local[2])
      .str();
}

/// The kernel's schedule as `ignc inspect` shows it: knobs, and per
/// dispatch its workgroup grid and size, why it runs as one thread, its
/// register tile's outputs per thread and the analytical model's predicted
/// time (one dispatch per op, in order); `predicted` receives their sum.
/// No dispatch stages data in shared memory yet.
std::string scheduleJson(const gpu::GpuSchedule &schedule,
                         const SpirvKernel &spirv,
                         const std::vector<gpu::DispatchNote> &notes,
                         std::optional<double> &predicted) {
  nlohmann::json knobs;
  for (auto &[name, value] : schedule.knobs())
    knobs[name] = value;
  nlohmann::json dispatches = nlohmann::json::array();
  bool noted = notes.size() == spirv.dispatches.size();
  for (auto [i, d] : llvm::enumerate(spirv.dispatches)) {
    nlohmann::json entry = {{"groups", d.groups}, {"local", d.local}};
    if (noted && !notes[i].oneThread.empty())
      entry["one_thread"] = notes[i].oneThread;
    if (noted && notes[i].registerOutputs > 0)
      entry["register_tile"] = notes[i].registerOutputs;
    if (noted && notes[i].predictedMs) {
      entry["predicted_ms"] = *notes[i].predictedMs;
      entry["bound"] = notes[i].bound;
      predicted = predicted.value_or(0) + *notes[i].predictedMs;
    }
    dispatches.push_back(entry);
  }
  nlohmann::json j = {{"kind", "gpu"},
                      {"knobs", knobs},
                      {"shared_bytes", 0},
                      {"dispatches", dispatches}};
  if (predicted)
    j["predicted_ms"] = *predicted;
  return j.dump();
}

/// Bytes of each argument of `kernel` (bufferized) as SPIR-V stores it.
std::vector<int64_t> argumentBytes(func::FuncOp kernel) {
  std::vector<int64_t> bytes;
  for (Type t : kernel.getArgumentTypes()) {
    auto m = dyn_cast<MemRefType>(t);
    bytes.push_back(m && m.hasStaticShape() ? storageBytes(m) : 0);
  }
  return bytes;
}

/// Whether every dispatch binds at most the chip's buffers per stage, each
/// within the bytes a binding may span (else the kernel runs on the host:
/// the driver would refuse it at run time).
bool withinBufferLimits(const std::vector<int64_t> &argBytes,
                        const SpirvKernel &spirv, const gpu::ChipLimits &limits,
                        std::string &why) {
  for (const SpirvDispatch &d : spirv.dispatches) {
    if (int64_t(d.bindings.size()) > limits.maxStorageBuffers) {
      why = "a dispatch binds " + std::to_string(d.bindings.size()) +
            " buffers, more than the chip's " +
            std::to_string(limits.maxStorageBuffers) + " per stage";
      return false;
    }
    for (const Binding &b : d.bindings) {
      int64_t bytes = b.kind == Binding::Scratch ? spirv.scratchBytes[b.index]
                      : b.kind == Binding::Const
                          ? int64_t(spirv.constants[b.index].size())
                      : size_t(b.index) < argBytes.size() ? argBytes[b.index]
                                                          : 0;
      if (bytes > limits.maxStorageBufferBytes) {
        why = "a buffer of " + std::to_string(bytes) +
              " bytes, more than the " +
              std::to_string(limits.maxStorageBufferBytes) +
              " one binding of the chip may span";
        return false;
      }
    }
  }
  return true;
}

/// The chip's public numbers for the analytical model (a preset's; the
/// probed device has none, lavapipe nominal ones).
gpu::ChipNumbers chipNumbers(const VulkanChip &chip) {
  gpu::ChipNumbers n;
  n.computeUnits = chip.computeUnits;
  n.clockMHz = chip.clockMHz;
  n.peakGflops = chip.peakGflops;
  n.bandwidthGBs = chip.bandwidthGBs;
  return n;
}

} // namespace

search::Schedule defaultVulkanKnobs(func::FuncOp kernel,
                                    const VulkanChip &chip) {
  gpu::ChipNumbers numbers = chipNumbers(chip);
  gpu::GpuSchedule fixed = gpu::defaultGpuSchedule(chip.limits);
  if (!numbers.known())
    return fixed.knobs();
  MLIRContext *ctx = kernel.getContext();
  gpu::prepareGpuContext(ctx);
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  std::string why;
  FailureOr<func::FuncOp> copy = bufferizedCopy(kernel, *module, why);
  if (failed(copy))
    return fixed.knobs();
  return gpu::modelDefaultSchedule(*copy, chip.limits, numbers).knobs();
}

bool hasVulkanTypes(func::FuncOp kernel, const VulkanChip &chip,
                    std::string &why) {
  for (Type t : llvm::concat<const Type>(kernel.getArgumentTypes(),
                                         kernel.getResultTypes())) {
    auto shaped = dyn_cast<ShapedType>(t);
    Type element = shaped ? shaped.getElementType() : t;
    if (!storable(element, chip)) {
      llvm::raw_string_ostream os(why);
      os << "element type " << element << " (not computed on " << chip.name
         << ")";
      return false;
    }
  }
  return true;
}

FailureOr<CompiledKernel> compileVulkanKernel(func::FuncOp kernel,
                                              const search::Schedule *tuned,
                                              const VulkanChip &chip,
                                              std::string &why,
                                              std::string *replay) {
  MLIRContext *ctx = kernel.getContext();
  gpu::prepareGpuContext(ctx);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  FailureOr<func::FuncOp> copy = bufferizedCopy(kernel, *module, why);
  if (failed(copy)) {
    why += diagnostics.empty() ? "" : ": " + diagnostics;
    return failure();
  }
  gpu::ChipNumbers numbers = chipNumbers(chip);
  // Untuned: the model's pick where the chip has numbers.
  gpu::GpuSchedule schedule =
      tuned || !numbers.known()
          ? gpu::scheduleFromKnobs(tuned, chip.limits)
          : gpu::modelDefaultSchedule(*copy, chip.limits, numbers);
  std::vector<gpu::DispatchNote> notes;
  std::string script =
      gpu::buildTransformScript(*copy, schedule, chip.limits, why, notes,
                                numbers.known() ? &numbers : nullptr);
  if (script.empty())
    return failure();
  if (replay)
    appendReplay(*module, script, *replay);
  if (failed(gpu::mapKernelToGpu(*module, *copy, script, why)))
    return failure();
  // Read before the lowering, which rewrites the function.
  std::vector<int64_t> argBytes = argumentBytes(*copy);
  FailureOr<SpirvKernel> spirv =
      lowerToSpirv(*module, *copy, spirvTargetEnv(chip), why);
  if (failed(spirv))
    return failure();
  if (!withinBufferLimits(argBytes, *spirv, chip.limits, why))
    return failure();
  CompiledKernel out;
  out.deviceJson = spirv->descriptorJson(out.blob);
  out.scheduleJson = scheduleJson(schedule, *spirv, notes, out.predictedMs);
  out.summary = summaryOf(*spirv);
  if (out.predictedMs) // a prediction, never a measurement
    out.summary += llvm::formatv(", predicted {0:f3} ms", *out.predictedMs);
  return out;
}

} // namespace ign::vulkan
