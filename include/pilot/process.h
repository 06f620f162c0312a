// Child processes, behind one seam (as FileSystem is for files and Clock for time): the
// `--workers` supervisor (fleet/workers.h) and a sweep's process per cell start, wait for and
// stop every child through `Processes`, and a child's end is decoded from the kernel's status
// in one place. RealProcesses() is the only implementation that calls the OS; tests hand the
// supervisors a fake.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pilot/status.h"

namespace pilot {

// What a child exits with when it could not exec pilot (the shell's convention).
inline constexpr int kExecFailedStatus = 127;

// How a child ended, decoded once.
struct ChildEnd {
  int code = 0;            // its exit code, when it exited
  int signal = 0;          // the signal that ended it, else 0
  double peak_rss_mb = 0;  // its resident high-water mark, when known (else 0)
  // One number for the end, as a shell shows it: the exit code, or 128 + the signal.
  int Status() const { return signal != 0 ? 128 + signal : code; }
};

// A child: this very executable (/proc/self/exe) with `args` (args[0] its name).
struct ChildSpec {
  std::vector<std::string> args;
  std::optional<std::vector<std::string>> env;  // NAME=value each; none: this process's own
  int out_fd = -1;                              // its stdout; -1: /dev/null
  int err_fd = -1;                              // its stderr; -1: /dev/null
  int pass_fd = -1;                             // a descriptor it inherits (a folder as /proc/self/fd/N)
  int death_signal = 15;                        // sent to it when this process dies first (SIGTERM)
};

class Processes {
 public:
  virtual ~Processes() = default;
  // Starts the child in a process group of its own (a terminal's Ctrl-C reaches this process,
  // which then stops it), with SIGINT and SIGTERM at their defaults until it installs its own,
  // and returns its pid. One that cannot exec ends with kExecFailedStatus. An error's `what`
  // is the system's reason alone, for the caller to say what could not be started.
  virtual Result<long> Spawn(const ChildSpec& child) = 0;
  // A child of this process that has ended, waiting at most `seconds` for one; nullopt when
  // none ended meanwhile.
  virtual std::optional<std::pair<long, ChildEnd>> Reap(double seconds) = 0;
  // Waits for `pid` to end. `stop` is asked while it waits: when it says yes, the child is
  // killed (SIGKILL) and reaped, and nullopt returned. An error's `what` is the system's
  // reason alone.
  virtual Result<std::optional<ChildEnd>> Wait(long pid, const std::function<bool()>& stop) = 0;
  virtual void Signal(long pid, int signal) = 0;

  // Descriptors handed to children (ChildSpec's pass_fd, out_fd, err_fd), opened here so that a
  // supervisor is tested with a fake. Each is close-on-exec until Spawn hands it down.
  // The folder `dir`, reached from its pin through no link (fs.h, OpenFolderForChild).
  virtual Result<int> OpenFolderForChild(const std::string& dir) = 0;
  // The log `name` inside the folder `dir_fd`, for appending: never through a link, never a
  // FIFO or anything but a regular file, never shared through a hard link (one is replaced by
  // a file of its own, the other name keeping what it held). An error's `what` is the reason.
  virtual Result<int> OpenLogForChild(int dir_fd, const std::string& name) = 0;
  virtual void Close(int fd) = 0;
};

// The operating system's processes (fork, execve, wait4, kill).
Processes& RealProcesses();

}  // namespace pilot
