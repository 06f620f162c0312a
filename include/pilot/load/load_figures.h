// What a load test's requests add up to (groundwork of `pilot load`, issue 33, not yet a
// command): the count of each outcome, offered and achieved rates, latency percentiles each
// with the count behind it, goodput, and the SLO verdict with LoadGen's early-stopping bound;
// and the search for the highest rate that meets the SLO.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "pilot/load/batcher.h"

namespace pilot {

// The SLO on end-to-end latency: its `percentile` at most `bound_ms`, judged at `confidence`.
struct LatencySlo {
  double bound_ms = 0;  // > 0
  double percentile = 0.99;
  double confidence = 0.99;
};

struct PercentileFigure {
  double percentile = 0;  // 0.5, 0.9, 0.95, 0.99, 0.999
  double ms = 0;          // nearest rank over `count` values
  std::size_t count = 0;  // the requests behind it
};

struct LoadFigures {
  std::size_t issued = 0, completed = 0, over_capacity = 0, timed_out = 0, failed = 0;
  double offered_per_s = 0, achieved_per_s = 0;          // issued and completed over the duration
  std::vector<PercentileFigure> queue_wait, end_to_end;  // of the completed requests
  // The SLO: a request meets it when it completed within bound_ms; any other outcome does not.
  std::size_t within_slo = 0;
  double goodput_per_s = 0;  // within_slo over the duration
  bool slo_met = false;      // the percentile meets the bound at the confidence (early stopping)
  std::optional<std::uint64_t> more_needed;   // not met: requests, all within the bound, that would meet it
  std::optional<double> percentile_bound_ms;  // the percentile's bound at the confidence (completed only)
};

// `duration_ms` > 0: from the first issue to the end of the run.
LoadFigures SummarizeLoad(const std::vector<RequestRecord>& records, double duration_ms,
                          const LatencySlo& slo);

// One rate tried by the search, and whether it met the SLO.
struct RateTrial {
  double rate = 0;
  bool met = false;
};
// The highest rate that meets the SLO, by LoadGen's kind of search: from `start` the rate
// doubles until one misses, then the last met and the first missed are bisected until they are
// within `precision` (relative) of each other, in at most `max_trials` trials. `trials` holds
// every rate tried, in order. nullopt when even `start` misses.
std::optional<double> FindPeakRate(double start, double precision, int max_trials,
                                   const std::function<bool(double)>& meets, std::vector<RateTrial>& trials);

}  // namespace pilot
