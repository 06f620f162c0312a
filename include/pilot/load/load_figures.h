// What a load test's requests add up to (`pilot load`, docs/load.md): the count of each outcome, offered and
// achieved rates, latency percentiles each with the count behind it, goodput, and the SLO verdict with
// LoadGen's early-stopping bound; and the search for the highest rate that meets the SLO.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "pilot/load/batcher.h"

namespace pilot {

// The SLO: a request meets it when it completed with its end-to-end latency at most bound_ms
// and, for a generator, its time to first token at most ttft_ms and its time per output token at
// most tpot_ms (each bound 0: not part of the SLO; at least one is set). The SLO is met when
// `percentile` of the requests meet it, judged at `confidence` (LoadGen's early stopping).
struct LatencySlo {
  double bound_ms = 0;  // end to end
  double ttft_ms = 0, tpot_ms = 0;
  double percentile = 0.99;
  double confidence = 0.99;
  bool Meets(const RequestRecord& r) const;
};

struct PercentileFigure {
  double percentile = 0;  // 0.5, 0.9, 0.95, 0.99, 0.999
  double ms = 0;          // nearest rank over `count` values
  std::size_t count = 0;  // the requests behind it
};

struct LoadFigures {
  std::size_t issued = 0, completed = 0, over_capacity = 0, rejected = 0, timed_out = 0, failed = 0;
  // issued over the issuing window; completed over the duration
  double offered_per_s = 0, achieved_per_s = 0;
  std::vector<PercentileFigure> queue_wait, service, end_to_end;  // of the completed requests
  // A generator's completed requests: output tokens, their rate over the duration, and TTFT
  // (from arrival), TPOT (per request) and ITL (every gap between tokens). Empty otherwise.
  std::uint64_t output_tokens = 0;
  double output_tokens_per_s = 0;
  std::vector<PercentileFigure> ttft, tpot, itl;
  // The SLO: a request meets it when it completed within its bounds (LatencySlo). Refused, timed-out
  // and failed requests do not; rejected ones (their item's own reason) are left out of the verdict.
  std::size_t within_slo = 0;
  double goodput_per_s = 0;  // within_slo over the duration
  bool slo_met = false;      // the percentile meets the bound at the confidence (early stopping)
  std::optional<std::uint64_t> more_needed;   // not met: requests, all within the bound, that would meet it
  std::optional<double> percentile_bound_ms;  // the percentile's bound at the confidence (completed only)
};

// `issue_ms`: from the start to the last request's arrival; `duration_ms`: from the start to
// the last request's end (rates are 0 when either is not above 0).
LoadFigures SummarizeLoad(const std::vector<RequestRecord>& records, double issue_ms, double duration_ms,
                          const LatencySlo& slo);
// The five percentiles (0.5, 0.9, 0.95, 0.99, 0.999), nearest rank, each with the count.
std::vector<PercentileFigure> Percentiles(std::vector<double> values);

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
