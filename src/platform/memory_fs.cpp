#include "pilot/memory_fs.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "platform/fs_errors.h"

namespace pilot {
namespace {

stdfs::path Normal(const stdfs::path& path) {
  stdfs::path p = path.is_absolute() ? path : stdfs::path("/") / path;
  return p.lexically_normal();
}

std::string Child(const std::string& folder, const std::string& name) {
  return folder == "/" ? "/" + name : folder + "/" + name;
}

std::vector<std::string> Parts(const stdfs::path& normal) {
  std::vector<std::string> out;
  for (const auto& c : normal.relative_path()) {
    std::string s = c.string();
    if (!s.empty() && s != ".") out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

class MemoryFileSystem::Reader : public ReadableFile {
 public:
  Reader(std::string bytes, stdfs::path file) : bytes_(std::move(bytes)), file_(std::move(file)) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) override {
    if (offset >= bytes_.size()) return std::size_t{0};
    std::size_t got = std::min<std::size_t>(n, bytes_.size() - static_cast<std::size_t>(offset));
    std::memcpy(buf, bytes_.data() + offset, got);
    return got;
  }
  std::uint64_t size() const override { return bytes_.size(); }
  const stdfs::path& path() const override { return file_; }

 private:
  const std::string bytes_;
  const stdfs::path file_;
};

class MemoryFileSystem::Appender : public AppendFile {
 public:
  Appender(MemoryFileSystem& fs, std::shared_ptr<std::string> data) : fs_(fs), data_(std::move(data)) {}
  Status Append(std::string_view data) override {
    std::lock_guard<std::mutex> hold(fs_.mu_);
    data_->append(data);
    return {};
  }
  Status Sync() override { return {}; }

 private:
  MemoryFileSystem& fs_;
  std::shared_ptr<std::string> data_;
};

class MemoryFileSystem::Lock : public FileLock {
 public:
  Lock(MemoryFileSystem& fs, std::shared_ptr<std::string> data, bool exclusive)
      : fs_(fs), data_(std::move(data)), exclusive_(exclusive) {}
  ~Lock() override { fs_.Release(data_.get(), exclusive_); }
  Status Overwrite(std::string_view data) override {
    std::lock_guard<std::mutex> hold(fs_.mu_);
    data_->assign(data);
    return {};
  }

 private:
  MemoryFileSystem& fs_;
  std::shared_ptr<std::string> data_;
  bool exclusive_;
};

MemoryFileSystem::MemoryFileSystem() { nodes_["/"] = Node{}; }

MemoryFileSystem::Walked MemoryFileSystem::Walk(const stdfs::path& path, bool follow_last, int hops) const {
  Walked w;
  if (hops > 40) {
    w.err = ELOOP;
    return w;
  }
  const std::vector<std::string> parts = Parts(Normal(path));
  std::string cur = "/";
  const Node* node = &nodes_.at("/");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (parts[i] == "..") {  // only at the root once normal: "/.." is "/"
      continue;
    }
    if (node->type != Type::kFolder) {
      w.err = ENOTDIR;
      return w;
    }
    std::string next = Child(cur, parts[i]);
    auto it = nodes_.find(next);
    if (it == nodes_.end()) {
      w.err = ENOENT;
      if (last) w.key = next;
      return w;
    }
    if (it->second.type == Type::kSymlink && (!last || follow_last)) {
      stdfs::path target = it->second.target;
      if (target.is_relative()) target = stdfs::path(cur) / target;
      for (std::size_t k = i + 1; k < parts.size(); ++k) target /= parts[k];
      return Walk(target, follow_last, hops + 1);
    }
    cur = std::move(next);
    node = &it->second;
  }
  w.key = cur;
  w.node = node;
  return w;
}

MemoryFileSystem::Node* MemoryFileSystem::Find(const std::string& key) {
  auto it = nodes_.find(key);
  return it == nodes_.end() ? nullptr : &it->second;
}

Result<std::string> MemoryFileSystem::WritableKey(const stdfs::path& file) const {
  const stdfs::path normal = Normal(file);
  const stdfs::path dir = normal.parent_path();
  Walked parent = Walk(dir, /*follow_last=*/false);
  if (parent.err != 0) return FileWriteError("cannot create", file, parent.err);
  if (parent.node->type != Type::kFolder) {
    return Error{ErrorKind::kBadInput,
                 parent.node->type == Type::kSymlink
                     ? "the folder is a symlink; pilot never writes through one"
                     : "not a folder",
                 dir.string(), "replace it with a real folder (a hostile or damaged run folder?)"};
  }
  std::string key = Child(parent.key, normal.filename().string());
  const Node* existing = nullptr;
  if (auto it = nodes_.find(key); it != nodes_.end()) existing = &it->second;
  if (existing && existing->type != Type::kFile) {
    return Error{ErrorKind::kBadInput,
                 existing->type == Type::kSymlink ? "is a symlink; pilot never writes through one"
                                                  : "is not a regular file",
                 file.string(), "remove it (a hostile or damaged run folder?)"};
  }
  return key;
}

void MemoryFileSystem::AddFolder(const stdfs::path& dir) {
  std::lock_guard<std::mutex> hold(mu_);
  std::string cur = "/";
  for (const std::string& part : Parts(Normal(dir))) {
    cur = Child(cur, part);
    nodes_.try_emplace(cur, Node{});
  }
}

void MemoryFileSystem::AddFile(const stdfs::path& file, std::string contents) {
  AddFolder(Normal(file).parent_path());
  std::lock_guard<std::mutex> hold(mu_);
  nodes_[Normal(file).generic_string()] =
      Node{Type::kFile, std::make_shared<std::string>(std::move(contents)), {}};
}

void MemoryFileSystem::AddSymlink(const stdfs::path& link, const stdfs::path& target) {
  AddFolder(Normal(link).parent_path());
  std::lock_guard<std::mutex> hold(mu_);
  nodes_[Normal(link).generic_string()] = Node{Type::kSymlink, nullptr, target.string()};
}

void MemoryFileSystem::AddSpecial(const stdfs::path& file) {
  AddFolder(Normal(file).parent_path());
  std::lock_guard<std::mutex> hold(mu_);
  nodes_[Normal(file).generic_string()] = Node{Type::kSpecial, nullptr, {}};
}

std::optional<std::string> MemoryFileSystem::Contents(const stdfs::path& file) const {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(file, /*follow_last=*/false);
  if (w.err != 0 || w.node->type != Type::kFile) return std::nullopt;
  return *w.node->data;
}

std::map<std::string, std::string> MemoryFileSystem::Files() const {
  std::lock_guard<std::mutex> hold(mu_);
  std::map<std::string, std::string> out;
  for (const auto& [key, node] : nodes_) {
    if (node.type == Type::kFile) out[key] = *node.data;
  }
  return out;
}

Result<FileStat> MemoryFileSystem::StatOf(const stdfs::path& file, bool follow_last) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(file, follow_last);
  if (w.err == ENOENT || w.err == ENOTDIR) return FileStat{};
  if (w.err != 0) return FileReadError("cannot stat", file, w.err);
  const Node& n = *w.node;
  FileStat st;
  st.exists = true;
  st.directory = n.type == Type::kFolder;
  st.regular = n.type == Type::kFile;
  st.symlink = n.type == Type::kSymlink;  // only when the last name is not followed
  st.size = n.type == Type::kFile ? n.data->size() : n.type == Type::kSymlink ? n.target.size() : 0;
  return st;
}

Result<FileStat> MemoryFileSystem::Stat(const stdfs::path& file) {
  return StatOf(file, /*follow_last=*/true);
}

Result<FileStat> MemoryFileSystem::LinkStat(const stdfs::path& file) {
  return StatOf(file, /*follow_last=*/false);
}

Result<std::unique_ptr<ReadableFile>> MemoryFileSystem::OpenRead(const stdfs::path& file,
                                                                 bool follow_symlinks) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(file, follow_symlinks);
  if (w.err != 0) return FileReadError("cannot open", file, w.err);
  switch (w.node->type) {
    case Type::kSymlink:
      return BadInput("is a symlink; pilot does not follow it here", file.string());
    case Type::kFolder:
      return BadInput("is a folder, not a regular file", file.string(), "give a regular file");
    case Type::kSpecial:
      return BadInput("is not a regular file (a FIFO, device or socket?)", file.string(),
                      "give a regular file");
    case Type::kFile:
      break;
  }
  return std::unique_ptr<ReadableFile>(std::make_unique<Reader>(*w.node->data, file));
}

