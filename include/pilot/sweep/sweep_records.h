// What a sweep folder holds, in the records layer: the settings, the length groups, each
// cell's measure and outcomes, the cell journal and the record (data/run.json), with their
// strict, capped parsers (a sweep folder may come back from a rented machine). The sweep
// itself is engine/sweep.h and sweep_run.h; verify reads a sweep folder through this file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/batch_plan.h"
#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/output_kind.h"
#include "pilot/status.h"
#include "pilot/sweep/sweep_files.h"

namespace pilot {

inline constexpr int kMaxRepeats = 100;

struct SweepSettings {
  int groups = 3;
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64};
  int repeats = 2;
  std::optional<double> latency_budget_ms;  // per-batch p95
  std::optional<double> max_memory_mb;      // the cell's peak
  // A generator's budgets, on the cell's p99 time to first token and time per output token.
  // Recorded only when given (a folder without them reads as it was written).
  std::optional<double> max_ttft_ms, max_tpot_ms;
};

// "1,2,4,8": strictly increasing, each in 1..kMaxBatchSize, the first 1 (the reference every
// other size is compared with). Errors (exit 2) name --batch-sizes.
Result<std::vector<int>> ParseBatchSizes(std::string_view text);
Status CheckSweepSettings(const SweepSettings& settings);
nlohmann::ordered_json SweepSettingsToJson(const SweepSettings& settings);
Result<SweepSettings> SweepSettingsFromJson(const nlohmann::json& j, const std::string& where);

// --- length groups ----------------------------------------------------------------------
struct LengthGroup {
  std::uint64_t min_length = 0, max_length = 0;  // inclusive bounds of the lengths in it
  std::size_t items = 0;                         // the group's items
  std::vector<std::string> ids;  // those its cells run, in manifest order: all, or an even sample
};
struct Grouping {
  std::string measure;  // "bytes", or "features" (the stage's own: hashed n-grams for langid)
  std::vector<LengthGroup> groups;
  std::size_t excluded = 0;  // items rejected by the prechecks: no stage, no length
};
nlohmann::ordered_json GroupingToJson(const Grouping& g);
// Strict: every field typed, ids valid, groups ordered and disjoint; errors name `where`.
Result<Grouping> GroupingFromJson(std::string_view text, const std::string& where);

// --- one cell ---------------------------------------------------------------------------
struct CellOutcome {
  std::string id;
  bool ok = false;
  std::string label;  // classification
  double confidence = 0;
  std::vector<float> vector;  // embedding
  std::string error;          // !ok
  // A generator's completion: its token ids, and the steps decided within a near-tie's margin
  // (a divergence from batch 1 first at such a step is rounding, not a finding).
  bool generated = false;
  std::vector<std::int64_t> completion;
  std::vector<std::uint64_t> near_ties;
};
// The first token index where two completions differ; nullopt when they are the same.
std::optional<std::size_t> FirstDivergence(const CellOutcome& a, const CellOutcome& b);

// Why escalation stopped at this cell (empty: it did not).
inline constexpr const char* kLimitOutOfMemory = "out_of_memory";
inline constexpr const char* kLimitStageError = "stage_error";
inline constexpr const char* kLimitKilled = "killed";
inline constexpr const char* kLimitLatency = "latency_budget";
inline constexpr const char* kLimitMemoryCap = "memory_cap";
inline constexpr const char* kLimitTtft = "ttft_budget";
inline constexpr const char* kLimitTpot = "tpot_budget";

// A generator's cell (docs/generation.md, "A generator's sweep"): its completions' figures over
// the timed repeats. Group = prompt length, batch = the slots decoded at once.
struct CellGeneration {
  std::uint64_t prompt_tokens = 0, completion_tokens = 0;
  double completion_tokens_per_second = 0;  // completion_tokens over the cell's wall time
  double ttft_p50_ms = 0, ttft_p99_ms = 0, tpot_p50_ms = 0, tpot_p99_ms = 0;
  std::uint64_t kv_cache_bytes = 0;  // the largest KV cache a call allocated
  std::optional<double> occupancy;   // decode tokens over slot-steps
};

