#include "pilot/fs.h"

#include "platform/fs_errors.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace pilot {
namespace {

Status WriteAll(int fd, std::string_view data, const stdfs::path& file) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileWriteError("write failed", file, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

stdfs::path ParentOf(const stdfs::path& file) { return file.has_parent_path() ? file.parent_path() : stdfs::path("."); }

Status SyncDirectory(const stdfs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return FileWriteError("cannot open folder to sync", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return FileWriteError("fsync of folder failed", dir, err);
  return {};
}

// A file pilot is about to write must be absent or a regular file, and its folder a real
// folder: never a symlink (that would write outside the run folder) nor a FIFO or device.
Status CheckWritable(const stdfs::path& file) {
  struct stat st {};
  const stdfs::path dir = ParentOf(file);
  if (::lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return Error{ErrorKind::kBadInput,
                 S_ISLNK(st.st_mode) ? "the folder is a symlink; pilot never writes through one"
                                     : "not a folder",
                 dir.string(), "replace it with a real folder (a hostile or damaged run folder?)"};
  }
  if (::lstat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Error{ErrorKind::kBadInput,
                 S_ISLNK(st.st_mode) ? "is a symlink; pilot never writes through one" : "is not a regular file",
                 file.string(), "remove it (a hostile or damaged run folder?)"};
  }
  return {};
}

// Opens a new temp file beside `file` (never an existing one, never through a symlink).
Result<int> CreateTemp(const stdfs::path& file, stdfs::path& tmp) {
  if (Status st = CheckWritable(file); !st.ok()) return st.error();
  tmp = file;
  tmp += ".tmp-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // a stale one of a dead process with a recycled pid
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return FileWriteError("cannot create", tmp, errno);
  return fd;
}

Status SyncRenameSync(int fd, Status st, const stdfs::path& tmp, const stdfs::path& file) {
  if (st.ok() && ::fsync(fd) != 0) st = FileWriteError("fsync failed", tmp, errno);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), file.c_str()) != 0) st = FileWriteError("rename failed", file, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return SyncDirectory(ParentOf(file));
}

// A file pilot appends to, cuts or rewrites in place must be its only name: through a hard
// link the write would reach the other name too (a file outside the folder, a snapshot made
// with `cp -al`). Such a file is copied under a temp name and renamed over its own name
// before the first write: the other name keeps the old bytes, and the write lands in a file
// of its own. A file that is absent, or is its only name, is left alone.
Status BreakHardLink(const stdfs::path& file) {
  int in = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return {};  // absent (or refused by the open that follows, with its reason)
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink <= 1) {
    ::close(in);
    return {};
  }
  stdfs::path tmp;
  auto out = CreateTemp(file, tmp);
  if (!out.ok()) {
    ::close(in);
    return out.error();
  }
  Status copied;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      copied = FileReadError("read failed", file, errno);
      break;
    }
    if (n == 0) break;
    copied = WriteAll(out.value(), std::string_view(buf, static_cast<size_t>(n)), tmp);
    if (!copied.ok()) break;
  }
  ::close(in);
  return SyncRenameSync(out.value(), copied, tmp, file);
}

// After BreakHardLink and the open: the file must now be its only name (another process may
// have linked it in between; then nothing is written).
Status RefuseShared(int fd, const stdfs::path& file) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_nlink > 1) {
    return BadInput("has another name (a hard link, " + std::to_string(st.st_nlink) +
                        " names); pilot never writes a file that is shared",
                    file.string(), "remove the other name, or copy the folder without hard links");
  }
  return {};
}

