#include "pilot/load/load_driver.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

namespace pilot {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

RealLoadClock::RealLoadClock(Clock& clock) : clock_(clock), origin_s_(clock.MonotonicSeconds()) {}

double RealLoadClock::NowMs() { return (clock_.MonotonicSeconds() - origin_s_) * 1000.0; }

void RealLoadClock::SleepUntilMs(double at_ms) {
  const double now = NowMs();
  if (!(at_ms > now)) return;
  clock_.SleepUntilMonotonic(origin_s_ + std::min(at_ms, now + 50.0) / 1000.0);
}

StepIssuing::StepIssuing(const LoadStep& step, std::size_t n_clients)
    : next_arrival(kNever),
      step_(step),
      schedule_(step.arrivals, step.seed),
      most_(std::min<std::uint64_t>(step.requests > 0 ? step.requests : kMaxStepRequests, kMaxStepRequests)) {
  if (step.mode == LoadMode::kRate) {
    Advance();
  } else {
    for (std::size_t c = 0; c < std::max<std::size_t>(1, n_clients); ++c) clients.push(0.0);
  }
}

bool StepIssuing::May(double at, std::size_t issued) const {
  return issuing_ && issued < most_ && (!(step_.duration_ms > 0) || at < step_.duration_ms);
}

bool StepIssuing::Stop(double now, std::size_t issued) {
  const bool cut = step_.mode == LoadMode::kRate
                       ? next_arrival < kNever
                       : issued < most_ && (!(step_.duration_ms > 0) || now < step_.duration_ms);
  issuing_ = false;
  return cut;
}

LoadStepResult RunLoadStep(const LoadStep& step, const LoadTarget& target, LoadClock& clock,
                           const std::function<bool()>& should_stop, const LoadTick& on_tick) {
  LoadStepResult out;
  auto& records = out.records;
  const std::size_t items = target.rejection.size();
  if (items == 0) return out;
  Batcher batcher(target.service);
  StepIssuing is(step, step.concurrency);
  const double start = clock.NowMs();
  // Once a sleep reached its target, the time is at least that target, whatever rounding the
  // subtraction from the start gives.
  double reached = 0;
  auto now_rel = [&] { return std::max(clock.NowMs() - start, reached); };
  auto may_issue = [&](double at) { return is.May(at, records.size()); };
  // Open loop: the schedule's next arrival. Closed loop: each client's next arrival, the
  // earliest on top.
  double& next_arrival = is.next_arrival;
  auto& clients = is.clients;
  std::size_t done = 0;  // requests with their outcome
  auto ended = [&](double at) {
    ++done;
    is.Ended(at);
  };
  double next_tick = kLoadTickMs;
  auto issue = [&](double at) {
    RequestRecord r;
    r.id = records.size();
    r.item = static_cast<std::size_t>(r.id % items);
    r.arrived_ms = r.started_ms = r.finished_ms = at;
    out.issue_ms = std::max(out.issue_ms, at);
    const std::string& rejection = target.rejection[r.item];
    if (!rejection.empty()) {
      r.outcome = RequestOutcome::kRejected;
      r.reason = rejection;
      records.push_back(std::move(r));
      ended(at);
      return;
    }
    const bool queued = batcher.Arrive(r.id, at);
    if (!queued) r.outcome = RequestOutcome::kOverCapacity;
    records.push_back(std::move(r));
    if (!queued) ended(at);
  };
  auto settle_timeouts = [&] {
    for (std::uint64_t id : batcher.TakeTimedOut()) {
      RequestRecord& r = records[id];
      r.outcome = RequestOutcome::kTimedOut;
      r.finished_ms = r.started_ms = r.arrived_ms + target.service.deadline_ms;
      ended(r.finished_ms);
    }
  };
  while (true) {
    if (is.issuing() && should_stop && should_stop()) {
      // Interrupted: only when it cut the issuing short (a stop while the queue drains is not).
      out.interrupted = is.Stop(now_rel(), records.size());
      batcher.Flush();  // what is queued is served at once, not after max_wait
    }
    const double now = now_rel();
    // The arrivals due by now, in time order.
    if (step.mode == LoadMode::kRate) {
      while (next_arrival <= now && may_issue(next_arrival)) {
        issue(next_arrival);
        settle_timeouts();
        is.Advance();
      }
      if (!may_issue(next_arrival)) next_arrival = kNever;
    } else {
      while (!clients.empty() && clients.top() <= now) {
        const double at = clients.top();
        // A queued request whose deadline comes first times out first: its client's next request
        // may arrive before this one, and the queue stays in arrival order.
        if (const auto expiry = batcher.NextExpiry(); expiry && *expiry <= at) {
          const std::size_t before = batcher.queued();
          batcher.ExpireUntil(*expiry);
          if (batcher.queued() < before) {
            settle_timeouts();
            continue;
          }
        }
        clients.pop();
        if (may_issue(at)) issue(at);
        settle_timeouts();
      }
      if (!is.issuing() || records.size() >= is.most()) clients = {};
    }
    if (on_tick && now >= next_tick) {
      on_tick(now, records.size(), done);
      next_tick = now + kLoadTickMs;
    }
    double wake = kNever;
    std::vector<std::uint64_t> batch = batcher.TakeBatch(now, wake);
    settle_timeouts();
    if (!batch.empty()) {
      std::vector<std::size_t> batch_items;
      for (std::uint64_t id : batch) batch_items.push_back(records[id].item);
      const double t0 = now_rel();
      std::vector<ServedItem> served = target.serve(batch_items);
      const double t1 = now_rel();
      const bool whole = served.size() == batch.size();
      for (std::size_t k = 0; k < batch.size(); ++k) {
        RequestRecord& r = records[batch[k]];
        r.started_ms = t0;
        r.finished_ms = t1;
        r.batch = batch.size();
        if (!whole) {
          r.outcome = RequestOutcome::kFailed;
          r.reason = "stage_error";
          ended(t1);
          continue;
        }
        ServedItem& s = served[k];
        r.outcome = s.outcome == RequestOutcome::kCompleted || s.outcome == RequestOutcome::kRejected
                        ? s.outcome
                        : RequestOutcome::kFailed;
        r.reason = r.outcome == RequestOutcome::kCompleted ? std::string() : std::move(s.reason);
        if (r.outcome == RequestOutcome::kCompleted && !s.token_ms.empty()) {
          r.output_tokens = s.output_tokens;
          r.ttft_ms = t0 + s.token_ms.front() - r.arrived_ms;
          for (std::size_t t = 1; t < s.token_ms.size(); ++t)
            r.itl_ms.push_back(s.token_ms[t] - s.token_ms[t - 1]);
          if (!r.itl_ms.empty()) {
            r.tpot_ms = (s.token_ms.back() - s.token_ms.front()) / static_cast<double>(s.token_ms.size() - 1);
          }
        } else if (r.outcome == RequestOutcome::kCompleted) {
          r.output_tokens = s.output_tokens;
        }
        ended(t1);
      }
      continue;
    }
    // Nothing to start now: sleep to the next arrival, the batcher's wake-up or a client's turn.
    double next = std::min(wake, next_arrival);
    if (step.mode == LoadMode::kConcurrency && !clients.empty()) next = std::min(next, clients.top());
    if (!(next < kNever)) break;  // nothing queued, nothing more to issue: the step is over
    if (on_tick) next = std::min(next, next_tick);
    clock.SleepUntilMs(start + next);
    if (clock.NowMs() - start >= next - 1e-6) reached = std::max(reached, next);
  }
  for (const RequestRecord& r : records) out.duration_ms = std::max(out.duration_ms, r.finished_ms);
  return out;
}

}  // namespace pilot
