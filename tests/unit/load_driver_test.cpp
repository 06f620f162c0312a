// `pilot load`'s driver under a fake clock (every time exact), its service settings, its records
// and its folder's checks.
#include "pilot/load/load_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "pilot/load/load_figures.h"
#include "pilot/load/load_run.h"
#include "pilot/load/load_service.h"
#include "pilot/load/percentile_bound.h"

namespace pilot {
namespace {

class FakeClock : public LoadClock {
 public:
  double NowMs() override { return now; }
  void SleepUntilMs(double at_ms) override {
    if (at_ms > now) now = slice_ms > 0 ? std::min(at_ms, now + slice_ms) : at_ms;
    ++sleeps;
  }
  double now = 0;
  double slice_ms = 0;  // > 0: a sleep wakes at most this late, as the real clock's 50 ms slices
  int sleeps = 0;
};

// A server whose batch takes `ms` of the fake clock, and which records what it was given.
struct FakeServer {
  explicit FakeServer(FakeClock* c, double service_ms = 5) : clock(c), ms(service_ms) {}
  FakeClock* clock;
  double ms;
  std::vector<std::vector<std::size_t>> batches;
  std::vector<double> token_ms;  // given to every item when not empty
  std::vector<ServedItem> operator()(const std::vector<std::size_t>& items) {
    batches.push_back(items);
    clock->now += ms;
    std::vector<ServedItem> out(items.size());
    for (ServedItem& s : out) {
      s.token_ms = token_ms;
      s.output_tokens = token_ms.size();
    }
    return out;
  }
};

LoadTarget Target(FakeServer& server, std::size_t items, ServiceSettings s) {
  LoadTarget t;
  t.service = s;
  t.rejection.assign(items, "");
  t.serve = [&server](const std::vector<std::size_t>& batch) { return server(batch); };
  return t;
}

void ExpectEveryRequestOnce(const LoadStepResult& r) {
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_EQ(r.records[i].id, i);
    EXPECT_LE(r.records[i].arrived_ms, r.records[i].started_ms);
    EXPECT_LE(r.records[i].started_ms, r.records[i].finished_ms);
  }
}

TEST(LoadDriver, AnIdleServerTakesEachRequestAtItsScheduledArrival) {
  FakeClock clock;
  FakeServer server(&clock);
  ServiceSettings s;
  s.max_batch = 4;
  s.max_wait_ms = 0;
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 100, 1};  // every 10 ms
  step.requests = 40;
  const LoadStepResult r = RunLoadStep(step, Target(server, 3, s), clock, nullptr);
  ASSERT_EQ(r.records.size(), 40u);
  ExpectEveryRequestOnce(r);
  for (std::size_t i = 0; i < 40; ++i) {
    const RequestRecord& q = r.records[i];
    EXPECT_EQ(q.outcome, RequestOutcome::kCompleted);
    EXPECT_NEAR(q.arrived_ms, 10.0 * static_cast<double>(i + 1), 1e-9);
    EXPECT_NEAR(q.queue_wait_ms(), 0, 1e-9);
    EXPECT_NEAR(q.end_to_end_ms(), 5, 1e-9);
    EXPECT_EQ(q.item, i % 3);
  }
  EXPECT_NEAR(r.issue_ms, 400, 1e-9);
  EXPECT_NEAR(r.duration_ms, 405, 1e-9);
  const LoadFigures f = SummarizeLoad(r.records, r.issue_ms, r.duration_ms, LatencySlo{6, 0, 0, 0.9, 0.9});
  EXPECT_DOUBLE_EQ(f.offered_per_s, 100);
  EXPECT_EQ(f.within_slo, 40u);
  EXPECT_TRUE(f.slo_met) << "40 requests, none over: the 90th percentile is met at 90% confidence";
}

