// Path confinement: an item path must stay inside the manifest's folder, lexically and
// after following symlinks. Checked before any file is opened.
#pragma once

#include <filesystem>
#include <string>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

struct ConfinedPath {
  bool inside = false;
  std::filesystem::path resolved;  // canonical where the file exists, lexical otherwise
  std::string why;                 // when !inside: what escapes
};

// `root` must be canonical (as FileSystem::Resolve returns it: absolute, no symlink);
// callers resolve it once, not per item. Never opens the target file: it looks at names
// (LinkStat) and resolves links through `fs`.
ConfinedPath ConfinePath(FileSystem& fs, const std::filesystem::path& root, const std::string& relative);

}  // namespace pilot