BeneathOpen MemoryFileSystem::OpenBeneath(const stdfs::path& root, const std::string& relative) {
  using Failure = BeneathOpen::Failure;
  BeneathOpen out;
  const stdfs::path rel(relative);
  bool climbs = relative.empty() || rel.is_absolute();
  for (const auto& part : rel) climbs = climbs || part == "..";
  if (climbs) {
    out.failure = Failure::kOutside;
    out.detail = "path '" + relative + "' is not a relative path under the manifest's folder";
    return out;
  }
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(root / rel, /*follow_last=*/true);
  const std::string base = Normal(root).string() + "/";
  if (w.err == ELOOP) {
    out.failure = Failure::kUnreadable;
    out.detail = "'" + relative + "': too many symlinks (a loop?)";
  } else if (!w.key.empty() && w.key.compare(0, base.size(), base) != 0) {
    out.failure = Failure::kOutside;  // the kernel's RESOLVE_BENEATH refuses the same
    out.detail = "path '" + relative + "' resolves through a symlink outside the manifest's folder";
  } else if (w.err != 0) {
    out.failure = Failure::kMissing;
    out.detail = "no file at '" + relative + "'";
  } else if (w.node->type != Type::kFile) {
    out.failure = Failure::kNotRegular;
    out.detail = "'" + relative + "' is not a regular file";
  } else {
    out.file = std::make_unique<Reader>(*w.node->data, root / rel);
  }
  return out;
}