struct CellMeasure {
  int group = 0;  // 1-based
  int batch_size = 0;
  int repeats = 0;
  std::size_t group_items = 0;
  bool cycled = false;  // batch_size > group_items: each batch filled by cycling the items
  std::size_t batches = 0, completed = 0, failed = 0;  // over the timed repeats
  double wall_seconds = 0, items_per_second = 0;
  // A tokenized stage (input_kind token_ids), over the timed repeats: the tokens the items
  // gave the model, and the padded tensors' size (batch x the batch's padded length). The
  // padding waste is 1 - tokens / padded_tokens. All 0 for another stage.
  std::uint64_t tokens = 0, padded_tokens = 0;
  double tokens_per_second = 0;
  std::optional<CellGeneration> generation;  // a generator's cell
  double padding_waste() const {
    return padded_tokens > 0 ? 1.0 - static_cast<double>(tokens) / static_cast<double>(padded_tokens) : 0;
  }
  double p50_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0;  // per-batch latency
  double rss_after_load_mb = 0;          // the process's resident memory once the model was loaded
  double peak_rss_mb = 0;                // the cell process's resident high-water mark
  std::optional<double> peak_device_mb;  // the device allocator's peak (GPU builds)
  std::string limit;                     // kLimit*, or empty
  std::string error;                     // the first error's text
  std::vector<CellOutcome> outcomes;     // the first timed repeat, batch by batch, in order
  std::size_t repeat_mismatches = 0;     // positions where a later repeat differed from the first
  // Each timed repeat's seconds, in order (their sum is wall_seconds): the spread of the
  // repeats' rates is the noise a throughput difference is judged against. Empty in a cell of
  // sweep format 1; at most `repeats` (fewer when a limit cut the cell short).
  std::vector<double> repeat_seconds;
  // The slowest and fastest repeat's items/s (each repeat processes the same items), or
  // nullopt with fewer than two full repeats recorded.
  std::optional<std::pair<double, double>> repeat_rate_range() const;
  // The figure the memory cap and the headroom table use: device peak on a GPU, else RSS.
  double peak_memory_mb() const { return peak_device_mb ? *peak_device_mb : peak_rss_mb; }
};

nlohmann::ordered_json CellToJson(const CellMeasure& cell);
// Strict and capped (a cell file comes back from a child process, or from a copied folder).
Result<CellMeasure> CellFromJson(std::string_view text, const std::string& where);

// Equivalence tolerances (absolute): a confidence, or any vector component, may differ from
// its batch-1 value by this much. Batched and single matrix products sum in another order;
// float32 rounding of that order is below 1e-6 for the bundled models.
inline constexpr double kConfidenceTolerance = 1e-5;
inline constexpr double kVectorTolerance = 1e-5;
// Card sizes of the headroom table (GB) and the share of a card kept in reserve.
inline constexpr double kCardSizesGb[] = {24, 32, 48, 80, 141, 192};
inline constexpr double kCardReserve = 0.10;

// --- equivalence ------------------------------------------------------------------------
struct EquivalenceFinding {
  int group = 0;
  int batch_size = 0;
  std::size_t position = 0;  // in the cell's first repeat
  std::string id;
  std::string what;
};
// Each outcome of `cell` against the outcome of the same id in `reference` (batch 1): same
// status, same label or error, confidence or vector within tolerance. Positions must hold the
// ids they were given (order preserved).
// `vectors`: the stage embeds (compare vectors), else it classifies (labels, confidences).
std::vector<EquivalenceFinding> CompareWithReference(const CellMeasure& reference, const CellMeasure& cell,
                                                     bool vectors);