TEST(LoadDriver, UnderTheRealLoopAndTheSimulationTheSameArrivalsGiveTheSameRecords) {
  // The driver is the simulation with the server's time measured: under a fake clock they agree.
  ServiceSettings s;
  s.max_batch = 4;
  s.max_wait_ms = 3;
  s.queue_bound = 6;
  s.deadline_ms = 15;
  LoadStep step;
  step.arrivals = {ArrivalKind::kPoisson, 400, 1};
  step.seed = 7;
  step.requests = 500;
  FakeClock clock;
  FakeServer server(&clock, 9);
  const LoadStepResult r = RunLoadStep(step, Target(server, 5, s), clock, nullptr);
  ArrivalSchedule schedule(step.arrivals, step.seed);
  std::vector<double> arrivals;
  for (int i = 0; i < 500; ++i) arrivals.push_back(schedule.Next() * 1000);
  const auto sim = SimulateService(arrivals, s, [](std::size_t) { return 9.0; });
  ASSERT_EQ(r.records.size(), sim.size());
  std::set<RequestOutcome> seen;
  for (std::size_t i = 0; i < sim.size(); ++i) {
    EXPECT_EQ(r.records[i].outcome, sim[i].outcome) << i;
    EXPECT_NEAR(r.records[i].arrived_ms, sim[i].arrived_ms, 1e-6) << i;
    EXPECT_NEAR(r.records[i].finished_ms, sim[i].finished_ms, 1e-6) << i;
    seen.insert(r.records[i].outcome);
  }
  // Overloaded (400/s against at most 4 per 9 ms): every outcome of a full queue shows.
  EXPECT_TRUE(seen.count(RequestOutcome::kCompleted));
  EXPECT_TRUE(seen.count(RequestOutcome::kOverCapacity));
  EXPECT_TRUE(seen.count(RequestOutcome::kTimedOut));
  const LoadFigures f = SummarizeLoad(r.records, r.issue_ms, r.duration_ms, LatencySlo{50, 0, 0, 0.99, 0.99});
  EXPECT_EQ(f.completed + f.over_capacity + f.rejected + f.timed_out + f.failed, f.issued);
  EXPECT_FALSE(f.slo_met);
  for (const auto& batch : server.batches) EXPECT_LE(batch.size(), 4u);
}

TEST(LoadDriver, ClientsSendTheirNextRequestWhenTheLastEnds) {
  FakeClock clock;
  FakeServer server(&clock, 10);
  ServiceSettings s;
  s.max_batch = 8;
  s.max_wait_ms = 0;
  LoadStep step;
  step.mode = LoadMode::kConcurrency;
  step.concurrency = 3;
  step.requests = 9;
  const LoadStepResult r = RunLoadStep(step, Target(server, 4, s), clock, nullptr);
  ASSERT_EQ(r.records.size(), 9u);
  ExpectEveryRequestOnce(r);
  ASSERT_EQ(server.batches.size(), 3u);
  for (const auto& b : server.batches) EXPECT_EQ(b.size(), 3u);
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_DOUBLE_EQ(r.records[i].arrived_ms, 10.0 * static_cast<double>(i / 3));
    EXPECT_DOUBLE_EQ(r.records[i].end_to_end_ms(), 10);
  }
  EXPECT_DOUBLE_EQ(r.duration_ms, 30);
}

TEST(LoadDriver, RejectedItemsAreAnsweredAtArrivalAndNeverServed) {
  FakeClock clock;
  FakeServer server(&clock, 1);
  ServiceSettings s;
  s.max_wait_ms = 0;
  LoadTarget t = Target(server, 4, s);
  t.rejection[1] = "too_large";
  t.rejection[3] = "empty_input";
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 50, 1};
  step.requests = 8;
  const LoadStepResult r = RunLoadStep(step, t, clock, nullptr);
  ASSERT_EQ(r.records.size(), 8u);
  for (const RequestRecord& q : r.records) {
    if (q.item % 2 == 1) {
      EXPECT_EQ(q.outcome, RequestOutcome::kRejected);
      EXPECT_EQ(q.reason, q.item == 1 ? "too_large" : "empty_input");
      EXPECT_DOUBLE_EQ(q.end_to_end_ms(), 0);
    } else {
      EXPECT_EQ(q.outcome, RequestOutcome::kCompleted);
    }
  }
  for (const auto& b : server.batches) {
    for (std::size_t item : b) EXPECT_EQ(item % 2, 0u);
  }
  const LoadFigures f = SummarizeLoad(r.records, r.issue_ms, r.duration_ms, LatencySlo{5, 0, 0, 0.5, 0.5});
  EXPECT_EQ(f.rejected, 4u);
  EXPECT_EQ(f.within_slo, 4u) << "rejected requests are left out of the verdict, not counted against it";
}

