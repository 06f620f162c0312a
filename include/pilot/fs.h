// The file-system seam. Everything pilot writes into a run folder, and every input it
// reads, goes through a FileSystem so that tests can inject faults (fail the Nth write,
// refuse a read). RealFileSystem() is stateless and thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "pilot/status.h"

namespace pilot {

namespace stdfs = std::filesystem;

struct FileStat {
  bool exists = false;
  bool regular = false;
  std::uint64_t size = 0;
};

// An append-only file: Append() buffers nothing beyond the OS; Sync() is fsync.
class AppendFile {
 public:
  virtual ~AppendFile() = default;
  // On success all of `data` was handed to the OS; on failure the file may hold a prefix.
  virtual Status Append(std::string_view data) = 0;
  // On success everything appended so far is on stable storage.
  virtual Status Sync() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Stat without following a failure into an error: a missing file is exists=false.
  virtual Result<FileStat> Stat(const stdfs::path& file) = 0;
  // Reads a whole file. Fails (naming the file) if it cannot be opened or read.
  virtual Result<std::string> ReadFile(const stdfs::path& file) = 0;
  // Creates one directory; fails if it already exists (never reuses a folder).
  virtual Status CreateDirectoryExclusive(const stdfs::path& dir) = 0;
  // Creates a directory and its parents; an existing directory is fine.
  virtual Status CreateDirectories(const stdfs::path& dir) = 0;
  // Durable replace: write a temp file beside `file`, fsync, rename, fsync the folder.
  // On failure `file` is either absent or holds its previous contents, never a part.
  virtual Status WriteFileAtomic(const stdfs::path& file, std::string_view data) = 0;
  // Durable copy of `from` to `to` (streamed, then as WriteFileAtomic).
  virtual Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to) = 0;
  // Opens (creating if needed) a file for appending.
  virtual Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) = 0;
  // Cuts a file to `size` bytes and fsyncs it.
  virtual Status Truncate(const stdfs::path& file, std::uint64_t size) = 0;
  // Removes a file; a missing file is fine.
  virtual Status RemoveFile(const stdfs::path& file) = 0;
};

FileSystem& RealFileSystem();

// Forwards every call to another FileSystem, so that a fault-injecting or counting file
// system overrides only the calls it changes (as leveldb's EnvWrapper).
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem& target) : target_(target) {}
  Result<FileStat> Stat(const stdfs::path& f) override { return target_.Stat(f); }
  Result<std::string> ReadFile(const stdfs::path& f) override { return target_.ReadFile(f); }
  Status CreateDirectoryExclusive(const stdfs::path& d) override { return target_.CreateDirectoryExclusive(d); }
  Status CreateDirectories(const stdfs::path& d) override { return target_.CreateDirectories(d); }
  Status WriteFileAtomic(const stdfs::path& f, std::string_view data) override {
    return target_.WriteFileAtomic(f, data);
  }
  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to) override {
    return target_.CopyFileAtomic(from, to);
  }
  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& f) override { return target_.OpenAppend(f); }
  Status Truncate(const stdfs::path& f, std::uint64_t size) override { return target_.Truncate(f, size); }
  Status RemoveFile(const stdfs::path& f) override { return target_.RemoveFile(f); }

 protected:
  FileSystem& target() { return target_; }

 private:
  FileSystem& target_;
};

}  // namespace pilot
