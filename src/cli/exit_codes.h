// The process exit codes (docs/formats.md, "Exit codes") and the one place that maps the
// library's error kinds and run verdicts to them. Nothing below src/cli/ knows an exit status.
#pragma once

#include "pilot/run.h"
#include "pilot/status.h"

namespace pilot::cli {

enum class ExitCode : int {
  kOk = 0,
  kVerifyFailed = 1,
  kBadInput = 2,
  kEnvironment = 3,
  kAcceptanceFailed = 4,
  kWorkFailed = 5,  // a failure during work (a write failed, the disk is full): resumable
  kInterrupted = 130,
};

constexpr ExitCode ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return ExitCode::kBadInput;
    case ErrorKind::kEnvironment:
      return ExitCode::kEnvironment;
    case ErrorKind::kWorkFailed:
      return ExitCode::kWorkFailed;
    case ErrorKind::kInterrupted:
      return ExitCode::kInterrupted;
  }
  return ExitCode::kWorkFailed;  // unreachable: -Wswitch lists every kind above
}

constexpr ExitCode ExitCodeFor(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::kPassed:
      return ExitCode::kOk;
    case RunVerdict::kVerifyFailed:
      return ExitCode::kVerifyFailed;
    case RunVerdict::kAcceptanceFailed:
      return ExitCode::kAcceptanceFailed;
    case RunVerdict::kInterrupted:
      return ExitCode::kInterrupted;
  }
  return ExitCode::kVerifyFailed;  // unreachable
}

constexpr int Code(ExitCode code) { return static_cast<int>(code); }

// Whether a child pilot's exit status (a worker, a sweep cell) is one of the codes above, other
// than success: the child said what happened on its stderr. Anything else is a crash.
constexpr bool IsPilotFailureCode(int code) {
  for (ExitCode known : {ExitCode::kVerifyFailed, ExitCode::kBadInput, ExitCode::kEnvironment,
                         ExitCode::kAcceptanceFailed, ExitCode::kWorkFailed, ExitCode::kInterrupted}) {
    if (code == Code(known)) return true;
  }
  return false;
}

}  // namespace pilot::cli
