// What a folder pilot wrote is, and in which format: `Pilot-Folder-Kind` and
// `Pilot-Format-Version` in bag-info.txt, `folder_kind` and `format_version` in
// data/run.json. `verify`, `resume` and `status` dispatch on it and refuse (exit 2, naming
// it) a kind or version this pilot does not know. A folder written before the fields
// existed (pilot 0.1) has neither: it is kind `run`, format 1.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr const char* kFolderKindRun = "run";
inline constexpr const char* kFolderKindSweep = "sweep";  // `pilot sweep` (sweep_run.h)
// `pilot run --shard I/N` (shard.h): a run folder over one partition, in run format.
inline constexpr const char* kFolderKindShard = "shard";
// `pilot merge` (merge.h): the shards joined, in run format, with data/shards/.
inline constexpr const char* kFolderKindMerged = "merged";
// `pilot adapt` (adapt.h): the adaptation pilot's folder, in its own format (adapt_records.h).
inline constexpr const char* kFolderKindAdapt = "adapt";
inline constexpr int kSweepFormatVersion = 1;
// Format 1: pilot 0.1 (classifier records only). Format 2: kinds and versions declared,
// journal version 2, stage output kinds (classification, embedding).
inline constexpr int kRunFormatVersion = 2;

struct FolderKind {
  std::string kind = kFolderKindRun;
  int version = 1;
  bool declared = false;  // false: neither file declares it (format 1)
};

// Reads data/run.json (and bag-info.txt when present; the two must agree). Errors (exit 2)
// name the file: unreadable, malformed, or the two disagree.
Result<FolderKind> ReadFolderKind(FileSystem& fs, const std::filesystem::path& dir);

// Refuses (exit 2) a kind or version this pilot cannot `what` ("verify", "resume", ...),
// naming it and what it knows.
Status CheckFolderKind(const FolderKind& kind, const std::filesystem::path& dir, std::string_view what);

// bag-info.txt's "Label: value" for `label`, or empty.
std::string BagInfoValue(std::string_view bag_info, std::string_view label);

}  // namespace pilot
