// What a folder pilot wrote is, and in which format: `Pilot-Folder-Kind` and
// `Pilot-Format-Version` in bag-info.txt, `folder_kind` and `format_version` in
// data/run.json. `verify`, `resume` and `status` dispatch on it and refuse (exit 2, naming
// it) a kind or version this pilot does not know. A folder written before the fields
// existed (pilot 0.1) has neither: it is kind `run`, format 1.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

// A folder kind as this pilot knows it, registered the way stage kinds are (StageRegistry):
// its name, the formats it reads, and its own verify checks after the bag's. Each kind
// registers itself next to its checks (RegisterRunFolderKinds in verify.cpp: run, shard,
// merged; RegisterSweepFolderKind in verify_sweep.cpp; RegisterAdaptFolderKind in
// verify_adapt.cpp); `CheckFolderKind` and `VerifyFolder` dispatch through the registry and
// never name a kind.
struct FolderKindSpec {
  std::string name;
  int min_format = 1, max_format = 1;
  // A folder that declares no kind is this one, format 1 (runs written by pilot 0.1).
  bool undeclared_is_format_1 = false;
  // The kind's checks after the bag's own, adding findings. Null: a run's checks (its record,
  // the accounting against the manifest and journal, a merged folder's shards, --inputs).
  std::function<void(FileSystem&, const std::filesystem::path&, std::vector<Finding>&)> checks;
};

class FolderKindRegistry {
 public:
  void Register(FolderKindSpec spec);
  const FolderKindSpec* Find(std::string_view name) const;  // null when not registered
  std::vector<std::string> Names() const;                   // in registration order

 private:
  std::vector<FolderKindSpec> kinds_;
};

// The kinds this pilot knows, registered once.
const FolderKindRegistry& FolderKinds();
void RegisterRunFolderKinds(FolderKindRegistry& registry);
void RegisterSweepFolderKind(FolderKindRegistry& registry);
void RegisterAdaptFolderKind(FolderKindRegistry& registry);

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
