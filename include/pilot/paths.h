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

// Paths given on the command line (docs/security.md, "Paths you give"). A path a person
// gives is resolved once, when the command starts, as `cd -P` would: every symlink along it
// is followed, and from then on the command works on the real folder it names (fsync
// included). Inside a pilot folder, and in the names pilot derives itself (RUN_ID,
// shard-I-of-N, RUN_ID.shards, DEST.partial), no link is ever followed.

// A folder to read, resume or record into (RUN_DIR, a shard, --from, --sweep): resolved
// once, the last name too. Refused (bad input, naming `what`) when nothing is there or it is
// not a folder.
Result<std::filesystem::path> ResolveGivenFolder(FileSystem& fs, const std::filesystem::path& given,
                                                 const std::string& what);

// Refuses (bad input, naming `option`) a path into pilot's own process (/proc/self/...,
// /proc/<its pid>/...): it names pilot's own descriptors, not what the person meant. Only a
// folder handed down when pilot started, given as exactly /proc/self/fd/N, is taken.
Status RefuseOwnProcess(const std::filesystem::path& absolute, const std::string& option);

// A place to write (ResolveDestination) is resolved in destination.h: it must not lie inside
// a pilot folder of any kind, which takes the registry of folder kinds.

}  // namespace pilot
