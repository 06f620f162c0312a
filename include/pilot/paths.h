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

enum class Destination {
  kNew,     // a folder or file to create (DEST, merge --out, sweep --out, plan --out): the
            // parent is resolved, the last name is kept as written (an existing one, link or
            // not, is the caller's to refuse)
  kFolder,  // a folder that receives what pilot creates (--runs-dir, compare --out): resolved
            // whole, the last name too when it exists
};

// A place to write, given as `option`: made absolute, the part that exists resolved once (a
// ".." by the file system, as `cd -P`), the rest kept as written. Refused (bad input, naming the option) when
// it is empty, names no folder of its own ("/", ".", ".."), holds a name longer than 255 bytes or is longer
// than 3,800 bytes in all (room for the names pilot adds), cannot be resolved (a symlink loop), or lies
// inside a pilot folder (RefuseInsidePilotFolder).
Result<std::filesystem::path> ResolveDestination(FileSystem& fs, const std::filesystem::path& given,
                                                 const std::string& option, Destination kind);

// Refuses (bad input, naming `option`) a resolved path that is a pilot folder or lies inside
// one: the path or one of its folders holds bagit.txt, .lock, data/run.json,
// data/journal.jsonl or data/cells.jsonl, or is a DEST.partial folder beside its
// DEST.partial.lock. Writing there would change that folder's bag.
Status RefuseInsidePilotFolder(FileSystem& fs, const std::filesystem::path& resolved,
                               const std::string& option);

}  // namespace pilot
