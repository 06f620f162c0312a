// Fuzzes ParseAdaptJournal (an adaptation folder's data/journal.jsonl): an ok state is
// consistent with the bytes it was parsed from, its records read back as written, and the
// checkpoint selection (kept, best, to prune) holds what adapt_records.h promises.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/adapt/adapt_params.h"
#include "pilot/adapt/adapt_records.h"
#include "pilot/json_util.h"

namespace {

using namespace pilot;

// a/b above c/d, exactly (an empty evaluation counts as 0/1).
bool Above(const EvalSummary& a, const EvalSummary& b) {
  const std::uint64_t at = a.total == 0 ? 1 : a.total, bt = b.total == 0 ? 1 : b.total;
  return std::uint64_t{a.correct} * bt > std::uint64_t{b.correct} * at;
}

// `record.ToJson()` written as a line and read back gives the same JSON.
template <typename T>
void CheckReadsBack(const T& record) {
  auto j = ParseJson(JsonLine(record.ToJson()), "fuzz/round-trip");
  PILOT_FUZZ_CHECK(j.ok());
  auto back = T::FromJson(j.value(), "fuzz/round-trip");
  PILOT_FUZZ_CHECK(back.ok());
  PILOT_FUZZ_CHECK(back.value().ToJson() == record.ToJson());
}

void CheckEval(const EvalSummary& e, std::size_t total) {
  PILOT_FUZZ_CHECK(e.total == total && e.correct <= e.total);
  PILOT_FUZZ_CHECK(e.per_label.size() <= kMaxAdaptLabels);
  std::size_t correct = 0, sum = 0;
  for (const auto& [label, counts] : e.per_label) {
    PILOT_FUZZ_CHECK(!label.empty() && label.size() <= 128);
    PILOT_FUZZ_CHECK(counts.first <= counts.second);
    correct += counts.first;
    sum += counts.second;
  }
  PILOT_FUZZ_CHECK(correct == e.correct && sum == e.total);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseAdaptJournal(text, "fuzz/data/journal.jsonl");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    PILOT_FUZZ_CHECK(parsed.error().kind == ErrorKind::kBadInput);
    return 0;
  }
  const AdaptJournalState& st = parsed.value();
  // A journal without a whole header record is refused; whole records end with a newline
  // and what follows them is the torn record, if any.
  PILOT_FUZZ_CHECK(st.records >= 1);
  PILOT_FUZZ_CHECK(st.valid_bytes > 0 && st.valid_bytes <= size);
  PILOT_FUZZ_CHECK(text[st.valid_bytes - 1] == '\n');
  PILOT_FUZZ_CHECK(st.torn_bytes == size - st.valid_bytes);
  PILOT_FUZZ_CHECK(st.sessions < st.records);

