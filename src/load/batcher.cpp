#include "pilot/load/batcher.h"

#include <algorithm>
#include <limits>

namespace pilot {

const char* RequestOutcomeName(RequestOutcome outcome) {
  switch (outcome) {
    case RequestOutcome::kCompleted:
      return "completed";
    case RequestOutcome::kOverCapacity:
      return "over_capacity";
    case RequestOutcome::kRejected:
      return "rejected";
    case RequestOutcome::kTimedOut:
      return "timed_out";
    case RequestOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

std::optional<RequestOutcome> RequestOutcomeFromName(std::string_view name) {
  for (RequestOutcome o : {RequestOutcome::kCompleted, RequestOutcome::kOverCapacity,
                           RequestOutcome::kRejected, RequestOutcome::kTimedOut, RequestOutcome::kFailed}) {
    if (name == RequestOutcomeName(o)) return o;
  }
  return std::nullopt;
}

void Batcher::Expire(double now_ms) {
  if (!(s_.deadline_ms > 0)) return;
  while (!queue_.empty() && queue_.front().arrived_ms + s_.deadline_ms <= now_ms) {
    timed_out_.push_back(queue_.front().id);
    queue_.pop_front();
  }
}

bool Batcher::Arrive(std::uint64_t id, double now_ms) {
  Expire(now_ms);
  const std::size_t bound = s_.grow_at_capacity ? std::max(s_.queue_bound, s_.grow_bound) : s_.queue_bound;
  if (queue_.size() >= bound) return false;
  queue_.push_back({id, now_ms});
  return true;
}

std::vector<std::uint64_t> Batcher::TakeBatch(double now_ms, double& wake_ms) {
  Expire(now_ms);
  wake_ms = std::numeric_limits<double>::infinity();
  if (queue_.empty()) return {};
  const std::size_t max_batch = std::max<std::size_t>(1, s_.max_batch);
  const double due = queue_.front().arrived_ms + s_.max_wait_ms;
  if (queue_.size() < max_batch && now_ms < due) {
    wake_ms = due;
    if (s_.deadline_ms > 0) wake_ms = std::min(wake_ms, queue_.front().arrived_ms + s_.deadline_ms);
    return {};
  }
  std::vector<std::uint64_t> batch;
  while (!queue_.empty() && batch.size() < max_batch) {
    batch.push_back(queue_.front().id);
    queue_.pop_front();
  }
  return batch;
}

std::optional<double> Batcher::NextExpiry() const {
  if (!(s_.deadline_ms > 0) || queue_.empty()) return std::nullopt;
  return queue_.front().arrived_ms + s_.deadline_ms;
}

std::vector<std::uint64_t> Batcher::TakeTimedOut() {
  std::vector<std::uint64_t> out;
  out.swap(timed_out_);
  return out;
}

std::vector<RequestRecord> SimulateService(const std::vector<double>& arrivals,
                                           const ServiceSettings& settings,
                                           const std::function<double(std::size_t)>& service_ms) {
  std::vector<RequestRecord> records(arrivals.size());
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    records[i].id = i;
    records[i].arrived_ms = arrivals[i];
  }
  Batcher batcher(settings);
  std::size_t next = 0;  // the next arrival
  double now = 0, busy_until = -std::numeric_limits<double>::infinity();
  auto settle_timeouts = [&] {
    for (std::uint64_t id : batcher.TakeTimedOut()) {
      RequestRecord& r = records[id];
      r.outcome = RequestOutcome::kTimedOut;
      r.finished_ms = r.arrived_ms + settings.deadline_ms;
    }
  };
  while (next < arrivals.size() || batcher.queued() > 0) {
    // Arrivals up to now join the queue (or are refused).
    while (next < arrivals.size() && arrivals[next] <= now) {
      RequestRecord& r = records[next];
      if (!batcher.Arrive(next, arrivals[next])) {
        r.outcome = RequestOutcome::kOverCapacity;
        r.finished_ms = r.arrived_ms;
      }
      ++next;
    }
    double wake = std::numeric_limits<double>::infinity();
    if (now >= busy_until) {
      std::vector<std::uint64_t> batch = batcher.TakeBatch(now, wake);
      settle_timeouts();
      if (!batch.empty()) {
        const double took = service_ms(batch.size());
        const double end = now + std::max(0.0, took);
        for (std::uint64_t id : batch) {
          RequestRecord& r = records[id];
          r.outcome = took < 0 ? RequestOutcome::kFailed : RequestOutcome::kCompleted;
          r.started_ms = now;
          r.finished_ms = end;
          r.batch = batch.size();
        }
        busy_until = end;
        wake = end;
      }
    } else {
      wake = busy_until;
    }
    // The next event: an arrival, the server freeing, or the batcher's own wake-up.
    const double arrival = next < arrivals.size() ? arrivals[next] : std::numeric_limits<double>::infinity();
    const double at = std::min(arrival, wake);
    if (!(at < std::numeric_limits<double>::infinity())) break;
    now = std::max(now, at);
  }
  // Whatever the last wake-up left queued past its deadline.
  double ignored = 0;
  (void)batcher.TakeBatch(std::numeric_limits<double>::infinity(), ignored);
  settle_timeouts();
  return records;
}

}  // namespace pilot
