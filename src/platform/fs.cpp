#include "pilot/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "platform/fs_errors.h"

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

stdfs::path ParentOf(const stdfs::path& file) {
  return file.has_parent_path() ? file.parent_path() : stdfs::path(".");
}

// --- anchors: folders pinned by a descriptor --------------------------------------------------

// A folder pinned when it was resolved (FileSystem::Anchor): its path then, and a descriptor
// that still names the same folder if a parent is renamed or replaced by a link later.
struct AnchorEntry {
  stdfs::path path;
  int fd;
  bool confine_reads;  // FileSystem::Reads::kStayBeneath
};

std::mutex g_anchors_mu;
std::vector<AnchorEntry>& Anchors() {
  static std::vector<AnchorEntry> anchors;
  return anchors;
}

// True when `inner` lies strictly below `outer` (both absolute and normal).
bool StrictlyBelow(const stdfs::path& inner, const stdfs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end() && i != inner.end();
}

// The deepest anchor strictly above `abs`, as a descriptor of its own (dup: the caller closes
// it) and the path below it; -1 when none. `confined` (when given) says whether any anchor
// above `abs` keeps reads beneath it.
int AnchorAbove(const stdfs::path& abs, stdfs::path& rel, bool* confined = nullptr) {
  std::lock_guard<std::mutex> hold(g_anchors_mu);
  const AnchorEntry* best = nullptr;
  bool confine = false;
  for (const AnchorEntry& a : Anchors()) {
    if (!StrictlyBelow(abs, a.path)) continue;
    confine = confine || a.confine_reads;
    if (!best || StrictlyBelow(a.path, best->path)) best = &a;
  }
  if (confined) *confined = confine;
  if (!best) return -1;
  rel = abs.lexically_relative(best->path);
  return ::fcntl(best->fd, F_DUPFD_CLOEXEC, 0);
}

// The anchor whose path is exactly `abs` (a dup'ed descriptor), or -1.
int AnchorAt(const stdfs::path& abs) {
  std::lock_guard<std::mutex> hold(g_anchors_mu);
  for (const AnchorEntry& a : Anchors()) {
    if (a.path == abs) return ::fcntl(a.fd, F_DUPFD_CLOEXEC, 0);
  }
  return -1;
}

// Opens the folder `rel` below the folder `dirfd` for writing into, following no symlink on
// the way and never leaving `dirfd`: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), or, where
// the kernel lacks it, a walk with O_NOFOLLOW. -1 with errno set on failure (ELOOP: a symlink).
int OpenFolderBeneath(int dirfd, const stdfs::path& rel) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
    if (fd < 0 && (errno == EAGAIN || errno == EINTR) && attempt < 16) continue;
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
    break;
  }
#endif
  int at = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  for (const auto& part : rel) {
    if (at < 0) return -1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      ::close(at);
      errno = EXDEV;
      return -1;
    }
    int next = ::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    ::close(at);
    errno = err;
    at = next;
  }
  return at;
}

// ReadFolderBeneath's answers besides a descriptor.
constexpr int kReadByPath = -1;   // no anchor above (or a kernel without openat2): read by path
constexpr int kReadRefused = -2;  // the folder cannot be reached from its anchor; errno says why

