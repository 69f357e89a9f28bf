//===- Validator.h - the one check of a candidate against its reference ---===//
//
// Every target's candidates are checked here, with one tolerance table:
// relative L2 error over an output and max absolute error relative to the
// reference's largest magnitude, per dtype; integers and booleans must
// match exactly, and a NaN or infinity where the reference is finite fails.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_VALIDATOR_H
#define IGN_SEARCH_VALIDATOR_H

#include "ign/Runtime/ignrt.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ign::search {

struct Tolerance {
  double relL2, maxRel;
};

/// The thresholds of a floating-point dtype; nullopt: must match exactly.
std::optional<Tolerance> toleranceFor(ignrt_dtype dtype);

struct Comparison {
  double relL2 = 0, maxAbs = 0;
  bool pass = true;
};

/// Compares values (converted to double) with the reference's under the
/// thresholds of `dtype`.
Comparison compareValues(const std::vector<double> &got,
                         const std::vector<double> &want, ignrt_dtype dtype);

/// Compares one output's bytes with its reference's (`bytes` each), under
/// the thresholds of `dtype`, or, for a floating-point output, of
/// `computedIn` when given (f32 outputs of kernels that compute in bf16).
Comparison compareOutput(const char *got, const std::string &want, size_t bytes,
                         ignrt_dtype dtype,
                         std::optional<ignrt_dtype> computedIn = std::nullopt);

/// The element at `i` of `data` as a double.
double elementAt(const char *data, size_t i, ignrt_dtype dtype);

/// Bytes per element of `dtype`.
size_t elementBytes(ignrt_dtype dtype);

} // namespace ign::search

#endif // IGN_SEARCH_VALIDATOR_H
