//===- JsonFields.h - Typed reads of nlohmann/json values -------*- C++ -*-===//
//
// Reads that never throw and accept what the descriptors have always
// accepted: an integer field is an integer or a float with an integral value;
// a number is any integer or float; booleans and strings only as such.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_JSONFIELDS_H
#define IGN_TARGETS_SYSTOLIC_JSONFIELDS_H

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace ign::systolic::jsonfields {

using nlohmann::json;

/// Member \p key of \p object; null when \p object is null, not an object,
/// or has no such member.
inline const json *member(const json *object, const char *key) {
  if (!object || !object->is_object())
    return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

inline std::optional<int64_t> asInt(const json *v) {
  if (!v)
    return std::nullopt;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u <= uint64_t(std::numeric_limits<int64_t>::max()))
      return int64_t(u);
    return std::nullopt;
  }
  if (v->is_number_integer())
    return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>(), whole = 0;
    if (std::modf(d, &whole) == 0.0 && d >= -9223372036854775808.0 &&
        d < 9223372036854775808.0)
      return int64_t(d);
  }
  return std::nullopt;
}

inline std::optional<double> asNumber(const json *v) {
  if (!v || !v->is_number())
    return std::nullopt;
  return v->get<double>();
}

inline std::optional<bool> asBool(const json *v) {
  if (!v || !v->is_boolean())
    return std::nullopt;
  return v->get<bool>();
}

inline const std::string *asString(const json *v) {
  if (!v || !v->is_string())
    return nullptr;
  return &v->get_ref<const std::string &>();
}

/// \p v as compact text; invalid UTF-8 in strings becomes U+FFFD.
inline std::string compact(const json &v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace ign::systolic::jsonfields

#endif
