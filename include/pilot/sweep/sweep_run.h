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

// Runs the cell (group, batch size) of the sweep in `dir` somewhere and returns its
// measure: a process killed by a signal is a measure with limit "killed". An Error means the
// cell could not be run at all (the sweep stops, resumable); kInterrupted, that it was
// interrupted.
using CellRunner =
    std::function<Result<CellMeasure>(const std::filesystem::path& dir, int group, int batch_size)>;

struct SweepControl {
  std::function<bool()> should_stop;                    // polled between cells
  std::function<void(const std::string&)> on_progress;  // a line after each cell
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