// --- recommendation ---------------------------------------------------------------------
struct GroupRecommendation {
  int group = 0;
  std::optional<int> batch_size;  // the largest size measured without a limit
  std::string why;
  std::optional<int> limit_batch_size;  // where escalation stopped
  std::string limit;
  double peak_memory_mb = 0;  // at the recommended size
  // The highest throughput measured below the limit: a larger batch is not always faster
  // (on a CPU it often is not), which the budget-and-cap rule alone would not say.
  std::optional<int> fastest_batch_size;
  double fastest_items_per_second = 0;
  // The other sizes below the limit whose fastest repeat reaches the fastest size's slowest
  // repeat: the fastest is not told apart from them. nullopt when the fastest size has fewer
  // than two repeats recorded (its noise is unmeasured).
  std::optional<std::vector<int>> fastest_within_noise_of;
};
// Per group: the largest batch size measured below the group's first limit, which is within
// the latency budget and the memory cap (a cell beyond either is itself the limit).
// Order-independent.
std::vector<GroupRecommendation> Recommend(const Grouping& grouping, const std::vector<CellMeasure>& cells);

// --- what the cells say, as a whole -----------------------------------------------------
inline constexpr std::size_t kFindingsListed = 1000;
struct SweepAnalysis {
  std::vector<GroupRecommendation> recommendations;
  std::size_t findings = 0;                                      // equivalence findings, all cells
  std::vector<EquivalenceFinding> listed;                        // the first kFindingsListed of them
  std::map<std::pair<int, int>, std::size_t> findings_per_cell;  // (group, batch size)
  // Cells that the sweep could not have produced: off the settings' grid, of a group with
  // another item count, measured after the group's limit, or without the group's batch 1.
  std::vector<std::string> problems;
};
// From the groups, the settings and the journaled cells alone: what sweep.json says, what
// verify re-derives and what a batch plan is built from. A cell whose repeats disagreed is a
// finding too (the stage is not deterministic at that size).
SweepAnalysis AnalyseSweep(const Grouping& grouping, const SweepSettings& settings,
                           const std::vector<CellMeasure>& cells, bool vectors);

// The limit the settings put on a measured cell that reached none of its own (latency
// budget, then memory cap), or empty.
std::string SettingsLimit(const CellMeasure& cell, const SweepSettings& settings, std::string& why);

// data/cells/gG-bB.json
std::string SweepCellFile(int group, int batch_size);

// data/cells.jsonl: one line per finished cell, each naming its cell file and sha256; each
// file is read back, hashed and parsed. A torn last line (a kill while appending) is cut off
// when `repair`, refused otherwise; any other damage refuses the folder (exit 2).
struct JournaledCell {
  CellMeasure measure;
  std::string file, sha256;
};
Result<std::vector<JournaledCell>> LoadSweepCells(FileSystem& fs, const std::filesystem::path& dir,
                                                  bool repair);

// What a sweep folder recorded about how it was asked for (data/run.json): enough to
// rebuild its plan (the caller re-reads the parameters and manifest and compares the pins).
struct SweepRecord {
  std::string run_id, state;
  std::string params_path, manifest_path, device;
  std::string manifest_sha256, params_sha256, model_sha256;
  const OutputKindSpec* output = nullptr;  // stage.output (pilot/output_kind.h); set once parsed
  std::string started_at;
  int format_version = kSweepFormatVersion;  // run.json's: the folder's sweep.json is rebuilt by it
  SweepSettings settings;
  // run.json's `stage` and `footprint` objects as written (key order kept): what sweep.json
  // repeats, so that verify can build sweep.json again.
  nlohmann::ordered_json stage, footprint;
  std::vector<std::string> command_line;
};
Result<SweepRecord> ReadSweepRecord(FileSystem& fs, const std::filesystem::path& dir);

// data/groups.json, read (never through a link) and parsed strictly.
Result<Grouping> ReadSweepGroups(FileSystem& fs, const std::filesystem::path& dir);

// Everything a finished or interrupted sweep folder says, read and derived once: its record,
// its groups, its journaled cells (each against its sha256) and what they say as a whole.
// What verify checks sweep.json against and what a batch plan is built from.
struct SweepState {
  SweepRecord record;
  Grouping grouping;
  std::vector<CellMeasure> cells;
  SweepAnalysis analysis;
};
Result<SweepState> LoadSweepState(FileSystem& fs, const std::filesystem::path& dir);

}  // namespace pilot