class PosixAtomicFile : public AtomicFile {
 public:
  PosixAtomicFile(int fd, stdfs::path tmp, stdfs::path file) : fd_(fd), tmp_(std::move(tmp)), file_(std::move(file)) {}
  ~PosixAtomicFile() override {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  Status Append(std::string_view data) override {
    if (fd_ < 0) return FileWriteError("already committed or failed", file_, EBADF);
    return WriteAll(fd_, data, tmp_);
  }
  Status Commit() override {
    if (fd_ < 0) return FileWriteError("already committed or failed", file_, EBADF);
    int fd = fd_;
    fd_ = -1;  // SyncRenameSync closes it, and removes the temp file on failure
    return SyncRenameSync(fd, Status(), tmp_, file_);
  }

 private:
  int fd_;
  stdfs::path tmp_;
  stdfs::path file_;
};

class PosixAppendFile : public AppendFile {
 public:
  PosixAppendFile(int fd, stdfs::path file) : fd_(fd), file_(std::move(file)) {}
  ~PosixAppendFile() override { ::close(fd_); }
  Status Append(std::string_view data) override { return WriteAll(fd_, data, file_); }
  Status Sync() override {
    if (::fsync(fd_) != 0) return FileWriteError("fsync failed", file_, errno);
    return {};
  }

 private:
  int fd_;
  stdfs::path file_;
};

Result<int> OpenRegularFd(const stdfs::path& file, bool follow_symlinks) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_symlinks ? 0 : O_NOFOLLOW);
  int fd = ::open(file.c_str(), flags);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP && !follow_symlinks) return BadInput("is a symlink; pilot does not follow it here", file.string());
    return FileReadError("cannot open", file, err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return BadInput(S_ISDIR(st.st_mode) ? "is a folder, not a regular file" : "is not a regular file (a FIFO, device or socket?)",
                    file.string(), "give a regular file");
  }
  // Back to blocking reads: O_NONBLOCK only kept the open itself from hanging.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}


// The kernel's own answer to "open this, never leaving root": openat2(RESOLVE_BENEATH).
// -1 with errno ENOSYS where the kernel (or a seccomp filter) lacks the call.
int OpenAt2Beneath(int dirfd, const char* relative) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, dirfd, relative, &how, sizeof how);
    // EAGAIN: a rename raced the walk; the kernel asks for another try.
    if (fd < 0 && errno == EAGAIN && attempt < 16) continue;
    if (fd < 0 && errno == EINTR) continue;
    return static_cast<int>(fd);
  }
#else
  (void)dirfd;
  (void)relative;
  errno = ENOSYS;
  return -1;
#endif
}

// Without openat2: each folder of `relative` opened from the one before with O_NOFOLLOW, the
// file last. -1 with errno ELOOP or ENOTDIR when a name along it is a symlink (the caller then
// resolves and checks the path), or with the open's own errno.
int OpenWalkNoFollow(int dirfd, const stdfs::path& relative) {
  std::vector<std::string> parts;
  for (const auto& part : relative) {
    if (part.empty() || part == ".") continue;
    parts.push_back(part.string());
  }
  if (parts.empty()) {
    errno = EISDIR;
    return -1;
  }
  int at = ::dup(dirfd);
  if (at < 0) return -1;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(at, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    ::close(at);
    if (next < 0) {
      errno = err;
      return -1;
    }
    at = next;
  }
  int fd = ::openat(at, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  const int err = errno;
  ::close(at);
  errno = err;
  return fd;
}

bool LexicallyBeneath(const stdfs::path& inner, const stdfs::path& root) {
  auto [r, i] = std::mismatch(root.begin(), root.end(), inner.begin(), inner.end());
  return r == root.end() && i != inner.end();
}

class PosixReadableFile : public ReadableFile {
 public:
  PosixReadableFile(int fd, stdfs::path file, std::uint64_t size) : fd_(fd), file_(std::move(file)), size_(size) {}
  ~PosixReadableFile() override { ::close(fd_); }
  Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) override {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, buf + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return FileReadError("read failed", file_, errno);
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }
  std::uint64_t size() const override { return size_; }
  const stdfs::path& path() const override { return file_; }

 private:
  int fd_;
  stdfs::path file_;
  std::uint64_t size_;
};

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(int fd, stdfs::path file) : fd_(fd), file_(std::move(file)) {}
  ~PosixFileLock() override { ::close(fd_); }  // closing the descriptor drops the flock
  Status Overwrite(std::string_view data) override {
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) {
      return FileWriteError("cannot write", file_, errno);
    }
    return {};
  }

 private:
  int fd_;
  stdfs::path file_;
};