// For a read of `file` below an anchor (or of the anchor itself): a descriptor of its folder,
// reached from the anchor's (symlinks followed only while they stay below it), and its name
// there ("." for the anchor itself), so that a read sees the folder the command pinned, as its
// writes do. kReadByPath when there is no anchor above it, or a link leads out of one that
// lets reads leave (Reads::kMayLeave); kReadRefused (errno set: EXDEV for a link that leads
// out of a folder that keeps reads beneath it, ENOENT, ENOTDIR, ...) when the folder cannot be
// reached from the anchor: the read fails, it never falls back to a path that could lead
// elsewhere.
// `confined_out` says whether the read must stay beneath (OpenReadAt).
int ReadFolderBeneath(const stdfs::path& file, std::string& name, bool* confined_out = nullptr) {
  std::error_code ec;
  const stdfs::path abs = stdfs::absolute(file, ec).lexically_normal();
  if (confined_out) *confined_out = false;
  if (ec) return kReadByPath;
  if (int exact = AnchorAt(abs); exact >= 0) {
    name = ".";
    return exact;
  }
  stdfs::path rel;
  bool confined = false;
  int anchor = AnchorAbove(abs, rel, &confined);
  if (confined_out) *confined_out = confined;
  if (anchor < 0) return kReadByPath;
  name = rel.filename().string();
  const stdfs::path folder = rel.parent_path();
  if (name.empty() || name == "..") {
    ::close(anchor);
    errno = EXDEV;
    return confined ? kReadRefused : kReadByPath;
  }
  if (folder.empty()) return anchor;
  int fd = kReadByPath;
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 16; ++attempt) {
    fd = static_cast<int>(::syscall(SYS_openat2, anchor, folder.c_str(), &how, sizeof how));
    if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) break;
  }
  if (fd < 0)
    fd = (errno == ENOSYS || errno == EPERM || (errno == EXDEV && !confined)) ? kReadByPath : kReadRefused;
#endif
  const int err = errno;
  ::close(anchor);
  errno = err;
  return fd;
}

// Opens `name` in `folder` (a ReadFolderBeneath descriptor). In a folder that keeps reads
// beneath it (`confined`), a last name that is a symlink is followed only while it stays
// beneath `folder`: one leading out fails with EXDEV.
int OpenReadAt(int folder, const char* name, int flags, bool confined) {
#ifdef SYS_openat2
  if (confined && (flags & O_NOFOLLOW) == 0) {
    struct open_how how {};
    how.flags = static_cast<std::uint64_t>(flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0;; ++attempt) {
      long fd = ::syscall(SYS_openat2, folder, name, &how, sizeof how);
      if (fd < 0 && (errno == EAGAIN || errno == EINTR) && attempt < 16) continue;
      if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
      break;
    }
  }
#endif
  return ::openat(folder, name, flags);
}

// What a refused read says: a link that leads out of the folder pinned is named as such.
Error RefusedRead(const std::string& what, const stdfs::path& file, int err) {
  if (err == EXDEV) {
    return BadInput(
        "leads outside the folder pilot resolved when the command started (a symlink, or a folder "
        "moved?); pilot never reads through it",
        file.string(), "a damaged or hostile folder: remove the link");
  }
  return FileReadError(what, file, err);
}

// Where a file pilot writes lies: a descriptor of its folder and its name there. Below an
// anchor, the folder is reached from the anchor's descriptor without following a symlink, so
// a parent renamed or swapped for a link after the path was resolved cannot redirect the
// write; elsewhere, the folder is opened by path, its last name never through a symlink.
class Place {
 public:
  Place() = default;
  Place(Place&& o) noexcept : dir_(o.dir_), name_(std::move(o.name_)), path_(std::move(o.path_)) {
    o.dir_ = -1;
  }
  Place& operator=(Place&& o) noexcept {
    std::swap(dir_, o.dir_);
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
    return *this;
  }
  Place(const Place&) = delete;
  Place& operator=(const Place&) = delete;
  ~Place() {
    if (dir_ >= 0) ::close(dir_);
  }
  int dir() const { return dir_; }
  const char* name() const { return name_.c_str(); }
  const stdfs::path& path() const { return path_; }
  stdfs::path folder() const { return ParentOf(path_); }

