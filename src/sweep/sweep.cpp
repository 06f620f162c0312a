#include "pilot/sweep/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>

#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/report.h"
#include "pilot/utf8.h"

namespace pilot {

// --- groups ---------------------------------------------------------------------------

Grouping MakeGroups(const std::vector<MeasuredItem>& items, int groups, std::string measure) {
  Grouping g;
  g.measure = std::move(measure);
  if (items.empty() || groups < 1) return g;
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return items[a].length < items[b].length; });
  // Cut points: the ideal quantile positions, each moved to the nearest place where the
  // length changes; cuts that coincide collapse (fewer groups).
  std::vector<std::size_t> cuts;  // exclusive ends in `order`
  const std::size_t n = order.size();
  for (int k = 1; k < groups; ++k) {
    std::size_t ideal = n * static_cast<std::size_t>(k) / static_cast<std::size_t>(groups);
    std::optional<std::size_t> best;
    for (std::size_t d = 0; d <= n; ++d) {
      for (std::size_t c : {ideal >= d ? ideal - d : n + 1, ideal + d}) {
        if (c == 0 || c >= n || (!cuts.empty() && c <= cuts.back())) continue;
        if (items[order[c - 1]].length != items[order[c]].length) {
          best = c;
          break;
        }
      }
      if (best || (ideal < d && ideal + d >= n)) break;
    }
    if (best && (cuts.empty() || *best > cuts.back())) cuts.push_back(*best);
  }
  cuts.push_back(n);
  std::vector<int> group_of(items.size());
  std::size_t begin = 0;
  for (std::size_t gi = 0; gi < cuts.size(); ++gi) {
    LengthGroup lg;
    lg.min_length = items[order[begin]].length;
    lg.max_length = items[order[cuts[gi] - 1]].length;
    for (std::size_t k = begin; k < cuts[gi]; ++k) group_of[order[k]] = static_cast<int>(gi);
    g.groups.push_back(std::move(lg));
    begin = cuts[gi];
  }
  for (std::size_t i = 0; i < items.size(); ++i)
    g.groups[static_cast<std::size_t>(group_of[i])].ids.push_back(items[i].id);
  for (auto& lg : g.groups) lg.items = lg.ids.size();
  return g;
}

// --- one cell ------------------------------------------------------------------------------

