//===- HostPeak.h - this CPU's measured FMA peak ----------------*- C++ -*-===//

#ifndef IGN_TARGETS_HOST_HOSTPEAK_H
#define IGN_TARGETS_HOST_HOSTPEAK_H

namespace ign::host {

/// Single-precision GFLOP/s of one core running independent FMA chains of
/// the widest vectors the CPU has (AVX-512, AVX2+FMA, else SSE or plain
/// multiply-adds), measured over about `seconds`; multiply by the threads
/// for a multi-core peak. `vectorBits` receives the width measured.
double measureFmaPeakGflops(double seconds = 0.2, int *vectorBits = nullptr);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTPEAK_H
