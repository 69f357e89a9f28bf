//===- KeptLoops.h - loops to keep rolled or interleave ---------*- C++ -*-===//
//
// MLIR 19's SCF-to-ControlFlow lowering drops an scf.for's attributes, so
// a schedule cannot tell LLVM which loops to leave rolled. The host's
// codegen pipeline lowers SCF with this pass instead: an scf.for marked
// kKeepLoop (DirectConv.h) becomes the same blocks with
// llvm.loop.unroll.disable on its back edge, one marked kInterleaveLoop
// with llvm.loop.interleave.count, every other SCF op as MLIR lowers it.
// The pass first marks kInterleaveLoop on innermost scalar loops whose body
// is a long chain of float arithmetic (an exp or sigmoid epilogue).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_KEPTLOOPS_H
#define IGN_TARGETS_HOST_KEPTLOOPS_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace ign::host {

/// SCF to ControlFlow, keeping loops marked kKeepLoop rolled and
/// interleaving long scalar bodies.
std::unique_ptr<mlir::Pass> createLowerSCFKeepingLoopsPass();

} // namespace ign::host

#endif // IGN_TARGETS_HOST_KEPTLOOPS_H
