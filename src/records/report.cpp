#include "pilot/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/params.h"
#include "pilot/utf8.h"

namespace pilot {

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * samples.size()));
  rank = std::clamp<std::size_t>(rank, 1, samples.size());
  return samples[rank - 1];
}

double RateOf(std::size_t items, double seconds) { return seconds > 0 ? items / seconds : 0; }

std::size_t SupportOf(const std::vector<LabelQuality>& per_label, const std::string& label) {
  auto at = std::lower_bound(per_label.begin(), per_label.end(), label,
                             [](const LabelQuality& q, const std::string& l) { return q.label < l; });
  return at != per_label.end() && at->label == label ? at->support : 0;
}

MergedFigures CombineShardFigures(const std::vector<ShardFigures>& shards) {
  MergedFigures m;
  std::optional<double> started, finished;
  for (const ShardFigures& s : shards) {
    m.shard_rate_sum += s.items_per_second;
    m.peak_rss_mb = std::max(m.peak_rss_mb, s.peak_rss_mb);
    if (s.device_peak_mb) m.device_peak_mb = std::max(m.device_peak_mb.value_or(0), *s.device_peak_mb);
    if (s.span.started) started = started ? std::min(*started, *s.span.started) : *s.span.started;
    if (s.span.finished) finished = finished ? std::max(*finished, *s.span.finished) : *s.span.finished;
  }
  m.wall_seconds = started && finished && *finished > *started ? *finished - *started : 0;
  return m;
}

void ReportBuilder::Add(const ManifestItem& item, const ResultRecord& rec) {
  ++r_.total;
  const bool classifies = r_.output && r_.output->labels;
  if (rec.accepted) {
    ++r_.accepted;
    if (classifies) ++r_.by_category[rec.category];
  } else {
    ++r_.rejected;
    ++r_.by_reason[rec.reason];
  }
  // A generator's labelled item: an exact match of its completion with `expected`.
  if (item.expected && r_.output && r_.output->generates) {
    ++r_.labelled;
    if (rec.accepted && rec.completion && rec.completion->text == *item.expected) ++r_.correct;
  }
  if (rec.accepted && rec.completion) {
    const Completion& c = *rec.completion;
    GenerationFigures& g = r_.generation;
    ++g.items;
    g.prompt_tokens += rec.tokens.value_or(0);
    g.completion_tokens += c.ids.size();
    ++g.finish_reasons[c.finish_reason];
    g.prefill_ms += c.prefill_ms;
    g.decode_ms += c.decode_ms;
    g.kv_cache_bytes_max = std::max(g.kv_cache_bytes_max, c.kv_cache_bytes);
    if (c.slot_steps) {
      g.slot_steps += *c.slot_steps;
    } else {
      g.slot_steps_known = false;
    }
    g.near_tie_steps += c.near_tie_steps.size();
    g.near_tie_completions += c.near_tie_steps.empty() ? 0 : 1;
    ttft_.push_back(c.ttft_ms);
    if (c.tpot_ms) tpot_.push_back(*c.tpot_ms);
  }
  if (item.expected && classifies) {
    ++r_.labelled;
    if (rec.accepted && rec.category == *item.expected) ++r_.correct;
    if (rec.accepted)
      ++r_.confusion[*item.expected][rec.category];
    else
      ++r_.rejected_by_expected[*item.expected];
  }
  if (item.expected_rejection) {
    ++r_.expected_rejections;
    if (!rec.accepted && rec.reason == *item.expected_rejection) {
      ++r_.expected_rejections_met;
    } else {
      r_.expected_rejections_unmet.push_back(item.id);
    }
  }
  if (rec.latency_ms) latencies_.push_back(*rec.latency_ms);
  if (rec.tokens) {
    tokens_.push_back(static_cast<double>(*rec.tokens));
    r_.tokens.total += *rec.tokens;
    r_.tokens.max = std::max(r_.tokens.max, *rec.tokens);
    if (rec.truncated) ++r_.tokens.truncated;
  }
}

