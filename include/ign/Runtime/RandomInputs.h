//===- RandomInputs.h - seeded random inputs for a bundle ------*- C++ -*-===//
//
// The inputs `ignc run --random-inputs`, tuning and the runtime's sample
// tools draw: the same bytes for the same seed in every tool, so their
// outputs compare byte for byte. Header-only plain C++: tools that link
// libignrt alone (no LLVM) use it too.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_RUNTIME_RANDOMINPUTS_H
#define IGN_RUNTIME_RANDOMINPUTS_H

#include "ign/Runtime/ignrt.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

namespace ign {

/// Random, never-zero inputs: floats in [-1, -0.01] U [0.01, 1], integers
/// in [0, 2) (valid indices for any non-empty dim).
inline std::string randomBytes(const ignrt_tensor_info &info,
                               std::mt19937_64 &rng) {
  size_t elem = std::max<size_t>(1, ignrt_dtype_size(info.dtype));
  size_t n = info.bytes / elem;
  std::string bytes(info.bytes, '\0');
  std::uniform_real_distribution<double> mag(0.01, 1.0);
  for (size_t i = 0; i < n; ++i) {
    double v = mag(rng) * (rng() & 1 ? 1 : -1);
    switch (info.dtype) {
    case IGNRT_F32: {
      float f = float(v);
      std::memcpy(&bytes[i * 4], &f, 4);
      break;
    }
    case IGNRT_F64:
      std::memcpy(&bytes[i * 8], &v, 8);
      break;
    case IGNRT_I64: {
      int64_t k = int64_t(rng() % 2);
      std::memcpy(&bytes[i * 8], &k, 8);
      break;
    }
    case IGNRT_I32: {
      int32_t k = int32_t(rng() % 2);
      std::memcpy(&bytes[i * 4], &k, 4);
      break;
    }
    default:
      bytes[i * elem] = char(rng() % 2);
    }
  }
  return bytes;
}

} // namespace ign

#endif // IGN_RUNTIME_RANDOMINPUTS_H
