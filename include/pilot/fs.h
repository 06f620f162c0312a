// The file-system seam. Everything pilot writes into a run folder, and every input it
// reads, goes through a FileSystem so that tests can inject faults (fail the Nth write,
// refuse a read). RealFileSystem() is stateless and thread-safe.
//
// Hostile folders: no write follows a symlink. The files written (and their folder) must be
// absent or real regular files / folders; a symlink or a FIFO in their place is refused.
// Reads open only regular files and never block on a FIFO or a device.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/status.h"

namespace pilot {

namespace stdfs = std::filesystem;

struct FileStat {
  bool exists = false;
  bool regular = false;
  bool symlink = false;  // LinkStat only: the name itself is a symlink
  bool directory = false;
  std::uint64_t size = 0;
};

// A regular file open for reading. ReadAt never moves a shared position, so one file may be
// read from several threads.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Up to `n` bytes at `offset` into `buf`; fewer only at the end of the file (0 there).
  virtual Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) = 0;
  // The size when it was opened.
  virtual std::uint64_t size() const = 0;
  virtual const stdfs::path& path() const = 0;
};

// One name in a folder, as LinkStat sees it (a symlink is reported, not followed).
struct DirEntry {
  std::string name;
  FileStat stat;
};

// An advisory lock on a file (flock on POSIX), released when the object goes.
class FileLock {
 public:
  virtual ~FileLock() = default;
  // Replaces the locked file's contents (the holder's pid).
  virtual Status Overwrite(std::string_view data) = 0;
};

// TryLock's answer: the lock, or (when another holder has it) what the file says.
struct LockAttempt {
  std::unique_ptr<FileLock> lock;  // null: held elsewhere
  std::string holder;              // the file's first bytes when held elsewhere
};