Report BuildReport(const OutputKindSpec& output, const Manifest& manifest,
                   const std::vector<ResultRecord>& records, const Acceptance& acceptance,
                   const RunMetrics& metrics) {
  ReportBuilder b(output, 0);
  for (std::size_t i = 0; i < records.size() && i < manifest.items.size(); ++i)
    b.Add(manifest.items[i], records[i]);
  return b.Finish(acceptance, metrics);
}

Report ReportBuilder::Finish(const Acceptance& acceptance, const RunMetrics& metrics) {
  Report r = r_;
  r.latency_samples = latencies_.size();
  r.p50_ms = Percentile(latencies_, 50);
  r.p95_ms = Percentile(latencies_, 95);
  r.p99_ms = Percentile(latencies_, 99);
  r.items_per_second = RateOf(r.total, metrics.processing_seconds);
  r.tokens.items = tokens_.size();
  r.tokens.p50 = Percentile(tokens_, 50);
  r.tokens.p95 = Percentile(tokens_, 95);
  r.tokens.tokens_per_second =
      metrics.processing_seconds > 0 ? r.tokens.total / metrics.processing_seconds : 0;
  r.generation.ttft_p50 = Percentile(ttft_, 50);
  r.generation.ttft_p90 = Percentile(ttft_, 90);
  r.generation.ttft_p99 = Percentile(ttft_, 99);
  r.generation.tpot_samples = tpot_.size();
  r.generation.tpot_p50 = Percentile(tpot_, 50);
  r.generation.tpot_p90 = Percentile(tpot_, 90);
  r.generation.tpot_p99 = Percentile(tpot_, 99);
  r.peak_rss_mb = metrics.peak_rss_mb;
  r.device_peak_mb = metrics.device_peak_mb;
  r.batch_failure_count = metrics.batch_failure_count;
  r.batch_failures = metrics.batch_failures;

  auto add = [&](const char* name, std::optional<double> limit, double value, bool measured,
                 bool higher_is_better) {
    if (!limit) return;
    Criterion c{name, *limit, value, measured, false};
    c.met = measured && (higher_is_better ? value >= *limit : value <= *limit);
    r.acceptance_met = r.acceptance_met && c.met;
    r.criteria.push_back(c);
  };
  // Per label: its support and hits from its row of the confusion matrix, its predictions from
  // its column.
  std::map<std::string, LabelQuality> labels;
  for (const auto& [expected, rejected] : r.rejected_by_expected) labels[expected].support += rejected;
  for (const auto& [expected, row] : r.confusion) {
    for (const auto& [predicted, n] : row) {
      labels[expected].support += n;
      labels[predicted].predicted += n;
      if (predicted == expected) labels[expected].correct += n;
    }
  }
  double min_recall = 1;
  for (auto& [name, q] : labels) {
    q.label = name;
    if (q.support > 0) min_recall = std::min(min_recall, *q.recall());
    if (q.support > 0 && q.predicted == 0) r.never_predicted.push_back(name);
    r.per_label.push_back(q);
  }
  add("min_accuracy", acceptance.min_accuracy, r.accuracy(), r.labelled > 0, true);
  add("min_recall_per_label", acceptance.min_recall_per_label, min_recall, r.labelled > 0, true);
  add("min_accepted_fraction", acceptance.min_accepted_fraction,
      r.total ? static_cast<double>(r.accepted) / r.total : 0, r.total > 0, true);
  add("max_p95_latency_ms", acceptance.max_p95_latency_ms, r.p95_ms, r.latency_samples > 0, false);
  add("max_peak_rss_mb", acceptance.max_peak_rss_mb, r.peak_rss_mb, r.peak_rss_mb > 0, false);
  return r;
}

