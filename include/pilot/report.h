// The report of a run: counts, quality, latency, throughput, memory and the acceptance
// verdict, computed from the result records alone (so verify can recompute the counts).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/output_kind.h"
#include "pilot/params.h"
#include "pilot/results.h"
#include "pilot/run_record.h"

namespace pilot {

struct RunMetrics {
  double processing_seconds = 0;         // summed over every session that worked on the run
  double peak_rss_mb = 0;                // the highest of any session
  std::optional<double> device_peak_mb;  // caching-allocator peak on the GPU, if one was used
  std::size_t batch_failure_count = 0;
  std::vector<BatchFailure> batch_failures;  // the first ones recorded
};

struct Criterion {
  std::string name;
  double limit = 0;
  double value = 0;
  bool measured = false;  // false: no data to judge (e.g. no labelled item)
  bool met = false;
};

// One label's quality over the labelled items: `support` items expect it, the model gave it to
// `predicted` of them (accepted in that category), `correct` of those expected it. Precision
// and recall are null where their denominator is 0.
struct LabelQuality {
  std::string label;
  std::size_t support = 0, predicted = 0, correct = 0;
  std::optional<double> precision() const {
    return predicted ? std::optional<double>(static_cast<double>(correct) / predicted) : std::nullopt;
  }
  std::optional<double> recall() const {
    return support ? std::optional<double>(static_cast<double>(correct) / support) : std::nullopt;
  }
};

// The support of `label` in `per_label` (sorted by label, as a report holds it); 0 if absent.
std::size_t SupportOf(const std::vector<LabelQuality>& per_label, const std::string& label);
// report.json lists at most this many labels in quality.per_label, .confusion and
// .never_predicted (and says how many more in .labels_not_listed): at about 300 bytes a
// label, the file stays far below its cap (limits::kReportBytes) whatever the manifest.
inline constexpr std::size_t kReportLabels = 10000;
// The console, report.md and decide name at most this many labels never predicted.
inline constexpr std::size_t kListedNeverPredicted = 20;

struct TokenFigures {
  std::size_t items = 0, truncated = 0;
  double p50 = 0, p95 = 0;
  std::uint64_t max = 0, total = 0;
  double tokens_per_second = 0;
};

// A generator's figures, from its accepted records (docs/generation.md, "The report").
struct GenerationFigures {
  std::size_t items = 0;  // accepted completions
  std::uint64_t prompt_tokens = 0, completion_tokens = 0;
  std::map<std::string, std::size_t> finish_reasons;
  double prefill_ms = 0, decode_ms = 0;  // the records' shares summed: the model's time
  double ttft_p50 = 0, ttft_p90 = 0, ttft_p99 = 0;
  std::size_t tpot_samples = 0;  // completions of two tokens or more
  double tpot_p50 = 0, tpot_p90 = 0, tpot_p99 = 0;
  std::uint64_t kv_cache_bytes_max = 0;  // the largest KV cache a batch allocated
  // Slot occupancy: decode tokens over the slot-steps they ran in (nullopt when a record lacks
  // slot_steps). Near-ties: the steps decided within sampling.h's margin, and the completions
  // holding one.
  double slot_steps = 0;
  bool slot_steps_known = true;
  std::optional<double> occupancy() const {
    if (!slot_steps_known || slot_steps <= 0) return std::nullopt;
    return std::min(1.0, static_cast<double>(completion_tokens - items) / slot_steps);
  }
  std::uint64_t near_tie_steps = 0;
  std::size_t near_tie_completions = 0;
  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens / (prefill_ms / 1000) : 0; }
  // Decode: the tokens after each completion's first (the prefill gives the first).
  double decode_tokens_per_s() const {
    return decode_ms > 0 ? static_cast<double>(completion_tokens - items) / (decode_ms / 1000) : 0;
  }
};

struct Report {
  // The run format the report is written in (folder_files.h): per-label quality came with 3,
  // and verify rebuilds an older folder's report in its own format.
  int format_version = kRunFormatVersion;
  const OutputKindSpec* output = nullptr;  // the stage's (pilot/output_kind.h)
  std::size_t dim = 0;                     // a kind with vectors: the vectors' length
  std::size_t total = 0, accepted = 0, rejected = 0;
  std::map<std::string, std::size_t> by_reason, by_category;
  std::size_t labelled = 0, correct = 0;
  // The labelled items, expected label -> the category each was accepted in (a rejected one
  // counts in `rejected_by_expected`): the confusion matrix, its cells only where items are.
  std::map<std::string, std::map<std::string, std::size_t>> confusion;
  std::map<std::string, std::size_t> rejected_by_expected;
  std::vector<LabelQuality> per_label;       // every label expected or predicted, sorted; at Finish
  std::vector<std::string> never_predicted;  // labels expected but never given to a labelled item
  std::size_t expected_rejections = 0, expected_rejections_met = 0;
  std::vector<std::string> expected_rejections_unmet;  // ids
  double p50_ms = 0, p95_ms = 0, p99_ms = 0;
  std::size_t latency_samples = 0;
  // A tokenized stage's items (those whose records carry `tokens`): their lengths in tokens,
  // how many were truncated, and the tokens per second of processing. Written as report.json's
  // `tokens` only when there are any.
  TokenFigures tokens;
  GenerationFigures generation;  // a kind that generates
  double items_per_second = 0;
  double peak_rss_mb = 0;
  std::optional<double> device_peak_mb;
  std::size_t batch_failure_count = 0;
  std::vector<BatchFailure> batch_failures;
  std::vector<Criterion> criteria;
  bool acceptance_met = true;
  // A merged folder (`pilot merge`): the shards' rates summed (what N workers together did
  // while they ran) beside items_per_second, which is then wall-clock: the manifest count
  // over the time from the first shard's start to the last one's end.
  std::size_t shards = 0;
  double shard_rate_sum = 0;
  double wall_seconds = 0;

