//===- RuntimeHelpers.h - libignrt handles and random inputs ----*- C++ -*-===//
//
// Shared by the bundle commands (run, bench) and the tuning worker.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_RUNTIMEHELPERS_H
#define IGN_DRIVER_RUNTIMEHELPERS_H

#include "ign/Runtime/RandomInputs.h"
#include "ign/Runtime/ignrt.h"

#include <memory>
#include <random>
#include <string>

namespace ign {

struct BundleCloser {
  void operator()(ignrt_bundle *b) const { ignrt_bundle_close(b); }
};
struct SessionCloser {
  void operator()(ignrt_session *s) const { ignrt_session_destroy(s); }
};
using BundlePtr = std::unique_ptr<ignrt_bundle, BundleCloser>;
using SessionPtr = std::unique_ptr<ignrt_session, SessionCloser>;

} // namespace ign

#endif // IGN_DRIVER_RUNTIMEHELPERS_H