nlohmann::ordered_json ReportToJson(const Report& r) {
  nlohmann::ordered_json j;
  j["output_kind"] = r.output ? r.output->name : "";
  j["counts"] = {{"total", r.total}, {"accepted", r.accepted}, {"rejected", r.rejected}};
  j["by_reason"] = r.by_reason;
  j["by_category"] = r.by_category;
  if (r.output) r.output->report_json(r, j);
  j["quality"] = {{"labelled", r.labelled},
                  {"correct", r.correct},
                  {"accuracy", r.labelled ? nlohmann::ordered_json(r.accuracy()) : nlohmann::ordered_json()}};
  if (r.format_version >= 3) {
    auto optional = [](std::optional<double> v) {
      return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
    };
    auto per_label = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.per_label.size() && i < kReportLabels; ++i) {
      const LabelQuality& q = r.per_label[i];
      per_label.push_back({{"label", q.label},
                           {"support", q.support},
                           {"predicted", q.predicted},
                           {"correct", q.correct},
                           {"precision", optional(q.precision())},
                           {"recall", optional(q.recall())}});
    }
    // One row per expected label: the labels with support, in per_label's (sorted) order.
    auto confusion = nlohmann::ordered_json::array();
    for (const LabelQuality& q : r.per_label) {
      if (confusion.size() == kReportLabels) break;
      if (q.support == 0) continue;
      const std::string& e = q.label;
      auto row = r.confusion.find(e);
      auto rejected = r.rejected_by_expected.find(e);
      confusion.push_back({{"expected", e},
                           {"predicted", row == r.confusion.end() ? nlohmann::ordered_json::object()
                                                                  : nlohmann::ordered_json(row->second)},
                           {"rejected", rejected == r.rejected_by_expected.end() ? 0 : rejected->second}});
    }
    const std::size_t listed_never = std::min(r.never_predicted.size(), kReportLabels);
    j["quality"]["per_label"] = std::move(per_label);
    j["quality"]["never_predicted"] =
        std::vector<std::string>(r.never_predicted.begin(), r.never_predicted.begin() + listed_never);
    j["quality"]["confusion"] = std::move(confusion);
    // Past kReportLabels labels, how many each list leaves out (so the file stays under its cap).
    if (r.per_label.size() > kReportLabels)
      j["quality"]["labels_not_listed"] = r.per_label.size() - kReportLabels;
  }
  j["expected_rejections"] = {{"total", r.expected_rejections},
                              {"met", r.expected_rejections_met},
                              {"unmet_ids", r.expected_rejections_unmet}};
  j["latency_ms"] = {{"samples", r.latency_samples}, {"p50", r.p50_ms}, {"p95", r.p95_ms}, {"p99", r.p99_ms}};
  j["throughput_items_per_s"] = r.items_per_second;
  if (r.tokens.items > 0) {
    j["tokens"] = {{"items", r.tokens.items},
                   {"p50", r.tokens.p50},
                   {"p95", r.tokens.p95},
                   {"max", r.tokens.max},
                   {"total", r.tokens.total},
                   {"truncated", r.tokens.truncated},
                   {"throughput_tokens_per_s", r.tokens.tokens_per_second}};
  }
  if (r.shards > 0) {
    j["shards"] = {{"count", r.shards},
                   {"throughput_sum_of_shards_items_per_s", r.shard_rate_sum},
                   {"wall_clock_seconds", r.wall_seconds},
                   {"throughput_wall_clock_items_per_s", r.items_per_second}};
  }
  j["peak_rss_mb"] = r.peak_rss_mb;
  j["device_peak_memory_mb"] =
      r.device_peak_mb ? nlohmann::ordered_json(*r.device_peak_mb) : nlohmann::ordered_json();
  std::set<std::uint64_t> oom_sizes;
  auto failures = nlohmann::ordered_json::array();
  for (const auto& f : r.batch_failures) {
    if (f.out_of_memory) oom_sizes.insert(f.batch_size);
    failures.push_back(
        {{"batch_size", f.batch_size}, {"out_of_memory", f.out_of_memory}, {"error", f.error}});
  }
  j["batch_failures"] = {
      {"count", r.batch_failure_count}, {"out_of_memory_at_batch_sizes", oom_sizes}, {"recorded", failures}};
  auto crit = nlohmann::ordered_json::array();
  for (const auto& c : r.criteria) {
    crit.push_back({{"criterion", c.name},
                    {"limit", c.limit},
                    {"value", c.value},
                    {"measured", c.measured},
                    {"met", c.met}});
  }
  j["acceptance"] = {{"criteria", crit}, {"met", r.acceptance_met}};
  j["verdict"] = r.acceptance_met ? "accepted" : "acceptance_not_met";
  return j;
}

