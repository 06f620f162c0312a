// An in-memory FileSystem: folders, regular files, symlinks and "special" files (what a
// FIFO or device is to pilot: there, but never to be read) held in a map. Unit tests run
// the whole engine on it — a run, its bag, verify, resume, status — so that a library file
// access that bypasses the seam fails a test instead of touching the disk.
//
// It keeps the real file system's refusals: no write through a symlink (the name itself or
// its folder), reads of regular files only, a folder created exclusively, locks that
// conflict. Paths are absolute ('/'-rooted); a relative one is taken from "/". Thread-safe:
// a file opened for reading is a snapshot of its bytes at open.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pilot/fs.h"

namespace pilot {

class MemoryFileSystem : public FileSystem {
 public:
  MemoryFileSystem();

  // Setup for tests: parents are created as folders. A symlink's target is stored as given
  // (relative targets resolve against the link's folder, as on POSIX).
  void AddFile(const stdfs::path& file, std::string contents);
  void AddSymlink(const stdfs::path& link, const stdfs::path& target);
  void AddSpecial(const stdfs::path& file);  // a FIFO or device
  void AddFolder(const stdfs::path& dir);
  // A regular file's bytes, the name not followed; nullopt if it is not one.
  std::optional<std::string> Contents(const stdfs::path& file) const;
  // Every regular file (by absolute path): to compare two trees or list what was written.
  std::map<std::string, std::string> Files() const;
  void set_free_bytes(std::uint64_t bytes) { free_bytes_ = bytes; }

  Result<FileStat> Stat(const stdfs::path& file) override;
  Result<FileStat> LinkStat(const stdfs::path& file) override;
  Result<std::string> ReadFile(const stdfs::path& file, std::uint64_t max_bytes) override;
  Status CreateDirectoryExclusive(const stdfs::path& dir) override;
  Status CreateDirectories(const stdfs::path& dir) override;
  Status WriteFileAtomic(const stdfs::path& file, std::string_view data) override;
  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& file) override;
  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to, bool follow_symlinks = true) override;
  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) override;
  Status Truncate(const stdfs::path& file, std::uint64_t size) override;
  Status RemoveFile(const stdfs::path& file) override;
  Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) override;
  Status RenameReplace(const stdfs::path& from, const stdfs::path& to) override;
  Status RemoveTree(const stdfs::path& dir) override;
  Result<std::unique_ptr<ReadableFile>> OpenRead(const stdfs::path& file, bool follow_symlinks) override;
  BeneathOpen OpenBeneath(const stdfs::path& root, const std::string& relative) override;
  Result<std::vector<DirEntry>> ListDirectory(const stdfs::path& dir) override;
  Result<stdfs::path> Resolve(const stdfs::path& path) override;
  Result<LockAttempt> TryLock(const stdfs::path& file, bool exclusive, bool create) override;
  Result<std::uint64_t> FreeBytes(const stdfs::path& path) override;
  Status Anchor(const stdfs::path&, Reads = Reads::kMayLeave) override { return {}; }

 private:
  enum class Type { kFolder, kFile, kSymlink, kSpecial };
  struct Node {
    Type type = Type::kFolder;
    std::shared_ptr<std::string> data;  // kFile: shared with open append handles
    std::string target;                 // kSymlink
  };
  struct Walked {
    int err = 0;      // 0, ENOENT, ENOTDIR or ELOOP
    std::string key;  // the resolved name (for ENOENT: where it would be)
    const Node* node = nullptr;
  };
  struct LockState {
    int shared = 0;
    bool exclusive = false;
  };
  class Appender;
  class Reader;
  class Lock;

  // Resolves `path` under mu_, following symlinks on the way (and the last name too when
  // follow_last).
  Walked Walk(const stdfs::path& path, bool follow_last, int hops = 0) const;
  // A file about to be written: absent or regular, its folder a real folder. Under mu_.
  Result<std::string> WritableKey(const stdfs::path& file) const;
  Node* Find(const std::string& key);
  // Stat (following the last name) and LinkStat (not).
  Result<FileStat> StatOf(const stdfs::path& file, bool follow_last);
  void Release(const void* identity, bool exclusive);

  mutable std::mutex mu_;
  std::map<std::string, Node> nodes_;       // "/" and absolute names without a trailing '/'
  std::map<const void*, LockState> locks_;  // by the file's identity (its data)
  std::uint64_t free_bytes_ = 1ull << 40;
};

}  // namespace pilot