FileStat FromStat(const struct stat& st) {
  FileStat out;
  out.exists = true;
  out.regular = S_ISREG(st.st_mode);
  out.symlink = S_ISLNK(st.st_mode);
  out.directory = S_ISDIR(st.st_mode);
  out.size = static_cast<std::uint64_t>(st.st_size);
  return out;
}

class PosixFileSystem : public FileSystem {
 public:
  Result<FileStat> Stat(const stdfs::path& file) override { return DoStat(file, ::stat); }
  Result<FileStat> LinkStat(const stdfs::path& file) override { return DoStat(file, ::lstat); }

  Result<std::string> ReadFile(const stdfs::path& file, std::uint64_t max_bytes) override {
    auto fd = OpenRegularFd(file, true);
    if (!fd.ok()) return fd.error();
    std::string out;
    struct stat st {};
    if (::fstat(fd.value(), &st) == 0) {
      out.reserve(static_cast<size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), max_bytes) + 1));
    }
    char buf[1 << 16];
    while (out.size() <= max_bytes) {
      size_t want = static_cast<size_t>(std::min<std::uint64_t>(sizeof buf, max_bytes + 1 - out.size()));
      ssize_t n = ::read(fd.value(), buf, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd.value());
        return FileReadError("read failed", file, err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd.value());
    return out;
  }

  Status CreateDirectoryExclusive(const stdfs::path& dir) override {
    if (::mkdir(dir.c_str(), 0777) != 0) {
      if (errno == EEXIST) {
        return BadInput("run folder already exists; pilot never reuses or overwrites one", dir.string(),
                        "choose another --run-id or leave it out");
      }
      return FileWriteError("cannot create folder", dir, errno);
    }
    return {};
  }

  Status CreateDirectories(const stdfs::path& dir) override {
    std::error_code ec;
    stdfs::create_directories(dir, ec);
    if (ec) return FileWriteError("cannot create folder", dir, ec.value());
    return {};
  }

  Status WriteFileAtomic(const stdfs::path& file, std::string_view data) override {
    stdfs::path tmp;
    auto fd = CreateTemp(file, tmp);
    if (!fd.ok()) return fd.error();
    return SyncRenameSync(fd.value(), WriteAll(fd.value(), data, tmp), tmp, file);
  }

  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& file) override {
    stdfs::path tmp;
    auto fd = CreateTemp(file, tmp);
    if (!fd.ok()) return fd.error();
    return std::unique_ptr<AtomicFile>(std::make_unique<PosixAtomicFile>(fd.value(), tmp, file));
  }

  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to, bool follow_symlinks = true) override {
    auto in = OpenRegularFd(from, follow_symlinks);
    if (!in.ok()) return in.error();
    stdfs::path tmp;
    auto out = CreateTemp(to, tmp);
    if (!out.ok()) {
      ::close(in.value());
      return out.error();
    }
    Status st;
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in.value(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        st = FileReadError("read failed", from, errno);
        break;
      }
      if (n == 0) break;
      st = WriteAll(out.value(), std::string_view(buf, static_cast<size_t>(n)), tmp);
      if (!st.ok()) break;
    }
    ::close(in.value());
    return SyncRenameSync(out.value(), st, tmp, to);
  }

  Status Truncate(const stdfs::path& file, std::uint64_t size) override {
    if (Status st = CheckWritable(file); !st.ok()) return st;
    if (Status st = BreakHardLink(file); !st.ok()) return st;
    int fd = ::open(file.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return FileWriteError("cannot open to truncate", file, errno);
    struct stat st {};
    Status result;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      result = BadInput("is not a regular file; not truncated", file.string());
    } else if (Status shared = RefuseShared(fd, file); !shared.ok()) {
      result = shared;
    } else if (::ftruncate(fd, static_cast<off_t>(size)) != 0 || ::fsync(fd) != 0) {
      result = FileWriteError("truncate failed", file, errno);
    }
    ::close(fd);
    return result;
  }

  Status RemoveFile(const stdfs::path& file) override {
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) return FileWriteError("cannot remove", file, errno);
    return {};
  }

  Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) override {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      const int err = errno;
      if (err == EEXIST) {
        return BadInput("already exists; pilot never writes into an existing folder", to.string(),
                        "choose another destination");
      }
      return FileWriteError("cannot rename " + from.string() + " to", to, err);
    }
    return SyncDirectory(ParentOf(to));
  }

  Status RenameReplace(const stdfs::path& from, const stdfs::path& to) override {
    if (Status st = CheckWritable(to); !st.ok()) return st;
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0) return FileWriteError("cannot rename", from, errno);
    if (!S_ISREG(st.st_mode)) return BadInput("is not a regular file; not renamed", from.string());
    if (::rename(from.c_str(), to.c_str()) != 0) return FileWriteError("cannot rename " + from.string() + " to", to, errno);
    return SyncDirectory(ParentOf(to));
  }

  Status RemoveTree(const stdfs::path& dir) override {
    std::error_code ec;
    stdfs::remove_all(dir, ec);  // removes links themselves, never what they point at
    if (ec) return FileWriteError("cannot remove folder", dir, ec.value());
    return {};
  }

  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) override {
    if (Status st = CheckWritable(file); !st.ok()) return st.error();
    if (Status st = BreakHardLink(file); !st.ok()) return st.error();
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) return FileWriteError("cannot open for append", file, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return BadInput("is not a regular file; pilot appends only to one", file.string());
    }
    if (Status shared = RefuseShared(fd, file); !shared.ok()) {
      ::close(fd);
      return shared.error();
    }
    return std::unique_ptr<AppendFile>(std::make_unique<PosixAppendFile>(fd, file));
  }

  Result<std::unique_ptr<ReadableFile>> OpenRead(const stdfs::path& file, bool follow_symlinks) override {
    auto fd = OpenRegularFd(file, follow_symlinks);
    if (!fd.ok()) return fd.error();
    struct stat st {};
    ::fstat(fd.value(), &st);
    return std::unique_ptr<ReadableFile>(
        std::make_unique<PosixReadableFile>(fd.value(), file, static_cast<std::uint64_t>(st.st_size)));
  }

  BeneathOpen OpenBeneath(const stdfs::path& root, const std::string& relative) override {
    using Failure = BeneathOpen::Failure;
    BeneathOpen out;
    auto fail = [&](Failure f, std::string detail) {
      out.failure = f;
      out.detail = std::move(detail);
      return std::move(out);
    };
    const stdfs::path rel(relative);
    if (relative.empty() || rel.is_absolute()) return fail(Failure::kOutside, "'" + relative + "' is not a relative path");
    for (const auto& part : rel) {
      if (part == "..") return fail(Failure::kOutside, "path '" + relative + "' climbs out with '..'");
    }
    int dirfd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) return fail(Failure::kUnreadable, "cannot open the inputs' folder: " + std::string(std::strerror(errno)));
    int fd = OpenAt2Beneath(dirfd, relative.c_str());
    int err = errno;
    if (fd < 0 && (err == ENOSYS || err == EPERM)) {
      // No openat2 here (an old kernel, or a seccomp filter): the walk, and a path holding a
      // link resolved and checked before it is opened (the limit docs/security.md names).
      fd = OpenWalkNoFollow(dirfd, rel);
      err = errno;
      if (fd < 0 && (err == ELOOP || err == ENOTDIR)) {
        std::error_code ec;
        const stdfs::path resolved = stdfs::weakly_canonical(root / rel, ec);
        if (ec || !LexicallyBeneath(resolved, root)) {
          ::close(dirfd);
          return fail(Failure::kOutside, "path '" + relative + "' resolves through a symlink to '" +
                                              resolved.string() + "', outside the manifest's folder");
        }
        fd = ::open(resolved.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        err = errno;
      }
    }
    ::close(dirfd);
    if (fd < 0) {
      if (err == EXDEV) {
        return fail(Failure::kOutside, "path '" + relative + "' resolves through a symlink outside the manifest's folder");
      }
      if (err == ENOENT || err == ENOTDIR) return fail(Failure::kMissing, "no file at '" + relative + "'");
      if (err == ELOOP) return fail(Failure::kUnreadable, "'" + relative + "': too many symlinks (a loop?)");
      return fail(Failure::kUnreadable, "cannot open '" + relative + "': " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return fail(Failure::kNotRegular, "'" + relative + "' is not a regular file");
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    out.file = std::make_unique<PosixReadableFile>(fd, root / rel, static_cast<std::uint64_t>(st.st_size));
    return out;
  }

  Result<std::vector<DirEntry>> ListDirectory(const stdfs::path& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return FileReadError("cannot list folder", dir, errno);
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      int err = errno;
      ::close(fd);
      return FileReadError("cannot list folder", dir, err);
    }
    std::vector<DirEntry> out;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
      out.push_back(DirEntry{std::move(name), FromStat(st)});
      errno = 0;
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return FileReadError("cannot list folder", dir, err);
    std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return out;
  }

  Result<stdfs::path> Resolve(const stdfs::path& path) override {
    std::error_code ec;
    stdfs::path out = stdfs::weakly_canonical(stdfs::absolute(path, ec), ec);
    if (ec) return FileReadError("cannot resolve", path, ec.value());
    return out;
  }

  Result<LockAttempt> TryLock(const stdfs::path& file, bool exclusive, bool create) override {
    int fd = ::open(file.c_str(), (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
      int err = errno;
      if (err == ELOOP) return BadInput("is a symlink; pilot never writes through one", file.string());
      return FileReadError(create ? "cannot create" : "cannot open", file, err);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return BadInput("is not a regular file", file.string());
    }
    LockAttempt out;
    if (create && st.st_nlink > 1) {
      // The lock file has another name (a hard link): its holder's pid is written into it,
      // so it is replaced by a file of its own first, unless another process holds it.
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        ::close(fd);
        if (::unlink(file.c_str()) != 0) return FileWriteError("cannot replace the shared lock file", file, errno);
        fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
        if (fd < 0) return FileWriteError("cannot create", file, errno);
      }
    }
    if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
      int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        return FileReadError("cannot lock", file, err);
      }
      char buf[64] = {};
      ssize_t n = ::pread(fd, buf, sizeof buf, 0);
      if (n > 0) out.holder.assign(buf, static_cast<std::size_t>(n));
      ::close(fd);
      return out;
    }
    out.lock = std::make_unique<PosixFileLock>(fd, file);
    return out;
  }

  Result<std::uint64_t> FreeBytes(const stdfs::path& path) override {
    std::error_code ec;
    stdfs::path p = stdfs::absolute(path, ec);
    // The run folder's parent may not exist yet: ask of the nearest ancestor that does.
    while (!p.empty() && p != p.parent_path() && !stdfs::exists(p, ec)) p = p.parent_path();
    struct statvfs st {};
    if (p.empty() || ::statvfs(p.c_str(), &st) != 0) return FileReadError("cannot query free space", path, errno);
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  }

 private:
  static Result<FileStat> DoStat(const stdfs::path& file, int (*fn)(const char*, struct stat*)) {
    struct stat st {};
    if (fn(file.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return FileStat{};
      return FileReadError("cannot stat", file, errno);
    }
    return FromStat(st);
  }
};

}  // namespace