  double accuracy() const { return labelled ? static_cast<double>(correct) / labelled : 0; }
};

// Accumulates a report item by item (constant memory but for one latency per item).
class ReportBuilder {
 public:
  // A kind without labels has no category: `expected` labels are not judged, by_category
  // stays empty.
  // `format_version`: the run format to write the report in (verify passes an older folder's).
  ReportBuilder(const OutputKindSpec& output, std::size_t dim, int format_version = kRunFormatVersion) {
    r_.output = &output;
    r_.dim = dim;
    r_.format_version = format_version;
  }
  void Add(const ManifestItem& item, const ResultRecord& record);
  Report Finish(const Acceptance& acceptance, const RunMetrics& metrics);

 private:
  Report r_;
  std::vector<double> latencies_, tokens_, ttft_, tpot_;
};

// `records` must be in manifest order, one per item.
Report BuildReport(const OutputKindSpec& output, const Manifest& manifest,
                   const std::vector<ResultRecord>& records, const Acceptance& acceptance,
                   const RunMetrics& metrics);

nlohmann::ordered_json ReportToJson(const Report& report);
// `records`: the first items (the table is capped at kMarkdownItemRows); the report's total
// says how many there are in all.
std::string ReportToMarkdown(const Report& report, const std::string& run_id,
                             const std::vector<ResultRecord>& records);
inline constexpr std::size_t kMarkdownItemRows = 1000;

// Items per second over `seconds` of processing (0 for none): a report's throughput.
double RateOf(std::size_t items, double seconds);

// A merged folder's figures, from its shards': merge takes each shard's from its report and
// record, verify from the shard's journal and record kept in the merged folder. One function
// combines them, so the writer and verify agree number for number: the rates summed, the
// highest peaks, and the span from the first start to the last finish (0 when it is not
// positive; a shard without a start or finish does not bound it).
struct ShardFigures {
  double items_per_second = 0;
  double peak_rss_mb = 0;
  std::optional<double> device_peak_mb;
  RecordedSpan span;
};
struct MergedFigures {
  double shard_rate_sum = 0, peak_rss_mb = 0, wall_seconds = 0;
  std::optional<double> device_peak_mb;
};
MergedFigures CombineShardFigures(const std::vector<ShardFigures>& shards);

// report.json of a run, shard or merged folder, read back: the one typed reader of it that the
// workflows use (status, merge, compare, plan, decide); verify cross-checks the file itself.
// Every figure written since format 1 is required, typed and in range: a figure missing or of
// the wrong type, or counts that do not add up, is refused (exit 2) naming the file and the key
// path. `output_kind` and `batch_failures` came with format 2, `shards` with merged folders.
struct RecordedCriterion {
  std::string name;
  double limit = 0, value = 0;
  bool measured = false, met = false;
};
struct RecordedReport {
  std::string output_kind;  // empty in format 1
  std::size_t total = 0, accepted = 0, rejected = 0;
  std::map<std::string, std::size_t> by_reason, by_category;
  std::size_t labelled = 0, correct = 0;
  std::optional<double> accuracy;  // null when nothing was labelled
  // quality.per_label (format 3; empty before): each label's support, predictions and hits.
  std::vector<LabelQuality> per_label;
  std::vector<std::string> never_predicted;  // quality.never_predicted
  std::size_t expected_rejections = 0, expected_rejections_met = 0;
  std::vector<std::string> expected_rejections_unmet;  // ids
  std::size_t latency_samples = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0;
  std::optional<TokenFigures> tokens;              // `tokens`, when the stage tokenized
  std::optional<std::uint64_t> completion_tokens;  // a generator's generation.completion_tokens
  double items_per_second = 0;                     // throughput_items_per_s
  double peak_rss_mb = 0;
  std::optional<double> device_peak_mb;
  // A merged folder's: how many shards, and their rates summed.
  std::optional<std::size_t> shards;
  double shard_rate_sum = 0;
  std::vector<RecordedCriterion> criteria;
  bool acceptance_met = false;
  std::string verdict;  // accepted | acceptance_not_met
};
// `file` names the document in errors; `hint` says what to do about a refused one.
Result<RecordedReport> RecordedReportFromJson(const nlohmann::json& doc, const std::string& file,
                                              const std::string& hint);
// Reads DIR/data/report.json (a regular file, capped at limits::kReportBytes, never through a
// link) and parses it as above.
Result<RecordedReport> ReadRecordedReport(FileSystem& fs, const std::filesystem::path& dir,
                                          const std::string& hint);

// Nearest-rank percentile of unsorted samples; 0 for none.
double Percentile(std::vector<double> samples, double p);

}  // namespace pilot
