// The in-process service of a load test (`pilot load`, docs/load.md): a bounded queue in front of one model,
// a dynamic batcher that starts a batch when it is full or its oldest request has waited max_wait, a defined
// behaviour at capacity, and a request deadline. Time is whatever the caller passes (milliseconds from the
// start): the same code runs under the real clock and, in the tests and SimulateService, under a virtual one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pilot {

struct ServiceSettings {
  std::size_t max_batch = 8;     // >= 1
  double max_wait_ms = 5;        // >= 0: how long the oldest queued request may wait for a fuller batch
  std::size_t queue_bound = 64;  // >= 1: queued requests (the batch in service not counted)
  // At capacity (the queue full): refuse the arriving request (`over_capacity`), or let the queue
  // grow up to grow_bound, then refuse.
  bool grow_at_capacity = false;
  std::size_t grow_bound = 0;
  double deadline_ms = 0;  // > 0: a request still queued this long after it arrived times out
};

// Every issued request ends in exactly one: served (completed), refused at capacity, rejected
// by its item's own reason (the prechecks, the service's largest request, the stage), past its
// deadline while queued, or failed with its batch.
enum class RequestOutcome { kCompleted, kOverCapacity, kRejected, kTimedOut, kFailed };
// completed | over_capacity | rejected | timed_out | failed
const char* RequestOutcomeName(RequestOutcome outcome);
std::optional<RequestOutcome> RequestOutcomeFromName(std::string_view name);

class Batcher {
 public:
  explicit Batcher(ServiceSettings settings) : s_(settings) {}
  // Request `id` arrives at `now_ms`: queued (true), or refused at capacity (false). Queued
  // requests past their deadline by then leave the queue first (TimedOut()).
  bool Arrive(std::uint64_t id, double now_ms);
  // The server is idle at `now_ms`. First, queued requests past their deadline are moved to
  // TimedOut(). Then: the batch to start now (full, or its oldest has waited max_wait), or
  // empty, with `wake_ms` the time to ask again (infinity when the queue is empty).
  std::vector<std::uint64_t> TakeBatch(double now_ms, double& wake_ms);
  // Requests that timed out in the queue since the last call, in arrival order.
  std::vector<std::uint64_t> TakeTimedOut();
  // When the oldest queued request reaches its deadline (none: no deadline or an empty queue).
  std::optional<double> NextExpiry() const;
  // Queued requests past their deadline at `now_ms` leave the queue (TimedOut()).
  void ExpireUntil(double now_ms) { Expire(now_ms); }
  // From now on a partial batch starts at once (max_wait 0): the load is stopping.
  void Flush() { s_.max_wait_ms = 0; }
  std::size_t queued() const { return queue_.size(); }

 private:
  void Expire(double now_ms);
  struct Waiting {
    std::uint64_t id;
    double arrived_ms;
  };
  ServiceSettings s_;
  std::deque<Waiting> queue_;
  std::vector<std::uint64_t> timed_out_;
};

// One request's account: every issued request ends in exactly one outcome.
struct RequestRecord {
  std::uint64_t id = 0;
  RequestOutcome outcome = RequestOutcome::kCompleted;
  double arrived_ms = 0;
  double started_ms = 0;  // its batch's start (completed, failed)
  double finished_ms =
      0;                  // completed, failed: its batch's end; refused: its arrival; timed out: its deadline
  std::size_t batch = 0;  // its batch's size (completed, failed)
  // What a load test adds (load_driver.h): the manifest item it carries (its index), a rejected
  // request's reason, and a generated completion's tokens and times, from its arrival.
  std::size_t item = 0;
  std::string reason;
  std::uint64_t output_tokens = 0;
  std::optional<double> ttft_ms;  // arrival to first token (a generator's)
  std::optional<double> tpot_ms;  // mean of itl_ms (two tokens or more)
  std::vector<double> itl_ms;     // the gaps between its tokens
  // Over HTTP (pilot load --target): the times the client sent it again on a fresh connection,
  // because the reused one it went out on ended with no answer at all (libcurl does, once).
  std::uint32_t resent = 0;
  double queue_wait_ms() const { return started_ms - arrived_ms; }
  double end_to_end_ms() const { return finished_ms - arrived_ms; }
};

// Runs `arrivals` (ms, rising) through a Batcher under a virtual clock: one server, whose batch
// of n takes service_ms(n) (a negative value: the batch fails). Returns one record per arrival,
// in arrival order.
std::vector<RequestRecord> SimulateService(const std::vector<double>& arrivals,
                                           const ServiceSettings& settings,
                                           const std::function<double(std::size_t)>& service_ms);

}  // namespace pilot
