//===- HostCompiler.h - ign module -> shared object for the host CPU ------===//
//
// The host target's compiler side: lowers an imported ign module through the
// reference lowering, bufferization and LLVM to a shared object, linked
// in-process with lld (no system compiler or linker at compile time).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTCOMPILER_H
#define IGN_TARGETS_HOST_HOSTCOMPILER_H

#include "ign/Bundle/BundleWriter.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace ign::host {

using TensorDesc = bundle::TensorSpec;

/// A weight passed to the entry point from the bundle's weight section.
struct Weight {
  TensorDesc desc;
  llvm::ArrayRef<char> bytes; // owned by the module's resource blob
};

struct HostArtifact {
  /// Symbol of `void entry(void **descriptors)`: one memref descriptor per
  /// input, then per weight, then per output.
  std::string entry;
  std::string triple, cpu, features;
  std::vector<TensorDesc> inputs, outputs;
  std::vector<Weight> weights;
  std::string sharedObject; // the linked .so, in memory
};

struct HostOptions {
  /// "host" (this machine's CPU and features) or an LLVM CPU name such as
  /// x86-64-v3, x86-64-v4, znver4, neoverse-v2.
  std::string cpu = "host";
};

/// The CPU names ignc accepts for --target (host and named levels).
bool isKnownHostCpu(llvm::StringRef name);

/// Compiles `module` (ign dialect, as imported). Diagnostics are emitted at
/// the failing op; the module is consumed (lowered in place).
mlir::FailureOr<HostArtifact> compileForHost(mlir::ModuleOp module,
                                             const HostOptions &options);

/// Short dtype name of an element type ("f32", "i64", "bool", ...).
std::string dtypeName(mlir::Type element);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTCOMPILER_H