Result<std::string> MemoryFileSystem::ReadFile(const stdfs::path& file, std::uint64_t max_bytes) {
  auto in = OpenRead(file, /*follow_symlinks=*/true);
  if (!in.ok()) return in.error();
  std::string out(static_cast<std::size_t>(std::min<std::uint64_t>(in.value()->size(), max_bytes + 1)), '\0');
  auto got = in.value()->ReadAt(0, out.data(), out.size());
  if (!got.ok()) return got.error();
  out.resize(got.value());
  return out;
}

Status MemoryFileSystem::CreateDirectoryExclusive(const stdfs::path& dir) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(dir, /*follow_last=*/false);
  if (w.err == 0) {
    return BadInput("run folder already exists; pilot never reuses or overwrites one", dir.string(),
                    "choose another --run-id or leave it out");
  }
  if (w.err != ENOENT || w.key.empty()) return FileWriteError("cannot create folder", dir, w.err);
  nodes_[w.key] = Node{};
  return {};
}

Status MemoryFileSystem::CreateDirectories(const stdfs::path& dir) {
  std::lock_guard<std::mutex> hold(mu_);
  stdfs::path prefix = "/";
  for (const std::string& part : Parts(Normal(dir))) {
    prefix /= part;
    Walked w = Walk(prefix, /*follow_last=*/true);
    if (w.err == ENOENT && !w.key.empty()) {
      nodes_[w.key] = Node{};
    } else if (w.err != 0) {
      return FileWriteError("cannot create folder", dir, w.err);
    } else if (w.node->type != Type::kFolder) {
      return FileWriteError("cannot create folder", dir, ENOTDIR);
    }
  }
  return {};
}

Status MemoryFileSystem::WriteFileAtomic(const stdfs::path& file, std::string_view data) {
  std::lock_guard<std::mutex> hold(mu_);
  auto key = WritableKey(file);
  if (!key.ok()) return key.error();
  // A new file in its place, as a rename does: handles open on the old one keep the old.
  nodes_[key.value()] = Node{Type::kFile, std::make_shared<std::string>(data), {}};
  return {};
}

