//===- HostCompiler.h - host kernels -> one shared object -------*- C++ -*-===//
//
// The host target's compiler side: lowers the kernels placed on the host
// through the reference lowering, their schedules (default heuristics or
// tuned knobs), bufferization and LLVM, and links them into one shared
// object in-process with lld (no system compiler or linker at compile
// time).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTCOMPILER_H
#define IGN_TARGETS_HOST_HOSTCOMPILER_H

#include "HostSchedule.h"

#include "ign/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace ign::host {

/// The schedule space of a task module's kernel (the module is unchanged).
mlir::FailureOr<search::ScheduleSpace>
hostScheduleSpace(mlir::ModuleOp task, const HostMachine &machine);

/// The vector registers of `cpu` ("host": this machine's, else a CPU name
/// LLVM knows, with that CPU's features).
HostMachine hostMachine(const std::string &cpu);
/// The machine of `config.chip`, with `config.hostCores` cores when given,
/// computing in bf16 with --precision=bf16 where the CPU has AVX512-BF16.
HostMachine hostMachine(const target::TargetConfig &config);

/// A fingerprint of what the host target's code depends on: triple, CPU,
/// its features, ignc and LLVM versions ("host/<cpu>/<hash>").
std::string hostFingerprint(const std::string &cpu, llvm::StringRef ignVersion);

/// The CPU names ignc accepts for --target (host and named levels).
bool isKnownHostCpu(llvm::StringRef name);

/// Compiles `kernels` (functions of `module`, ign dialect) for the CPU
/// `options.config.chip` into one shared object in `contents.artifact`,
/// with each spec's symbol, schedule and workgroups; sets the bundle's
/// triple, CPU and features. The module is lowered in place.
mlir::LogicalResult compileHostKernels(
    mlir::ModuleOp module, llvm::MutableArrayRef<target::PlacedKernel> kernels,
    const target::CompileOptions &options, bundle::BundleContents &contents);

/// Registers the host target (targets/CMakeLists.txt calls it).
void registerHostTarget();

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTCOMPILER_H
