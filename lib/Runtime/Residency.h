//===- Residency.h - intermediates that stay on a device --------*- C++ -*-===//
//
// Between two launches of one device driver, an intermediate need not go
// through the host: the producer may leave it on the device and the
// consumers read it there (ignrt_device_call::resident). This is the plan
// libignrt makes once per bundle: a tensor of the arena (each write of an
// arena range starts a new version of it) stays on the device when its
// producer and every reader are kernels of the same driver, all naming it
// by the same offset and size, and no other launch touches any part of it
// in between. Plain C++ (libignrt links no LLVM); the unit tests call it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_RUNTIME_RESIDENCY_H
#define IGN_LIB_RUNTIME_RESIDENCY_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ignrt_detail {

/// One argument of a launch: an arena range, or anything else (a graph
/// input or output, a weight), which never stays on a device.
struct ResidencyArg {
  bool arena = false;
  uint64_t offset = 0;
  size_t bytes = 0;
};

/// A launch as the plan sees it: a kernel run by device driver `driver`
/// (a number per driver; -1 for a host kernel), its inputs first.
struct ResidencyLaunch {
  bool kernel = true; // false: a copy or control flow (no plan at all)
  int driver = -1;
  size_t inputs = 0;
  std::vector<ResidencyArg> args;
};

/// Per launch and argument, an IGNRT_RESIDENT_* flag (ignrt.h): all host
/// where any launch is not a kernel (loops and branches run launches more
/// than once, or not at all).
std::vector<std::vector<unsigned char>>
planResidency(const std::vector<ResidencyLaunch> &launches);

} // namespace ignrt_detail

#endif // IGN_LIB_RUNTIME_RESIDENCY_H
