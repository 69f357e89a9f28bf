//===- Validator.cpp - the one check of a candidate against its reference -===//

#include "ign/Search/Validator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ign::search {

std::optional<Tolerance> toleranceFor(ignrt_dtype dtype) {
  switch (dtype) {
  case IGNRT_F32:
  case IGNRT_F64:
    return Tolerance{1e-4, 1e-3};
  case IGNRT_F16:
  case IGNRT_BF16:
    return Tolerance{1e-2, 2e-2};
  default:
    return std::nullopt;
  }
}

size_t elementBytes(ignrt_dtype dtype) {
  switch (dtype) {
  case IGNRT_F64:
  case IGNRT_I64:
  case IGNRT_U64:
    return 8;
  case IGNRT_F32:
  case IGNRT_I32:
  case IGNRT_U32:
    return 4;
  case IGNRT_F16:
  case IGNRT_BF16:
  case IGNRT_I16:
  case IGNRT_U16:
    return 2;
  default:
    return 1;
  }
}

static double halfToDouble(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? std::ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

template <typename T> static double load(const char *data, size_t i) {
  T v;
  std::memcpy(&v, data + sizeof(T) * i, sizeof(T));
  return double(v);
}

double elementAt(const char *data, size_t i, ignrt_dtype dtype) {
  switch (dtype) {
  case IGNRT_F32:
    return load<float>(data, i);
  case IGNRT_F64:
    return load<double>(data, i);
  case IGNRT_F16:
  case IGNRT_BF16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * i, 2);
    return halfToDouble(h, dtype == IGNRT_BF16);
  }
  case IGNRT_I64:
  case IGNRT_U64:
    return load<int64_t>(data, i);
  case IGNRT_I32:
  case IGNRT_U32:
    return load<int32_t>(data, i);
  case IGNRT_I16:
  case IGNRT_U16:
    return load<int16_t>(data, i);
  default:
    return double(int8_t(data[i]));
  }
}

/// Exact comparison: the share of elements that differ.
static Comparison compareExact(const std::vector<double> &got,
                               const std::vector<double> &want) {
  Comparison c;
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(got[i] - want[i]);
    wrong += !(d == 0);
    c.maxAbs = std::max(c.maxAbs, d);
  }
  c.relL2 = got.empty() ? 0 : double(wrong) / double(got.size());
  c.pass = wrong == 0;
  return c;
}

Comparison compareValues(const std::vector<double> &got,
                         const std::vector<double> &want, ignrt_dtype dtype) {
  if (got.size() != want.size())
    return Comparison{INFINITY, INFINITY, false};
  std::optional<Tolerance> tol = toleranceFor(dtype);
  if (!tol)
    return compareExact(got, want);
  Comparison c;
  double err2 = 0, ref2 = 0, refMax = 0;
  bool nonFinite = false;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    if (!std::isfinite(w)) {
      if (!(std::isnan(w) ? std::isnan(g) : g == w))
        nonFinite = true;
      continue;
    }
    if (!std::isfinite(g)) {
      nonFinite = true;
      continue;
    }
    err2 += (g - w) * (g - w);
    ref2 += w * w;
    refMax = std::max(refMax, std::fabs(w));
    c.maxAbs = std::max(c.maxAbs, std::fabs(g - w));
  }
  c.relL2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (nonFinite) {
    c.relL2 = INFINITY;
    c.maxAbs = INFINITY;
  }
  c.pass = !nonFinite && c.relL2 <= tol->relL2 &&
           c.maxAbs <= tol->maxRel * std::max(1.0, refMax);
  return c;
}

Comparison compareOutput(const char *got, const std::string &want, size_t bytes,
                         ignrt_dtype dtype,
                         std::optional<ignrt_dtype> computedIn) {
  if (want.size() != bytes)
    return Comparison{INFINITY, INFINITY, false};
  // Equal bytes pass whatever the dtype (NaNs included).
  if (std::memcmp(got, want.data(), bytes) == 0)
    return Comparison{};
  size_t n = bytes / elementBytes(dtype);
  std::vector<double> g(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = elementAt(got, i, dtype);
    w[i] = elementAt(want.data(), i, dtype);
  }
  bool floating = toleranceFor(dtype).has_value();
  return compareValues(g, w, floating && computedIn ? *computedIn : dtype);
}

} // namespace ign::search