namespace {

// Per-label precision and recall, the labels never predicted, and the confusion matrix, each
// capped (kMarkdownLabelRows rows, kListedNeverPredicted labels, kConfusionColumns columns);
// report.json holds them up to kReportLabels.
void PerLabelMarkdown(const Report& r, std::ostringstream& md) {
  constexpr std::size_t kMarkdownLabelRows = 100;
  auto fixed = [](std::optional<double> v) { return v ? FixedDecimals(*v, 3) : std::string("-"); };
  md << "| label | support | predicted | correct | precision | recall |\n|---|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < r.per_label.size() && i < kMarkdownLabelRows; ++i) {
    const LabelQuality& q = r.per_label[i];
    md << "| " << EscapeMarkdown(q.label) << " | " << q.support << " | " << q.predicted << " | " << q.correct
       << " | " << fixed(q.precision()) << " | " << fixed(q.recall()) << " |\n";
  }
  md << "\n";
  if (r.per_label.size() > kMarkdownLabelRows)
    md << "The first " << kMarkdownLabelRows << " of " << r.per_label.size()
       << " labels; report.json has the rest.\n\n";
  for (std::size_t i = 0; i < r.never_predicted.size() && i < kListedNeverPredicted; ++i) {
    md << "**Never predicted:** " << EscapeMarkdown(r.never_predicted[i]) << " (0 of "
       << SupportOf(r.per_label, r.never_predicted[i]) << " labelled items)\n\n";
  }
  if (r.never_predicted.size() > kListedNeverPredicted)
    md << "**Never predicted:** " << r.never_predicted.size() - kListedNeverPredicted
       << " more labels (report.json)\n\n";
  constexpr std::size_t kConfusionColumns = 20;
  std::set<std::string> columns;
  for (const auto& [e, row] : r.confusion)
    for (const auto& [p, n] : row) columns.insert(p);
  if (columns.size() > kConfusionColumns) {
    md << "The confusion matrix (" << columns.size()
       << " predicted labels) is in report.json, `quality.confusion`.\n\n";
    return;
  }
  md << "Confusion (rows: expected; columns: the category accepted in)\n\n| expected |";
  for (const auto& c : columns) md << " " << EscapeMarkdown(c) << " |";
  md << " rejected |\n|---|";
  for (std::size_t i = 0; i <= columns.size(); ++i) md << "---:|";
  md << "\n";
  std::vector<std::string> rows;  // the expected labels: those with support, sorted
  for (const LabelQuality& q : r.per_label)
    if (q.support > 0) rows.push_back(q.label);
  if (rows.size() > kMarkdownLabelRows) {
    md << "The confusion matrix (" << rows.size()
       << " expected labels) is in report.json, `quality.confusion`.\n\n";
    return;
  }
  for (const auto& e : rows) {
    md << "| " << EscapeMarkdown(e) << " |";
    auto row = r.confusion.find(e);
    for (const auto& c : columns) {
      std::size_t n = 0;
      if (row != r.confusion.end())
        if (auto cell = row->second.find(c); cell != row->second.end()) n = cell->second;
      md << " " << n << " |";
    }
    auto rejected = r.rejected_by_expected.find(e);
    md << " " << (rejected == r.rejected_by_expected.end() ? 0 : rejected->second) << " |\n";
  }
  md << "\n";
}

}  // namespace

