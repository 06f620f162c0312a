// What a folder pilot wrote is, and in which format: `Pilot-Folder-Kind` and
// `Pilot-Format-Version` in bag-info.txt, `folder_kind` and `format_version` in
// data/run.json. `verify`, `resume` and `status` dispatch on it and refuse (exit 2, naming
// it) a kind or version this pilot does not know. A folder written before the fields
// existed (pilot 0.1) has neither: it is kind `run`, format 1.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

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
