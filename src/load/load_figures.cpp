#include "pilot/load/load_figures.h"

#include <algorithm>
#include <cmath>

#include "pilot/load/percentile_bound.h"

namespace pilot {

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

bool LatencySlo::Meets(const RequestRecord& r) const {
  if (r.outcome != RequestOutcome::kCompleted) return false;
  if (bound_ms > 0 && !(r.end_to_end_ms() <= bound_ms)) return false;
  if (ttft_ms > 0 && !(r.ttft_ms && *r.ttft_ms <= ttft_ms)) return false;
  if (tpot_ms > 0 && r.tpot_ms && !(*r.tpot_ms <= tpot_ms)) return false;  // one token: no TPOT to miss
  return true;
}

LoadFigures SummarizeLoad(const std::vector<RequestRecord>& records, double issue_ms, double duration_ms,
                          const LatencySlo& slo) {
  LoadFigures f;
  std::vector<double> waits, service, e2e, ttft, tpot, itl;
  for (const RequestRecord& r : records) {
    ++f.issued;
    switch (r.outcome) {
      case RequestOutcome::kCompleted:
        ++f.completed;
        waits.push_back(r.queue_wait_ms());
        service.push_back(r.finished_ms - r.started_ms);
        e2e.push_back(r.end_to_end_ms());
        if (slo.Meets(r)) ++f.within_slo;
        f.output_tokens += r.output_tokens;
        if (r.ttft_ms) ttft.push_back(*r.ttft_ms);
        if (r.tpot_ms) tpot.push_back(*r.tpot_ms);
        itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
        break;
      case RequestOutcome::kOverCapacity:
        ++f.over_capacity;
        break;
      case RequestOutcome::kRejected:
        ++f.rejected;
        break;
      case RequestOutcome::kTimedOut:
        ++f.timed_out;
        break;
      case RequestOutcome::kFailed:
        ++f.failed;
        break;
    }
  }
  if (issue_ms > 0) f.offered_per_s = static_cast<double>(f.issued) / (issue_ms / 1000.0);
  if (duration_ms > 0) {
    const double seconds = duration_ms / 1000.0;
    f.achieved_per_s = static_cast<double>(f.completed) / seconds;
    f.goodput_per_s = static_cast<double>(f.within_slo) / seconds;
    f.output_tokens_per_s = static_cast<double>(f.output_tokens) / seconds;
  }
  f.queue_wait = Percentiles(waits);
  f.service = Percentiles(std::move(service));
  if (!ttft.empty()) {
    f.ttft = Percentiles(std::move(ttft));
    f.tpot = Percentiles(std::move(tpot));
    f.itl = Percentiles(std::move(itl));
  }
  if (slo.bound_ms > 0) f.percentile_bound_ms = PercentileUpperBound(e2e, slo.percentile, slo.confidence);
  f.end_to_end = Percentiles(std::move(e2e));
  // Judged over the requests the service had to serve: a request rejected for its item's own reason
  // was answered, and is neither within the SLO nor against it.
  const std::uint64_t judged = f.issued - f.rejected;
  const PercentileVerdict v = EarlyStopping(judged, judged - f.within_slo, slo.percentile, slo.confidence);
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
