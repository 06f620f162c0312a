// Where pilot writes what a person names (--runs-dir, --out, DEST): resolved once, and
// never inside a pilot folder of any kind (docs/security.md, "Paths you give").
#pragma once

#include <filesystem>
#include <string>

#include "pilot/fs.h"
#include "pilot/paths.h"
#include "pilot/status.h"

namespace pilot {

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
// data/journal.jsonl or a marker a folder kind registers (FolderKindSpec::markers: a sweep's
// data/cells.jsonl), or is a DEST.partial folder beside its DEST.partial.lock. Writing there would change
// that folder's bag.
Status RefuseInsidePilotFolder(FileSystem& fs, const std::filesystem::path& resolved,
                               const std::string& option);

}  // namespace pilot
