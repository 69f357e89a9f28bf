//===- HostPeak.cpp - an FMA microbenchmark of the widest vectors ---------===//
//
// Independent accumulator chains hide the FMA latency (4-5 cycles) on both
// FMA ports: 12 of AVX2's 16 registers, 24 of AVX-512's 32 (an AVX-512 core
// with two 512-bit FMA units needs 8-10 in flight per unit). The x86 kernels
// are compiled for their instruction sets by function attributes and chosen
// at run time; other CPUs run the portable loop, which the compiler
// vectorizes for the build's baseline.
//
//===----------------------------------------------------------------------===//

#include "HostPeak.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IGN_HOST_X86 1
#endif

namespace ign::host {

namespace {

struct Kernel {
  float (*run)(long iterations);
  double flopsPerIteration;
  int vectorBits;
};

#ifdef IGN_HOST_X86
__attribute__((target("avx512f"))) float fmaChainsAvx512(long iterations) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i)
    acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < 24; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < 24; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

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
#endif

/// 12 chains of 4 lanes as plain arrays: SSE or NEON after vectorization.
float mulAddChainsPortable(long iterations) {
  float acc[12][4];
  for (int i = 0; i < 12; ++i)
    for (int l = 0; l < 4; ++l)
      acc[i][l] = float(i) * 1e-3f;
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < 12; ++i)
      for (int l = 0; l < 4; ++l)
        acc[i][l] = acc[i][l] * 0.999999f + 1e-7f;
  float sum = 0;
  for (int i = 0; i < 12; ++i)
    for (int l = 0; l < 4; ++l)
      sum += acc[i][l];
  return sum;
}

Kernel widestKernel() {
#ifdef IGN_HOST_X86
  if (__builtin_cpu_supports("avx512f"))
    return {fmaChainsAvx512, 24 * 16 * 2, 512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {fmaChainsAvx2, 12 * 8 * 2, 256};
#endif
  return {mulAddChainsPortable, 12 * 4 * 2, 128};
}

} // namespace

double measureFmaPeakGflops(double seconds, int *vectorBits) {
  Kernel kernel = widestKernel();
  if (vectorBits)
    *vectorBits = kernel.vectorBits;
  volatile float sink = 0;
  long iterations = 1 << 16;
  double best = 0;
  auto start = std::chrono::steady_clock::now();
  while (true) {
    auto t0 = std::chrono::steady_clock::now();
    sink = sink + kernel.run(iterations);
    double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (dt > 0)
      best = std::max(best,
                      kernel.flopsPerIteration * double(iterations) / dt / 1e9);
    if (dt < 0.01)
      iterations *= 2;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() > seconds)
      break;
  }
  return best;
}

} // namespace ign::host
