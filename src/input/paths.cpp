#include "pilot/paths.h"

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

}  // namespace pilot
