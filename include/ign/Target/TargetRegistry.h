//===- TargetRegistry.h - the targets ignc knows ----------------*- C++ -*-===//
//
// Targets join the registry from their own folders: each names its
// registration function in its CMakeLists.txt (ign_register_target), and
// registerBuiltinTargets() calls them all; a test can register one more. The
// driver looks targets up here and names none.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGET_TARGETREGISTRY_H
#define IGN_TARGET_TARGETREGISTRY_H

#include "ign/Target/Target.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ign::target {

/// Adds `target` (process-wide). False when one of that name is there.
bool registerTarget(std::unique_ptr<Target> target);

/// Registers every target built into ignc (idempotent).
void registerBuiltinTargets();

/// The registered targets, in registration order.
std::vector<const Target *> registeredTargets();

const Target *findTarget(llvm::StringRef name);

/// The target that runs the kernels no device target claims (the host);
/// null when none is registered.
const Target *fallbackTarget();

/// A `--target=` spelling and `--chip`, resolved.
struct Selection {
  const Target *target = nullptr;
  std::string chip;
};

/// `spelling` is a target's name (then `chip`, or its default chip) or
/// another spelling a target accepts ("sm80", a CPU name: then `chip` must
/// be empty or the same). nullopt and `error` set when neither.
std::optional<Selection> resolveTarget(llvm::StringRef spelling,
                                       llvm::StringRef chip,
                                       std::string &error);

/// Registers every target's libignrt driver (idempotent).
void registerRuntimeDrivers();

} // namespace ign::target

#endif // IGN_TARGET_TARGETREGISTRY_H