  static Result<Place> Of(const stdfs::path& file) {
    Place p;
    std::error_code ec;
    const stdfs::path abs = stdfs::absolute(file, ec).lexically_normal();
    p.path_ = file;
    p.name_ = abs.filename().string();
    if (ec || p.name_.empty() || p.name_ == "." || p.name_ == "..") {
      return FileWriteError("not a file name", file, ec ? ec.value() : EINVAL);
    }
    stdfs::path rel;
    int anchor = AnchorAbove(abs, rel);
    if (anchor >= 0) {
      const stdfs::path folder = rel.parent_path();
      if (folder.empty()) {
        p.dir_ = anchor;
      } else {
        p.dir_ = OpenFolderBeneath(anchor, folder);
        const int err = errno;
        ::close(anchor);
        if (p.dir_ < 0) return FolderError(ParentOf(file), err);
      }
      return p;
    }
    const stdfs::path folder = ParentOf(abs);
    p.dir_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p.dir_ < 0) return FolderError(ParentOf(file), errno);
    return p;
  }

 private:
  static Error FolderError(const stdfs::path& folder, int err) {
    if (err == ELOOP || err == EXDEV) {
      return Error{ErrorKind::kBadInput,
                   "the folder is, or lies under, a symlink; pilot never writes through one", folder.string(),
                   "replace it with a real folder (a hostile or damaged run folder?)"};
    }
    if (err == ENOTDIR) {
      return Error{ErrorKind::kBadInput, "not a folder", folder.string(),
                   "replace it with a real folder (a hostile or damaged run folder?)"};
    }
    return FileWriteError("cannot open the folder", folder, err);
  }
  int dir_ = -1;
  std::string name_;
  stdfs::path path_;
};

Status SyncFolder(int dirfd, const stdfs::path& dir) {
  if (::fsync(dirfd) != 0) return FileWriteError("fsync of folder failed", dir, errno);
  return {};
}

