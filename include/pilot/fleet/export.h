// `pilot export`: a finished pilot folder of any kind (run, shard, merged, sweep, with any
// tag files recorded beside its payload) copied to a place the user controls, then the copy
// verified in full there (fixity, accounting, and its fingerprint against the source's).
//
// The copy is written under DEST.partial (partial_folder.h), every file through a
// temp name, fsynced and renamed, every folder fsynced, and renamed to DEST only once it
// verified: an interrupted export leaves nothing at DEST, and the next attempt replaces the
// partial folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "pilot/fs.h"
#include "pilot/run.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct ExportOutcome {
  std::filesystem::path source, dest;  // dest: where the copy is (DEST.partial when it failed)
  std::string folder_kind;
  std::size_t files = 0, folders = 0;
  std::uint64_t bytes = 0;
  std::string source_fingerprint, fingerprint;
  VerifyResult verify;  // the copy's, in full
  bool ok() const { return verify.ok() && !fingerprint.empty() && fingerprint == source_fingerprint; }
};

// Refuses (exit 2, naming it) a source that is not a finished pilot folder, holds a symlink
// or special file, or contains DEST; and a DEST that exists. A copy that fails verification
// is an outcome (not ok), left at DEST.partial.
Result<ExportOutcome> ExportFolder(FileSystem& fs, const std::filesystem::path& source,
                                   const std::filesystem::path& dest, const RunControl& control = {});

}  // namespace pilot
