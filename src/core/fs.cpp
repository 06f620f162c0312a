#include "pilot/fs.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace pilot {
namespace {

Error IoError(const std::string& what, const stdfs::path& file, int err) {
  return Error{ExitCode::kBadInput, what + ": " + std::strerror(err), file.string(),
               "check the disk (space, permissions) and retry"};
}

Status WriteAll(int fd, std::string_view data, const stdfs::path& file) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("write failed", file, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status SyncDirectory(const stdfs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open folder to sync", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return IoError("fsync of folder failed", dir, err);
  return {};
}

class PosixAppendFile : public AppendFile {
 public:
  PosixAppendFile(int fd, stdfs::path file) : fd_(fd), file_(std::move(file)) {}
  ~PosixAppendFile() override { ::close(fd_); }
  Status Append(std::string_view data) override { return WriteAll(fd_, data, file_); }
  Status Sync() override {
    if (::fsync(fd_) != 0) return IoError("fsync failed", file_, errno);
    return {};
  }

 private:
  int fd_;
  stdfs::path file_;
};

class PosixFileSystem : public FileSystem {
 public:
  Result<FileStat> Stat(const stdfs::path& file) override {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return FileStat{};
      return IoError("cannot stat", file, errno);
    }
    return FileStat{true, S_ISREG(st.st_mode), static_cast<std::uint64_t>(st.st_size)};
  }

  Result<std::string> ReadFile(const stdfs::path& file) override {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open", file, errno);
    struct stat st {};
    std::string out;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return IoError("read failed", file, err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  Status CreateDirectoryExclusive(const stdfs::path& dir) override {
    if (::mkdir(dir.c_str(), 0777) != 0) {
      if (errno == EEXIST) {
        return BadInput("run folder already exists; pilot never reuses or overwrites one",
                        dir.string(), "choose another --run-id or leave it out");
      }
      return IoError("cannot create folder", dir, errno);
    }
    return {};
  }

  Status CreateDirectories(const stdfs::path& dir) override {
    std::error_code ec;
    stdfs::create_directories(dir, ec);
    if (ec) return IoError("cannot create folder", dir, ec.value());
    return {};
  }

  Status WriteFileAtomic(const stdfs::path& file, std::string_view data) override {
    stdfs::path tmp = file;
    tmp += ".tmp-" + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return IoError("cannot create", tmp, errno);
    Status st = WriteAll(fd, data, tmp);
    if (st.ok() && ::fsync(fd) != 0) st = IoError("fsync failed", tmp, errno);
    ::close(fd);
    if (st.ok() && ::rename(tmp.c_str(), file.c_str()) != 0) st = IoError("rename failed", file, errno);
    if (!st.ok()) {
      ::unlink(tmp.c_str());
      return st;
    }
    return SyncDirectory(file.has_parent_path() ? file.parent_path() : stdfs::path("."));
  }

  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to) override {
    int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return IoError("cannot open", from, errno);
    stdfs::path tmp = to;
    tmp += ".tmp-" + std::to_string(::getpid());
    int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (out < 0) {
      int err = errno;
      ::close(in);
      return IoError("cannot create", tmp, err);
    }
    Status st;
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        st = IoError("read failed", from, errno);
        break;
      }
      if (n == 0) break;
      st = WriteAll(out, std::string_view(buf, static_cast<size_t>(n)), tmp);
      if (!st.ok()) break;
    }
    if (st.ok() && ::fsync(out) != 0) st = IoError("fsync failed", tmp, errno);
    ::close(in);
    ::close(out);
    if (st.ok() && ::rename(tmp.c_str(), to.c_str()) != 0) st = IoError("rename failed", to, errno);
    if (!st.ok()) {
      ::unlink(tmp.c_str());
      return st;
    }
    return SyncDirectory(to.has_parent_path() ? to.parent_path() : stdfs::path("."));
  }

  Status Truncate(const stdfs::path& file, std::uint64_t size) override {
    int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open to truncate", file, errno);
    Status st;
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0 || ::fsync(fd) != 0) st = IoError("truncate failed", file, errno);
    ::close(fd);
    return st;
  }

  Status RemoveFile(const stdfs::path& file) override {
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) return IoError("cannot remove", file, errno);
    return {};
  }

  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) override {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) return IoError("cannot open for append", file, errno);
    return std::unique_ptr<AppendFile>(std::make_unique<PosixAppendFile>(fd, file));
  }
};

}  // namespace

FileSystem& RealFileSystem() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace pilot
