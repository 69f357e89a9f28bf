// Multiply-accumulate throughput of one core's AVX2 dot products, in the
// shape of the host's register tiles (benchmarks/results/
// 2026-12-05-session33-int16-words.md):
//   fma       12 independent vfmadd231ps (8 f32 MACs each)
//   madd+add  12 vpmaddwd + vpaddd pairs (16 exact i16 x i16 MACs each),
//             the Int16Pairs tile (targets/host/GroupedDots.cpp)
//   maddubs   vpmaddubsw + vpmaddwd(1) + vpaddd (32 u8 x s8 MACs, the
//             pairs saturating at 16 bits: onnxruntime's AVX2 int8 kernels)
//   tile-*    a 6 x 16 tile's reduction step: 2 vector loads, 6 broadcasts
//             from memory, 12 multiply-adds (f32, or i16 pairs)
//
// The multiplied registers are zero (zero idioms, executed by no unit);
// the accumulators start as whatever the registers held (AMD adds
// denormals at full speed; on Intel, read the f32 lines with care).
//
//   cc -O2 benchmarks/micro/dot_throughput.c -o /tmp/dot && /tmp/dot
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define N 50000000L
#define ACC "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
            "xmm8", "xmm9", "xmm10", "xmm11"

int main(void) {
  float buf[64] = {0};
  double t = now();
  for (long n = 0; n < N; n++)
    __asm__ volatile(
        "vxorps %%xmm14, %%xmm14, %%xmm14\n vxorps %%xmm15, %%xmm15, %%xmm15\n"
#define F(r) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #r "\n"
        F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)::: ACC,
        "xmm14", "xmm15");
  double fma = now() - t;
  t = now();
  for (long n = 0; n < N; n++)
    __asm__ volatile(
        "vpxor %%xmm14, %%xmm14, %%xmm14\n vpxor %%xmm15, %%xmm15, %%xmm15\n"
#define I(r, x)                                                                \
  "vpmaddwd %%ymm14, %%ymm15, %%ymm" #x "\n"                                   \
  "vpaddd %%ymm" #x ", %%ymm" #r ", %%ymm" #r "\n"
        I(0, 12) I(1, 13) I(2, 12) I(3, 13) I(4, 12) I(5, 13) I(6, 12)
            I(7, 13) I(8, 12) I(9, 13) I(10, 12) I(11, 13)::: ACC, "xmm12",
        "xmm13", "xmm14", "xmm15");
  double madd = now() - t;
  t = now();
  for (long n = 0; n < N; n++)
    __asm__ volatile(
        "vpxor %%xmm13, %%xmm13, %%xmm13\n vpxor %%xmm14, %%xmm14, %%xmm14\n"
        "vpxor %%xmm15, %%xmm15, %%xmm15\n"
#define U(r)                                                                   \
  "vpmaddubsw %%ymm14, %%ymm15, %%ymm12\n"                                     \
  "vpmaddwd %%ymm12, %%ymm13, %%ymm12\n"                                       \
  "vpaddd %%ymm12, %%ymm" #r ", %%ymm" #r "\n"
        U(0) U(1) U(2) U(3) U(4) U(5) U(6) U(7) U(8) U(9) U(10) U(11)::: ACC,
        "xmm12", "xmm13", "xmm14", "xmm15");
  double maddubs = now() - t;
  t = now();
  for (long n = 0; n < N; n++)
    __asm__ volatile(
        "vmovdqu (%0), %%ymm14\n vmovdqu 32(%0), %%ymm15\n"
#define R(a, b, o)                                                             \
  "vpbroadcastd " #o "(%0), %%ymm13\n"                                         \
  "vpmaddwd %%ymm14, %%ymm13, %%ymm12\n"                                       \
  "vpaddd %%ymm12, %%ymm" #a ", %%ymm" #a "\n"                                 \
  "vpmaddwd %%ymm15, %%ymm13, %%ymm12\n"                                       \
  "vpaddd %%ymm12, %%ymm" #b ", %%ymm" #b "\n"
        R(0, 1, 64) R(2, 3, 68) R(4, 5, 72) R(6, 7, 76) R(8, 9, 80)
            R(10, 11, 84)::"r"(buf)
        : ACC, "xmm12", "xmm13", "xmm14", "xmm15", "memory");
  double tileWords = now() - t;
  t = now();
  for (long n = 0; n < N; n++)
    __asm__ volatile(
        "vmovups (%0), %%ymm14\n vmovups 32(%0), %%ymm15\n"
#define Q(a, b, o)                                                             \
  "vbroadcastss " #o "(%0), %%ymm13\n"                                         \
  "vfmadd231ps %%ymm14, %%ymm13, %%ymm" #a "\n"                                \
  "vfmadd231ps %%ymm15, %%ymm13, %%ymm" #b "\n"
        Q(0, 1, 64) Q(2, 3, 68) Q(4, 5, 72) Q(6, 7, 76) Q(8, 9, 80)
            Q(10, 11, 84)::"r"(buf)
        : ACC, "xmm13", "xmm14", "xmm15", "memory");
  double tileF32 = now() - t;
  printf("GMAC/s: fma %.1f  madd+add %.1f  maddubs %.1f  tile-words %.1f  "
         "tile-f32 %.1f\n",
         N * 96 / fma / 1e9, N * 192 / madd / 1e9, N * 384 / maddubs / 1e9,
         N * 192 / tileWords / 1e9, N * 96 / tileF32 / 1e9);
  return 0;
}
