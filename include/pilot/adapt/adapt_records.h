// The records of an adaptation folder (kind `adapt`, `pilot adapt`): its journal, its
// train/eval accounting, and the renderings of its report and model card. Parsers are
// strict (every field's type checked, an error naming the file and line, never an
// exception) and capped: an adaptation folder may come back from a rented machine damaged
// or hostile.
//
// Layout of the folder (a BagIt bag like a run's):
//   data/run.json                 kind `adapt`, pins, state
//   data/params.json              byte copy of the adaptation parameters
//   data/train-manifest.json(l)   byte copies of the labelled manifests
//   data/eval-manifest.json(l)
//   data/environment.json
//   data/journal.jsonl            header, baseline, session, checkpoint and pruned records
//   data/train.jsonl              one line per training id: used (with its label) or rejected
//   data/eval.jsonl               one line per evaluation id: base and adapted prediction, or rejected
//   data/checkpoints/step-NNNNNNNN.ckpt   the kept checkpoints
//   data/metrics.jsonl            loss per step, evaluation per checkpoint
//   data/model/adapted.pt, data/model/MODEL_CARD.md
//   data/report.json, data/report.md, data/report.html
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/adapt/adapt_files.h"
#include "pilot/adapt/adapt_params.h"
#include "pilot/folder_files.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr int kAdaptJournalVersion = 1;
// Caps: far above what pilot writes, so only a damaged or hostile folder meets them.
inline constexpr std::size_t kMaxAdaptEvalItems = 20000;  // the baseline record lists their predictions
inline constexpr std::size_t kMaxAdaptLabels = 4096;
inline constexpr std::size_t kMaxAdaptCheckpointRecords = 100000;

// "data/checkpoints/step-00000050.ckpt"
std::string CheckpointFileName(std::uint64_t step);
// Whether `name` (a file name inside data/checkpoints) is one pilot writes: step-<8+ digits>.ckpt.
bool IsCheckpointFileName(std::string_view name);

// An evaluation: correct / total overall and per expected label.
struct EvalSummary {
  std::size_t correct = 0, total = 0;
  std::map<std::string, std::pair<std::size_t, std::size_t>> per_label;  // label -> (correct, total)
  double accuracy() const {
    return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
  }
  // {"correct", "total", "accuracy", "per_label": {"fr": {"correct", "total"}, ...}}
  nlohmann::ordered_json ToJson() const;
  // Checks types, correct <= total, the per-label sums equal the totals, <= kMaxAdaptLabels labels.
  static Result<EvalSummary> FromJson(const nlohmann::json& j, const std::string& where);
};

// The journal's first record: what the adaptation is bound to.
struct AdaptJournalHeader {
  int version = kAdaptJournalVersion;
  std::string run_id;
  std::string params_sha256, train_manifest_sha256, eval_manifest_sha256, base_model_sha256;
  std::string train_manifest_copy, eval_manifest_copy;  // "data/train-manifest.json" or ".jsonl"
  // sha256 of data/train.jsonl as the prechecks wrote it: a resume prechecks again and
  // refuses a different outcome (an input changed meanwhile).
  std::string train_accounting_sha256;
  std::size_t train_items = 0, train_used = 0, eval_items = 0, eval_used = 0;
  std::uint64_t total_steps = 0, steps_per_epoch = 0;
  int threads = 1;
  std::uint64_t seed = 0;
  std::string device, dtype;
  // The effective plan: resolved paths as the adaptation used them.
  std::string params_path, base_model_path, train_manifest_path, eval_manifest_path;
  std::string started_at;
  double started_unix = 0;

  nlohmann::ordered_json ToJson() const;  // {"type": "header", ...}
  static Result<AdaptJournalHeader> FromJson(const nlohmann::json& j, const std::string& where);
};

// The base model's evaluation, before any update: one predicted label and confidence per
// evaluation item used, in evaluation-manifest order.
struct AdaptBaseline {
  EvalSummary eval;
  std::vector<std::string> predictions;
  std::vector<double> confidences;
  nlohmann::ordered_json ToJson() const;  // {"type": "baseline", ...}
  static Result<AdaptBaseline> FromJson(const nlohmann::json& j, const std::string& where);
};

// A checkpoint written, fsynced and renamed into place, before this record was appended.
struct AdaptCheckpointRecord {
  std::uint64_t step = 0;      // optimiser steps done
  std::uint64_t epoch = 0;     // the data-order cursor after `step` steps
  std::uint64_t position = 0;  // items of epoch `epoch` already used
  std::string file;            // CheckpointFileName(step)
  std::string sha256;
  std::uint64_t bytes = 0;
  double write_ms = 0;
  std::vector<double> losses;  // the training loss of each step since the previous checkpoint
  EvalSummary eval;            // on the evaluation items, after `step` steps
  std::string params_digest;   // sha256 of the trainable parameters' bytes, in name order
  double at_unix = 0;
  nlohmann::ordered_json ToJson() const;  // {"type": "checkpoint", ...}
  static Result<AdaptCheckpointRecord> FromJson(const nlohmann::json& j, const std::string& where);
};

