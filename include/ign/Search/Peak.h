//===- Peak.h - the machine's measured FMA peak ------------------*- C++
//-*-===//

#ifndef IGN_SEARCH_PEAK_H
#define IGN_SEARCH_PEAK_H

namespace ign::search {

/// Single-precision GFLOP/s of one core running independent FMA chains
/// (AVX2+FMA when the CPU has them, else SSE multiply-adds), measured over
/// about `seconds`. Multiply by the threads for a multi-core peak.
double measureFmaPeakGflops(double seconds = 0.2);

} // namespace ign::search

#endif // IGN_SEARCH_PEAK_H
