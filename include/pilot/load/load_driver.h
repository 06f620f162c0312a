// One step of a load test (docs/load.md): requests issued on a schedule (an arrival process at a
// rate) or by a number of clients (each issuing its next request when its last one ends), through
// the Batcher's queue to one server that serves a batch at a time. One thread does it all: a
// request's arrival is its scheduled time, whenever the server gets to it, so that a busy server
// never delays the clock its latency is measured from (no coordinated omission). Time is a
// LoadClock's: the real one (clock_nanosleep on CLOCK_MONOTONIC) or, in the tests, a fake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/load/arrivals.h"
#include "pilot/load/batcher.h"

namespace pilot {

class LoadClock {
 public:
  virtual ~LoadClock() = default;
  virtual double NowMs() = 0;
  // Returns at `at_ms` or later, or earlier when a signal arrives (the caller looks again).
  virtual void SleepUntilMs(double at_ms) = 0;
};

// A Clock's monotonic time (CLOCK_MONOTONIC), in milliseconds since this was made; sleeps with
// its clock_nanosleep(TIMER_ABSTIME) in slices of at most 50 ms, so that an interrupt is seen
// within that.
class RealLoadClock : public LoadClock {
 public:
  explicit RealLoadClock(Clock& clock);
  double NowMs() override;
  void SleepUntilMs(double at_ms) override;

 private:
  Clock& clock_;
  double origin_s_ = 0;
};

// What serving one request gave: completed, rejected (the stage's reason) or failed (with its
// batch). A generator's tokens carry their times from the call's start.
struct ServedItem {
  RequestOutcome outcome = RequestOutcome::kCompleted;
  std::string reason;
  std::uint64_t output_tokens = 0;
  std::vector<double> token_ms;
};

// The service under test: its batcher's settings, each manifest item's rejection at arrival
// (empty: served; else the reason, such as `too_large`), and the server, which takes the items'
// indices of one batch and returns one ServedItem each, in order (any other count: the batch
// failed).
struct LoadTarget {
  ServiceSettings service;
  std::vector<std::string> rejection;
  std::function<std::vector<ServedItem>(const std::vector<std::size_t>& items)> serve;
};

enum class LoadMode { kRate, kConcurrency };

// The most requests one step issues, whatever its duration.
inline constexpr std::uint64_t kMaxStepRequests = 1u << 20;

struct LoadStep {
  LoadMode mode = LoadMode::kRate;
  ArrivalProcess arrivals;      // kRate
  std::uint64_t seed = 0;       // kRate: the schedule's
  std::size_t concurrency = 1;  // kConcurrency: clients
  double duration_ms = 0;       // > 0: issue for this long
  std::uint64_t requests = 0;   // > 0: issue this many (with both, whichever ends first)
};

struct LoadStepResult {
  std::vector<RequestRecord> records;  // in issue order, ids 0..n-1; times from the step's start
  double issue_ms = 0;                 // the last arrival
  double duration_ms = 0;              // the last request's end
  bool interrupted = false;            // issuing stopped early; what was queued was still served
  // Over HTTP: the client thread's CPU time over the step (a measurement, not recomputed by verify).
  std::optional<double> client_cpu_ms;
};

// The issuing side of a step, one for both drivers (in process here, over HTTP in
// http_target.h): the schedule's next arrival (open loop) or each client's next turn (closed
// loop), and when issuing ends (the step's duration, its count, a stop).
class StepIssuing {
 public:
  StepIssuing(const LoadStep& step, std::size_t clients);
  // Whether a request arriving at `at` is issued, `issued` having been.
  bool May(double at, std::size_t issued) const;
  // The open loop's next arrival is taken: the one after it is due next.
  void Advance() { next_arrival = schedule_.Next() * 1000.0; }
  // A stop at `now`: issuing ends. True when it cut the issuing short (an interrupt); a stop
  // once everything was issued is not one.
  bool Stop(double now, std::size_t issued);
  // A request ended at `at`: in a closed loop, its client's next turn.
  void Ended(double at) {
    if (step_.mode == LoadMode::kConcurrency) clients.push(at);
  }
  bool issuing() const { return issuing_; }
  std::uint64_t most() const { return most_; }

  double next_arrival;  // open loop: the next scheduled arrival (infinity: none)
  std::priority_queue<double, std::vector<double>, std::greater<double>> clients;  // closed loop

 private:
  LoadStep step_;
  ArrivalSchedule schedule_;
  std::uint64_t most_;
  bool issuing_ = true;
};

// How often a long step reports its progress (either driver).
inline constexpr double kLoadTickMs = 5000;

// A long step's progress, every 5 s of it: the time (ms from the step's start), the requests
// issued and those with their outcome.
using LoadTick = std::function<void(double now_ms, std::size_t issued, std::size_t done)>;

// Runs one step to its end: issuing stops at its duration or count (or when `should_stop` says
// so), then the queue is served out. Request k carries item k mod items. Every issued request has
// exactly one outcome.
LoadStepResult RunLoadStep(const LoadStep& step, const LoadTarget& target, LoadClock& clock,
                           const std::function<bool()>& should_stop, const LoadTick& on_tick = nullptr);

}  // namespace pilot
