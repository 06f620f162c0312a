// The load test's groundwork (src/load/): arrival schedules drawn from the seed and the
// request's index (constant, Poisson, gamma: their means and spreads), and the early-stopping
// bound on a latency percentile against the figures MLPerf LoadGen prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "pilot/load/arrivals.h"
#include "pilot/load/batcher.h"
#include "pilot/load/load_figures.h"
#include "pilot/load/percentile_bound.h"

namespace pilot {
namespace {

struct Moments {
  double mean = 0, cv = 0;  // coefficient of variation: sd / mean
};
Moments GapMoments(const ArrivalProcess& p, std::uint64_t seed, int n) {
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const double g = ArrivalGap(p, seed, static_cast<std::uint64_t>(i));
    EXPECT_GT(g, 0);
    EXPECT_TRUE(std::isfinite(g));
    sum += g;
    sq += g * g;
  }
  const double mean = sum / n;
  return Moments{mean, std::sqrt(sq / n - mean * mean) / mean};
}

TEST(Arrivals, ConstantPoissonAndGammaHaveTheirMeansAndSpreads) {
  const Moments c = GapMoments({ArrivalKind::kConstant, 4, 1}, 1, 1000);
  EXPECT_DOUBLE_EQ(c.mean, 0.25);
  EXPECT_NEAR(c.cv, 0, 1e-6);
  const Moments p = GapMoments({ArrivalKind::kPoisson, 4, 1}, 1, 100000);
  EXPECT_NEAR(p.mean, 0.25, 0.25 * 0.02);
  EXPECT_NEAR(p.cv, 1, 0.02) << "exponential gaps: sd = mean";
  for (double k : {0.25, 1.0, 4.0}) {
    const Moments g = GapMoments({ArrivalKind::kGamma, 10, k}, 2, 100000);
    EXPECT_NEAR(g.mean, 0.1, 0.1 * 0.03) << k;
    EXPECT_NEAR(g.cv, 1 / std::sqrt(k), 0.05 / std::sqrt(k)) << "gamma's cv is 1/sqrt(k), k = " << k;
  }
}

TEST(Arrivals, AScheduleIsTheSeedsAloneAndEachGapItsIndexs) {
  const ArrivalProcess p{ArrivalKind::kPoisson, 100, 1};
  ArrivalSchedule a(p, 7), b(p, 7), other(p, 8);
  double last = 0;
  for (int i = 0; i < 50; ++i) {
    const double t = a.Next();
    EXPECT_EQ(t, b.Next());
    EXPECT_GT(t, last);
    last = t;
    EXPECT_NE(t, other.Next());
  }
  EXPECT_EQ(a.issued(), 50u);
  // A gap is a function of (seed, index): drawing others first does not move it.
  EXPECT_EQ(ArrivalGap(p, 7, 30), ArrivalGap(p, 7, 30));
  EXPECT_NE(ArrivalGap(p, 7, 30), ArrivalGap(p, 7, 31));
}

TEST(PercentileBound, MatchesLoadGensEarlyStoppingCounts) {
  // LoadGen, 99th percentile at 99% confidence: "Processed 21 queries. Would need to run at
  // least 438 more queries, with the run being successful if every additional query were under
  // latency."
  const PercentileVerdict v = EarlyStopping(21, 0, 0.99, 0.99);
  EXPECT_FALSE(v.met);
  ASSERT_TRUE(v.more_needed);
  EXPECT_EQ(*v.more_needed, 438u);
  EXPECT_TRUE(EarlyStopping(459, 0, 0.99, 0.99).met);
  EXPECT_FALSE(EarlyStopping(458, 0, 0.99, 0.99).met);
  // 90th percentile: 0.9^44 < 0.01 < 0.9^43.
  EXPECT_TRUE(EarlyStopping(44, 0, 0.9, 0.99).met);
  EXPECT_FALSE(EarlyStopping(43, 0, 0.9, 0.99).met);
  // Overlatency requests raise what is needed; all of them over never meets.
  const PercentileVerdict some = EarlyStopping(1000, 5, 0.99, 0.99);
  EXPECT_FALSE(some.met);
  ASSERT_TRUE(some.more_needed);
  EXPECT_TRUE(EarlyStopping(1000 + *some.more_needed, 5, 0.99, 0.99).met);
  EXPECT_FALSE(EarlyStopping(1000 + *some.more_needed - 1, 5, 0.99, 0.99).met);
  EXPECT_FALSE(EarlyStopping(10, 10, 0.5, 0.9).met);
}

TEST(PercentileBound, AllowedOverAndTheBoundOnThePercentile) {
  // 2,048 requests at the 90th percentile: P(Bin(2048, 0.1) <= 173) = 0.00935 <= 0.01 < P(<= 174).
  ASSERT_TRUE(AllowedOver(2048, 0.9, 0.99));
  EXPECT_EQ(*AllowedOver(2048, 0.9, 0.99), 173u);
  EXPECT_NEAR(BinomialCdf(173, 2048, 0.1), 0.009354648, 1e-8);
  EXPECT_FALSE(AllowedOver(40, 0.9, 0.99)) << "too few requests to tell";
  // Latencies 1..2048 ms: the bound is the one exceeded by 173 of them.
  std::vector<double> ms;
  for (int i = 2048; i >= 1; --i) ms.push_back(i);
  ASSERT_TRUE(PercentileUpperBound(ms, 0.9, 0.99));
  EXPECT_EQ(*PercentileUpperBound(ms, 0.9, 0.99), 2048 - 173);
  EXPECT_FALSE(PercentileUpperBound({1, 2, 3}, 0.99, 0.99));
  EXPECT_DOUBLE_EQ(BinomialCdf(5, 5, 0.3), 1.0);
  EXPECT_NEAR(BinomialCdf(0, 10, 0.5), std::pow(0.5, 10), 1e-15);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

std::vector<double> Every(double gap_ms, int n, double first = 0) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) t.push_back(first + gap_ms * i);
  return t;
}