TEST(LoadDriver, AGeneratorsTokenTimesGiveTtftItlAndTpotFromTheArrival) {
  FakeClock clock;
  FakeServer server(&clock, 10);
  server.token_ms = {2, 3, 5, 9};
  ServiceSettings s;
  s.max_batch = 1;
  s.max_wait_ms = 0;
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 200, 1};  // every 5 ms: the second waits 5 ms for the first
  step.requests = 2;
  const LoadStepResult r = RunLoadStep(step, Target(server, 2, s), clock, nullptr);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_DOUBLE_EQ(*r.records[0].ttft_ms, 2);
  EXPECT_DOUBLE_EQ(*r.records[1].ttft_ms, 5 + 2);
  EXPECT_EQ(r.records[1].itl_ms, (std::vector<double>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(*r.records[1].tpot_ms, 7.0 / 3);
  EXPECT_EQ(r.records[1].output_tokens, 4u);
  const LoadFigures f = SummarizeLoad(r.records, r.issue_ms, r.duration_ms, LatencySlo{0, 6, 0, 0.5, 0.5});
  EXPECT_EQ(f.within_slo, 1u) << "the TTFT bound of 6 ms: the queued request's 7 ms misses it";
  EXPECT_EQ(f.itl[4].count, 6u);
  EXPECT_EQ(f.output_tokens, 8u);
}

TEST(LoadDriver, ABatchTheServerAnswersWronglyFailsAndAStopEndsIssuingButServesTheQueue) {
  FakeClock clock;
  ServiceSettings s;
  s.max_batch = 2;
  s.max_wait_ms = 0;
  LoadTarget t;
  t.service = s;
  t.rejection.assign(2, "");
  t.serve = [&clock](const std::vector<std::size_t>&) {
    clock.now += 20;
    return std::vector<ServedItem>{};  // no item answered
  };
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 1000, 1};
  step.duration_ms = 1000;
  int polls = 0;
  const LoadStepResult r = RunLoadStep(step, t, clock, [&] { return ++polls > 3; });
  EXPECT_TRUE(r.interrupted);
  ASSERT_FALSE(r.records.empty());
  EXPECT_LT(r.records.size(), 100u) << "issuing stopped at the request to stop";
  for (const RequestRecord& q : r.records) {
    EXPECT_EQ(q.outcome, RequestOutcome::kFailed);
    EXPECT_EQ(q.reason, "stage_error");
  }
}

TEST(LoadDriver, ADurationEndsIssuingAndTheCountCapsIt) {
  FakeClock clock;
  FakeServer server(&clock, 0.5);
  ServiceSettings s;
  s.max_wait_ms = 0;
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 128, 1};
  step.duration_ms = 1000;
  EXPECT_EQ(RunLoadStep(step, Target(server, 1, s), clock, nullptr).records.size(), 127u)
      << "arrivals every 7.8125 ms: the 128th, at 1000 ms, is past the duration";
  step.requests = 7;
  EXPECT_EQ(RunLoadStep(step, Target(server, 1, s), clock, nullptr).records.size(), 7u);
  // A long step reports its progress every 5 s, and still ends when its work does.
  step.requests = 0;
  step.duration_ms = 12000;
  std::vector<std::pair<double, std::size_t>> ticks;
  const LoadStepResult r = RunLoadStep(step, Target(server, 1, s), clock, nullptr,
                                       [&](double now, std::size_t issued, std::size_t done) {
                                         ticks.emplace_back(now, issued);
                                         EXPECT_LE(done, issued);
                                       });
  EXPECT_EQ(r.records.size(), 1535u);  // 12 s at 128/s, the arrival at 12 s excluded
  ASSERT_EQ(ticks.size(), 2u);
  EXPECT_NEAR(ticks[0].first, 5000, 1);
  EXPECT_NEAR(ticks[1].first, 10000, 1);
  EXPECT_NEAR(static_cast<double>(ticks[1].second), 1280, 2);
}

