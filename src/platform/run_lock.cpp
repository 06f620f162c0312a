#include "pilot/run_lock.h"

#include <unistd.h>

#include <string>

#include "pilot/fs.h"
#include "pilot/limits.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// The pid written in a lock file: at most a few digits read, whatever the file holds.
long ParsePid(std::string_view text) {
  long pid = 0;
  for (std::size_t i = 0;
       i < text.size() && i < limits::kLockFileBytes && text[i] >= '0' && text[i] <= '9' && pid < 100000000;
       ++i) {
    pid = pid * 10 + (text[i] - '0');
  }
  return pid;
}

}  // namespace

Result<RunLock> RunLock::Acquire(FileSystem& files, const fs::path& run_dir) {
  fs::path file = run_dir / kLockFile;
  auto before = files.LinkStat(file);
  if (!before.ok()) return before.error();
  const bool existed = before.value().exists;
  // The lock file is opened without following a symlink and only if it is a regular file:
  // a planted `.lock -> /elsewhere` must never be truncated or written.
  if (existed && !before.value().regular) {
    return BadInput(std::string("the run folder's lock ") +
                        (before.value().symlink ? "is a symlink" : "is not a regular file") +
                        "; pilot never writes through one",
                    file.string(),
                    "remove it if no pilot process is using the folder (a hostile or damaged folder?)");
  }
  auto attempt = files.TryLock(file, /*exclusive=*/true, /*create=*/true);
  if (!attempt.ok()) {
    return BadInput("cannot create the run folder's lock: " + attempt.error().what, file.string(),
                    "check the folder's permissions");
  }
  if (!attempt.value().lock) {
    return BadInput("the run folder is being written by " + LockHolderText(ParsePid(attempt.value().holder)),
                    run_dir.string(), "wait for it to finish, or stop it (it stays resumable)");
  }
  if (Status st = attempt.value().lock->Overwrite(std::to_string(::getpid()) + "\n"); !st.ok()) {
    return Error{ErrorKind::kWorkFailed, "cannot write the run folder's lock", file.string(),
                 "check the disk"};
  }
  return RunLock(files, std::move(attempt.value().lock), file, existed);
}

RunLock::~RunLock() {
  if (!lock_) return;
  // A lock this process created goes with it; one it took over is left as it was found
  // (a refused resume leaves the folder as it was), unless RemoveFile() said otherwise.
  if (unlink_on_release_) (void)files_->RemoveFile(file_);
  lock_.reset();
}

void RunLock::RemoveFile() {
  (void)files_->RemoveFile(file_);
  unlink_on_release_ = false;
}

std::string LockHolderText(long pid) {
  return pid > 0 ? "process " + std::to_string(pid) : "another process (it has not written its pid yet)";
}

std::optional<long> LockHolder(FileSystem& files, const fs::path& run_dir) {
  auto attempt = files.TryLock(run_dir / kLockFile, /*exclusive=*/false, /*create=*/false);
  if (!attempt.ok() || attempt.value().lock) return std::nullopt;
  return ParsePid(attempt.value().holder);
}

}  // namespace pilot
