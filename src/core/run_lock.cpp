#include "pilot/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace pilot {

namespace fs = std::filesystem;

namespace {
long ReadPid(const fs::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return pid;
}
}  // namespace

Result<RunLock> RunLock::Acquire(const fs::path& run_dir) {
  fs::path file = run_dir / kLockFile;
  bool existed = fs::exists(file);
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    return BadInput(std::string("cannot create the run folder's lock: ") + std::strerror(errno), file.string(),
                    "check the folder's permissions");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return BadInput("the run folder is being written by another process (pid " + std::to_string(ReadPid(file)) + ")",
                    run_dir.string(), "wait for it to finish, or stop it (it stays resumable)");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    ::close(fd);
    return BadInput("cannot write the run folder's lock", file.string());
  }
  return RunLock(fd, file, existed);
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_), file_(std::move(other.file_)), stale_(other.stale_) {
  other.fd_ = -1;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

void RunLock::RemoveFile() { ::unlink(file_.c_str()); }

std::optional<long> LockHolder(const fs::path& run_dir) {
  fs::path file = run_dir / kLockFile;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<long> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    holder = ReadPid(file);
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return holder;
}

}  // namespace pilot