TEST(LoadService, ReadsEverySettingAndRefusesEachBadOneNamingItsKey) {
  const auto good = nlohmann::json::parse(R"({"max_request_bytes": 100, "max_batch": 4, "max_wait_ms": 2.5,
    "queue_bound": 10, "at_capacity": "grow", "grow_bound": 30, "deadline_ms": 500,
    "slo": {"percentile": 0.95, "confidence": 0.9, "e2e_ms": 20, "ttft_ms": 5}})");
  auto s = ParseService(good, "p.json", /*generates=*/true);
  ASSERT_TRUE(s.ok()) << s.error().what;
  EXPECT_EQ(s.value().batcher.max_batch, 4u);
  EXPECT_TRUE(s.value().batcher.grow_at_capacity);
  EXPECT_EQ(s.value().batcher.grow_bound, 30u);
  EXPECT_DOUBLE_EQ(s.value().slo.ttft_ms, 5);
  auto again = ParseService(nlohmann::json(ServiceToJson(s.value())), "p.json", true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(nlohmann::json(ServiceToJson(again.value())), nlohmann::json(ServiceToJson(s.value())));
  // The least service (defaults but the SLO) round-trips too: what the folder records, verify reads.
  auto least = ParseService(nlohmann::json::parse(R"({"slo": {"e2e_ms": 3}})"), "p.json", false);
  ASSERT_TRUE(least.ok());
  auto least_again = ParseService(nlohmann::json(ServiceToJson(least.value())), "run.json", false);
  ASSERT_TRUE(least_again.ok()) << least_again.error().what;
  EXPECT_FALSE(nlohmann::json(ServiceToJson(least.value())).contains("max_request_bytes"));
  struct Case {
    const char* text;
    const char* key;
    bool generates;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"slo": {"e2e_ms": 1}, "max_batch": 0})", "service.max_batch", false},
           {R"({"slo": {"e2e_ms": 1}, "max_batch": 5000})", "service.max_batch", false},
           {R"({"slo": {"e2e_ms": 1}, "queue_bound": -1})", "service.queue_bound", false},
           {R"({"slo": {"e2e_ms": 1}, "max_wait_ms": "2"})", "service.max_wait_ms", false},
           {R"({"slo": {"e2e_ms": 1}, "at_capacity": "drop"})", "service.at_capacity", false},
           {R"({"slo": {"e2e_ms": 1}, "at_capacity": "grow"})", "service.grow_bound", false},
           {R"({"slo": {"e2e_ms": 1}, "queue_bound": 9, "at_capacity": "grow", "grow_bound": 8})",
            "service.grow_bound", false},
           {R"({"slo": {"e2e_ms": 1}, "grow_bound": 8})", "service.grow_bound", false},
           {R"({"slo": {"e2e_ms": 1}, "deadline_ms": 1e300})", "service.deadline_ms", false},
           {R"({"slo": {"e2e_ms": 1}, "surprise": 1})", "surprise", false},
           {R"({})", "service.slo", false},
           {R"({"slo": {}})", "service.slo.e2e_ms", false},
           {R"({"slo": {"e2e_ms": 0}})", "service.slo.e2e_ms", false},
           {R"({"slo": {"e2e_ms": 1, "percentile": 1}})", "service.slo.percentile", false},
           {R"({"slo": {"e2e_ms": 1, "confidence": 0.1}})", "service.slo.confidence", false},
           {R"({"slo": {"ttft_ms": 1}})", "service.slo.ttft_ms", false},
           {R"({"slo": [1]})", "service.slo", false},
       }) {
    auto r = ParseService(nlohmann::json::parse(c.text), "p.json", c.generates);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    const std::string all = r.error().what + " " + r.error().where;
    EXPECT_NE(all.find(c.key), std::string::npos) << c.text << " -> " << all;
    EXPECT_NE(all.find("p.json"), std::string::npos) << all;
  }
}