// A file written in pieces that appears whole or not at all: the pieces go to a temp file
// beside it; Commit() fsyncs, renames and fsyncs the folder, as WriteFileAtomic. Dropped
// without Commit(), the temp file is removed and the file keeps its previous contents.
class AtomicFile {
 public:
  virtual ~AtomicFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Commit() = 0;
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

// OpenBeneath's answer: the file, or why it was not opened.
struct BeneathOpen {
  enum class Failure { kNone, kOutside, kMissing, kNotRegular, kUnreadable };
  std::unique_ptr<ReadableFile> file;  // set when failure is kNone
  Failure failure = Failure::kNone;
  std::string detail;  // what went wrong, for the rejection's detail
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Stat without following a failure into an error: a missing file is exists=false.
  virtual Result<FileStat> Stat(const stdfs::path& file) = 0;
  // As Stat, of the name itself (lstat): a symlink is reported, not followed.
  virtual Result<FileStat> LinkStat(const stdfs::path& file) = 0;
  // Reads a regular file, at most `max_bytes` + 1 bytes of it: a result longer than
  // max_bytes means the file is larger than the caller allows (it may have grown since a
  // Stat). Fails (naming the file) if it cannot be opened or read, or is not a regular file.
  virtual Result<std::string> ReadFile(const stdfs::path& file, std::uint64_t max_bytes) = 0;
  // Creates one directory; fails if it already exists (never reuses a folder).
  virtual Status CreateDirectoryExclusive(const stdfs::path& dir) = 0;
  // Creates a directory and its parents; an existing directory is fine.
  virtual Status CreateDirectories(const stdfs::path& dir) = 0;
  // Durable replace: write a temp file beside `file`, fsync, rename, fsync the folder.
  // On failure `file` is either absent or holds its previous contents, never a part.
  virtual Status WriteFileAtomic(const stdfs::path& file, std::string_view data) = 0;
  // WriteFileAtomic in pieces, for a file too large to assemble in memory first.
  virtual Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& file) = 0;
  // Durable copy of `from` to `to` (streamed, then as WriteFileAtomic). With follow_symlinks
  // false, a symlink at `from` is refused, never read through.
  virtual Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                                bool follow_symlinks = true) = 0;
  // Opens (creating if needed) a file for appending.
  virtual Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) = 0;
  // Cuts a file to `size` bytes and fsyncs it.
  virtual Status Truncate(const stdfs::path& file, std::uint64_t size) = 0;
  // Removes a file; a missing file is fine.
  virtual Status RemoveFile(const stdfs::path& file) = 0;
  // Renames a file or folder to a name that must not exist (never replaces one: bad input,
  // naming `to`), then fsyncs the folder holding `to`.
  virtual Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) = 0;
  // Renames the regular file `from` over `to` (absent or a regular file: never a symlink or a
  // folder, which are refused naming `to`), then fsyncs the folder holding `to`. Atomic: `to`
  // holds either its old bytes or `from`'s. The step that applies a staged change.
  virtual Status RenameReplace(const stdfs::path& from, const stdfs::path& to) = 0;
  // Removes a folder and everything under it; a symlink inside is removed, never followed.
  // A missing folder is fine.
  virtual Status RemoveTree(const stdfs::path& dir) = 0;

  // Opens a regular file for reading; never blocks on a FIFO or device. With
  // follow_symlinks false a symlink is refused.
  virtual Result<std::unique_ptr<ReadableFile>> OpenRead(const stdfs::path& file, bool follow_symlinks) = 0;
  // Opens `relative` (a manifest item's path: relative, no "..") under the folder `root`
  // (absolute, resolved) for reading, and never anything outside it, in one step: symlinks
  // are followed only while they stay under root, so a link swapped in while inputs are
  // read cannot lead out (openat2 with RESOLVE_BENEATH on Linux 5.6 and later; where the
  // kernel lacks it, a walk from root's descriptor with O_NOFOLLOW, and a path holding a
  // symlink is resolved and checked, then opened: docs/security.md names this limit).
  // Never blocks on a FIFO or device.
  virtual BeneathOpen OpenBeneath(const stdfs::path& root, const std::string& relative) = 0;
  // The names in a folder (not "." or ".."), each with its LinkStat, sorted by name.
  virtual Result<std::vector<DirEntry>> ListDirectory(const stdfs::path& dir) = 0;
  // The path with every symlink that exists along it followed, "." and ".." resolved and
  // a missing tail kept as written (std::filesystem::weakly_canonical). Absolute. A folder a
  // parent process handed down as "/proc/self/fd/N" is pinned as it is (OpenFolderForChild).
  virtual Result<stdfs::path> Resolve(const stdfs::path& path) = 0;
  // Takes a lock on `file`, shared or exclusive, without waiting. With create, a missing
  // file is created. Refused (bad input, naming it) when the file is a symlink or not
  // regular: a planted link is never written through.
  virtual Result<LockAttempt> TryLock(const stdfs::path& file, bool exclusive, bool create) = 0;
  // Bytes free to an unprivileged writer on the file system holding `path` (or its nearest
  // existing ancestor).
  virtual Result<std::uint64_t> FreeBytes(const stdfs::path& path) = 0;
  // Pins the existing folder `dir` (absolute, resolved) by a descriptor for the life of the
  // process. From then on every write under it (a file made, appended, cut, renamed, removed,
  // a folder made or removed, a lock) starts from that descriptor and follows no symlink on
  // the way down, and OpenBeneath(dir, ...) reads through it: a parent renamed, or swapped for
  // a link, after the path was resolved cannot redirect pilot. The first pin of a path holds;
  // "/" is never pinned. The in-memory file system has no races to close: a no-op there.
  // With kStayBeneath (a folder given to read: a run folder, a shard, a sweep), a read below it
  // never leaves it either: a folder link that leads out is refused, not followed. With
  // kMayLeave (the folder above a destination, an inputs' folder), a read below it that a link
  // leads out of goes by its path, as it would before any pin (a models folder that is a link
  // to a larger disk stays readable).
  enum class Reads { kMayLeave, kStayBeneath };
  virtual Status Anchor(const stdfs::path& dir, Reads reads = Reads::kMayLeave) = 0;
};

FileSystem& RealFileSystem();

// A descriptor (close-on-exec; the caller closes it) of the folder `dir`, reached as a write
// below it would be: from its pin, through no symlink. For a child process: cleared of
// close-on-exec after fork, it is handed down as the path "/proc/self/fd/N", which the
// child's Resolve pins as that very folder (never a path looked up again) and reports by the
// path the folder has now (pinned with Reads::kStayBeneath). Real file system only.
Result<int> OpenFolderForChild(const stdfs::path& dir);

// Notes which descriptors of folders this process holds now: called first thing in main, it
// records the folders a parent handed down, the only ones Resolve takes as "/proc/self/fd/N"
// (pilot's own descriptors never are). Until it is called, none is taken.
void NoteHandedDownFolders();

// Reads a whole regular file of at most `max_bytes`; a larger one, a non-regular one or an
// unreadable one is refused (exit 2) naming the file and `what` it is ("parameter file").
Result<std::string> ReadCapped(FileSystem& fs, const stdfs::path& file, std::uint64_t max_bytes,
                               const std::string& what);

// A file inside a pilot folder (`rel`, one of folder_files.h's names or a name a record gives),
// read only when it is a regular file, never through a link, at most `cap` bytes. Errors
// (exit 2) name the file: missing, a link or not a regular file, too large, unreadable.
Result<std::string> ReadInsideFolder(FileSystem& fs, const stdfs::path& dir, const std::string& rel,
                                     std::uint64_t cap);

// Every regular file under `dir`, recursively, as paths relative to `base` with '/'
// separators, sorted. Symlinks are neither listed nor followed; anything else that is not a
// regular file or folder (FIFO, device) is skipped. A folder that cannot be listed is an
// error naming it.
Result<std::vector<std::string>> ListFilesRecursive(FileSystem& fs, const stdfs::path& base,
                                                    const stdfs::path& dir);

