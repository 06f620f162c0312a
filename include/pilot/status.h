// Errors as values: every fallible library call returns a Status or a Result<T> that says
// what failed, where (file, item id or key) and what to do. Exceptions from third-party
// libraries are caught where they arise and turned into these. Not thread-safe to share a
// single instance across threads while it is being assigned; values are cheap to copy.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace pilot {

// What kind of failure an Error is. The library speaks only of kinds; the CLI maps each to
// its exit code once (src/cli/exit_codes.h, docs/formats.md, "Exit codes"), so no library code knows a
// process's exit status.
enum class ErrorKind {
  kBadInput,     // an input (manifest, params, model, run folder, flag) is wrong
  kEnvironment,  // the machine lacks what the run needs (device, library, memory)
  kWorkFailed,   // a failure during work (a write failed, the disk is full): resumable
  kInterrupted,  // a signal or a test hook stopped the work; everything done is journaled
};

struct Error {
  ErrorKind kind = ErrorKind::kBadInput;
  std::string what;   // what is wrong
  std::string where;  // the file, item id or key at fault
  std::string hint;   // what to do about it; may be empty

  // "<what> (<where>) — <hint>"
  std::string ToString() const;
};

Error BadInput(std::string what, std::string where, std::string hint = {});
Error EnvironmentError(std::string what, std::string where, std::string hint = {});
Error WorkFailed(std::string what, std::string where, std::string hint = {});

// [[nodiscard]]: a Status or Result dropped on the floor is a compile error (-Werror), never
// a silently ignored failure.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  std::string ToString() const { return ok() ? "ok" : error_->ToString(); }

 private:
  std::optional<Error> error_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Error& error() const { return std::get<Error>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace pilot

// Returns the error of a Status-valued expression from the enclosing function (which returns
// a Status or a Result<T>); the one early-return macro of the library.
#define PILOT_TRY(expr)                                                                            \
  do {                                                                                             \
    if (::pilot::Status pilot_try_st_ = (expr); !pilot_try_st_.ok()) return pilot_try_st_.error(); \
  } while (0)
