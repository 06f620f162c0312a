#include "pilot/load/load_figures.h"

#include <algorithm>
#include <cmath>

#include "pilot/load/percentile_bound.h"

namespace pilot {

namespace {

std::vector<PercentileFigure> Percentiles(std::vector<double> values) {
  std::vector<PercentileFigure> out;
  std::sort(values.begin(), values.end());
  for (double p : {0.5, 0.9, 0.95, 0.99, 0.999}) {
    PercentileFigure f;
    f.percentile = p;
    f.count = values.size();
    if (!values.empty()) {
      // Nearest rank: the smallest value with at least p of the values at or below it.
      const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
      f.ms = values[std::max<std::size_t>(rank, 1) - 1];
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace

LoadFigures SummarizeLoad(const std::vector<RequestRecord>& records, double duration_ms,
                          const LatencySlo& slo) {
  LoadFigures f;
  std::vector<double> waits, e2e;
  for (const RequestRecord& r : records) {
    ++f.issued;
    switch (r.outcome) {
      case RequestOutcome::kCompleted:
        ++f.completed;
        waits.push_back(r.queue_wait_ms());
        e2e.push_back(r.end_to_end_ms());
        if (r.end_to_end_ms() <= slo.bound_ms) ++f.within_slo;
        break;
      case RequestOutcome::kOverCapacity:
        ++f.over_capacity;
        break;
      case RequestOutcome::kTimedOut:
        ++f.timed_out;
        break;
      case RequestOutcome::kFailed:
        ++f.failed;
        break;
    }
  }
  const double seconds = duration_ms > 0 ? duration_ms / 1000.0 : 0;
  if (seconds > 0) {
    f.offered_per_s = static_cast<double>(f.issued) / seconds;
    f.achieved_per_s = static_cast<double>(f.completed) / seconds;
    f.goodput_per_s = static_cast<double>(f.within_slo) / seconds;
  }
  f.queue_wait = Percentiles(waits);
  f.percentile_bound_ms = PercentileUpperBound(e2e, slo.percentile, slo.confidence);
  f.end_to_end = Percentiles(std::move(e2e));
  const PercentileVerdict v =
      EarlyStopping(f.issued, f.issued - f.within_slo, slo.percentile, slo.confidence);
  f.slo_met = v.met;
  if (!v.met) f.more_needed = v.more_needed;
  return f;
}

std::optional<double> FindPeakRate(double start, double precision, int max_trials,
                                   const std::function<bool(double)>& meets, std::vector<RateTrial>& trials) {
  trials.clear();
  auto trial = [&](double rate) {
    const bool met = meets(rate);
    trials.push_back({rate, met});
    return met;
  };
  if (!(start > 0) || max_trials < 1 || !trial(start)) return std::nullopt;
  double good = start, bad = 0;
  while (static_cast<int>(trials.size()) < max_trials) {
    if (bad == 0) {
      const double next = good * 2;
      if (!std::isfinite(next)) break;
      (trial(next) ? good : bad) = next;
      continue;
    }
    if (bad - good <= precision * good) break;
    const double mid = good + (bad - good) / 2;
    (trial(mid) ? good : bad) = mid;
  }
  return good;
}

}  // namespace pilot
