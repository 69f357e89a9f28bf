//===- HostCompiler.h - ign module -> shared object for the host CPU ------===//
//
// The host target's compiler side: outlines an imported ign module into
// kernels, lowers each through the reference lowering, the default schedule,
// bufferization and LLVM, and links them into one shared object in-process
// with lld (no system compiler or linker at compile time).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTCOMPILER_H
#define IGN_TARGETS_HOST_HOSTCOMPILER_H

#include "ign/Bundle/BundleWriter.h"
#include "ign/Search/ScheduleSpace.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <optional>
#include <string>

namespace ign::host {

struct HostOptions {
  /// "host" (this machine's CPU and features) or an LLVM CPU name such as
  /// x86-64-v3, x86-64-v4, znver4, neoverse-v2.
  std::string cpu = "host";
  /// "default" (the host's default schedule) or "reference" (the plain
  /// reference lowering, one thread: the correctness oracle).
  std::string schedule = "default";
  /// Fuse ops into kernels (false: one op per kernel, --no-fuse).
  bool fuse = true;
  /// When set, receives the optimized LLVM IR of the kernels (--emit=llvm).
  std::string *llvmIR = nullptr;
  /// The tuned schedule of a kernel, if any (else the default heuristics).
  std::function<const search::Schedule *(const KernelSummary &)> scheduleFor;
  /// The module's kernels are already formed and outlined (a task module).
  bool kernelsFormed = false;
  /// An accelerator may claim kernels: called for every kernel before the
  /// host lowering; a claimed kernel is not compiled for the host, and its
  /// bundle entry names the device (docs/bundle-format.md).
  struct Offloaded {
    std::string device, deviceJson, blob, scheduleJson;
  };
  std::function<mlir::FailureOr<std::optional<Offloaded>>(
      mlir::func::FuncOp kernel, const KernelSummary *summary)>
      offload;
  /// The bundle's target name ("host", or the accelerator's).
  std::string targetName = "host";
  /// Keep im2col columns with few pixels a kernel of their own (the host's
  /// threads split a convolution by pixels); off for an accelerator that
  /// moves windows itself.
  bool separateThinColumns = true;
};

/// One tuning task: a kernel as a module of its own, whose @main launches
/// it once with all its arguments (weights too) as the model's inputs.
struct HostTask {
  KernelSummary summary;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Forms the kernels of `module` (consumed) and returns one task per
/// distinct kernel, in launch order.
mlir::FailureOr<std::vector<HostTask>>
extractHostTasks(mlir::ModuleOp module, const HostOptions &options);

/// The schedule space of a task module's kernel (the module is unchanged).
mlir::FailureOr<search::ScheduleSpace> hostScheduleSpace(mlir::ModuleOp task);

/// Vector register width of the machine the host target compiles for.
int64_t hostVectorBits(const HostOptions &options);

/// A fingerprint of what the host target's code depends on: triple, CPU,
/// its features, ignc and LLVM versions ("host/<cpu>/<hash>").
std::string hostFingerprint(const HostOptions &options,
                            llvm::StringRef ignVersion);

/// The CPU names ignc accepts for --target (host and named levels).
bool isKnownHostCpu(llvm::StringRef name);

/// Forms the kernels `module` (ign dialect, as imported) would compile to
/// (fused unless options.fuse is false) and describes them; nothing is
/// lowered. The module is consumed.
mlir::FailureOr<std::vector<KernelSummary>>
planHostKernels(mlir::ModuleOp module, const HostOptions &options);

/// Compiles `module` (ign dialect, as imported): its fused kernels, each
/// with the host's default schedule, packed into the contents of a bundle
/// (all but the model's provenance fields). Weights point into the module's
/// resource blobs, so the module must outlive the result. Diagnostics are
/// emitted at the failing op; the module is consumed (lowered in place).
mlir::FailureOr<bundle::BundleContents>
compileForHost(mlir::ModuleOp module, const HostOptions &options);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTCOMPILER_H
