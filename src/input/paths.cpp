#include "pilot/paths.h"

#include <unistd.h>

#include <algorithm>

namespace pilot {

ConfinedPath ConfinePath(FileSystem& files, const std::filesystem::path& root, const std::string& relative) {
  namespace fs = std::filesystem;
  ConfinedPath out;
  fs::path rel(relative);
  if (relative.empty()) {
    out.why = "empty path";
    return out;
  }
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    out.why = "absolute path '" + relative + "' is not allowed; paths are relative to the manifest's folder";
    return out;
  }
  for (const auto& part : rel) {
    if (part == "..") {
      out.why = "path '" + relative + "' climbs out with '..'";
      return out;
    }
  }
  const fs::path& canon_root = root;
  fs::path lexical = canon_root / rel;
  // Fast path: no component of the relative part is a symlink, so the lexical path is the
  // real one (one lstat per component instead of resolving the whole absolute path).
  bool has_link = false;
  fs::path prefix = canon_root;
  for (const auto& part : rel) {
    if (part == ".") continue;
    prefix /= part;
    auto st = files.LinkStat(prefix);
    if (!st.ok() || !st.value().exists) break;  // missing: nothing further to follow
    if (st.value().symlink) {
      has_link = true;
      break;
    }
  }
  fs::path resolved = lexical.lexically_normal();
  if (has_link) {
    // Resolve follows every symlink that exists along the path.
    auto followed = files.Resolve(lexical);
    resolved = followed.ok() ? followed.value() : lexical.lexically_normal();
    auto [r_end, _] = std::mismatch(canon_root.begin(), canon_root.end(), resolved.begin(), resolved.end());
    if (r_end != canon_root.end() || resolved == canon_root) {
      out.why = "path '" + relative + "' resolves through a symlink to '" + resolved.string() +
                "', outside the manifest's folder";
      return out;
    }
  }
  out.inside = true;
  out.resolved = resolved;
  return out;
}

namespace fs = std::filesystem;

// A path into pilot's own process (/proc/self/..., /proc/<its pid>/...) names pilot's own
// descriptors, not what the person meant; only a folder handed down when pilot started,
// given as exactly /proc/self/fd/N, is taken (FileSystem::Resolve checks that).
Status RefuseOwnProcess(const fs::path& absolute, const std::string& option) {
  const std::string text = absolute.lexically_normal().string();
  const std::string pid = "/proc/" + std::to_string(::getpid());
  for (const std::string& own : {std::string("/proc/self"), std::string("/proc/thread-self"), pid}) {
    if (text != own && text.rfind(own + "/", 0) != 0) continue;
    const std::string fd = "/proc/self/fd/";
    const bool handed = text.rfind(fd, 0) == 0 && text.size() > fd.size() &&
                        text.find_first_not_of("0123456789", fd.size()) == std::string::npos;
    if (handed) return {};
    return BadInput("names pilot's own process (" + own + "), not a folder of yours", option,
                    "give the folder's path");
  }
  return {};
}

Result<fs::path> ResolveGivenFolder(FileSystem& files, const fs::path& given, const std::string& what) {
  if (given.empty()) return BadInput("is empty", what, "give a folder");
  std::error_code ec;
  const fs::path absolute = fs::absolute(given, ec);
  if (ec) return BadInput("cannot make the path absolute: " + ec.message(), given.string());
  PILOT_TRY(RefuseOwnProcess(absolute, given.string()));
  auto resolved = files.Resolve(absolute);
  if (!resolved.ok() && absolute.string().rfind("/proc/self/fd/", 0) == 0) {
    return BadInput(resolved.error().what, given.string(), resolved.error().hint);
  }
  if (!resolved.ok()) {
    return BadInput("cannot resolve the path (" + resolved.error().what + ")", given.string(),
                    "a symlink loop, or a folder along it that cannot be read?");
  }
  auto st = files.LinkStat(resolved.value());
  if (!st.ok()) return st.error();
  if (!st.value().exists) return BadInput("no such folder", given.string(), "give the path of " + what);
  if (!st.value().directory) return BadInput("not a folder", given.string(), "give the path of " + what);
  // Resolved once: pinned from now on, and read only beneath it.
  PILOT_TRY(files.Anchor(resolved.value(), FileSystem::Reads::kStayBeneath));
  return resolved.value();
}

}  // namespace pilot