namespace {
// Buffers the pieces; Commit is one WriteFileAtomic (it appears whole or not at all).
class MemoryAtomicFile : public AtomicFile {
 public:
  MemoryAtomicFile(FileSystem& fs, stdfs::path file) : fs_(fs), file_(std::move(file)) {}
  Status Append(std::string_view data) override {
    if (done_) return FileWriteError("already committed", file_, EBADF);
    data_.append(data);
    return {};
  }
  Status Commit() override {
    if (done_) return FileWriteError("already committed", file_, EBADF);
    done_ = true;
    return fs_.WriteFileAtomic(file_, data_);
  }

 private:
  FileSystem& fs_;
  stdfs::path file_;
  std::string data_;
  bool done_ = false;
};
}  // namespace

Result<std::unique_ptr<AtomicFile>> MemoryFileSystem::CreateAtomic(const stdfs::path& file) {
  {
    std::lock_guard<std::mutex> hold(mu_);
    auto key = WritableKey(file);  // refused now, as the real one refuses to create its temp file
    if (!key.ok()) return key.error();
  }
  return std::unique_ptr<AtomicFile>(std::make_unique<MemoryAtomicFile>(*this, file));
}

Status MemoryFileSystem::CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                                        bool follow_symlinks) {
  if (!follow_symlinks) {
    auto st = LinkStat(from);
    if (!st.ok()) return st.error();
    if (st.value().symlink) return FileWriteError("cannot copy a symlink", from, ELOOP);
  }
  auto bytes = ReadFile(from, UINT64_MAX - 1);
  if (!bytes.ok()) return bytes.error();
  return WriteFileAtomic(to, bytes.value());
}

Result<std::unique_ptr<AppendFile>> MemoryFileSystem::OpenAppend(const stdfs::path& file) {
  std::lock_guard<std::mutex> hold(mu_);
  auto key = WritableKey(file);
  if (!key.ok()) return key.error();
  Node& node = nodes_[key.value()];
  if (!node.data) node = Node{Type::kFile, std::make_shared<std::string>(), {}};
  return std::unique_ptr<AppendFile>(std::make_unique<Appender>(*this, node.data));
}

Status MemoryFileSystem::Truncate(const stdfs::path& file, std::uint64_t size) {
  std::lock_guard<std::mutex> hold(mu_);
  auto key = WritableKey(file);
  if (!key.ok()) return key.error();
  Node* node = Find(key.value());
  if (!node) return FileWriteError("cannot open to truncate", file, ENOENT);
  node->data->resize(static_cast<std::size_t>(size));
  return {};
}

Status MemoryFileSystem::RemoveFile(const stdfs::path& file) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(file, /*follow_last=*/false);
  if (w.err == ENOENT) return {};
  if (w.err != 0) return FileWriteError("cannot remove", file, w.err);
  if (w.node->type == Type::kFolder) return FileWriteError("cannot remove", file, EISDIR);
  nodes_.erase(w.key);
  return {};
}

Status MemoryFileSystem::RenameNoReplace(const stdfs::path& from, const stdfs::path& to) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked src = Walk(from, /*follow_last=*/false);
  if (src.err != 0) return FileWriteError("cannot rename", from, src.err);
  Walked dst = Walk(to, /*follow_last=*/false);
  if (dst.err == 0) {
    return BadInput("already exists; pilot never writes into an existing folder", to.string(),
                    "choose another destination");
  }
  if (dst.err != ENOENT || dst.key.empty()) return FileWriteError("cannot rename to", to, dst.err);
  const std::string prefix = src.key + "/";
  std::map<std::string, Node> moved;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->first == src.key || it->first.compare(0, prefix.size(), prefix) == 0) {
      moved[dst.key + it->first.substr(src.key.size())] = std::move(it->second);
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [k, v] : moved) nodes_[k] = std::move(v);
  return {};
}

Status MemoryFileSystem::RenameReplace(const stdfs::path& from, const stdfs::path& to) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked src = Walk(from, /*follow_last=*/false);
  if (src.err != 0) return FileWriteError("cannot rename", from, src.err);
  if (src.node->type != Type::kFile) return BadInput("is not a regular file; not renamed", from.string());
  auto key = WritableKey(to);
  if (!key.ok()) return key.error();
  Node moved = nodes_[src.key];
  nodes_.erase(src.key);
  nodes_[key.value()] = std::move(moved);
  return {};
}

