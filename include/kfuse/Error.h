//===- kfuse/Error.h - errors as values -------------------------*- C++ -*-===//
//
// kfuse never throws and never aborts on bad input: every fallible call
// returns a Status or an Expected<T> whose message names the problem (the
// op, the shapes, the argument, the file position).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_ERROR_H
#define KFUSE_ERROR_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kfuse {

/// What went wrong, broadly; the message says exactly what.
enum class ErrorCode {
  InvalidGraph,    ///< a shape, dtype or op error while building or parsing
  InvalidArgument, ///< a bad argument to a call (count, shape, dtype, ...)
  CompileFailed,   ///< a pass or the backend failed
  NoDevice,        ///< no CUDA driver or no GPU
  DeviceError,     ///< a CUDA call failed
  IOError,         ///< a file could not be read or written
};

class Error {
public:
  Error(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  ErrorCode code_;
  std::string message_;
};

/// Success, or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return !error_; }
  explicit operator bool() const { return isOk(); }
  const Error &error() const {
    assert(error_ && "no error in an ok Status");
    return *error_;
  }
  /// The message, or "" when ok.
  std::string message() const { return error_ ? error_->message() : ""; }

private:
  std::optional<Error> error_;
};

/// A T, or an Error.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Error error) : storage_(std::move(error)) {}

  bool isOk() const { return storage_.index() == 0; }
  explicit operator bool() const { return isOk(); }

  T &operator*() { return std::get<0>(storage_); }
  const T &operator*() const { return std::get<0>(storage_); }
  T *operator->() { return &std::get<0>(storage_); }
  const T *operator->() const { return &std::get<0>(storage_); }
  T take() { return std::move(std::get<0>(storage_)); }

  const Error &error() const { return std::get<1>(storage_); }
  Status status() const { return isOk() ? Status() : Status(error()); }

private:
  std::variant<T, Error> storage_;
};

} // namespace kfuse

/// Returns the error of `expr`, a Status, from the enclosing function
/// (which returns a Status or an Expected<T>); goes on when it is ok.
#define KFUSE_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    if (::kfuse::Status kfuseStatus_ = (expr); !kfuseStatus_)                  \
      return kfuseStatus_.error();                                             \
  } while (false)

#endif // KFUSE_ERROR_H
