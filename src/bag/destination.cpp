#include "pilot/destination.h"

#include <string>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"

namespace pilot {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxNameBytes = 255;
constexpr std::size_t kMaxDestinationBytes = 3800;

bool Exists(FileSystem& files, const fs::path& p) {
  auto st = files.LinkStat(p);
  return st.ok() && st.value().exists;
}

// From `start` up to the root: no folder may be a pilot folder. `target` is what is refused.
// The markers: the run core's files, then those the registered folder kinds add.
Status RefuseFrom(FileSystem& files, const fs::path& start, const fs::path& target,
                  const std::string& option) {
  std::vector<std::string> markers = {kBagDeclaration, kLockFile, kRunRecord, kJournal};
  for (const std::string& name : FolderKinds().Names()) {
    for (const std::string& marker : FolderKinds().Find(name)->markers) markers.push_back(marker);
  }
  for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
    for (const std::string& marker : markers) {
      if (Exists(files, dir / marker)) {
        return BadInput(
            std::string(dir == target ? "is the pilot folder " : "lies inside the pilot folder ") +
                dir.string() + " (it holds " + marker + "): writing there would change its bag",
            option, "choose a place outside every pilot folder");
      }
    }
    const std::string name = dir.filename().string();
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".partial") == 0 &&
        Exists(files, dir.string() + kLockFile)) {
      return BadInput("lies inside " + dir.string() + ", a folder pilot is still writing", option,
                      "choose a place outside every pilot folder");
    }
    if (dir == dir.parent_path()) break;
  }
  return {};
}

}  // namespace

Result<fs::path> ResolveDestination(FileSystem& files, const fs::path& given, const std::string& option,
                                    Destination kind) {
  if (given.empty()) return BadInput("is empty", option, "give the place to write");
  std::error_code ec;
  // As given, made absolute, without the separators at its end ("a/b/" is "a/b"): a ".." in
  // it is resolved by the file system, not collapsed by hand (`cd -P`).
  std::string raw_text = fs::absolute(given, ec).string();
  if (ec) return BadInput("cannot make the path absolute: " + ec.message(), option + " " + given.string());
  while (raw_text.size() > 1 && raw_text.back() == '/') raw_text.pop_back();
  const fs::path raw = raw_text;
  PILOT_TRY(
      RefuseOwnProcess(kind == Destination::kNew ? raw.parent_path() : raw, option + " " + given.string()));
  fs::path d = raw.lexically_normal();
  if (!d.has_filename() && d.has_parent_path() && d != d.root_path()) d = d.parent_path();
  const std::string name = raw.filename().string();
  if (kind == Destination::kNew && (name.empty() || name == "." || name == ".." || raw == raw.root_path())) {
    return BadInput("'" + given.string() + "' does not name a new folder or file", option,
                    "give a path such as out/merged");
  }
  for (const auto& part : d) {
    if (part.string().size() > kMaxNameBytes) {
      return BadInput("holds a name of " + std::to_string(part.string().size()) +
                          " bytes; a file system allows " + std::to_string(kMaxNameBytes),
                      option, "give a shorter path");
    }
  }
  if (d.string().size() > kMaxDestinationBytes) {
    return BadInput("is " + std::to_string(d.string().size()) + " bytes long; pilot takes at most " +
                        std::to_string(kMaxDestinationBytes) + " (the names it adds must still fit)",
                    option, "give a shorter path");
  }
  // The part that exists, resolved once (a symlink loop is an error here, not later).
  const fs::path to_resolve = kind == Destination::kNew ? raw.parent_path() : raw;
  auto resolved = files.Resolve(to_resolve);
  if (!resolved.ok() && to_resolve.string().rfind("/proc/self/fd/", 0) == 0) {
    return BadInput(resolved.error().what, option + " " + given.string(), resolved.error().hint);
  }
  if (!resolved.ok()) {
    return BadInput("cannot resolve " + to_resolve.string() + " (" + resolved.error().what + ")", option,
                    "a symlink loop, or a folder along it that cannot be read?");
  }
  fs::path out = kind == Destination::kNew ? resolved.value() / name : resolved.value();
  if (out == out.root_path()) {
    return BadInput("'" + given.string() + "' is the root folder", option, "give a folder of its own");
  }
  if (out.string().size() > kMaxDestinationBytes) {
    return BadInput("resolves to " + std::to_string(out.string().size()) + " bytes; pilot takes at most " +
                        std::to_string(kMaxDestinationBytes) + " (the names it adds must still fit)",
                    option, "give a shorter path");
  }
  if (kind == Destination::kFolder) {
    auto st = files.LinkStat(out);
    if (!st.ok()) return st.error();
    if (st.value().exists && !st.value().directory) {
      return BadInput("is not a folder", option + " " + given.string(),
                      "give a folder (it is created when missing)");
    }
  }
  // A new name that exists already is the caller's to refuse ("already exists"): what it lies in
  // is checked here.
  const fs::path folder = kind == Destination::kNew ? out.parent_path() : out;
  PILOT_TRY(RefuseFrom(files, folder, out, option));
  // The nearest part that exists must be a folder (a file, or a link to nothing, is refused
  // here rather than when the first folder is made), and is pinned: whatever pilot creates
  // below it is reached from that descriptor (FileSystem::Anchor).
  for (fs::path p = folder; !p.empty(); p = p.parent_path()) {
    auto st = files.LinkStat(p);
    if (!st.ok()) return st.error();
    if (st.value().exists) {
      if (st.value().symlink) {
        return BadInput("lies under " + p.string() + ", a symlink to nothing", option + " " + given.string(),
                        "point it at a folder that exists, or give another path");
      }
      if (!st.value().directory) {
        return BadInput("lies under " + p.string() + ", which is not a folder", option + " " + given.string(),
                        "give a path under a folder");
      }
      PILOT_TRY(files.Anchor(p));
      break;
    }
    if (p == p.parent_path()) break;
  }
  return out;
}

Status RefuseInsidePilotFolder(FileSystem& files, const fs::path& resolved, const std::string& option) {
  return RefuseFrom(files, resolved, resolved, option);
}

}  // namespace pilot
