// A run: a fresh run folder, every manifest item through the stage, the report, the bag,
// then a self-verification; and the resumption of an interrupted one. The caller has
// validated the parameters and manifest, resolved the device and built the stage.
//
// Durability: the journal's header is the first thing written into a new folder; results
// are journaled and fsynced per batch before anything derived from them; every other file
// is written atomically; the bag manifests come last. A process killed at any instant
// leaves a folder that `ResumeRun` finishes (unless it died before the header was written,
// when no item had been processed and the folder says it never started).
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/batch_plan.h"
#include "pilot/clock.h"
#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/journal.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/report.h"
#include "pilot/run_lock.h"
#include "pilot/shard.h"
#include "pilot/stage.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct RunPlan {
  Params params;
  std::filesystem::path params_file;  // the file read, absolute
  std::string params_bytes;           // copied byte for byte
  ManifestSource manifest;            // validated; its sha256() is what the run is bound to
  std::filesystem::path inputs_root;  // the manifest's folder, canonical
  std::string model_sha256;
  std::filesystem::path runs_dir;
  std::string run_id;  // empty: generated
  std::vector<std::string> command_line;
  nlohmann::ordered_json environment;  // what was received (host + runtime + device)
  nlohmann::ordered_json requested = nlohmann::ordered_json::object();  // what the user asked (plan.h)
  std::optional<BatchPlan> batch_plan;  // batch per length group instead of params.batch_size
  // A shard (kind `shard`): only the ids of this partition; acceptance is judged at merge.
  std::optional<ShardSpec> shard;
};

// How many of the manifest's ids belong to `shard` (all of them without one).
Result<std::size_t> CountShardItems(const ManifestSource& manifest, const std::optional<ShardSpec>& shard);

struct Progress {
  std::size_t done = 0, total = 0, accepted = 0, rejected = 0;
  double items_per_second = 0;  // this session
  double eta_seconds = 0;
};

struct RunControl {
  std::function<bool()> should_stop;                 // polled between batches (SIGINT/SIGTERM)
  std::size_t stop_after = 0;                        // test hook: stop as if interrupted after N items
  std::function<void(const Progress&)> on_progress;  // after every batch
};

// How a session on a run folder ended when it did not fail with an Error: the CLI maps it
// to an exit code (0, 1, 4, 130) as it maps ErrorKind.
enum class RunVerdict {
  kPassed,            // finished, verified, acceptance met
  kVerifyFailed,      // finished, but the folder did not verify
  kAcceptanceFailed,  // finished and verified, acceptance not met
  kInterrupted,       // stopped; everything done is journaled and resumable
};

struct RunOutcome {
  std::filesystem::path run_dir;
  std::string run_id;
  bool interrupted = false;
  Progress progress;
  Report report;                   // when finished
  VerifyResult verify;             // when finished
  std::vector<std::string> notes;  // recoveries worth telling (torn journal record, stale lock)
  RunVerdict verdict = RunVerdict::kPassed;
  // When finished: sha256 of tagmanifest-sha256.txt, which `verify --expect` checks a copy
  // against. It cannot live inside the bag it fingerprints: the caller prints it.
  std::string fingerprint;
};

// The byte copy of a manifest into a folder, checked against the sha256 it is bound to.
Status CopyManifestPinned(FileSystem& fs, const std::filesystem::path& from, const std::filesystem::path& to,
                          const std::string& want);
// "data/manifest.json" or "data/manifest.jsonl", after the manifest's own extension.
std::string ManifestCopyFileName(const std::filesystem::path& manifest);
std::string JoinArguments(const std::vector<std::string>& args);

// A run id: UTC time plus a short random suffix, e.g. 20261129T191036Z-3f9a1c.
std::string NewRunId(Clock& clock);
bool IsValidRunId(const std::string& id);

// Fails before creating anything if the run folder exists (exit 2) or cannot be created.
// Once the folder exists, a failure leaves it resumable and without bag manifests.
Result<RunOutcome> ExecuteRun(FileSystem& fs, Clock& clock, const RunPlan& plan, Stage& stage,
                              const RunControl& control = {});

// What resuming needs, all read from the run folder: the copies of manifest and parameters
// (checked against the journal's header), the journal's state, and the lock.
struct ResumeSetup {
  std::filesystem::path run_dir;
  JournalState journal;
  RunPlan plan;  // rebuilt from the folder: params, manifest copy, inputs root, model
  std::optional<RunLock> lock;
  // The folder was already a finished bag, left with a stale lock by a process killed
  // before it removed it: the lock was removed, nothing else touched; this is the bag's
  // verification. Nothing is to be resumed.
  bool already_finished = false;
  std::optional<VerifyResult> finished_verify;
  std::vector<std::string> notes;
};

// Locks the folder, repairs a torn last journal record, refuses (exit 2, naming it) a
// symlink or non-regular file inside the folder, a finished run, a changed copy of manifest or parameters, or
// a changed model file. Reads only the journal, the copies and the model file — never the inputs or results.
Result<ResumeSetup> PrepareResume(FileSystem& fs, const std::filesystem::path& run_dir);

// Processes only the items without a result record, then finishes the folder exactly as a
// straight-through run would.
Result<RunOutcome> ResumeRun(FileSystem& fs, Clock& clock, ResumeSetup& setup, Stage& stage,
                             const RunControl& control = {});

// A run folder's state for `pilot status`, read from its journal (no lock taken).
struct RunStatus {
  std::string state;  // running | interrupted | finished
  std::string run_id;
  std::optional<long> writer_pid;
  std::size_t done = 0, total = 0, accepted = 0, rejected = 0;
  double items_per_second = 0;  // the latest session
  std::optional<double> eta_seconds;
  std::uint64_t torn_bytes = 0;
  int format_version = 0;     // the journal's; older than kJournalVersion: this pilot cannot resume it
  bool counts_cells = false;  // done/total count measured cells (a sweep), not items
  std::string folder_kind = kFolderKindRun;  // the folder's kind (folder_kind.h)
};
Result<RunStatus> ReadRunStatus(FileSystem& fs, const std::filesystem::path& run_dir);
nlohmann::ordered_json RunStatusToJson(const RunStatus& status);

}  // namespace pilot
