//===- PrepackedWeights.h - weights the host packed at compile time -*- C++
//-*-===//
//
// The compiler's half of PrepackedPanels.h: which kernel arguments are
// constant weights (every launch binds them to the bundle's weights), and,
// once the schedules are applied, the panels each kernel asked for written
// into the bundle as weights of their own, bound at every launch in place
// of the weights they replace.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_HOST_PREPACKEDWEIGHTS_H
#define IGN_TARGETS_HOST_PREPACKEDWEIGHTS_H

#include "ign/Bundle/BundleWriter.h"
#include "ign/Target/Target.h"

namespace ign::host {

/// Marks `ign.weight` every f32 argument of each kernel that all its
/// launches bind to a weight.
void markWeightArguments(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                         const bundle::BundleContents &contents);

/// After the schedules, before bufferization: binds each kernel's
/// `ign.panels` arguments at every launch to panels packed from the
/// launch's weight (new weights of `contents`), drops the weight arguments
/// the kernel no longer reads from it and its launches, and the weights no
/// launch reads any more from `contents`; removes the marks. Returns the
/// number of panel arguments per kernel.
mlir::FailureOr<std::vector<int64_t>>
bindPrepackedPanels(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                    bundle::BundleContents &contents);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_PREPACKEDWEIGHTS_H