std::string ReportToMarkdown(const Report& r, const std::string& run_id,
                             const std::vector<ResultRecord>& records) {
  std::ostringstream md;
  char buf[256];
  // Every text from a model, a manifest or a folder goes through EscapeMarkdown (escape.h).
  md << "# Pilot run " << EscapeMarkdown(run_id) << "\n\n";
  md << "Verdict: **" << (r.acceptance_met ? "acceptance criteria met" : "acceptance criteria NOT met")
     << "**\n\n";
  md << "| items | accepted | rejected |\n|---:|---:|---:|\n";
  md << "| " << r.total << " | " << r.accepted << " | " << r.rejected << " |\n\n";
  if (!r.by_category.empty()) {
    md << "## Accepted by category\n\n| category | items |\n|---|---:|\n";
    for (const auto& [k, v] : r.by_category) md << "| " << EscapeMarkdown(k) << " | " << v << " |\n";
    md << "\n";
  }
  if (!r.by_reason.empty()) {
    md << "## Rejected by reason\n\n| reason | items |\n|---|---:|\n";
    for (const auto& [k, v] : r.by_reason) md << "| " << EscapeMarkdown(k) << " | " << v << " |\n";
    md << "\n";
  }
  md << "## Quality\n\n";
  if (r.labelled) {
    std::snprintf(buf, sizeof buf, "Accuracy on labelled items: %zu / %zu = %.1f%%\n\n", r.correct,
                  r.labelled, 100.0 * r.accuracy());
    md << buf;
    if (r.format_version >= 3) PerLabelMarkdown(r, md);
  } else {
    md << "No item carries an `expected` label.\n\n";
  }
  std::snprintf(buf, sizeof buf, "Expected rejections met: %zu / %zu\n\n", r.expected_rejections_met,
                r.expected_rejections);
  md << buf;
  md << "## Performance\n\n";
  std::snprintf(buf, sizeof buf,
                "| p50 ms | p95 ms | p99 ms | items/s | peak RSS MB |\n|---:|---:|---:|---:|---:|\n"
                "| %.2f | %.2f | %.2f | %.1f | %.1f |\n\n",
                r.p50_ms, r.p95_ms, r.p99_ms, r.items_per_second, r.peak_rss_mb);
  md << buf;
  if (r.tokens.items > 0) {
    std::snprintf(
        buf, sizeof buf,
        "Tokens per item (%zu items): p50 %.0f, p95 %.0f, max %llu; %zu truncated; %.1f tokens/s\n\n",
        r.tokens.items, r.tokens.p50, r.tokens.p95, static_cast<unsigned long long>(r.tokens.max),
        r.tokens.truncated, r.tokens.tokens_per_second);
    md << buf;
  }
  if (r.shards > 0) {
    std::snprintf(
        buf, sizeof buf,
        "Merged from %zu shards: items/s above is wall-clock (%.1f s from the first shard's start to the "
        "last one's end); the shards' own rates sum to %.1f items/s.\n\n",
        r.shards, r.wall_seconds, r.shard_rate_sum);
    md << buf;
  }
  if (r.device_peak_mb) {
    std::snprintf(buf, sizeof buf, "Device peak memory (caching allocator): %.1f MB\n\n", *r.device_peak_mb);
    md << buf;
  }
  if (r.batch_failure_count) {
    md << "## Batch failures\n\n"
       << r.batch_failure_count
       << " batch(es) failed as a whole and were retried in halves until the failing items were isolated.\n\n"
       << "| batch size | out of memory | error |\n|---:|---|---|\n";
    for (const auto& f : r.batch_failures) {
      md << "| " << f.batch_size << " | " << (f.out_of_memory ? "yes" : "no") << " | "
         << EscapeMarkdown(TruncateUtf8(f.error, 200)) << " |\n";
    }
    md << "\n";
  }
  if (r.output) r.output->report_md(r, md);
  if (!r.criteria.empty()) {
    md << "## Acceptance criteria\n\n| criterion | limit | value | met |\n|---|---:|---:|---|\n";
    for (const auto& c : r.criteria) {
      std::snprintf(buf, sizeof buf, "| %s | %g | %s | %s |\n", EscapeMarkdown(c.name).c_str(), c.limit,
                    c.measured ? std::to_string(c.value).c_str() : "not measured", c.met ? "yes" : "**no**");
      md << buf;
    }
    md << "\n";
  }
  md << "## Items\n\n";
  if (r.total > records.size()) {
    md << "The first " << records.size() << " of " << r.total << " items; all are in `results.jsonl`.\n\n";
  }
  md << "| id | status | category / reason | detail |\n|---|---|---|---|\n";
  for (const auto& rec : records) {
    std::string detail = !rec.accepted ? rec.detail
                         : rec.dim     ? "row " + (rec.row ? std::to_string(*rec.row) : std::string("?"))
                                       : "confidence " + std::to_string(rec.confidence);
    md << "| " << EscapeMarkdown(rec.id) << " | " << (rec.accepted ? "accepted" : "rejected") << " | "
       << EscapeMarkdown(!rec.accepted ? rec.reason
                         : rec.dim     ? std::string("vector")
                                       : rec.category)
       << " | " << EscapeMarkdown(TruncateUtf8(detail, 500)) << " |\n";
  }
  return md.str();
}

}  // namespace pilot

