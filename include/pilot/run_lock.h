// One writer per run folder: an exclusive flock on RUN_DIR/.lock, which also holds the
// writer's pid. The kernel drops the lock when its process dies, so a lock left by a dead
// process is simply taken over. The lock file is never part of the bag: it is removed
// before the run is declared finished.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

class RunLock {
 public:
  // Fails (exit 2) naming the pid that holds the lock.
  static Result<RunLock> Acquire(FileSystem& files, const std::filesystem::path& run_dir);
  RunLock(RunLock&& other) noexcept = default;
  RunLock& operator=(RunLock&&) = delete;
  ~RunLock();
  // Removes the lock file (keeps the lock held until destruction). Without it, the
  // destructor removes the file only if this process created it.
  void RemoveFile();
  bool stale_taken_over() const { return stale_; }

 private:
  RunLock(FileSystem& files, std::unique_ptr<FileLock> lock, std::filesystem::path file, bool stale)
      : files_(&files),
        lock_(std::move(lock)),
        file_(std::move(file)),
        stale_(stale),
        unlink_on_release_(!stale) {}
  FileSystem* files_;
  std::unique_ptr<FileLock> lock_;
  std::filesystem::path file_;
  bool stale_ = false;
  // Whether the destructor still removes the file: once it is removed, a lock file that
  // another process may have created since is never theirs to lose.
  bool unlink_on_release_ = false;
};

// The pid holding the folder's lock, if a live process holds it (0: it has not written its
// pid yet).
std::optional<long> LockHolder(FileSystem& files, const std::filesystem::path& run_dir);
// "process 1234", or, for pid 0, "another process (it has not written its pid yet)".
std::string LockHolderText(long pid);

}  // namespace pilot
