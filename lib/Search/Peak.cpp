//===- Peak.cpp - an FMA microbenchmark
//--------------------------------------===//

#include "ign/Search/Peak.h"

#include <algorithm>
#include <chrono>
#include <immintrin.h>

namespace ign::search {

namespace {

/// 12 independent accumulators hide the FMA latency (4-5 cycles) on both
/// FMA ports. Returns a value the caller keeps, so nothing is optimized out.
__attribute__((target("avx2,fma"))) float fmaChainsAvx2(long iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
}

float mulAddChainsSse(long iterations) {
  __m128 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm_set1_ps(float(i) * 1e-3f);
  const __m128 a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], a), b);
  __m128 sum = acc[0];
  for (int i = 1; i < 12; ++i)
    sum = _mm_add_ps(sum, acc[i]);
  return _mm_cvtss_f32(sum);
}

} // namespace

double measureFmaPeakGflops(double seconds) {
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  double flopsPerIteration = avx2 ? 12 * 8 * 2 : 12 * 4 * 2;
  volatile float sink = 0;
  long iterations = 1 << 16;
  double best = 0;
  auto start = std::chrono::steady_clock::now();
  while (true) {
    auto t0 = std::chrono::steady_clock::now();
    sink =
        sink + (avx2 ? fmaChainsAvx2(iterations) : mulAddChainsSse(iterations));
    double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (dt > 0)
      best = std::max(best, flopsPerIteration * double(iterations) / dt / 1e9);
    if (dt < 0.01)
      iterations *= 2;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() > seconds)
      break;
  }
  return best;
}

} // namespace ign::search
