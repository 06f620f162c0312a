// A folder written under a temporary name beside its destination, `DEST.partial`, and
// renamed to DEST only when it is finished: an interrupted merge or export never leaves a
// folder at DEST that could pass for a finished one. `DEST.partial.lock` beside it marks the
// partial folder as pilot's and is held (flock) while it is written, so that a second
// attempt replaces what an interrupted one left, and never one that is still being written.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot::engine {

// True when `inner` is `outer` or lies under it (both absolute and resolved).
inline bool PathWithin(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// Refuses (bad input, naming `dest`) a destination inside `folder`: pilot never writes into
// a folder it reads (a copy inside its source, a merge inside a shard).
inline Status RefuseInside(FileSystem& fs, const std::filesystem::path& dest,
                           const std::filesystem::path& folder, const std::string& what) {
  if (dest.empty()) return {};  // refused by ResolveDestination, naming the option
  auto d = fs.Resolve(std::filesystem::absolute(dest));
  auto f = fs.Resolve(std::filesystem::absolute(folder));
  if (!d.ok()) return d.error();
  if (!f.ok()) return f.error();
  if (PathWithin(d.value(), f.value())) {
    return BadInput("the destination lies inside " + what + " " + folder.string(), dest.string(),
                    "choose a place outside it: pilot never writes into a folder it reads");
  }
  return {};
}

class PartialFolder {
 public:
  // Refuses (bad input) a DEST that exists, or a DEST.partial that is not pilot's (no lock
  // file beside it), that another process is writing, or that holds a folder this command
  // reads (`reads`: a source, the shards). A partial folder an interrupted attempt left is
  // removed first. `dest` is a ResolveDestination (paths.h).
  static Result<PartialFolder> Create(FileSystem& fs, const std::filesystem::path& dest,
                                      const std::vector<std::filesystem::path>& reads) {
    auto d = fs.LinkStat(dest);
    if (!d.ok()) return d.error();
    if (d.value().exists) {
      return BadInput("already exists; pilot never writes into an existing folder", dest.string(),
                      "choose a destination that does not exist yet");
    }
    auto parent = dest.parent_path().empty() ? std::filesystem::path(".") : dest.parent_path();
    PILOT_TRY(fs.CreateDirectories(parent));
    PartialFolder p(fs, dest);
    auto had_lock = fs.LinkStat(p.lock_file_);
    auto had_partial = fs.LinkStat(p.partial_);
    if (!had_lock.ok()) return had_lock.error();
    if (!had_partial.ok()) return had_partial.error();
    if (had_partial.value().exists && !had_lock.value().exists) {
      return BadInput("is in the way and is not a folder pilot left (no " + p.lock_file_.filename().string() +
                          " beside it)",
                      p.partial_.string(), "move it away");
    }
    auto lock = fs.TryLock(p.lock_file_, /*exclusive=*/true, /*create=*/true);
    if (!lock.ok()) return lock.error();
    if (!lock.value().lock) {
      return BadInput("another pilot process is writing this destination", p.partial_.string(),
                      "wait for it to finish");
    }
    p.lock_ = std::move(lock.value().lock);
    auto stale = fs.LinkStat(p.partial_);
    if (!stale.ok()) return stale.error();
    if (stale.value().exists) {
      for (const auto& read : reads) {
        auto r = fs.Resolve(std::filesystem::absolute(read));
        auto partial = fs.Resolve(p.partial_);
        if (!r.ok()) return r.error();
        if (!partial.ok()) return partial.error();
        if (PathWithin(r.value(), partial.value())) {
          return BadInput("holds " + read.string() + ", which this command reads: it is never removed",
                          p.partial_.string(),
                          "move the folder you want to read out of it, or choose another destination");
        }
      }
      if (!stale.value().directory) {
        return BadInput("is in the way and is not a folder pilot left", p.partial_.string(), "move it away");
      }
      PILOT_TRY(fs.RemoveTree(p.partial_));  // an interrupted attempt's: started again
    }
    PILOT_TRY(fs.CreateDirectoryExclusive(p.partial_));
    return p;
  }

  const std::filesystem::path& path() const { return partial_; }
  const std::filesystem::path& dest() const { return dest_; }

  // Renames the finished folder to DEST (never replacing one) and removes the lock file.
  Status Commit() {
    PILOT_TRY(fs_->RenameNoReplace(partial_, dest_));
    lock_.reset();
    return fs_->RemoveFile(lock_file_);
  }

  PartialFolder(PartialFolder&&) = default;
  PartialFolder& operator=(PartialFolder&&) = default;
  ~PartialFolder() = default;  // an unfinished folder stays, with its lock file, for the next attempt

 private:
  PartialFolder(FileSystem& fs, const std::filesystem::path& dest)
      : fs_(&fs),
        dest_(dest),
        partial_(dest.string() + ".partial"),
        lock_file_(dest.string() + ".partial.lock") {}
  FileSystem* fs_;
  std::filesystem::path dest_, partial_, lock_file_;
  std::unique_ptr<FileLock> lock_;
};

}  // namespace pilot::engine