FileSystem& RealFileSystem() {
  static PosixFileSystem fs;
  return fs;
}

Result<std::string> ReadCapped(FileSystem& fs, const stdfs::path& file, std::uint64_t max_bytes,
                               const std::string& what) {
  auto text = fs.ReadFile(file, max_bytes);
  if (!text.ok()) {
    return BadInput("cannot read the " + what + ": " + text.error().what, file.string(),
                    "give an existing regular file");
  }
  if (text.value().size() > max_bytes) {
    return BadInput("the " + what + " is larger than pilot's cap of " + std::to_string(max_bytes) + " bytes",
                    file.string(), "a file this large is damaged or not what was meant");
  }
  return text;
}

Result<std::vector<std::string>> ListFilesRecursive(FileSystem& fs, const stdfs::path& base,
                                                    const stdfs::path& dir) {
  std::vector<std::string> out;
  std::vector<stdfs::path> pending{dir};
  while (!pending.empty()) {
    stdfs::path d = std::move(pending.back());
    pending.pop_back();
    auto entries = fs.ListDirectory(d);
    if (!entries.ok()) return entries.error();
    for (const DirEntry& e : entries.value()) {
      if (e.stat.directory) pending.push_back(d / e.name);
      else if (e.stat.regular) out.push_back((d / e.name).lexically_relative(base).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> ReadAllCapped(ReadableFile& file, std::uint64_t max_bytes) {
  std::string out;
  out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), max_bytes) + 1));
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (out.size() > max_bytes) break;  // one byte past the cap: the caller refuses
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.size() * 2, max_bytes + 1)));
    }
    auto n = file.ReadAt(got, out.data() + got, out.size() - got);
    if (!n.ok()) return n.error();
    if (n.value() == 0) break;
    got += n.value();
  }
  out.resize(got);
  return out;
}