Status MemoryFileSystem::RemoveTree(const stdfs::path& dir) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(dir, /*follow_last=*/false);
  if (w.err == ENOENT) return {};
  if (w.err != 0) return FileWriteError("cannot remove folder", dir, w.err);
  const std::string prefix = w.key + "/";
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->first == w.key || it->first.compare(0, prefix.size(), prefix) == 0) {
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  return {};
}

Result<std::vector<DirEntry>> MemoryFileSystem::ListDirectory(const stdfs::path& dir) {
  std::vector<std::pair<std::string, std::string>> names;  // name, key
  {
    std::lock_guard<std::mutex> hold(mu_);
    Walked w = Walk(dir, /*follow_last=*/true);
    if (w.err != 0) return FileReadError("cannot list folder", dir, w.err);
    if (w.node->type != Type::kFolder) return FileReadError("cannot list folder", dir, ENOTDIR);
    const std::string prefix = w.key == "/" ? "/" : w.key + "/";
    for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      std::string rest = it->first.substr(prefix.size());
      if (!rest.empty() && rest.find('/') == std::string::npos) names.emplace_back(rest, it->first);
    }
  }
  std::vector<DirEntry> out;
  for (auto& [name, key] : names) {
    auto st = LinkStat(key);
    if (st.ok() && st.value().exists) out.push_back(DirEntry{std::move(name), st.value()});
  }
  return out;  // in name order: the map's
}

Result<stdfs::path> MemoryFileSystem::Resolve(const stdfs::path& path) {
  std::lock_guard<std::mutex> hold(mu_);
  const std::vector<std::string> parts = Parts(Normal(path));
  // The longest prefix that exists, its links followed; the rest kept as written.
  for (std::size_t n = parts.size() + 1; n-- > 0;) {
    stdfs::path prefix = "/";
    for (std::size_t k = 0; k < n; ++k) prefix /= parts[k];
    Walked w = Walk(prefix, /*follow_last=*/true);
    if (w.err == ELOOP) return FileReadError("cannot resolve", path, ELOOP);
    if (w.err != 0) continue;
    stdfs::path out = w.key;
    for (std::size_t k = n; k < parts.size(); ++k) out /= parts[k];
    return out.lexically_normal();
  }
  return stdfs::path("/");
}

Result<LockAttempt> MemoryFileSystem::TryLock(const stdfs::path& file, bool exclusive, bool create) {
  std::lock_guard<std::mutex> hold(mu_);
  Walked w = Walk(file, /*follow_last=*/false);
  if (w.err == 0 && w.node->type == Type::kSymlink) {
    return BadInput("is a symlink; pilot never writes through one", file.string());
  }
  if (w.err == ENOENT && create) {
    auto key = WritableKey(file);
    if (!key.ok()) return key.error();
    nodes_[key.value()] = Node{Type::kFile, std::make_shared<std::string>(), {}};
    w = Walk(file, /*follow_last=*/false);
  }
  if (w.err != 0) return FileReadError(create ? "cannot create" : "cannot open", file, w.err);
  if (w.node->type != Type::kFile) return BadInput("is not a regular file", file.string());
  std::shared_ptr<std::string> data = w.node->data;
  LockState& state = locks_[data.get()];
  LockAttempt out;
  if (state.exclusive || (exclusive && state.shared > 0)) {
    out.holder = data->substr(0, 64);
    return out;
  }
  if (exclusive) {
    state.exclusive = true;
  } else {
    ++state.shared;
  }
  out.lock = std::make_unique<Lock>(*this, std::move(data), exclusive);
  return out;
}

void MemoryFileSystem::Release(const void* identity, bool exclusive) {
  std::lock_guard<std::mutex> hold(mu_);
  auto it = locks_.find(identity);
  if (it == locks_.end()) return;
  if (exclusive) {
    it->second.exclusive = false;
  } else if (it->second.shared > 0) {
    --it->second.shared;
  }
  if (!it->second.exclusive && it->second.shared == 0) locks_.erase(it);
}

Result<std::uint64_t> MemoryFileSystem::FreeBytes(const stdfs::path&) { return free_bytes_; }

}  // namespace pilot