std::size_t Count(const std::vector<RequestRecord>& r, RequestOutcome o) {
  return static_cast<std::size_t>(
      std::count_if(r.begin(), r.end(), [o](const RequestRecord& x) { return x.outcome == o; }));
}

TEST(Batcher, APartialBatchWaitsMaxWaitAndAFullOneStartsAtOnce) {
  ServiceSettings s;
  s.max_batch = 4;
  s.max_wait_ms = 5;
  auto sparse = SimulateService(Every(10, 6, 10), s, [](std::size_t) { return 2.0; });
  for (const auto& r : sparse) {
    EXPECT_EQ(r.outcome, RequestOutcome::kCompleted);
    EXPECT_DOUBLE_EQ(r.queue_wait_ms(), 5);
    EXPECT_DOUBLE_EQ(r.end_to_end_ms(), 7);
    EXPECT_EQ(r.batch, 1u);
  }
  auto burst =
      SimulateService({0, 0, 0, 0, 0}, s, [](std::size_t n) { return 1.0 * static_cast<double>(n); });
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(burst[i].queue_wait_ms(), 0) << i;
    EXPECT_EQ(burst[i].batch, 4u);
  }
  // The fifth finds the server free at 4 ms, 1 ms short of its max_wait: it starts alone at 5.
  EXPECT_DOUBLE_EQ(burst[4].started_ms, 5);
  EXPECT_EQ(burst[4].batch, 1u);
}

TEST(Batcher, AtCapacityARequestIsRefusedOrTheQueueGrowsToItsBound) {
  ServiceSettings s;
  s.max_batch = 2;
  s.max_wait_ms = 0;
  s.queue_bound = 3;
  const auto arrivals = Every(1, 40);
  const auto slow = [](std::size_t) { return 10.0; };  // 0.2 requests/ms served, 1 offered
  auto refused = SimulateService(arrivals, s, slow);
  const std::size_t over = Count(refused, RequestOutcome::kOverCapacity);
  EXPECT_GT(over, 20u);
  EXPECT_EQ(Count(refused, RequestOutcome::kCompleted) + over, arrivals.size())
      << "each request, one outcome";
  for (const auto& r : refused) {
    if (r.outcome == RequestOutcome::kOverCapacity) {
      EXPECT_DOUBLE_EQ(r.finished_ms, r.arrived_ms);
    }
    if (r.outcome == RequestOutcome::kCompleted) {
      EXPECT_LE(r.queue_wait_ms(), 20 + 1e-9) << "3 queued, 2 a batch";
    }
  }
  s.grow_at_capacity = true;
  s.grow_bound = 100;
  auto grown = SimulateService(arrivals, s, slow);
  EXPECT_EQ(Count(grown, RequestOutcome::kCompleted), arrivals.size());
  EXPECT_GT(grown.back().queue_wait_ms(), 100) << "the queue grew and its wait with it";
}