CellMeasure RunCell(Clock& clock, Stage& stage, const std::vector<std::string>& ids,
                    const std::vector<std::string>& inputs, int group, int batch_size, int repeats) {
  CellMeasure c;
  c.group = group;
  c.batch_size = batch_size;
  c.repeats = repeats;
  c.group_items = ids.size();
  if (ids.empty() || batch_size < 1) {
    c.limit = kLimitStageError;
    c.error = "the group has no items";
    return c;
  }
  if (Status declared = CheckStageDeclaresOutput(stage.Describe()); !declared.ok()) {
    c.limit = kLimitStageError;
    c.error = declared.error().what;
    return c;
  }
  const std::size_t b = static_cast<std::size_t>(batch_size);
  c.cycled = b > ids.size();
  // One pass: the group in batches of b; a group smaller than b is one batch of b, cycled. A
  // stage that refills its slots (a generator's in-flight batching) takes its window of several
  // batches per call, b of them decoded at once.
  const std::size_t pass = c.cycled ? b : ids.size();
  const std::size_t per_call = std::max<std::size_t>(b, stage.InputsPerCall(b));
  const OutputKindSpec& kind = *stage.Describe().output;
  std::vector<double> latencies;
  // A generator's completions over the timed repeats.
  const bool generates = kind.generates;
  std::vector<double> ttft, tpot;
  CellGeneration gen;
  double slot_steps = 0;
  bool slot_steps_known = true;
  auto run_batch = [&](std::size_t begin, std::size_t end, bool keep, std::size_t repeat, bool& failed) {
    std::vector<std::string_view> views;
    std::vector<PreparedInput> features(end - begin);
    std::vector<const PreparedInput*> prepared;
    bool all_prepared = true;
    const double t0 = clock.MonotonicSeconds();
    for (std::size_t k = begin; k < end; ++k) {
      views.emplace_back(inputs[k % ids.size()]);
      if (all_prepared && stage.Prepare(views.back(), features[k - begin])) {
        features[k - begin].key = ids[k % ids.size()];
        prepared.push_back(&features[k - begin]);
      } else {
        all_prepared = false;
      }
    }
    BatchOutput out;
    try {
      out = all_prepared ? stage.ProcessPrepared(views, prepared) : stage.Process(views);
    } catch (const std::bad_alloc&) {
      out = BatchOutput::Failed("out of memory (std::bad_alloc)", true);
    } catch (const std::exception& e) {
      out = BatchOutput::Failed(e.what(), false);
    }
    const double ms = (clock.MonotonicSeconds() - t0) * 1000.0;
    if (!out.ok || out.items.size() != views.size()) {
      failed = true;
      c.limit = out.ok ? kLimitStageError : (out.out_of_memory ? kLimitOutOfMemory : kLimitStageError);
      c.error = out.ok ? "the stage returned " + std::to_string(out.items.size()) + " outputs for " +
                             std::to_string(views.size()) + " inputs"
                       : TruncateUtf8(out.error, 2000);
      return;
    }
    if (!keep) return;  // the warm-up
    latencies.push_back(ms);
    ++c.batches;
    c.tokens += out.input_tokens;
    c.padded_tokens += out.padded_tokens;
    for (std::size_t k = 0; k < out.items.size(); ++k) {
      const ItemOutput& o = out.items[k];
      (o.ok ? c.completed : c.failed) += 1;
      if (generates && o.ok && o.completion) {
        const Completion& cp = *o.completion;
        gen.prompt_tokens += o.tokens.value_or(0);
        gen.completion_tokens += cp.ids.size();
        gen.kv_cache_bytes = std::max(gen.kv_cache_bytes, cp.kv_cache_bytes);
        ttft.push_back(cp.ttft_ms);
        if (cp.tpot_ms) tpot.push_back(*cp.tpot_ms);
        if (cp.slot_steps) {
          slot_steps += *cp.slot_steps;
        } else {
          slot_steps_known = false;
        }
      }
      CellOutcome oc;
      oc.id = ids[(begin + k) % ids.size()];
      oc.ok = o.ok;
      if (!o.ok) {
        oc.error = TruncateUtf8(o.error, 500);
        if (c.error.empty()) c.error = oc.id + ": " + oc.error;
      } else {
        if (kind.labels) {
          oc.label = o.label;
          oc.confidence = o.confidence;
        }
        if (kind.vectors) oc.vector = o.vector;
        if (generates && o.completion) {
          oc.generated = true;
          oc.completion = o.completion->ids;
          oc.near_ties = o.completion->near_tie_steps;
        }
      }
      const std::size_t position = begin + k;
      if (repeat == 0) {
        c.outcomes.push_back(std::move(oc));
      } else if (position < c.outcomes.size()) {
        const CellOutcome& first = c.outcomes[position];
        bool same = first.ok == oc.ok && first.label == oc.label && first.error == oc.error &&
                    std::fabs(first.confidence - oc.confidence) <= kConfidenceTolerance &&
                    first.vector.size() == oc.vector.size() && first.generated == oc.generated;
        if (same && oc.generated) {
          if (auto at = FirstDivergence(first, oc)) {
            same = std::binary_search(first.near_ties.begin(), first.near_ties.end(), *at) ||
                   std::binary_search(oc.near_ties.begin(), oc.near_ties.end(), *at);
          }
        }
        for (std::size_t d = 0; same && d < oc.vector.size(); ++d) {
          same = std::fabs(static_cast<double>(first.vector[d]) - oc.vector[d]) <= kVectorTolerance;
        }
        if (!same) ++c.repeat_mismatches;
      }
    }
  };
  bool failed = false;
  stage.SetConcurrency(b);
  run_batch(0, std::min(per_call, pass), /*keep=*/false, 0, failed);  // warm-up
  const double start = clock.MonotonicSeconds();
  double repeat_start = start, now = start;
  for (int r = 0; r < repeats && !failed; ++r) {
    for (std::size_t begin = 0; begin < pass && !failed; begin += per_call) {
      run_batch(begin, std::min(pass, begin + per_call), true, static_cast<std::size_t>(r), failed);
    }
    now = clock.MonotonicSeconds();
    c.repeat_seconds.push_back(now - repeat_start);
    repeat_start = now;
  }
  c.wall_seconds = now - start;
  const double done = static_cast<double>(c.completed + c.failed);
  c.items_per_second = c.wall_seconds > 0 ? done / c.wall_seconds : 0;
  if (c.padded_tokens > 0 && c.wall_seconds > 0)
    c.tokens_per_second = static_cast<double>(c.tokens) / c.wall_seconds;
  c.p50_ms = Percentile(latencies, 50);
  c.p90_ms = Percentile(latencies, 90);
  c.p95_ms = Percentile(latencies, 95);
  c.p99_ms = Percentile(latencies, 99);
  c.peak_rss_mb = PeakRssMegabytes();
  c.peak_device_mb = stage.PeakDeviceMemoryMb();
  if (generates) {
    gen.completion_tokens_per_second =
        c.wall_seconds > 0 ? static_cast<double>(gen.completion_tokens) / c.wall_seconds : 0;
    gen.ttft_p50_ms = Percentile(ttft, 50);
    gen.ttft_p99_ms = Percentile(ttft, 99);
    gen.tpot_p50_ms = Percentile(tpot, 50);
    gen.tpot_p99_ms = Percentile(tpot, 99);
    const std::uint64_t decode_tokens = gen.completion_tokens - ttft.size();
    if (slot_steps_known && slot_steps > 0)
      gen.occupancy = std::min(1.0, static_cast<double>(decode_tokens) / slot_steps);
    c.generation = gen;
  }
  return c;
}

}  // namespace pilot
