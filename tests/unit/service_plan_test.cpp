// pilot plan --from LOAD --rate R (service_plan.h): replicas, packing by memory, cost per million
// requests, and the refusals, from a basis built here (no folder).
#include "pilot/verdict/service_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace pilot {
namespace {

PriceList Prices() {
  auto p = ParsePrices(R"({"currency": "EUR", "cards": [
    {"name": "cpu-box", "class": "cpu", "memory_gb": 10, "cards_per_lot": 1, "match": ["EPYC"], "lot_price": {"3": 30, "30": 200}},
    {"name": "gpu-48", "class": "cuda", "memory_gb": 48, "cards_per_lot": 2, "match": ["L40S"], "lot_price": {"7": 700}}]})",
                       "prices.json");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().what);
  return p.value();
}

ServiceBasis CpuBasis() {
  ServiceBasis b;
  b.folder = "runs/x-load";
  b.search = "find-peak";
  b.device = "cpu";
  b.device_class = DeviceClass::kCpu;
  b.device_name = "AMD EPYC 7763";
  b.rate_per_replica = 1000;
  b.memory_mb = 1024;  // one replica: 1 GB
  b.memory_basis = "rss";
  return b;
}

ServicePlanRequest Request(double rate) {
  ServicePlanRequest q;
  q.basis = CpuBasis();
  q.prices = Prices();
  q.rate = rate;
  q.headroom = 0.1;
  return q;
}

TEST(ServicePlan, ReplicasPackingAndCostPerMillion) {
  auto plan = BuildServicePlan(Request(4500));
  ASSERT_TRUE(plan.ok()) << plan.error().what;
  const ServicePlan& p = plan.value();
  ASSERT_EQ(p.rows.size(), 2u);  // the measured card's two periods; the GPU was not measured
  for (const ServicePlanRow& r : p.rows) {
    EXPECT_EQ(r.card, "cpu-box");
    EXPECT_FALSE(r.assumed);
    EXPECT_TRUE(r.fit_known);
    EXPECT_EQ(r.replicas, 5u);  // ceil(4500 / 1000)
    EXPECT_EQ(r.per_card, 9u);  // 10 GB x 0.9 = 9 x 1 GB (1,024 MB a GB)
    EXPECT_EQ(r.cards, 1u);
    EXPECT_EQ(r.lots, 1u);
  }
  ASSERT_TRUE(p.cheapest.has_value());
  const ServicePlanRow& c = p.rows[*p.cheapest];
  EXPECT_EQ(c.period_days, 30);
  EXPECT_DOUBLE_EQ(c.cost, 200);
  EXPECT_NEAR(c.cost_per_million, 200 / (4500.0 * 30 * 86400) * 1e6, 1e-12);
  // Packed replicas are warned about.
  bool warned = false;
  for (const auto& w : p.warnings)
    warned = warned || w.find("pack them by memory alone") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ServicePlan, AssumedCardsAndLots) {
  ServicePlanRequest q = Request(10000);
  q.assume_scaling = 4;  // the GPU at 4,000/s a replica
  auto plan = BuildServicePlan(q);
  ASSERT_TRUE(plan.ok());
  const ServicePlanRow* gpu = nullptr;
  for (const auto& r : plan.value().rows) {
    if (r.card == "gpu-48") gpu = &r;
  }
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->assumed);
  EXPECT_FALSE(gpu->fit_known);  // a CPU's resident memory says nothing of a GPU's
  EXPECT_EQ(gpu->replicas, 3u);  // ceil(10000 / 4000)
  EXPECT_EQ(gpu->per_card, 1u);
  EXPECT_EQ(gpu->cards, 3u);
  EXPECT_EQ(gpu->lots, 2u);  // 2 cards a lot
  EXPECT_DOUBLE_EQ(gpu->cost, 1400);
  // Stated memory makes the fit known on every card.
  q.replica_memory_gb = 20;
  auto stated = BuildServicePlan(q);
  ASSERT_TRUE(stated.ok());
  for (const auto& r : stated.value().rows) {
    EXPECT_TRUE(r.fit_known);
    if (r.card == "cpu-box") {
      EXPECT_FALSE(r.fits);  // 20 GB over 9
    }
    if (r.card == "gpu-48") {
      EXPECT_EQ(r.per_card, 2u);  // 43.2 GB / 20
    }
  }
}

TEST(ServicePlan, BoundsAndRefusals) {
  // No rate met: no rows, exit 4's plan.
  ServicePlanRequest none = Request(100);
  none.basis.rate_per_replica = 0;
  auto p0 = BuildServicePlan(none);
  ASSERT_TRUE(p0.ok());
  EXPECT_FALSE(p0.value().any_fits());
  // A rate needing more than 10^9 replicas fits nothing, and no count overflows.
  ServicePlanRequest huge = Request(1e9);
  huge.basis.rate_per_replica = 1e-3;
  auto p1 = BuildServicePlan(huge);
  ASSERT_TRUE(p1.ok());
  EXPECT_FALSE(p1.value().any_fits());
  for (const auto& r : p1.value().rows) EXPECT_NE(r.why.find("10^9"), std::string::npos);
  // Refused: a tiny scaling, a tiny stated memory, a bad rate, --measured-on for a load pilot ran.
  ServicePlanRequest q = Request(100);
  q.assume_scaling = 1e-13;
  EXPECT_FALSE(BuildServicePlan(q).ok());
  q = Request(100);
  q.replica_memory_gb = 1e-300;
  EXPECT_FALSE(BuildServicePlan(q).ok());
  EXPECT_FALSE(BuildServicePlan(Request(0)).ok());
  EXPECT_FALSE(BuildServicePlan(Request(std::nan(""))).ok());
  q = Request(100);
  q.measured_on = "gpu-48";
  auto refused = BuildServicePlan(q);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().where, "--measured-on");
  q.measured_on = "no-such-card";
  EXPECT_FALSE(BuildServicePlan(q).ok());
}

TEST(ServicePlan, OverHttpNeedsItsCard) {
  ServicePlanRequest q = Request(2500);
  q.basis.device = "remote";
  q.basis.device_class.reset();
  q.basis.device_name.clear();
  q.basis.memory_mb.reset();
  q.basis.target = "http://127.0.0.1:8000";
  auto unnamed = BuildServicePlan(q);
  ASSERT_TRUE(unnamed.ok());
  EXPECT_TRUE(unnamed.value().rows.empty());  // pilot cannot see the service's card
  q.measured_on = "gpu-48";
  auto named = BuildServicePlan(q);
  ASSERT_TRUE(named.ok());
  ASSERT_EQ(named.value().rows.size(), 1u);
  const ServicePlanRow& r = named.value().rows[0];
  EXPECT_FALSE(r.assumed);
  EXPECT_FALSE(r.fit_known);  // no memory measured over HTTP: one replica a card
  EXPECT_EQ(r.replicas, 3u);
  EXPECT_EQ(r.cards, 3u);
  EXPECT_EQ(r.lots, 2u);
}

}  // namespace
}  // namespace pilot
