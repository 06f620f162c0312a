// pilot-load-bench: the figures behind bench/load-bench.sh (docs/load.md, "Speed").
//   lateness N RATE ROUNDS   the scheduler's lateness against its schedule (RunLoadStep, a stage
//                            that answers at once, batches of 1, constant arrivals at RATE/s)
//                            against a bare clock_nanosleep(TIMER_ABSTIME) loop over the same
//                            schedule, alternated ROUNDS times in one process; lateness is the
//                            time a request's batch started after its scheduled arrival, and the
//                            time the bare loop woke after its target
//   throughput N             N requests all due at once through RunLoadStep (batches of 64) and
//                            SummarizeLoad on one core (this process pinned to CPU 0): the
//                            requests per second the scheduling and accounting sustain, and
//                            the records' JSON Lines written in memory
// Each prints one JSON line.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/json_util.h"
#include "pilot/load/load_driver.h"
#include "pilot/load/load_figures.h"
#include "pilot/load/load_run.h"

using namespace pilot;

namespace {

double NowS() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

nlohmann::ordered_json Summary(const std::vector<double>& v) {
  return {{"n", v.size()},
          {"p50_us", Pct(v, 0.5) * 1000},
          {"p99_us", Pct(v, 0.99) * 1000},
          {"p99.9_us", Pct(v, 0.999) * 1000},
          {"max_us", Pct(v, 1.0) * 1000}};
}

LoadTarget Instant(std::size_t max_batch) {
  LoadTarget t;
  t.service.max_batch = max_batch;
  t.service.max_wait_ms = 0;
  t.service.queue_bound = kMaxQueueBound;
  t.rejection.assign(16, "");
  t.serve = [](const std::vector<std::size_t>& items) { return std::vector<ServedItem>(items.size()); };
  return t;
}

int Lateness(std::uint64_t n, double rate, int rounds) {
  std::vector<double> sched, bare;
  const LoadTarget target = Instant(1);
  for (int r = 0; r < rounds; ++r) {
    // The bare loop: sleep to each target, note how late the wake came.
    const double gap = 1.0 / rate, start = NowS();
    for (std::uint64_t i = 1; i <= n; ++i) {
      const double at = start + static_cast<double>(i) * gap;
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(at);
      ts.tv_nsec = static_cast<long>((at - static_cast<double>(ts.tv_sec)) * 1e9);
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
      }
      bare.push_back((NowS() - at) * 1000.0);
    }
    // The scheduler: the same schedule through the load driver.
    LoadStep step;
    step.arrivals = {ArrivalKind::kConstant, rate, 1};
    step.requests = n;
    RealLoadClock clock(SystemClock());
    const LoadStepResult result = RunLoadStep(step, target, clock, nullptr);
    for (const RequestRecord& q : result.records) sched.push_back(q.queue_wait_ms());
  }
  nlohmann::ordered_json j = {{"bench", "lateness"},
                              {"requests", n * static_cast<std::uint64_t>(rounds)},
                              {"rate", rate},
                              {"bare_clock_nanosleep", Summary(bare)},
                              {"scheduler", Summary(sched)}};
  j["p99_ratio"] = Pct(sched, 0.99) / std::max(1e-9, Pct(bare, 0.99));
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int Throughput(std::uint64_t n) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  const bool pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  const LoadTarget target = Instant(64);
  LoadStep step;
  step.arrivals = {ArrivalKind::kPoisson, 1e9, 1};  // all due at once
  step.requests = n;
  RealLoadClock clock(SystemClock());
  const double t0 = NowS();
  const LoadStepResult result = RunLoadStep(step, target, clock, nullptr);
  const double t1 = NowS();
  const LoadFigures f =
      SummarizeLoad(result.records, result.issue_ms, result.duration_ms, LatencySlo{10, 0, 0, 0.99, 0.99});
  const double t2 = NowS();
  std::size_t bytes = 0;
  for (const RequestRecord& r : result.records) bytes += JsonLine(RequestToJson(r, 0, "doc-01")).size() + 1;
  const double t3 = NowS();
  nlohmann::ordered_json j = {{"bench", "throughput"},
                              {"requests", n},
                              {"pinned_to_one_core", pinned},
                              {"completed", f.completed},
                              {"schedule_and_serve_s", t1 - t0},
                              {"summarize_s", t2 - t1},
                              {"requests_per_s", static_cast<double>(n) / (t2 - t0)},
                              {"records_jsonl_s", t3 - t2},
                              {"records_jsonl_bytes", bytes}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "lateness" && argc == 5)
    return Lateness(std::strtoull(argv[2], nullptr, 10), std::strtod(argv[3], nullptr), std::atoi(argv[4]));
  if (what == "throughput" && argc == 3) return Throughput(std::strtoull(argv[2], nullptr, 10));
  std::fprintf(stderr, "usage: pilot-load-bench lateness N RATE ROUNDS | throughput N\n");
  return 2;
}