  const AdaptJournalHeader& h = st.header;
  PILOT_FUZZ_CHECK(h.version == kAdaptJournalVersion);
  PILOT_FUZZ_CHECK(fuzz::IsItemId(h.run_id));
  for (const std::string* sha : {&h.params_sha256, &h.train_manifest_sha256, &h.eval_manifest_sha256,
                                 &h.base_model_sha256, &h.train_accounting_sha256}) {
    PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(*sha));
  }
  PILOT_FUZZ_CHECK(h.train_manifest_copy == "data/train-manifest.json" ||
                   h.train_manifest_copy == "data/train-manifest.jsonl");
  PILOT_FUZZ_CHECK(h.eval_manifest_copy == "data/eval-manifest.json" ||
                   h.eval_manifest_copy == "data/eval-manifest.jsonl");
  PILOT_FUZZ_CHECK(h.train_used <= h.train_items && h.eval_used <= h.eval_items &&
                   h.eval_used <= kMaxAdaptEvalItems);
  PILOT_FUZZ_CHECK(h.total_steps >= 1 && h.total_steps <= kMaxAdaptSteps && h.steps_per_epoch >= 1);
  PILOT_FUZZ_CHECK(h.threads >= 1 && h.threads <= kMaxAdaptThreads);
  PILOT_FUZZ_CHECK(std::isfinite(h.started_unix) && h.started_unix >= 0);
  CheckReadsBack(h);

  if (st.baseline) {
    const AdaptBaseline& b = *st.baseline;
    CheckEval(b.eval, h.eval_used);
    PILOT_FUZZ_CHECK(b.predictions.size() == b.eval.total && b.confidences.size() == b.eval.total);
    for (double c : b.confidences) PILOT_FUZZ_CHECK(c >= 0 && c <= 1);
    CheckReadsBack(b);
  }

  PILOT_FUZZ_CHECK(st.checkpoints.size() <= kMaxAdaptCheckpointRecords);
  std::set<std::string> files;
  std::uint64_t previous = 0;
  for (const AdaptCheckpointRecord& c : st.checkpoints) {
    PILOT_FUZZ_CHECK(c.step > previous && c.step <= h.total_steps);
    PILOT_FUZZ_CHECK(c.losses.size() <= c.step - previous);
    previous = c.step;
    PILOT_FUZZ_CHECK(c.file == CheckpointFileName(c.step));
    const std::string dir = std::string(kAdaptCheckpointDir) + "/";
    PILOT_FUZZ_CHECK(c.file.compare(0, dir.size(), dir) == 0 &&
                     IsCheckpointFileName(c.file.substr(dir.size())));
    PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(c.sha256) && fuzz::IsLowerHex64(c.params_digest));
    for (double l : c.losses) PILOT_FUZZ_CHECK(std::isfinite(l));
    PILOT_FUZZ_CHECK(std::isfinite(c.at_unix) && c.at_unix >= 0 && std::isfinite(c.write_ms) &&
                     c.write_ms >= 0);
    CheckEval(c.eval, h.eval_used);
    files.insert(c.file);
  }
  for (const std::string& f : st.pruned) PILOT_FUZZ_CHECK(files.count(f) == 1);
  if (!st.checkpoints.empty()) CheckReadsBack(st.checkpoints.back());
  PILOT_FUZZ_CHECK(std::isfinite(st.training_seconds) && st.training_seconds >= 0);

  // Kept: the recorded minus the pruned, in step order. Best: a kept one that no kept one
  // beats, and no earlier one ties.
  const auto kept = KeptCheckpoints(st);
  PILOT_FUZZ_CHECK(kept.size() == st.checkpoints.size() - st.pruned.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    PILOT_FUZZ_CHECK(st.pruned.count(kept[i]->file) == 0);
    if (i > 0) PILOT_FUZZ_CHECK(kept[i - 1]->step < kept[i]->step);
  }
  const AdaptCheckpointRecord* best = BestCheckpoint(st);
  PILOT_FUZZ_CHECK((best == nullptr) == kept.empty());
  if (best) {
    PILOT_FUZZ_CHECK(std::find(kept.begin(), kept.end(), best) != kept.end());
    for (const AdaptCheckpointRecord* c : kept) {
      PILOT_FUZZ_CHECK(!Above(c->eval, best->eval));
      if (c->step < best->step) PILOT_FUZZ_CHECK(Above(best->eval, c->eval));
    }
  }
  for (int keep_last : {0, 1, 2}) {
    const auto prune = CheckpointsToPrune(st, keep_last);
    const std::size_t last = std::min<std::size_t>(kept.size(), static_cast<std::size_t>(keep_last));
    const bool best_among_last =
        best && std::find(kept.end() - static_cast<std::ptrdiff_t>(last), kept.end(), best) != kept.end();
    PILOT_FUZZ_CHECK(prune.size() == kept.size() - last - (best && !best_among_last ? 1 : 0));
    for (std::size_t i = 0; i < prune.size(); ++i) {
      PILOT_FUZZ_CHECK(files.count(prune[i]) == 1 && st.pruned.count(prune[i]) == 0);
      PILOT_FUZZ_CHECK(!best || prune[i] != best->file);
      if (i > 0) PILOT_FUZZ_CHECK(prune[i - 1] < prune[i]);  // step order: 8+ digit names sort by step
    }
  }
  return 0;
}
