// The sweep folder: a BagIt bag of kind `sweep` (folder_kind.h). Its cells are run by a
// CellRunner (the CLI: one child `pilot` process per cell, so that each cell's resident
// high-water mark is its own and a kill by the kernel's OOM killer is a recorded limit),
// journaled one line per finished cell (data/cells.jsonl, fsynced), so an interrupted sweep
// resumes with its finished cells kept. At the end: sweep.json, sweep.csv, sweep.md and
// report.html under data/, then the bag manifests.
//
// Layout: data/run.json (kind, request, pins, settings, stage, footprint), data/params.json
// and the manifest copy, data/environment.json, data/groups.json, data/cells.jsonl,
// data/cells/gG-bB.json (a cell's figures and outcomes), and the four reports.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/batch_plan.h"
#include "pilot/clock.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/run.h"
#include "pilot/run_session.h"
#include "pilot/status.h"
#include "pilot/sweep/sweep.h"
#include "pilot/sweep/sweep_records.h"
#include "pilot/sweep/sweep_report.h"
#include "pilot/verify.h"

namespace pilot {

struct SweepPlan {
  RunPlan run;  // params, manifest, model pin, environment, command line
  SweepSettings settings;
  std::filesystem::path dir;  // the sweep folder; created, never reused
  Grouping grouping;
  StageDescription stage;
  std::optional<ModelFootprint> footprint;
  double rss_after_load_mb = 0;  // the sweeping process, once the model was loaded
};

// Runs the cell (group, batch size) of the sweep in `dir`, `repeats` times over, somewhere and
// returns its measure: a process killed by a signal is a measure with limit "killed". An Error means the
// cell could not be run at all (the sweep stops, resumable); kInterrupted, that it was
// interrupted.
using CellRunner = std::function<Result<CellMeasure>(const std::filesystem::path& dir, int group,
                                                     int batch_size, int repeats)>;

struct SweepControl {
  std::function<bool()> should_stop;                    // polled between cells
  std::function<void(const std::string&)> on_progress;  // a line after each cell
  // Called once by RunSweep and ResumeSweepFolder when the setup is done, before the folder is
  // created or changed (the CLI installs its interrupt handlers there: until then an interrupt
  // ends the command at once, with nothing written).
  std::function<void()> on_ready;
};

struct SweepOutcome {
  std::filesystem::path dir;
  bool interrupted = false;
  nlohmann::ordered_json summary;  // sweep.json
  std::size_t findings = 0;        // equivalence findings
  VerifyResult verify;
  std::string fingerprint;
  std::vector<std::string> notes;
};

// Computes each prechecked item's length with the stage's own measure (else bytes) and cuts
// the groups. Items the prechecks reject are counted as excluded. A group of more than
// `max_sample` items is run on an even sample of that many (in manifest order), so a cell's
// time and memory stay bounded on a large manifest. Exit 2 when no item is left.
Result<Grouping> GroupManifest(FileSystem& fs, const RunPlan& plan, const Stage& stage, int groups,
                               std::size_t max_sample);
// The sample size `pilot sweep` uses: every batch size fills twice, and at least 256 items.
std::size_t SweepSampleSize(const SweepSettings& settings);

// Creates the folder (exit 2 if it exists), writes the copies, groups and record, then runs
// every cell and finishes.
Result<SweepOutcome> ExecuteSweep(FileSystem& fs, Clock& clock, const SweepPlan& plan,
                                  const CellRunner& runner, const SweepControl& control);

// Resumes an interrupted sweep: locks it, checks that `plan` (rebuilt from the record) still
// has the pinned manifest, parameters and model (exit 2 naming what changed), keeps the
// journaled cells and runs the rest. A finished sweep is refused (exit 2).
Result<SweepOutcome> ResumeSweep(FileSystem& fs, Clock& clock, const std::filesystem::path& dir,
                                 SweepPlan plan, const CellRunner& runner, const SweepControl& control);

// What `pilot sweep` was asked: the run's request (its batch plan unused: a sweep measures batch
// sizes itself), the settings, and the folder (empty: RUNS_DIR/<a new run id>-sweep).
struct SweepRequest {
  RunRequest run;
  SweepSettings settings;
  std::filesystem::path out;
};

// A sweep's setup, shared by a new sweep and its resume: the plan, the environment received
// against `requires` (exit 3; nothing created or changed), the stage loaded on the CPU, where
// it only measures the inputs' lengths (nothing of the model stays on the device the cells
// measure) and gives the stage's description and footprint, and the environment recorded for
// the device the cells use. `group`: also cut the length groups (a new sweep; a resume keeps
// its folder's).
Result<SweepPlan> PrepareSweep(FileSystem& fs, Runtime& runtime, const RunRequest& request,
                               const SweepSettings& settings, bool group);

// `pilot sweep` as one call: PrepareSweep, then ExecuteSweep into request.out.
Result<SweepOutcome> RunSweep(FileSystem& fs, Clock& clock, Runtime& runtime, const SweepRequest& request,
                              const CellRunner& runner, const SweepControl& control);

// What a sweep folder's record asked for, as a request: its cell processes and its resume
// rebuild the plan from it (and compare it with the pins).
RunRequest RequestFromSweepRecord(const SweepRecord& record, const std::filesystem::path& dir);

// `pilot resume` of a sweep folder as one call: its record read, the plan prepared again from
// it (`command_line`: when the record has none), then ResumeSweep.
Result<SweepOutcome> ResumeSweepFolder(FileSystem& fs, Clock& clock, Runtime& runtime,
                                       const std::filesystem::path& dir,
                                       const std::vector<std::string>& command_line, const CellRunner& runner,
                                       const SweepControl& control);

// For the cell process: the items of group `group` (1-based) of the sweep in `dir`, read
// from its groups file, and their texts, prechecked again against the plan's inputs.
struct CellInputs {
  std::vector<std::string> ids, texts;
};
Result<CellInputs> LoadCellInputs(FileSystem& fs, const std::filesystem::path& dir, const RunPlan& plan,
                                  const Stage& stage, int group);

// `pilot status` of a sweep folder: cells measured (done) of at most groups x sizes (total).
Result<RunStatus> ReadSweepStatus(FileSystem& fs, const std::filesystem::path& dir);

// From a sweep folder: verified in full first (a finding: exit 2 naming it), then its
// recommendation. A sweep with an equivalence finding, or a group without a recommended
// size, is refused (exit 2): nothing says what size is safe for it.
Result<BatchPlan> BatchPlanFromSweep(FileSystem& fs, const std::filesystem::path& sweep_dir);

// Registers kind `sweep` (folder_kind.h): its verify checks (verify_sweep.cpp), its status
// (ReadSweepStatus) and its batch plan (BatchPlanFromSweep).
void RegisterSweepFolderKind(FolderKindRegistry& registry);

}  // namespace pilot