TEST(LoadRecords, ARequestRoundTripsAndAHostileLineIsRefused) {
  RequestRecord r;
  r.id = 12;
  r.item = 0;
  r.outcome = RequestOutcome::kCompleted;
  r.arrived_ms = 1.5;
  r.started_ms = 2.25;
  r.finished_ms = 9.125;
  r.batch = 3;
  r.output_tokens = 3;
  r.ttft_ms = 3;
  r.tpot_ms = 2;
  r.itl_ms = {1, 3};
  const std::string line = nlohmann::json(RequestToJson(r, 2, "doc-1")).dump();
  auto p = ParseRequestLine(line, "requests.jsonl:1");
  ASSERT_TRUE(p.ok()) << p.error().what;
  EXPECT_EQ(p.value().step, 2u);
  EXPECT_EQ(p.value().item_id, "doc-1");
  EXPECT_EQ(p.value().record.itl_ms, r.itl_ms);
  EXPECT_EQ(nlohmann::json(RequestToJson(p.value().record, 2, "doc-1")).dump(), line);
  for (
      const char* bad : {
          "",
          "[]",
          "{}",
          "null",
          R"({"step":0,"request":0,"item":"a","outcome":"served","arrived_ms":0,"started_ms":0,"finished_ms":0,"batch":0})",
          R"({"step":0,"request":0,"item":"a","outcome":"completed","arrived_ms":5,"started_ms":1,"finished_ms":9,"batch":1,"output_tokens":0})",
          R"({"step":0,"request":-1,"item":"a","outcome":"over_capacity","arrived_ms":0,"started_ms":0,"finished_ms":0,"batch":0})",
          R"({"step":0,"request":0,"item":"","outcome":"over_capacity","arrived_ms":0,"started_ms":0,"finished_ms":0,"batch":0})",
          R"({"step":0,"request":0,"item":"a","outcome":"rejected","arrived_ms":0,"started_ms":0,"finished_ms":0,"batch":0})",
          R"({"step":0,"request":0,"item":"a","outcome":"over_capacity","arrived_ms":1e400,"started_ms":0,"finished_ms":0,"batch":0})",
          R"({"step":0,"request":0,"item":"a","outcome":"completed","arrived_ms":0,"started_ms":0,"finished_ms":1,"batch":1,"output_tokens":2,"ttft_ms":1})",
          R"({"step":0,"request":0,"item":"a","outcome":"completed","arrived_ms":0,"started_ms":0,"finished_ms":1,"batch":1,"output_tokens":2,"ttft_ms":1,"tpot_ms":null,"itl_ms":[1]})",
          R"({"step":0,"request":0,"item":"a","outcome":"completed","arrived_ms":0,"started_ms":0,"finished_ms":1,"batch":1,"output_tokens":2,"ttft_ms":1,"tpot_ms":1,"itl_ms":["x"]})",
      }) {
    auto q = ParseRequestLine(bad, "requests.jsonl:7");
    EXPECT_FALSE(q.ok()) << bad;
    if (!q.ok()) {
      EXPECT_EQ(q.error().kind, ErrorKind::kBadInput);
      EXPECT_NE((q.error().what + q.error().where).find("requests.jsonl:7"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

TEST(LoadFigures, TheBinomialCdfSummedFromItsLargestTermEqualsTheWholeSum) {
  // Against every term summed in long double, below and above the mode, in both tails.
  for (std::uint64_t n : {1u, 7u, 60u, 333u}) {
    for (double q : {0.001, 0.01, 0.1, 0.5, 0.9}) {
      for (std::uint64_t k = 0; k < n; k += std::max<std::uint64_t>(1, n / 17)) {
        long double sum = 0;
        for (std::uint64_t i = 0; i <= k; ++i) {
          const long double t = std::lgamma(static_cast<long double>(n) + 1) -
                                std::lgamma(static_cast<long double>(i) + 1) -
                                std::lgamma(static_cast<long double>(n - i) + 1) +
                                static_cast<long double>(i) * std::log(static_cast<long double>(q)) +
                                static_cast<long double>(n - i) * std::log1p(-static_cast<long double>(q));
          sum += std::exp(t);
        }
        const double want = static_cast<double>(std::min<long double>(1, sum));
        EXPECT_NEAR(BinomialCdf(k, n, q), want, 1e-12 + 1e-9 * want) << "n " << n << " q " << q << " k " << k;
      }
    }
  }
  // A million requests: the search for the allowed misses stays near n (1 - p), not n.
  const auto allowed = AllowedOver(1000000, 0.99, 0.99);
  ASSERT_TRUE(allowed);
  EXPECT_GT(*allowed, 9700u);
  EXPECT_LT(*allowed, 10000u);
  EXPECT_TRUE(EarlyStopping(1000000, *allowed, 0.99, 0.99).met);
  EXPECT_FALSE(EarlyStopping(1000000, *allowed + 1, 0.99, 0.99).met);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

TEST(LoadDriver, AClosedLoopWithADeadlineKeepsArrivalsInOrderAndServesNothingPastItsDeadline) {
  // Three clients, batches of 2 taking 50 ms, a deadline of 10 ms: the third client's first
  // request times out at 10 ms, and its next one arrives then, before the one issued at 50 ms.
  FakeClock clock;
  FakeServer server(&clock, 50);
  ServiceSettings s;
  s.max_batch = 2;
  s.max_wait_ms = 0;
  s.deadline_ms = 10;
  LoadStep step;
  step.mode = LoadMode::kConcurrency;
  step.concurrency = 3;
  step.requests = 12;
  const LoadStepResult r = RunLoadStep(step, Target(server, 3, s), clock, nullptr);
  ASSERT_EQ(r.records.size(), 12u);
  double last = 0;
  for (const RequestRecord& q : r.records) {
    EXPECT_GE(q.arrived_ms, last) << "request " << q.id << " arrived before the one issued ahead of it";
    last = std::max(last, q.arrived_ms);
    if (q.outcome == RequestOutcome::kCompleted) {
      EXPECT_LT(q.queue_wait_ms(), s.deadline_ms) << "request " << q.id << " was served past its deadline";
    }
  }
  EXPECT_DOUBLE_EQ(r.issue_ms, last);
  EXPECT_EQ(r.records[2].outcome, RequestOutcome::kTimedOut);
  EXPECT_DOUBLE_EQ(r.records[3].arrived_ms, 10);
}

TEST(LoadDriver, AStopWhileTheQueueDrainsIsNoInterruptAndAStopServesAPartialBatchAtOnce) {
  FakeClock clock;
  clock.slice_ms = 50;
  FakeServer server(&clock, 1);
  ServiceSettings s;
  s.max_batch = 8;
  s.max_wait_ms = 1000000;  // a partial batch would wait 1,000 s
  LoadStep step;
  step.arrivals = {ArrivalKind::kConstant, 1000, 1};
  step.requests = 3;
  bool stop = false;
  LoadTarget t = Target(server, 2, s);
  const LoadStepResult whole = RunLoadStep(step, t, clock, [&] {
    if (clock.now > 3) stop = true;  // every request issued: the stop comes while they wait
    return stop;
  });
  EXPECT_FALSE(whole.interrupted) << "issuing was over when the stop came";
  ASSERT_EQ(whole.records.size(), 3u);
  for (const RequestRecord& q : whole.records) {
    EXPECT_EQ(q.outcome, RequestOutcome::kCompleted);
    EXPECT_LT(q.queue_wait_ms(), 100) << "a stop serves what is queued at once, not after max_wait";
  }
  step.requests = 100;
  stop = false;
  const LoadStepResult cut = RunLoadStep(step, t, clock, [&] { return clock.now > whole.duration_ms + 3; });
  EXPECT_TRUE(cut.interrupted);
  EXPECT_LT(cut.records.size(), 100u);
}

}  // namespace
}  // namespace pilot
