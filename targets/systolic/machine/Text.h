//===- Text.h - Formatting, string and file helpers ---------------*- C++
//-*-===//
//
// What the systolic machine's plain C++ needs of text: printf into a
// std::string, numbers as its messages have always printed them, trimming,
// case, splitting, integer parsing and reading a whole file.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_TEXT_H
#define IGN_TARGETS_SYSTOLIC_TEXT_H

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ign::systolic {

/// printf into a std::string.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string
strFormat(const char *format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(s.data(), s.size() + 1, format, args);
  va_end(args);
  return s;
}

/// A number as LLVM's formatv printed a float or double by default: two
/// decimals ("%.2f"), "nan", "INF" and "-INF" (error messages keep their
/// text).
inline std::string fixed2(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-INF" : "INF";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// \p s without leading and trailing characters of \p chars (default:
/// whitespace).
inline std::string_view trim(std::string_view s,
                             std::string_view chars = " \t\n\v\f\r") {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos)
    return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

/// ASCII lower and upper case.
inline std::string toLower(std::string_view s) {
  std::string r(s);
  for (char &c : r)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return r;
}
inline std::string toUpper(std::string_view s) {
  std::string r(s);
  for (char &c : r)
    if (c >= 'a' && c <= 'z')
      c = char(c - 'a' + 'A');
  return r;
}

/// The pieces of \p s between the separators (empty ones kept: "a,,b," is
/// "a", "", "b", "").
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = s.find(sep); i != std::string_view::npos;
       i = s.find(sep, start)) {
    pieces.push_back(s.substr(start, i - start));
    start = i + 1;
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

/// A decimal integer (an optional '-', then digits) that is all of \p s and
/// fits 64 bits; false otherwise.
inline bool parseInt(std::string_view s, int64_t &out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return false;
  out = v;
  return true;
}

/// The contents of the file at \p path, or false with the system's message
/// ("No such file or directory") in \p error.
inline bool readFile(const std::string &path, std::string &contents,
                     std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = std::strerror(errno);
    return false;
  }
  contents.clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    contents.append(buf, n);
  bool failed = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (failed)
    error = std::strerror(err);
  return !failed;
}

} // namespace ign::systolic

#endif