// Reads a whole open file, at most `max_bytes` + 1 bytes of it (as FileSystem::ReadFile: a
// longer result means the file is larger than the caller allows).
Result<std::string> ReadAllCapped(ReadableFile& file, std::uint64_t max_bytes);

// Reads exactly `n` bytes at `offset`, or fails naming the file (a short read is an error).
Status ReadExactAt(ReadableFile& file, std::uint64_t offset, char* buf, std::size_t n);

// Reads a file line by line with a cap on each line's length (constant memory on any
// input, /dev/zero included). Lines are returned without their '\n'.
class LineReader {
 public:
  static Result<LineReader> Open(FileSystem& fs, const stdfs::path& file, std::uint64_t max_line,
                                 bool follow_symlinks = true);
  LineReader(LineReader&& other) noexcept = default;
  LineReader& operator=(LineReader&&) = delete;
  LineReader(const LineReader&) = delete;
  // The next line into `line`; false at the end of the file. `complete` says whether the
  // line ended with '\n' (only the last line of a file may not). A line longer than the cap
  // is an error naming the file and the line number.
  Result<bool> Next(std::string& line, bool* complete = nullptr);
  // Bytes consumed so far: the offset of the next line.
  std::uint64_t offset() const { return offset_; }
  std::size_t line_number() const { return line_no_; }
  // Continues reading at byte `offset` (the start of a line).
  Status Seek(std::uint64_t offset);

 private:
  LineReader(std::unique_ptr<ReadableFile> file, std::uint64_t max_line)
      : file_(std::move(file)), max_line_(max_line) {}
  std::unique_ptr<ReadableFile> file_;
  std::uint64_t max_line_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool eof_ = false;
  std::uint64_t read_at_ = 0;  // where the next read of the file starts
  std::uint64_t offset_ = 0;
  std::size_t line_no_ = 0;
};

// Forwards every call to another FileSystem, so that a fault-injecting or counting file
// system overrides only the calls it changes (as leveldb's EnvWrapper).
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem& target) : target_(target) {}
  Result<FileStat> Stat(const stdfs::path& f) override { return target_.Stat(f); }
  Result<FileStat> LinkStat(const stdfs::path& f) override { return target_.LinkStat(f); }
  Result<std::string> ReadFile(const stdfs::path& f, std::uint64_t max_bytes) override {
    return target_.ReadFile(f, max_bytes);
  }
  Status CreateDirectoryExclusive(const stdfs::path& d) override {
    return target_.CreateDirectoryExclusive(d);
  }
  Status CreateDirectories(const stdfs::path& d) override { return target_.CreateDirectories(d); }
  Status WriteFileAtomic(const stdfs::path& f, std::string_view data) override {
    return target_.WriteFileAtomic(f, data);
  }
  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& f) override {
    return target_.CreateAtomic(f);
  }
  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                        bool follow_symlinks = true) override {
    return target_.CopyFileAtomic(from, to, follow_symlinks);
  }
  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& f) override {
    return target_.OpenAppend(f);
  }
  Status Truncate(const stdfs::path& f, std::uint64_t size) override { return target_.Truncate(f, size); }
  Status RemoveFile(const stdfs::path& f) override { return target_.RemoveFile(f); }
  Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) override {
    return target_.RenameNoReplace(from, to);
  }
  Status RenameReplace(const stdfs::path& from, const stdfs::path& to) override {
    return target_.RenameReplace(from, to);
  }
  Status RemoveTree(const stdfs::path& d) override { return target_.RemoveTree(d); }
  Result<std::unique_ptr<ReadableFile>> OpenRead(const stdfs::path& f, bool follow_symlinks) override {
    return target_.OpenRead(f, follow_symlinks);
  }
  BeneathOpen OpenBeneath(const stdfs::path& root, const std::string& relative) override {
    return target_.OpenBeneath(root, relative);
  }
  Result<std::vector<DirEntry>> ListDirectory(const stdfs::path& d) override {
    return target_.ListDirectory(d);
  }
  Result<stdfs::path> Resolve(const stdfs::path& p) override { return target_.Resolve(p); }
  Result<LockAttempt> TryLock(const stdfs::path& f, bool exclusive, bool create) override {
    return target_.TryLock(f, exclusive, create);
  }
  Result<std::uint64_t> FreeBytes(const stdfs::path& p) override { return target_.FreeBytes(p); }
  Status Anchor(const stdfs::path& d, Reads reads = Reads::kMayLeave) override {
    return target_.Anchor(d, reads);
  }

 protected:
  FileSystem& target() { return target_; }

 private:
  FileSystem& target_;
};

}  // namespace pilot
