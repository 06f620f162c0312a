// What a folder pilot wrote is, and in which format: `Pilot-Folder-Kind` and
// `Pilot-Format-Version` in bag-info.txt, `folder_kind` and `format_version` in
// data/run.json. `verify`, `resume` and `status` dispatch on it and refuse (exit 2, naming
// it) a kind or version this pilot does not know. A folder written before the fields
// existed (pilot 0.1) has neither: it is kind `run`, format 1.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/batch_plan.h"
#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct RunStatus;  // run.h: what `pilot status` shows

// A folder kind as this pilot knows it, registered the way stage kinds are (StageRegistry):
// its name, the formats it reads, its own verify checks after the bag's, how its status is
// read and whether it holds a batch plan. The run core registers its kinds (run, shard,
// merged: RegisterRunFolderKinds in verify.cpp); each workflow registers its own next to its
// checks, and src/workflows.cpp lists the workflows (RegisterWorkflowFolderKinds). `verify`,
// `status`, `CheckFolderKind` and a run's `--batch-plan` dispatch through the registry and
// never name a kind. ARCHITECTURE.md walks through adding one.
struct FolderKindSpec {
  using Checks = std::function<void(FileSystem&, const std::filesystem::path&, std::vector<Finding>&)>;
  using StatusReader = std::function<Result<RunStatus>(FileSystem&, const std::filesystem::path&)>;
  using BatchPlanReader = std::function<Result<BatchPlan>(FileSystem&, const std::filesystem::path&)>;

  std::string name;
  int min_format = 1, max_format = 1;
  // A folder that declares no kind is this one, format 1 (runs written by pilot 0.1).
  bool undeclared_is_format_1 = false;
  // False: data/run.json is the kind's own record, not a run record (run_record.h); only its
  // `folder_kind` and `format_version` are read here.
  bool run_record = true;
  // What a run core kind's results cover, which the workflows ask instead of comparing names:
  // `results`: data/results.jsonl over a manifest (run, shard, merged); `partition`: one
  // shard's ids, its acceptance judged by merge (shard); `joined`: joined from shards under
  // data/shards/, with no journal of its own (merged).
  bool results = false;
  bool partition = false;
  bool joined = false;
  // Files that mark a folder of this kind from its start, besides the run core's (bagit.txt,
  // .lock, data/run.json, data/journal.jsonl): pilot never writes inside one (destination.h).
  std::vector<std::string> markers;
  // The kind's checks after the bag's own, adding findings. Null: a run's checks (its record,
  // the accounting against the manifest and journal, a merged folder's shards, --inputs).
  Checks checks;
  // `pilot status` of a folder of this kind. Null: a run's (its journal, or a merged report).
  StatusReader status;
  // The batch plan a finished folder of this kind recommends (`run --batch-plan DIR`). Null:
  // the kind holds none.
  BatchPlanReader batch_plan;
  // What verify checked beyond the bag, as `verify` and `export` say it of a folder that passed
  // ("a sweep folder: record, groups and every cell against its sha256"). Empty: a run's, whose
  // items are counted instead.
  std::string checked;
};

// Tag files any kind of folder may carry, written by a workflow other than the one that made
// the folder (a recorded decision): the workflow registers them, and verify runs their checks
// on every kind, after the bag's and before the kind's own.
struct FolderExtensionSpec {
  std::string name;  // also the check its findings carry
  FolderKindSpec::Checks checks;
  // A top-level entry the extension stages while it writes, and what verify says of it when
  // one is left behind (an interrupted write). Empty: none.
  std::string pending_entry;
  std::string pending_what;
  // Finishes or undoes such an interrupted write before the folder is resumed (`pilot resume`
  // of a run, shard or merged folder calls it): what was done, or nothing when nothing was
  // left. Null: the extension leaves nothing to recover.
  std::function<Result<std::optional<std::string>>(FileSystem&, const std::filesystem::path&)> recover;
};

class FolderKindRegistry {
 public:
  void Register(FolderKindSpec spec);
  void RegisterExtension(FolderExtensionSpec spec);
  const FolderKindSpec* Find(std::string_view name) const;  // null when not registered
  std::vector<std::string> Names() const;                   // in registration order
  const std::vector<FolderExtensionSpec>& Extensions() const { return extensions_; }

 private:
  std::vector<FolderKindSpec> kinds_;
  std::vector<FolderExtensionSpec> extensions_;
};

// The kinds this pilot knows, registered once: the run core's, then the workflows'.
const FolderKindRegistry& FolderKinds();
void RegisterRunFolderKinds(FolderKindRegistry& registry);
// Defined by the list of workflows (src/workflows.cpp), the one place that names them all.
void RegisterWorkflowFolderKinds(FolderKindRegistry& registry);

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

// Opens a folder a command reads (compare, decide, export): it is a folder ("no such folder" /
// "not a folder", with `hint`), pilot wrote it (when its kind cannot be read, the error says
// "not a pilot <noun>: ..."), and this pilot can `what` its kind and format (CheckFolderKind).
// Errors exit 2 and name the folder. Which kinds the command takes is the command's to say.
Result<FolderKind> OpenPilotFolder(FileSystem& fs, const std::filesystem::path& dir, std::string_view what,
                                   std::string_view noun, const std::string& hint);

// The batch plan the finished folder `dir` recommends, from its kind's reader; a folder whose
// kind holds none is refused (exit 2) naming its kind and the kinds that do.
Result<BatchPlan> BatchPlanFromFolder(FileSystem& fs, const std::filesystem::path& dir);

// The registry's answer for a kind name (false for a kind it does not know).
bool HoldsRunResults(std::string_view kind);    // run, shard, merged
bool IsPartitionKind(std::string_view kind);    // a shard
bool IsJoinedKind(std::string_view kind);       // merged
bool IsWholeRunKind(std::string_view kind);     // results over the whole manifest: run, merged
bool HasOwnJournalKind(std::string_view kind);  // results from its own journal: run, shard

// bag-info.txt's "Label: value" for `label`, or empty.
std::string BagInfoValue(std::string_view bag_info, std::string_view label);

}  // namespace pilot