Status ReadExactAt(ReadableFile& file, std::uint64_t offset, char* buf, std::size_t n) {
  auto got = file.ReadAt(offset, buf, n);
  if (!got.ok()) return got.error();
  if (got.value() != n) {
    return BadInput("ends early: " + std::to_string(n) + " bytes wanted at offset " + std::to_string(offset) +
                        ", " + std::to_string(got.value()) + " there",
                    file.path().string());
  }
  return {};
}

Result<LineReader> LineReader::Open(FileSystem& fs, const stdfs::path& file, std::uint64_t max_line,
                                    bool follow_symlinks) {
  auto in = fs.OpenRead(file, follow_symlinks);
  if (!in.ok()) return in.error();
  return LineReader(std::move(in).value(), max_line);
}

Result<bool> LineReader::Next(std::string& line, bool* complete) {
  line.clear();
  for (;;) {
    auto nl = buf_.find('\n', pos_);
    std::size_t avail = (nl == std::string::npos ? buf_.size() : nl) - pos_;
    if (line.size() + avail > max_line_) {
      return BadInput("line " + std::to_string(line_no_ + 1) + " is longer than pilot's cap of " +
                          std::to_string(max_line_) + " bytes",
                      file_->path().string(), "a line this long is damaged or not what was meant");
    }
    line.append(buf_, pos_, avail);
    if (nl != std::string::npos) {
      pos_ = nl + 1;
      offset_ += line.size() + 1;
      ++line_no_;
      if (complete) *complete = true;
      return true;
    }
    pos_ = buf_.size();
    if (eof_) {
      if (line.empty()) return false;
      offset_ += line.size();
      ++line_no_;
      if (complete) *complete = false;
      return true;
    }
    buf_.resize(1 << 16);
    pos_ = 0;
    auto n = file_->ReadAt(read_at_, buf_.data(), buf_.size());
    if (!n.ok()) return n.error();
    buf_.resize(n.value());
    read_at_ += n.value();
    if (n.value() == 0) eof_ = true;
  }
}

Status LineReader::Seek(std::uint64_t offset) {
  read_at_ = offset;
  buf_.clear();
  pos_ = 0;
  eof_ = false;
  offset_ = offset;
  return {};
}

}  // namespace pilot
