//===- HostSchedule.h - the host's default kernel schedule ------*- C++ -*-===//
//
// The schedule the host uses when nothing was tuned: every loop nest ordered
// so its innermost loop walks memory contiguously (LLVM then vectorizes it),
// and the kernel's root op tiled into workgroups, with its producers fused
// in, that the runtime spreads across threads.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTSCHEDULE_H
#define IGN_TARGETS_HOST_HOSTSCHEDULE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace ign::host {

struct KernelSchedule {
  /// Tile of the root op's loops per workgroup (0: the loop is not split).
  std::vector<int64_t> workgroupTile;
  /// Register tile of the kernel's contraction (output rows x vector lanes,
  /// 1 elsewhere), when it has one that was vectorized.
  std::vector<int64_t> registerTile;
  /// Workgroups the kernel runs as; 1 when it runs on one thread.
  int64_t workgroups = 1;
  /// Why the kernel runs on one thread, when it does.
  std::string serialReason;

  std::string toJson() const;
};

/// Applies the default schedule to a kernel function on tensors (after the
/// reference lowering). Never fails: a kernel it cannot tile stays whole.
KernelSchedule applyDefaultSchedule(mlir::func::FuncOp kernel);

/// After bufferization: appends the `wg_begin, wg_end` index arguments to
/// the kernel and makes its workgroup loop iterate over that range. A kernel
/// whose body is more than one workgroup loop is run as one workgroup
/// (`schedule` is updated to say so).
void distributeWorkgroups(mlir::func::FuncOp kernel, KernelSchedule &schedule);

/// After bufferization and distribution, for kernels with the default
/// schedule: keeps the output tiles of vectorized contractions in registers
/// across their reduction loops, and lets LLVM contract multiply-adds into
/// FMAs.
void finishDefaultSchedule(mlir::func::FuncOp kernel);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTSCHEDULE_H
