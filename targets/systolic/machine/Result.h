//===- Result.h - Plain C++ errors for the systolic machine -----*- C++ -*-===//
//
// Status: success or an error message; Result<T>: a value or an error
// message. The errors of the machine, runtime and SCALE-Sim layers (no LLVM).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_RESULT_H
#define IGN_TARGETS_SYSTOLIC_RESULT_H

#include <optional>
#include <string>
#include <utility>

namespace ign::systolic {

class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  static Status failure(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return !failed_; }
  /// The error message (empty on success).
  const std::string &message() const { return message_; }

private:
  bool failed_ = false;
  std::string message_;
};

/// An error with \p message, for a Status or any Result<T>.
inline Status fail(std::string message) {
  return Status::failure(std::move(message));
}

template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {}
  /// An error; \p error must not be success.
  Result(Status error) : error_(std::move(error)) {
    if (error_.ok())
      error_ = Status::failure("success passed as an error");
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  /// The error (success when there is a value).
  const Status &status() const { return error_; }
  const std::string &message() const { return error_.message(); }

private:
  std::optional<T> value_;
  Status error_;
};

} // namespace ign::systolic

#endif