// A file pilot is about to write must be absent or a regular file (its folder is a real one:
// Place::Of opened it without following a link): never a symlink, a FIFO or a device.
Status CheckWritable(const Place& at) {
  struct stat st {};
  if (::fstatat(at.dir(), at.name(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    return Error{
        ErrorKind::kBadInput,
        S_ISLNK(st.st_mode) ? "is a symlink; pilot never writes through one" : "is not a regular file",
        at.path().string(), "remove it (a hostile or damaged run folder?)"};
  }
  return {};
}

std::string TempName(const Place& at) {
  return std::string(at.name()) + ".tmp-" + std::to_string(::getpid());
}

// Opens a new temp file beside the file (never an existing one, never through a symlink).
Result<int> CreateTemp(const Place& at) {
  if (Status st = CheckWritable(at); !st.ok()) return st.error();
  const std::string tmp = TempName(at);
  ::unlinkat(at.dir(), tmp.c_str(), 0);  // a stale one of a dead process with a recycled pid
  int fd = ::openat(at.dir(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return FileWriteError("cannot create", at.folder() / tmp, errno);
  return fd;
}

Status SyncRenameSync(int fd, Status st, const Place& at) {
  const std::string tmp = TempName(at);
  if (st.ok() && ::fsync(fd) != 0) st = FileWriteError("fsync failed", at.folder() / tmp, errno);
  ::close(fd);
  if (st.ok() && ::renameat(at.dir(), tmp.c_str(), at.dir(), at.name()) != 0) {
    st = FileWriteError("rename failed", at.path(), errno);
  }
  if (!st.ok()) {
    ::unlinkat(at.dir(), tmp.c_str(), 0);
    return st;
  }
  return SyncFolder(at.dir(), at.folder());
}

// A file pilot appends to, cuts or rewrites in place must be its only name: through a hard
// link the write would reach the other name too (a file outside the folder, a snapshot made
// with `cp -al`). Such a file is copied under a temp name and renamed over its own name
// before the first write: the other name keeps the old bytes, and the write lands in a file
// of its own. A file that is absent, or is its only name, is left alone.
Status BreakHardLink(const Place& at) {
  int in = ::openat(at.dir(), at.name(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return {};  // absent (or refused by the open that follows, with its reason)
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink <= 1) {
    ::close(in);
    return {};
  }
  auto out = CreateTemp(at);
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
      copied = FileReadError("read failed", at.path(), errno);
      break;
    }
    if (n == 0) break;
    copied = WriteAll(out.value(), std::string_view(buf, static_cast<size_t>(n)), at.path());
    if (!copied.ok()) break;
  }
  ::close(in);
  return SyncRenameSync(out.value(), copied, at);
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

// Folders nested deeper than this below the one removed are refused, not removed (each level
// holds a descriptor open).
constexpr int kMaxRemoveDepth = 256;

// Removes the name `name` in the folder `dirfd` and, if it is a real folder, everything in it;
// a symlink is removed, never followed. A missing name is fine. `top` is the folder the
// removal began at, named when the tree is too deep.
Status RemoveAt(int dirfd, const char* name, const stdfs::path& shown, const stdfs::path& top,
                int depth = 0) {
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return FileWriteError("cannot remove", shown, errno);
  }
  if (S_ISDIR(st.st_mode)) {
    if (depth > kMaxRemoveDepth) {
      return BadInput("holds folders nested more than " + std::to_string(kMaxRemoveDepth) +
                          " deep; pilot removes nothing that deep (part of it may be gone already)",
                      top.string(), "a damaged or hostile folder: remove it by hand");
    }
    int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return FileWriteError("cannot remove folder", shown, errno);
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      return FileWriteError("cannot remove folder", shown, errno);
    }
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    Status st_inner;
    for (const std::string& n : names) {
      st_inner = RemoveAt(::dirfd(d), n.c_str(), shown / n, top, depth + 1);
      if (!st_inner.ok()) break;
    }
    ::closedir(d);
    if (!st_inner.ok()) return st_inner;
    if (::unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return FileWriteError("cannot remove folder", shown, errno);
    }
    return {};
  }
  if (::unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
    return FileWriteError("cannot remove", shown, errno);
  return {};
}

class PosixAtomicFile : public AtomicFile {
 public:
  PosixAtomicFile(int fd, Place at) : fd_(fd), at_(std::move(at)) {}
  ~PosixAtomicFile() override {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlinkat(at_.dir(), TempName(at_).c_str(), 0);
    }
  }
  Status Append(std::string_view data) override {
    if (fd_ < 0) return FileWriteError("already committed or failed", at_.path(), EBADF);
    return WriteAll(fd_, data, at_.path());
  }
  Status Commit() override {
    if (fd_ < 0) return FileWriteError("already committed or failed", at_.path(), EBADF);
    int fd = fd_;
    fd_ = -1;  // SyncRenameSync closes it, and removes the temp file on failure
    return SyncRenameSync(fd, Status(), at_);
  }

 private:
  int fd_;
  Place at_;
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
  std::string name;
  int fd;
  bool confined = false;
  const int folder = ReadFolderBeneath(file, name, &confined);
  if (folder >= 0) {
    fd = OpenReadAt(folder, name.c_str(), flags, confined);
    const int err = errno;
    ::close(folder);
    errno = err;
  } else if (folder == kReadByPath) {
    fd = ::open(file.c_str(), flags);
  } else {
    return RefusedRead("cannot open", file, errno);
  }
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP && !follow_symlinks)
      return BadInput("is a symlink; pilot does not follow it here", file.string());
    return RefusedRead("cannot open", file, err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return BadInput(S_ISDIR(st.st_mode) ? "is a folder, not a regular file"
                                        : "is not a regular file (a FIFO, device or socket?)",
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
  PosixReadableFile(int fd, stdfs::path file, std::uint64_t size)
      : fd_(fd), file_(std::move(file)), size_(size) {}
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
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) {
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

// The folders this process was handed when it started (NoteHandedDownFolders): descriptors
// of folders open at exec. Only these are taken as "/proc/self/fd/N"; pilot's own descriptors
// (a pin, a listing) never are.
std::mutex g_handed_mu;
std::set<int>& HandedDown() {
  static std::set<int> fds;
  return fds;
}

// A folder handed down by a parent process as "/proc/self/fd/N" (OpenFolderForChild): the
// descriptor is the folder, pinned as it is (never looked up again by a path), and its path is
// what the kernel says it is now. Error when N is not a folder this process was handed, or the
// folder has been removed; nullopt for any other path.
std::optional<Result<stdfs::path>> InheritedFolder(const stdfs::path& path) {
  static const std::string prefix = "/proc/self/fd/";
  const std::string text = path.string();
  if (text.size() <= prefix.size() || text.size() > prefix.size() + 9 ||
      text.compare(0, prefix.size(), prefix) != 0 ||
      !std::all_of(text.begin() + static_cast<std::ptrdiff_t>(prefix.size()), text.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const long n = std::stol(text.substr(prefix.size()));
  {
    std::lock_guard<std::mutex> hold(g_handed_mu);
    if (n > INT_MAX || HandedDown().count(static_cast<int>(n)) == 0) {
      return Result<stdfs::path>(BadInput("is not a folder this process was handed when it started", text,
                                          "give the folder's path"));
    }
  }
  struct stat st {};
  if (::fstat(static_cast<int>(n), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Result<stdfs::path>(
        BadInput("is not a folder this process was handed when it started", text, "give the folder's path"));
  }
  if (st.st_nlink == 0) {
    return Result<stdfs::path>(BadInput("the folder it was handed has been removed", text,
                                        "nothing was written; run the command again"));
  }
  char buf[PATH_MAX + 1];
  errno = 0;
  const ssize_t len = ::readlink(text.c_str(), buf, PATH_MAX);
  if (len <= 0 || buf[0] != '/')
    return Result<stdfs::path>(FileReadError("cannot resolve", path, errno ? errno : EINVAL));
  const stdfs::path now = stdfs::path(std::string(buf, static_cast<std::size_t>(len))).lexically_normal();
  if (now.filename().string().size() > 10 &&
      now.filename().string().compare(now.filename().string().size() - 10, 10, " (deleted)") == 0) {
    return Result<stdfs::path>(BadInput("the folder it was handed has been removed", text,
                                        "nothing was written; run the command again"));
  }
  const int fd = ::fcntl(static_cast<int>(n), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Result<stdfs::path>(FileReadError("cannot open the folder", path, errno));
  std::lock_guard<std::mutex> hold(g_anchors_mu);
  for (AnchorEntry& a : Anchors()) {
    if (a.path == now) {
      a.confine_reads = true;
      ::close(fd);
      return Result<stdfs::path>(now);
    }
  }
  Anchors().push_back({now, fd, true});
  return Result<stdfs::path>(now);
}

class PosixFileSystem : public FileSystem {
 public:
  Result<FileStat> Stat(const stdfs::path& file) override { return DoStat(file, true); }
  Result<FileStat> LinkStat(const stdfs::path& file) override { return DoStat(file, false); }

  Result<std::string> ReadFile(const stdfs::path& file, std::uint64_t max_bytes) override {
    auto fd = OpenRegularFd(file, true);
    if (!fd.ok()) return fd.error();
    std::string out;
    struct stat st {};
    if (::fstat(fd.value(), &st) == 0) {
      out.reserve(static_cast<size_t>(
          std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), max_bytes) + 1));
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
    auto at = Place::Of(dir);
    if (!at.ok()) return at.error();
    if (::mkdirat(at.value().dir(), at.value().name(), 0777) != 0) {
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
    const stdfs::path abs = stdfs::absolute(dir, ec).lexically_normal();
    stdfs::path rel;
    int anchor = ec ? -1 : AnchorAbove(abs, rel);
    if (anchor < 0) {
      stdfs::create_directories(dir, ec);
      if (ec) return FileWriteError("cannot create folder", dir, ec.value());
      return {};
    }
    // Below an anchor: each folder made (or entered) from the one before, never through a link.
    int at = anchor;
    for (const auto& part : rel) {
      if (part.empty() || part == ".") continue;
      if (::mkdirat(at, part.c_str(), 0777) != 0 && errno != EEXIST) {
        const int err = errno;
        ::close(at);
        return FileWriteError("cannot create folder", dir, err);
      }
      int next = ::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      const int err = errno;
      ::close(at);
      if (next < 0) {
        if (err == ELOOP || err == ENOTDIR) {
          return Error{ErrorKind::kBadInput, "a name along the path is a symlink or a file, not a folder",
                       dir.string(), "replace it with a real folder; pilot never writes through a link"};
        }
        return FileWriteError("cannot create folder", dir, err);
      }
      at = next;
    }
    ::close(at);
    return {};
  }

  Status WriteFileAtomic(const stdfs::path& file, std::string_view data) override {
    auto at = Place::Of(file);
    if (!at.ok()) return at.error();
    auto fd = CreateTemp(at.value());
    if (!fd.ok()) return fd.error();
    return SyncRenameSync(fd.value(), WriteAll(fd.value(), data, file), at.value());
  }

  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& file) override {
    auto at = Place::Of(file);
    if (!at.ok()) return at.error();
    auto fd = CreateTemp(at.value());
    if (!fd.ok()) return fd.error();
    return std::unique_ptr<AtomicFile>(std::make_unique<PosixAtomicFile>(fd.value(), std::move(at).value()));
  }

  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                        bool follow_symlinks = true) override {
    auto in = OpenRegularFd(from, follow_symlinks);
    if (!in.ok()) return in.error();
    auto at = Place::Of(to);
    if (!at.ok()) {
      ::close(in.value());
      return at.error();
    }
    auto out = CreateTemp(at.value());
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
      st = WriteAll(out.value(), std::string_view(buf, static_cast<size_t>(n)), to);
      if (!st.ok()) break;
    }
    ::close(in.value());
    return SyncRenameSync(out.value(), st, at.value());
  }

  Status Truncate(const stdfs::path& file, std::uint64_t size) override {
    auto at = Place::Of(file);
    if (!at.ok()) return at.error();
    const Place& p = at.value();
    if (Status st = CheckWritable(p); !st.ok()) return st;
    if (Status st = BreakHardLink(p); !st.ok()) return st;
    int fd = ::openat(p.dir(), p.name(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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
    auto at = Place::Of(file);
    if (!at.ok()) {
      // A folder that is not there holds no file to remove.
      struct stat st {};
      if (::lstat(ParentOf(file).c_str(), &st) != 0 && errno == ENOENT) return {};
      return at.error();
    }
    if (::unlinkat(at.value().dir(), at.value().name(), 0) != 0 && errno != ENOENT) {
      return FileWriteError("cannot remove", file, errno);
    }
    return {};
  }

  Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) override {
    auto src = Place::Of(from);
    if (!src.ok()) return src.error();
    auto dst = Place::Of(to);
    if (!dst.ok()) return dst.error();
    if (::renameat2(src.value().dir(), src.value().name(), dst.value().dir(), dst.value().name(),
                    RENAME_NOREPLACE) != 0) {
      const int err = errno;
      if (err == EEXIST) {
        return BadInput("already exists; pilot never writes into an existing folder", to.string(),
                        "choose another destination");
      }
      return FileWriteError("cannot rename " + from.string() + " to", to, err);
    }
    return SyncFolder(dst.value().dir(), dst.value().folder());
  }

  Status RenameReplace(const stdfs::path& from, const stdfs::path& to) override {
    auto src = Place::Of(from);
    if (!src.ok()) return src.error();
    auto dst = Place::Of(to);
    if (!dst.ok()) return dst.error();
    if (Status st = CheckWritable(dst.value()); !st.ok()) return st;
    struct stat st {};
    if (::fstatat(src.value().dir(), src.value().name(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return FileWriteError("cannot rename", from, errno);
    }
    if (!S_ISREG(st.st_mode)) return BadInput("is not a regular file; not renamed", from.string());
    if (::renameat(src.value().dir(), src.value().name(), dst.value().dir(), dst.value().name()) != 0) {
      return FileWriteError("cannot rename " + from.string() + " to", to, errno);
    }
    return SyncFolder(dst.value().dir(), dst.value().folder());
  }

  Status RemoveTree(const stdfs::path& dir) override {
    auto at = Place::Of(dir);
    if (!at.ok()) {
      struct stat st {};
      if (::lstat(ParentOf(dir).c_str(), &st) != 0 && errno == ENOENT) return {};
      return at.error();
    }
    return RemoveAt(at.value().dir(), at.value().name(), dir, dir);
  }

  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) override {
    auto at = Place::Of(file);
    if (!at.ok()) return at.error();
    const Place& p = at.value();
    if (Status st = CheckWritable(p); !st.ok()) return st.error();
    if (Status st = BreakHardLink(p); !st.ok()) return st.error();
    int fd = ::openat(p.dir(), p.name(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                      0666);
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
    if (relative.empty() || rel.is_absolute())
      return fail(Failure::kOutside, "'" + relative + "' is not a relative path");
    for (const auto& part : rel) {
      if (part == "..") return fail(Failure::kOutside, "path '" + relative + "' climbs out with '..'");
    }
    // The inputs' folder as it was pinned when the plan was made (FileSystem::Anchor), never
    // opened by path again: a folder renamed or swapped for a link meanwhile is not followed.
    int dirfd = AnchorAt(root);
    if (dirfd < 0) dirfd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
      return fail(Failure::kUnreadable,
                  "cannot open the inputs' folder: " + std::string(std::strerror(errno)));
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
        return fail(Failure::kOutside,
                    "path '" + relative + "' resolves through a symlink outside the manifest's folder");
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
    std::string leaf;
    int fd;
    bool confined = false;
    const int folder = ReadFolderBeneath(dir, leaf, &confined);
    if (folder >= 0) {
      fd = OpenReadAt(folder, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, confined);
      const int err = errno;
      ::close(folder);
      errno = err;
    } else if (folder == kReadByPath) {
      fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    } else {
      return RefusedRead("cannot list folder", dir, errno);
    }
    if (fd < 0) return RefusedRead("cannot list folder", dir, errno);
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
    if (auto inherited = InheritedFolder(path)) return *inherited;
    std::error_code ec;
    stdfs::path out = stdfs::weakly_canonical(stdfs::absolute(path, ec), ec);
    if (ec) return FileReadError("cannot resolve", path, ec.value());
    return out;
  }

  Result<LockAttempt> TryLock(const stdfs::path& file, bool exclusive, bool create) override {
    auto at = Place::Of(file);
    if (!at.ok()) return at.error();
    const Place& p = at.value();
    int fd = ::openat(p.dir(), p.name(),
                      (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
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
        if (::unlinkat(p.dir(), p.name(), 0) != 0)
          return FileWriteError("cannot replace the shared lock file", file, errno);
        fd = ::openat(p.dir(), p.name(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                      0666);
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

  Status Anchor(const stdfs::path& dir, Reads reads = Reads::kMayLeave) override {
    std::error_code ec;
    const stdfs::path abs = stdfs::absolute(dir, ec).lexically_normal();
    if (ec || abs == abs.root_path()) return {};  // "/" is never pinned: everything lies under it
    std::lock_guard<std::mutex> hold(g_anchors_mu);
    for (AnchorEntry& a : Anchors()) {
      if (a.path == abs) {  // pinned when it was first resolved
        a.confine_reads = a.confine_reads || reads == Reads::kStayBeneath;
        return {};
      }
    }
    // Below a folder pinned already, reached from it through no symlink, as a write would be.
    int fd = -1;
    const AnchorEntry* above = nullptr;
    for (const AnchorEntry& a : Anchors()) {
      if (StrictlyBelow(abs, a.path) && (!above || StrictlyBelow(a.path, above->path))) above = &a;
    }
    if (above) {
      fd = OpenFolderBeneath(above->fd, abs.lexically_relative(above->path));
    } else {
      fd = ::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) return FileReadError("cannot open the folder", abs, errno);
    Anchors().push_back({abs, fd, reads == Reads::kStayBeneath});
    return {};
  }

  Result<std::uint64_t> FreeBytes(const stdfs::path& path) override {
    std::error_code ec;
    stdfs::path p = stdfs::absolute(path, ec);
    // The run folder's parent may not exist yet: ask of the nearest ancestor that does.
    while (!p.empty() && p != p.parent_path() && !stdfs::exists(p, ec)) p = p.parent_path();
    struct statvfs st {};
    if (p.empty() || ::statvfs(p.c_str(), &st) != 0)
      return FileReadError("cannot query free space", path, errno);
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  }

 private:
  static Result<FileStat> DoStat(const stdfs::path& file, bool follow) {
    struct stat st {};
    int rc;
    std::string name;
    bool confined = false;
    const int folder = ReadFolderBeneath(file, name, &confined);
    if (folder >= 0) {
      if (follow && confined) {  // a last link followed only while it stays beneath
        const int fd = OpenReadAt(folder, name.c_str(), O_PATH | O_CLOEXEC, true);
        rc = fd < 0 ? -1 : ::fstat(fd, &st);
        const int err = errno;
        if (fd >= 0) ::close(fd);
        errno = err;
      } else {
        rc = ::fstatat(folder, name.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
      }
      const int err = errno;
      ::close(folder);
      errno = err;
    } else if (folder == kReadByPath) {
      rc = follow ? ::stat(file.c_str(), &st) : ::lstat(file.c_str(), &st);
    } else {
      rc = -1;  // errno from ReadFolderBeneath
    }
    if (rc != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return FileStat{};
      return RefusedRead("cannot stat", file, errno);
    }
    return FromStat(st);
  }
};

}  // namespace

FileSystem& RealFileSystem() {
  static PosixFileSystem fs;
  return fs;
}

void NoteHandedDownFolders() {
  std::set<int> found;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (struct dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || fd < 3 || fd == own || fd > INT_MAX) continue;
      struct stat st {};
      if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISDIR(st.st_mode)) found.insert(static_cast<int>(fd));
    }
    ::closedir(d);
  }
  std::lock_guard<std::mutex> hold(g_handed_mu);
  HandedDown() = std::move(found);
}

Result<int> OpenFolderForChild(const stdfs::path& dir) {
  std::error_code ec;
  const stdfs::path abs = stdfs::absolute(dir, ec).lexically_normal();
  if (ec) return FileReadError("cannot open the folder", dir, ec.value());
  int fd = AnchorAt(abs);
  if (fd < 0) {
    stdfs::path rel;
    if (int anchor = AnchorAbove(abs, rel); anchor >= 0) {
      fd = OpenFolderBeneath(anchor, rel);
      const int err = errno;
      ::close(anchor);
      errno = err;
    } else {
      fd = ::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  }
  if (fd < 0) return FileWriteError("cannot open the folder", dir, errno);
  return fd;
}

Result<std::string> ReadInsideFolder(FileSystem& fsys, const stdfs::path& dir, const std::string& rel,
                                     std::uint64_t cap) {
  auto st = fsys.LinkStat(dir / rel);
  if (!st.ok()) return st.error();
  if (!st.value().exists) return BadInput("missing", (dir / rel).string());
  if (st.value().symlink || !st.value().regular) {
    return BadInput("is not a regular file (a symlink?); pilot never follows one inside a pilot folder",
                    (dir / rel).string(), "the folder is damaged or hostile");
  }
  return ReadCapped(fsys, dir / rel, cap, "file");
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
      if (e.stat.directory)
        pending.push_back(d / e.name);
      else if (e.stat.regular)
        out.push_back((d / e.name).lexically_relative(base).generic_string());
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