struct AdaptJournalState {
  AdaptJournalHeader header;
  std::optional<AdaptBaseline> baseline;
  std::vector<AdaptCheckpointRecord> checkpoints;  // in journal order, steps increasing
  std::set<std::string> pruned;                    // files of checkpoints removed
  std::size_t sessions = 0;
  double training_seconds = 0;  // summed over sessions: session start -> its last checkpoint
  std::uint64_t valid_bytes = 0, torn_bytes = 0;
  std::size_t records = 0;
};

// Parses journal text. A torn last record (no newline) is dropped and counted in
// torn_bytes; anything else wrong (a record before the header, an unknown type, a
// checkpoint whose step does not increase, a pruned file never recorded, a second baseline)
// is an error naming `where` and the line.
Result<AdaptJournalState> ParseAdaptJournal(std::string_view text, const std::string& where);

// Record lines (no newline) of the other record types.
nlohmann::ordered_json AdaptSessionRecord(double at_unix, long pid, const std::string& command);
nlohmann::ordered_json AdaptPrunedRecord(const std::vector<std::string>& files, std::uint64_t at_step);

// The checkpoints recorded and not pruned, in step order.
std::vector<const AdaptCheckpointRecord*> KeptCheckpoints(const AdaptJournalState& state);
// The best kept checkpoint by evaluation accuracy (the earliest on a tie), or null.
const AdaptCheckpointRecord* BestCheckpoint(const AdaptJournalState& state);
// Which kept checkpoints to remove so that the last `keep_last` and the best remain.
std::vector<std::string> CheckpointsToPrune(const AdaptJournalState& state, int keep_last);

// One line of data/train.jsonl.
struct TrainAccountingLine {
  std::string id;
  std::string status;          // "used" | "rejected"
  std::string label;           // used
  std::string reason, detail;  // rejected (a reason code of reasons.h)
  nlohmann::ordered_json ToJson() const;
  static Result<TrainAccountingLine> FromJson(const nlohmann::json& j, const std::string& where);
};

// One line of data/eval.jsonl.
struct EvalAccountingLine {
  std::string id;
  std::string status;                   // "evaluated" | "rejected"
  std::string expected, base, adapted;  // evaluated
  double base_confidence = 0, adapted_confidence = 0;
  std::string reason, detail;  // rejected
  nlohmann::ordered_json ToJson() const;
  static Result<EvalAccountingLine> FromJson(const nlohmann::json& j, const std::string& where);
};

// The renderings of data/report.json (built by the engine; its schema is in
// docs/adapt-report.md): report.md, a self-contained report.html (inline CSS and an SVG loss
// curve, no script, no external reference; every value from the folder escaped), and the
// model card. `losses` is the loss of every step, in order.
std::string RenderAdaptMarkdown(const nlohmann::ordered_json& report);
std::string RenderAdaptHtml(const nlohmann::ordered_json& report, const std::vector<double>& losses);
std::string RenderAdaptModelCard(const nlohmann::ordered_json& report);
// data/metrics.jsonl from the journal: the base accuracy, the loss of every step, each
// checkpoint's accuracy; with the losses and the checkpoints' write times.
struct AdaptMetrics {
  std::string text;
  std::vector<double> losses;
  double write_ms_sum = 0, write_ms_max = 0;
};
AdaptMetrics BuildAdaptMetrics(const AdaptJournalState& state, double base_accuracy);

// What only the session that finished knew, and report.json states: verify takes these from
// the report itself and everything else from the folder's sources.
struct AdaptReportFacts {
  std::string pilot_version, pilot_revision, libtorch;
  std::vector<std::string> trainable;  // parameter names, in the model's order
  std::uint64_t trainable_values = 0;
  double seconds = 0;  // training time over every session
};
AdaptReportFacts AdaptReportFactsFromJson(const nlohmann::json& report);

// data/report.json (schema in docs/adapt-report.md) from the journal (header, baseline,
// checkpoints, sessions), the parameters, the accounting's reasons, the adapted evaluation and
// model, and the facts above. The adaptation writes it with this function; verify builds it
// again from the folder and compares the bytes, so a report edited and re-hashed is caught.
struct AdaptReportInput {
  const AdaptJournalHeader& header;
  const AdaptJournalState& state;
  const AdaptParams& params;
  const AdaptMetrics& metrics;                                     // BuildAdaptMetrics of the same journal
  std::map<std::string, std::size_t> train_reasons, eval_reasons;  // rejected items, by reason
  EvalSummary adapted;                                             // the adapted model's evaluation
  std::string adapted_sha256;
  std::uint64_t adapted_bytes = 0;
  std::string final_params_digest;
  AdaptReportFacts facts;
};
nlohmann::ordered_json BuildAdaptReport(const AdaptReportInput& input);

// The adapted model's sha256 as the model card states it (its "- sha256: `<hex>`" line).
std::optional<std::string> ModelCardSha256(std::string_view card);

}  // namespace pilot
