#include "pilot/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pilot/limits.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// The pid written in a lock file: at most a few bytes read, whatever the file holds.
long ReadPid(int fd) {
  char buf[limits::kLockFileBytes] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  long pid = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9' && pid < 100000000; ++i) pid = pid * 10 + (buf[i] - '0');
  return pid;
}

// The lock file is opened without following a symlink and only if it is a regular file:
// a planted `.lock -> /elsewhere` must never be truncated or written.
int OpenLockFile(const fs::path& file, int flags) {
  int fd = ::open(file.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

}  // namespace

Result<RunLock> RunLock::Acquire(const fs::path& run_dir) {
  fs::path file = run_dir / kLockFile;
  struct stat st {};
  const bool existed = ::lstat(file.c_str(), &st) == 0;
  if (existed && !S_ISREG(st.st_mode)) {
    return BadInput(std::string("the run folder's lock ") +
                        (S_ISLNK(st.st_mode) ? "is a symlink" : "is not a regular file") +
                        "; pilot never writes through one",
                    file.string(), "remove it if no pilot process is using the folder (a hostile or damaged folder?)");
  }
  int fd = OpenLockFile(file, O_RDWR | O_CREAT);
  if (fd < 0) {
    return BadInput(std::string("cannot create the run folder's lock: ") + std::strerror(errno), file.string(),
                    "check the folder's permissions");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    long pid = ReadPid(fd);
    ::close(fd);
    return BadInput("the run folder is being written by another process (pid " + std::to_string(pid) + ")",
                    run_dir.string(), "wait for it to finish, or stop it (it stays resumable)");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    ::close(fd);
    return Error{ErrorKind::kWorkFailed, "cannot write the run folder's lock", file.string(), "check the disk"};
  }
  return RunLock(fd, file, existed);
}

RunLock::RunLock(RunLock&& other) noexcept
    : fd_(other.fd_), file_(std::move(other.file_)), stale_(other.stale_), unlink_on_release_(other.unlink_on_release_) {
  other.fd_ = -1;
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // A lock this process created goes with it; one it took over is left as it was found
  // (a refused resume leaves the folder as it was), unless RemoveFile() said otherwise.
  if (unlink_on_release_) ::unlink(file_.c_str());
  ::close(fd_);
}

void RunLock::RemoveFile() {
  ::unlink(file_.c_str());
  unlink_on_release_ = false;
}

std::optional<long> LockHolder(const fs::path& run_dir) {
  int fd = OpenLockFile(run_dir / kLockFile, O_RDONLY);
  if (fd < 0) return std::nullopt;
  std::optional<long> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    holder = ReadPid(fd);
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return holder;
}

}  // namespace pilot