namespace pilot {

namespace {

// A {name: count} object of the report (by_reason, by_category).
Status ReadCounts(const JsonFields& f, const nlohmann::json& doc, const char* key,
                  std::map<std::string, std::size_t>& out) {
  auto obj = f.Object(doc, key);
  if (!obj.ok()) return obj.error();
  for (const auto& [name, value] : obj.value()->items()) {
    if (!value.is_number_unsigned()) {
      return BadInput("'" + std::string(key) + "." + KeyForMessage(name) + "' is not a whole number",
                      f.Where(std::string(key) + "." + KeyForMessage(name)), f.hint());
    }
    out[name] = value.get<std::size_t>();
  }
  return {};
}

Status ReadQuality(const JsonFields& f, const nlohmann::json& doc, RecordedReport& r) {
  auto quality = f.Object(doc, "quality");
  if (!quality.ok()) return quality.error();
  auto labelled = f.Unsigned(*quality.value(), "labelled", "quality");
  if (!labelled.ok()) return labelled.error();
  auto correct = f.Unsigned(*quality.value(), "correct", "quality");
  if (!correct.ok()) return correct.error();
  auto accuracy = f.NumberOrNull(*quality.value(), "accuracy", "quality");
  if (!accuracy.ok()) return accuracy.error();
  r.labelled = labelled.value();
  r.correct = correct.value();
  r.accuracy = accuracy.value();
  if (r.correct > r.labelled || (r.accuracy && *r.accuracy > 1)) {
    return BadInput("'quality' claims more correct items than labelled ones", f.Where("quality"), f.hint());
  }
  // Format 3: each label's counts, and the labels never predicted.
  if (quality.value()->contains("per_label")) {
    auto per_label = f.Array(*quality.value(), "per_label", "quality");
    if (!per_label.ok()) return per_label.error();
    for (const auto& entry : *per_label.value()) {
      const std::string at = "quality.per_label[" + std::to_string(r.per_label.size()) + "]";
      if (!entry.is_object()) return BadInput("'" + at + "' is not an object", f.Where(at), f.hint());
      LabelQuality q;
      auto label = f.String(entry, "label", at);
      if (!label.ok()) return label.error();
      q.label = label.value();
      for (auto [key, out] : {std::pair{"support", &q.support}, std::pair{"predicted", &q.predicted},
                              std::pair{"correct", &q.correct}}) {
        auto v = f.Unsigned(entry, key, at);
        if (!v.ok()) return v.error();
        *out = v.value();
      }
      if (q.correct > q.support || q.correct > q.predicted || q.support > r.labelled) {
        return BadInput("'" + at + "' claims more correct items than it has expected or predicted",
                        f.Where(at), f.hint());
      }
      r.per_label.push_back(std::move(q));
    }
    auto never = f.Array(*quality.value(), "never_predicted", "quality");
    if (!never.ok()) return never.error();
    for (const auto& label : *never.value()) {
      if (!label.is_string()) {
        return BadInput("'quality.never_predicted' holds something other than a label",
                        f.Where("quality.never_predicted"), f.hint());
      }
      r.never_predicted.push_back(label.get<std::string>());
    }
  }
  auto expected = f.Object(doc, "expected_rejections");
  if (!expected.ok()) return expected.error();
  auto total = f.Unsigned(*expected.value(), "total", "expected_rejections");
  if (!total.ok()) return total.error();
  auto met = f.Unsigned(*expected.value(), "met", "expected_rejections");
  if (!met.ok()) return met.error();
  auto unmet = f.Array(*expected.value(), "unmet_ids", "expected_rejections");
  if (!unmet.ok()) return unmet.error();
  r.expected_rejections = total.value();
  r.expected_rejections_met = met.value();
  for (const auto& id : *unmet.value()) {
    if (!id.is_string()) {
      return BadInput("'expected_rejections.unmet_ids' holds something other than an id",
                      f.Where("expected_rejections.unmet_ids"), f.hint());
    }
    r.expected_rejections_unmet.push_back(id.get<std::string>());
  }
  return {};
}

Status ReadFigures(const JsonFields& f, const nlohmann::json& doc, RecordedReport& r) {
  auto latency = f.Object(doc, "latency_ms");
  if (!latency.ok()) return latency.error();
  auto samples = f.Unsigned(*latency.value(), "samples", "latency_ms");
  if (!samples.ok()) return samples.error();
  r.latency_samples = samples.value();
  for (auto [key, out] :
       {std::pair{"p50", &r.p50_ms}, std::pair{"p95", &r.p95_ms}, std::pair{"p99", &r.p99_ms}}) {
    auto v = f.Number(*latency.value(), key, "latency_ms");
    if (!v.ok()) return v.error();
    *out = v.value();
  }
  auto rate = f.Number(doc, "throughput_items_per_s");
  if (!rate.ok()) return rate.error();
  r.items_per_second = rate.value();
  if (doc.contains("tokens")) {
    auto tokens = f.Object(doc, "tokens");
    if (!tokens.ok()) return tokens.error();
    TokenFigures t;
    for (auto [key, out] : {std::pair{"items", &t.items}, std::pair{"truncated", &t.truncated}}) {
      auto v = f.Unsigned(*tokens.value(), key, "tokens");
      if (!v.ok()) return v.error();
      *out = v.value();
    }
    for (auto [key, out] : {std::pair{"max", &t.max}, std::pair{"total", &t.total}}) {
      auto v = f.Unsigned(*tokens.value(), key, "tokens");
      if (!v.ok()) return v.error();
      *out = v.value();
    }
    for (auto [key, out] : {std::pair{"p50", &t.p50}, std::pair{"p95", &t.p95},
                            std::pair{"throughput_tokens_per_s", &t.tokens_per_second}}) {
      auto v = f.Number(*tokens.value(), key, "tokens");
      if (!v.ok()) return v.error();
      *out = v.value();
    }
    r.tokens = t;
  }
  if (doc.contains(kGenerationParamsKey)) {
    auto g = f.Object(doc, kGenerationParamsKey);
    if (!g.ok()) return g.error();
    auto n = f.Unsigned(*g.value(), "completion_tokens", kGenerationParamsKey);
    if (!n.ok()) return n.error();
    r.completion_tokens = n.value();
  }
  auto rss = f.Number(doc, "peak_rss_mb");
  if (!rss.ok()) return rss.error();
  r.peak_rss_mb = rss.value();
  auto device = f.NumberOrNull(doc, "device_peak_memory_mb");
  if (!device.ok()) return device.error();
  r.device_peak_mb = device.value();
  if (doc.contains("shards")) {
    auto shards = f.Object(doc, "shards");
    if (!shards.ok()) return shards.error();
    auto count = f.Unsigned(*shards.value(), "count", "shards");
    if (!count.ok()) return count.error();
    auto sum = f.Number(*shards.value(), "throughput_sum_of_shards_items_per_s", "shards");
    if (!sum.ok()) return sum.error();
    r.shards = count.value();
    r.shard_rate_sum = sum.value();
  }
  return {};
}

Status ReadAcceptance(const JsonFields& f, const nlohmann::json& doc, RecordedReport& r) {
  auto acceptance = f.Object(doc, "acceptance");
  if (!acceptance.ok()) return acceptance.error();
  auto met = f.Bool(*acceptance.value(), "met", "acceptance");
  if (!met.ok()) return met.error();
  r.acceptance_met = met.value();
  auto criteria = f.Array(*acceptance.value(), "criteria", "acceptance");
  if (!criteria.ok()) return criteria.error();
  for (const auto& c : *criteria.value()) {
    RecordedCriterion rc;
    auto name = f.String(c, "criterion", "acceptance.criteria[]");
    if (!name.ok()) return name.error();
    auto limit = NumberAt(c, "limit");
    auto value = NumberAt(c, "value");
    auto measured = f.Bool(c, "measured", "acceptance.criteria[]");
    if (!measured.ok()) return measured.error();
    auto c_met = f.Bool(c, "met", "acceptance.criteria[]");
    if (!c_met.ok()) return c_met.error();
    if (!limit || !value || !std::isfinite(*limit) || !std::isfinite(*value)) {
      return BadInput("'acceptance.criteria[].limit' or '.value' is missing or not a number",
                      f.Where("acceptance.criteria"), f.hint());
    }
    rc.name = name.value();
    rc.limit = *limit;
    rc.value = *value;
    rc.measured = measured.value();
    rc.met = c_met.value();
    r.criteria.push_back(std::move(rc));
  }
  auto verdict = f.String(doc, "verdict");
  if (!verdict.ok()) return verdict.error();
  r.verdict = verdict.value();
  if (r.verdict != (r.acceptance_met ? "accepted" : "acceptance_not_met")) {
    return BadInput("'verdict' is '" + ValueForMessage(r.verdict) + "' but 'acceptance.met' is " +
                        (r.acceptance_met ? "true" : "false"),
                    f.Where("verdict"), f.hint());
  }
  return {};
}

}  // namespace

Result<RecordedReport> RecordedReportFromJson(const nlohmann::json& doc, const std::string& file,
                                              const std::string& hint) {
  const JsonFields f(file, hint);
  if (!doc.is_object()) return BadInput("not a JSON object", file, hint);
  RecordedReport r;
  if (doc.contains("output_kind")) {
    auto kind = f.String(doc, "output_kind");
    if (!kind.ok()) return kind.error();
    r.output_kind = kind.value();
  }
  auto counts = f.Object(doc, "counts");
  if (!counts.ok()) return counts.error();
  for (auto [key, out] : {std::pair{"total", &r.total}, std::pair{"accepted", &r.accepted},
                          std::pair{"rejected", &r.rejected}}) {
    auto v = f.Unsigned(*counts.value(), key, "counts");
    if (!v.ok()) return v.error();
    *out = v.value();
  }
  if (r.accepted + r.rejected != r.total || r.accepted > r.total) {
    return BadInput("'counts': accepted " + std::to_string(r.accepted) + " + rejected " +
                        std::to_string(r.rejected) + " != total " + std::to_string(r.total),
                    f.Where("counts"), hint);
  }
  PILOT_TRY(ReadCounts(f, doc, "by_reason", r.by_reason));
  PILOT_TRY(ReadCounts(f, doc, "by_category", r.by_category));
  PILOT_TRY(ReadQuality(f, doc, r));
  PILOT_TRY(ReadFigures(f, doc, r));
  PILOT_TRY(ReadAcceptance(f, doc, r));
  return r;
}

Result<RecordedReport> ReadRecordedReport(FileSystem& fs, const std::filesystem::path& dir,
                                          const std::string& hint) {
  auto text = ReadInsideFolder(fs, dir, kReportJson, limits::kReportBytes);
  if (!text.ok()) return text.error();
  const std::string file = (dir / kReportJson).string();
  auto doc = ParseJson(text.value(), file);
  if (!doc.ok()) return doc.error();
  return RecordedReportFromJson(doc.value(), file, hint);
}

}  // namespace pilot
