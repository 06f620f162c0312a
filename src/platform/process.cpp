#include "pilot/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "pilot/fs.h"

extern char** environ;

namespace pilot {

namespace {

// What a child exits with when this process died before the child could ask to die with it
// (the exit code of an interrupt: nothing of the child's ran).
constexpr int kOrphaned = 130;
constexpr auto kPoll = std::chrono::milliseconds(10);

ChildEnd Decode(int status, const struct rusage& ru) {
  ChildEnd end;
  if (WIFSIGNALED(status)) {
    end.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    end.code = WEXITSTATUS(status);
  } else {
    end.code = kExecFailedStatus;  // neither: never returned by wait4 without WUNTRACED
  }
  end.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
  return end;
}

class RealProcessesImpl final : public Processes {
 public:
  Result<long> Spawn(const ChildSpec& child) override {
    // Everything the child needs is built before the fork: after it, only calls that are safe
    // between fork and exec.
    std::vector<const char*> argv;
    for (const auto& a : child.args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    if (child.env) {
      for (const std::string& e : *child.env) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);
    }
    char* const* env = child.env ? envp.data() : environ;
    // SIGINT and SIGTERM are held across the fork: the child never runs this process's
    // handler (which would write to the terminal) before it has reset its own.
    sigset_t hold, previous;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    const pid_t parent = ::getpid();
    ::sigprocmask(SIG_BLOCK, &hold, &previous);
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::sigprocmask(SIG_SETMASK, &previous, nullptr);
      return EnvironmentError(std::strerror(err), "fork");
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, child.death_signal);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::sigprocmask(SIG_SETMASK, &previous, nullptr);
      if (::getppid() != parent) ::_exit(kOrphaned);                // the parent died before PR_SET_PDEATHSIG
      const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // only its dup2 copies stay
      if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
      ::dup2(child.out_fd >= 0 ? child.out_fd : null_fd, STDOUT_FILENO);
      ::dup2(child.err_fd >= 0 ? child.err_fd : null_fd, STDERR_FILENO);
      if (child.pass_fd >= 0) ::fcntl(child.pass_fd, F_SETFD, 0);  // handed down
      ::execve("/proc/self/exe", const_cast<char* const*>(argv.data()), env);
      ::_exit(kExecFailedStatus);
    }
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    return static_cast<long>(pid);
  }

  std::optional<std::pair<long, ChildEnd>> Reap(double seconds) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      int status = 0;
      struct rusage ru {};
      const pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid > 0) return std::make_pair(static_cast<long>(pid), Decode(status, ru));
      if (std::chrono::steady_clock::now() >= until) return std::nullopt;
      std::this_thread::sleep_for(kPoll);
    }
  }

  Result<std::optional<ChildEnd>> Wait(long pid, const std::function<bool()>& stop) override {
    for (;;) {
      int status = 0;
      struct rusage ru {};
      const pid_t got = ::wait4(static_cast<pid_t>(pid), &status, WNOHANG, &ru);
      if (got == static_cast<pid_t>(pid)) return std::optional<ChildEnd>(Decode(status, ru));
      if (got < 0 && errno != EINTR) {
        return WorkFailed(std::strerror(errno), "pid " + std::to_string(pid));
      }
      if (stop && stop()) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
        }
        return std::optional<ChildEnd>();
      }
      std::this_thread::sleep_for(kPoll);
    }
  }

  void Signal(long pid, int signal) override {
    if (pid > 0) ::kill(static_cast<pid_t>(pid), signal);
  }

  Result<int> OpenFolderForChild(const std::string& dir) override { return pilot::OpenFolderForChild(dir); }

  Result<int> OpenLogForChild(int dir_fd, const std::string& name) override {
    constexpr int kFlags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int log = ::openat(dir_fd, name.c_str(), kFlags, 0644);
    struct stat st {};
    if (log >= 0 && ::fstat(log, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1) {
      // A hard link shares the file with a name elsewhere: the log starts afresh under its own
      // name instead, and the other name keeps what it held.
      ::close(log);
      ::unlinkat(dir_fd, name.c_str(), 0);
      log = ::openat(dir_fd, name.c_str(), kFlags | O_EXCL, 0644);
    }
    if (log < 0 || ::fstat(log, &st) != 0 || !S_ISREG(st.st_mode)) {
      const int err = errno;
      if (log >= 0) ::close(log);
      return BadInput(log >= 0 || err == ELOOP || err == ENXIO ? "not a regular file" : std::strerror(err),
                      name);
    }
    return log;
  }

  void Close(int fd) override {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Processes& RealProcesses() {
  static RealProcessesImpl processes;
  return processes;
}

}  // namespace pilot