TEST(Batcher, ARequestQueuedPastItsDeadlineTimesOutAndAFailedBatchFailsItsRequests) {
  ServiceSettings s;
  s.max_batch = 1;
  s.max_wait_ms = 0;
  s.queue_bound = 50;
  s.deadline_ms = 15;
  auto r = SimulateService(Every(1, 30), s, [](std::size_t) { return 10.0; });
  const std::size_t timed_out = Count(r, RequestOutcome::kTimedOut);
  EXPECT_GT(timed_out, 10u);
  EXPECT_EQ(Count(r, RequestOutcome::kCompleted) + timed_out, r.size());
  for (const auto& x : r) {
    if (x.outcome == RequestOutcome::kTimedOut) {
      EXPECT_DOUBLE_EQ(x.finished_ms, x.arrived_ms + 15);
    }
    if (x.outcome == RequestOutcome::kCompleted) {
      EXPECT_LT(x.queue_wait_ms(), 15);
    }
  }
  s.deadline_ms = 0;
  s.max_batch = 4;
  auto failed = SimulateService({0, 0, 0, 0, 50}, s, [](std::size_t n) { return n > 2 ? -1.0 : 1.0; });
  for (int i = 0; i < 4; ++i) EXPECT_EQ(failed[i].outcome, RequestOutcome::kFailed) << i;
  EXPECT_EQ(failed[4].outcome, RequestOutcome::kCompleted);
  EXPECT_STREQ(RequestOutcomeName(RequestOutcome::kOverCapacity), "over_capacity");
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

RequestRecord Done(double arrived, double started, double finished) {
  RequestRecord r;
  r.outcome = RequestOutcome::kCompleted;
  r.arrived_ms = arrived;
  r.started_ms = started;
  r.finished_ms = finished;
  r.batch = 1;
  return r;
}

TEST(LoadFigures, CountEveryOutcomeAndGiveRatesPercentilesGoodputAndTheVerdict) {
  std::vector<RequestRecord> r{Done(0, 1, 10), Done(0, 2, 20), Done(0, 3, 30)};
  for (RequestOutcome o :
       {RequestOutcome::kOverCapacity, RequestOutcome::kTimedOut, RequestOutcome::kFailed}) {
    RequestRecord x;
    x.outcome = o;
    r.push_back(x);
  }
  const LoadFigures f = SummarizeLoad(r, 1000, 1000, LatencySlo{25, 0, 0, 0.99, 0.99});
  EXPECT_EQ(f.issued, 6u);
  EXPECT_EQ(f.completed + f.over_capacity + f.timed_out + f.failed, f.issued);
  EXPECT_EQ(f.over_capacity, 1u);
  EXPECT_DOUBLE_EQ(f.offered_per_s, 6);
  EXPECT_DOUBLE_EQ(f.achieved_per_s, 3);
  EXPECT_EQ(f.within_slo, 2u);
  EXPECT_DOUBLE_EQ(f.goodput_per_s, 2);
  ASSERT_EQ(f.end_to_end.size(), 5u);
  EXPECT_DOUBLE_EQ(f.end_to_end[0].ms, 20);  // p50, nearest rank 2 of 3
  EXPECT_DOUBLE_EQ(f.end_to_end[3].ms, 30);  // p99
  EXPECT_EQ(f.end_to_end[3].count, 3u);
  EXPECT_DOUBLE_EQ(f.queue_wait[4].ms, 3);
  EXPECT_FALSE(f.slo_met) << "6 requests cannot show a 99th percentile";
  EXPECT_TRUE(f.more_needed.has_value());
  EXPECT_FALSE(f.percentile_bound_ms);
  std::vector<RequestRecord> many(1000, Done(0, 1, 5));
  const LoadFigures g = SummarizeLoad(many, 10000, 10000, LatencySlo{10, 0, 0, 0.99, 0.99});
  EXPECT_TRUE(g.slo_met);
  ASSERT_TRUE(g.percentile_bound_ms);
  EXPECT_DOUBLE_EQ(*g.percentile_bound_ms, 5);
}

TEST(LoadFigures, FindPeakRateDoublesThenBisectsToItsPrecision) {
  std::vector<RateTrial> trials;
  auto peak = FindPeakRate(
      1, 0.01, 40, [](double rate) { return rate <= 123.4; }, trials);
  ASSERT_TRUE(peak);
  EXPECT_LE(*peak, 123.4);
  EXPECT_GE(*peak, 123.4 / 1.01);
  EXPECT_DOUBLE_EQ(trials[7].rate, 128);
  EXPECT_FALSE(trials[7].met);
  for (const RateTrial& t : trials) EXPECT_EQ(t.met, t.rate <= 123.4) << t.rate;
  EXPECT_FALSE(FindPeakRate(
      200, 0.01, 40, [](double rate) { return rate <= 123.4; }, trials));
  ASSERT_EQ(trials.size(), 1u) << "the start itself is the one trial";
  auto capped = FindPeakRate(
      1, 1e-9, 5, [](double) { return true; }, trials);
  EXPECT_EQ(trials.size(), 5u);
  EXPECT_DOUBLE_EQ(*capped, 16);
}

TEST(LoadFigures, ThePeakOfASimulatedServiceLiesBelowItsCapacity) {
  // One server, 10 ms a batch of up to 4: 400 requests/s at most. Poisson arrivals, p99 of the
  // end-to-end latency within 60 ms at 99% confidence.
  ServiceSettings s;
  s.max_batch = 4;
  s.max_wait_ms = 2;
  s.queue_bound = 256;
  const auto service = [](std::size_t) { return 10.0; };
  auto meets = [&](double rate) {
    ArrivalSchedule schedule({ArrivalKind::kPoisson, rate, 1}, 11);
    std::vector<double> arrivals;
    for (int i = 0; i < 2000; ++i) arrivals.push_back(schedule.Next() * 1000);
    const auto records = SimulateService(arrivals, s, service);
    return SummarizeLoad(records, arrivals.back(), arrivals.back(), LatencySlo{60, 0, 0, 0.99, 0.99}).slo_met;
  };
  std::vector<RateTrial> trials;
  auto peak = FindPeakRate(25, 0.02, 30, meets, trials);
  ASSERT_TRUE(peak);
  EXPECT_GT(*peak, 100);
  EXPECT_LT(*peak, 400);
  EXPECT_FALSE(meets(400 * 1.5)) << "past capacity the queue only grows";
}

}  // namespace
}  // namespace pilot
