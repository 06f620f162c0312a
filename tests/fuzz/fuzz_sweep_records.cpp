// Fuzzes what a sweep folder (and a run's batch plan) holds, as verify, resume and
// `run --batch-plan` read it from a folder that may be hostile: the first byte picks the
// parser (0 a cell file, 1 groups.json, 2 a batch plan, 3 the settings), the rest is the text.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/batch_plan.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/sweep/sweep_records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  if (size == 0) return 0;
  const int which = data[0] % 4;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  {
    // The key-order-keeping parse (a sweep's record, the documents verify rebuilds) refuses
    // exactly what ParseJson refuses, and keeps the same document.
    auto plain = ParseJson(text, "fuzz");
    auto ordered = ParseOrderedJson(text, "fuzz");
    PILOT_FUZZ_CHECK(plain.ok() == ordered.ok());
    if (plain.ok()) PILOT_FUZZ_CHECK(nlohmann::json(ordered.value()) == plain.value());
  }
  if (which == 0) {
    auto c = CellFromJson(text, "fuzz/cell.json");
    if (!c.ok()) {
      PILOT_FUZZ_CHECK(!c.error().what.empty() && c.error().where == "fuzz/cell.json");
      return 0;
    }
    const CellMeasure& m = c.value();
    PILOT_FUZZ_CHECK(m.group >= 1 && m.group <= kMaxGroups);
    PILOT_FUZZ_CHECK(m.batch_size >= 1 && m.batch_size <= kMaxBatchSize);
    PILOT_FUZZ_CHECK(m.repeats >= 1 && m.repeats <= kMaxRepeats);
    PILOT_FUZZ_CHECK(m.outcomes.size() <=
                     std::max<std::size_t>(m.group_items, static_cast<std::size_t>(m.batch_size)));
    for (double v : {m.wall_seconds, m.items_per_second, m.p50_ms, m.p95_ms, m.p99_ms, m.peak_rss_mb}) {
      PILOT_FUZZ_CHECK(std::isfinite(v) && v >= 0);
    }
    if (m.generation) {
      const CellGeneration& g = *m.generation;
      PILOT_FUZZ_CHECK(g.ttft_p50_ms <= g.ttft_p99_ms && g.tpot_p50_ms <= g.tpot_p99_ms &&
                       g.ttft_p50_ms >= 0);
      PILOT_FUZZ_CHECK(std::isfinite(g.completion_tokens_per_second) && g.completion_tokens_per_second >= 0);
      if (g.occupancy) PILOT_FUZZ_CHECK(*g.occupancy >= 0 && *g.occupancy <= 1);
    }
    for (const auto& o : m.outcomes) {
      PILOT_FUZZ_CHECK(fuzz::IsItemId(o.id));
      PILOT_FUZZ_CHECK(o.near_ties.size() <= o.completion.size());
      for (std::size_t k = 0; k < o.near_ties.size(); ++k) {
        PILOT_FUZZ_CHECK(o.near_ties[k] < o.completion.size() &&
                         (k == 0 || o.near_ties[k - 1] < o.near_ties[k]));
      }
      PILOT_FUZZ_CHECK(o.vector.size() <= limits::kEmbeddingDim);
      for (float x : o.vector) PILOT_FUZZ_CHECK(std::isfinite(x));
    }
    // What pilot writes back parses to the same cell.
    auto again = CellFromJson(PrettyJson(CellToJson(m)), "again");
    PILOT_FUZZ_CHECK(again.ok() && again.value().outcomes.size() == m.outcomes.size());
    PILOT_FUZZ_CHECK(again.value().generation.has_value() == m.generation.has_value());
    for (std::size_t k = 0; k < m.outcomes.size(); ++k) {
      PILOT_FUZZ_CHECK(again.value().outcomes[k].completion == m.outcomes[k].completion &&
                       again.value().outcomes[k].near_ties == m.outcomes[k].near_ties);
    }
  } else if (which == 1) {
    auto g = GroupingFromJson(text, "fuzz/groups.json");
    if (!g.ok()) return 0;
    const auto& groups = g.value().groups;
    PILOT_FUZZ_CHECK(groups.size() <= static_cast<std::size_t>(kMaxGroups));
    for (std::size_t i = 0; i < groups.size(); ++i) {
      PILOT_FUZZ_CHECK(groups[i].min_length <= groups[i].max_length && !groups[i].ids.empty());
      if (i > 0) PILOT_FUZZ_CHECK(groups[i - 1].max_length < groups[i].min_length);
      for (const auto& id : groups[i].ids) PILOT_FUZZ_CHECK(fuzz::IsItemId(id));
    }
  } else if (which == 2) {
    auto p = ParseBatchPlan(text, "fuzz/batch-plan.json");
    if (!p.ok()) return 0;
    const BatchPlan& bp = p.value();
    PILOT_FUZZ_CHECK(!bp.batch_sizes.empty() && bp.batch_sizes.size() == bp.max_lengths.size());
    PILOT_FUZZ_CHECK(bp.batch_sizes.size() <= static_cast<std::size_t>(kMaxGroups));
    for (std::size_t i = 0; i < bp.batch_sizes.size(); ++i) {
      PILOT_FUZZ_CHECK(bp.batch_sizes[i] >= 1 && bp.batch_sizes[i] <= kMaxBatchSize);
      if (i > 0) PILOT_FUZZ_CHECK(bp.max_lengths[i - 1] < bp.max_lengths[i]);
    }
    PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(bp.model_sha256) && fuzz::IsLowerHex64(bp.sweep_fingerprint));
  } else {
    auto j = ParseJson(text, "fuzz/settings");
    if (!j.ok()) return 0;
    auto s = SweepSettingsFromJson(j.value(), "fuzz/settings");
    if (!s.ok()) return 0;
    PILOT_FUZZ_CHECK(CheckSweepSettings(s.value()).ok());
  }
  return 0;
}
