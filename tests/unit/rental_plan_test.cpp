// `pilot plan`'s library (rental_plan.h): the price file's validation, the figures read from
// a folder's documents, and the arithmetic of cards x period x lots. No file system but the
// in-memory one, no torch.
#include "pilot/verdict/rental_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/memory_fs.h"
#include "pilot/report.h"

namespace pilot {
namespace {

using json = nlohmann::json;

// A measurement of `rate` items/s per card and `peak_mb` on `cls`.
Measurement Basis(DeviceClass cls, double rate, double peak_mb) {
  Measurement m;
  m.folder = "runs/r1";
  m.folder_kind = "run";
  m.device = cls == DeviceClass::kCpu ? "cpu" : "cuda:0";
  m.device_class = cls;
  m.items = 12;
  m.items_per_s_per_card = rate;
  m.peak_memory_mb = peak_mb;
  m.memory_basis = cls == DeviceClass::kCpu ? "rss" : "device";
  return m;
}

CardType Card(std::string name, DeviceClass cls, double gb, int per_lot, std::map<int, double> prices) {
  CardType c;
  c.name = std::move(name);
  c.device_class = cls;
  c.memory_gb = gb;
  c.cards_per_lot = per_lot;
  c.lot_price = std::move(prices);
  return c;
}

PlanRequest Request(Measurement basis, std::vector<CardType> cards, std::size_t items, double allowance = 8) {
  PlanRequest q;
  q.basis = std::move(basis);
  q.prices.currency = "EUR";
  q.prices.file = "prices.json";
  q.prices.cards = std::move(cards);
  q.corpus.items = items;
  q.allowance_hours = allowance;
  return q;
}

const PlanRow* Row(const RentalPlan& p, const std::string& card, int days, int lots) {
  for (const auto& r : p.rows) {
    if (r.card == card && r.period_days == days && r.lots == lots) return &r;
  }
  return nullptr;
}

// --- arithmetic ----------------------------------------------------------------------------

TEST(RentalPlan, B200LotOfTwoCardsIsPricedOncePerLot) {
  auto q = Request(Basis(DeviceClass::kCuda, 100, 1000),
                   {Card("B200", DeviceClass::kCuda, 180, 2, {{7, 3900}, {30, 14500}})}, 3'600'000);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const PlanRow* r = Row(plan.value(), "B200", 7, 3);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->cards, 6);
  EXPECT_DOUBLE_EQ(r->cost, 3 * 3900.0);  // never x cards_per_lot again
  // Over the corpus: 11,700 for 3.6M items is 3,250 per million; no tokens by items.
  EXPECT_DOUBLE_EQ(r->cost_per_million_items, 3 * 3900.0 * 1e6 / 3'600'000);
  EXPECT_FALSE(r->cost_per_million_tokens.has_value());
  // 3.6M items at 100/s per card on 6 cards: 6000 s = 1.667 h of compute.
  EXPECT_NEAR(r->compute_hours, 3'600'000.0 / (100 * 6) / 3600, 1e-9);
  EXPECT_NEAR(r->needed_hours, r->compute_hours + 8, 1e-9);
  EXPECT_EQ(Row(plan.value(), "B200", 3, 1), nullptr);  // 3 days not offered
  EXPECT_EQ(plan.value().rows.size(), 20u);             // 2 periods x 10 lots
}

TEST(RentalPlan, PeriodTooShortForAllowancePlusCompute) {
  // 1 card at 1 item/s: 3 days = 72 h hold 64 h of compute only with the 8 h allowance.
  const std::size_t items_64h = 64 * 3600;
  auto q = Request(Basis(DeviceClass::kCpu, 1, 100),
                   {Card("c", DeviceClass::kCpu, 64, 1, {{3, 10}, {7, 20}})}, items_64h);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  const PlanRow* r = Row(plan.value(), "c", 3, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(r->needed_hours, 72, 1e-9);
  EXPECT_TRUE(r->period_suffices);  // exactly 72 h: covered
  q.corpus.items = items_64h + 1;
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  r = Row(plan.value(), "c", 3, 1);
  EXPECT_FALSE(r->period_suffices);
  EXPECT_FALSE(r->fits);
  EXPECT_TRUE(Row(plan.value(), "c", 3, 2)->fits);  // two cards halve compute
  // The allowance alone can exceed a period: 80 h of allowance never fits 3 days.
  q.allowance_hours = 80;
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  for (int lots = 1; lots <= kMaxLots; ++lots) EXPECT_FALSE(Row(plan.value(), "c", 3, lots)->fits);
  EXPECT_TRUE(Row(plan.value(), "c", 7, 1)->fits);
}

TEST(RentalPlan, CheapestAndFastestChosen) {
  // 100 items/s per card, 36M items: 100 card-hours of compute.
  auto q = Request(Basis(DeviceClass::kCuda, 100, 1000),
                   {Card("small", DeviceClass::kCuda, 24, 1, {{3, 100}, {7, 200}, {30, 500}}),
                    Card("pair", DeviceClass::kCuda, 80, 2, {{3, 300}, {7, 500}})},
                   36'000'000);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  const RentalPlan& p = plan.value();
  ASSERT_TRUE(p.cheapest && p.fastest);
  // small, 7 days (168 h): 1 card needs 108 h -> 200. small 3 days: 2 cards need 58 h -> 200 too;
  // the tie goes to fewer cards: 7 days x 1 lot.
  const PlanRow& c = p.rows[*p.cheapest];
  EXPECT_EQ(c.card, "small");
  EXPECT_EQ(c.lots, 1);
  EXPECT_EQ(c.period_days, 7);
  EXPECT_DOUBLE_EQ(c.cost, 200);
  // Fastest: 10 lots of pair = 20 cards: 5 h + 8; cost 3000 (3 days) < 5000 (7 days).
  const PlanRow& f = p.rows[*p.fastest];
  EXPECT_EQ(f.card, "pair");
  EXPECT_EQ(f.cards, 20);
  EXPECT_EQ(f.period_days, 3);
  EXPECT_NEAR(f.needed_hours, 13, 1e-9);
  EXPECT_DOUBLE_EQ(f.cost, 3000);
  auto doc = RentalPlanToJson(p);
  EXPECT_EQ(doc["verdict"], "fits");
  EXPECT_EQ(doc["cheapest"]["card"], "small");
  EXPECT_EQ(doc["fastest"]["card"], "pair");
}

TEST(RentalPlan, CheapestTieGoesToShorterPeriodAtEqualCards) {
  auto q = Request(Basis(DeviceClass::kCuda, 1000, 10),
                   {Card("a", DeviceClass::kCuda, 24, 1, {{3, 100}, {7, 100}})}, 1000);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  const PlanRow& c = plan.value().rows[*plan.value().cheapest];
  EXPECT_EQ(c.period_days, 3);
  EXPECT_EQ(c.lots, 1);
  // Every row needs 8 h of allowance and under 0.001 h of compute: within the default 0.1 h of
  // each other, so the fastest is the cheapest of them, the same row.
  const PlanRow& f = plan.value().rows[*plan.value().fastest];
  EXPECT_EQ(f.lots, 1);
  EXPECT_EQ(f.period_days, 3);
  // Compared exactly (a resolution of 0), more lots are faster: 10 lots, then the cheaper period.
  auto q0 = q;
  q0.time_resolution_hours = 0;
  auto exact = BuildRentalPlan(q0);
  ASSERT_TRUE(exact.ok());
  const PlanRow& f0 = exact.value().rows[*exact.value().fastest];
  EXPECT_EQ(f0.lots, 10);
  EXPECT_EQ(f0.period_days, 3);
}

TEST(RentalPlan, FastestIsTheCheapestOfThePlansWithinTheTimeResolution) {
  // 50,000 items at 1,000 items/s per card: 0.014 card-hours, under an 8 h allowance. Twenty
  // B200 (ten lots of two) need 8.0007 h for 10,000; one H100 needs 8.0139 h for 310.
  auto q = Request(Basis(DeviceClass::kCuda, 1000, 1000),
                   {Card("B200", DeviceClass::kCuda, 180, 2, {{3, 1000}}),
                    Card("H100", DeviceClass::kCuda, 80, 1, {{3, 310}})},
                   50'000);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const RentalPlan& p = plan.value();
  const PlanRow& f = p.rows[*p.fastest];
  EXPECT_EQ(f.card, "H100");
  EXPECT_EQ(f.cards, 1);
  EXPECT_DOUBLE_EQ(f.cost, 310);
  EXPECT_EQ(p.fastest, p.cheapest);
  // Each card's own picks: the B200's cheapest and fastest are its one lot.
  const PlanPicks b200 = PickPlans(p, "B200");
  ASSERT_TRUE(b200.cheapest && b200.fastest);
  EXPECT_EQ(p.rows[*b200.fastest].lots, 1);
  EXPECT_EQ(p.rows[*b200.cheapest].card, "B200");
  EXPECT_FALSE(PickPlans(p, "A100").cheapest.has_value());
  // The rule is stated, with its resolution.
  const auto doc = RentalPlanToJson(p);
  EXPECT_EQ(doc["time_resolution_hours"], 0.1);
  EXPECT_NE(doc["pick_rule"].get<std::string>().find("the quickest's hours + 0.10 h"), std::string::npos)
      << doc["pick_rule"];
  // Compared exactly, the twenty cards win on 0.013 h, as they did before the resolution.
  q.time_resolution_hours = 0;
  auto exact = BuildRentalPlan(q);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact.value().rows[*exact.value().fastest].cards, 20);
  // The resolution decides how much slower a cheaper plan may be: with 5,000,000 items, one
  // H100 needs 9.39 h (310), two 8.69 h (620), ten lots of B200 8.07 h (10,000).
  q.corpus.items = 5'000'000;
  q.time_resolution_hours = 2;
  auto wide = BuildRentalPlan(q);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide.value().rows[*wide.value().fastest].card, "H100");
  EXPECT_EQ(wide.value().rows[*wide.value().fastest].cards, 1);
  q.time_resolution_hours = 1;
  auto narrow = BuildRentalPlan(q);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow.value().rows[*narrow.value().fastest].card, "H100");
  EXPECT_EQ(narrow.value().rows[*narrow.value().fastest].cards, 2);
  q.time_resolution_hours = 0.05;
  auto tight = BuildRentalPlan(q);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight.value().rows[*tight.value().fastest].card, "B200");
}

TEST(RentalPlan, RefusesDeviceClassMismatchWithoutScaling) {
  auto q = Request(Basis(DeviceClass::kCpu, 300, 170), {Card("H100", DeviceClass::kCuda, 80, 1, {{3, 400}})},
                   1000);
  auto plan = BuildRentalPlan(q);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(plan.error().what.find("H100 (cuda)"), std::string::npos) << plan.error().what;
  EXPECT_NE(plan.error().hint.find("--assume-scaling"), std::string::npos);
  // With F: the rate is F x measured, labelled assumed, and the fit is unknown.
  q.assume_scaling = 20;
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const PlanRow* r = Row(plan.value(), "H100", 3, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->rate_basis, "assumed");
  EXPECT_DOUBLE_EQ(r->items_per_s_per_card, 6000);
  bool labelled = false;
  for (const auto& w : plan.value().warnings) labelled |= w.find("ASSUMPTION") != std::string::npos;
  EXPECT_TRUE(labelled);
  EXPECT_EQ(RentalPlanToJson(plan.value())["basis"]["assume_scaling"], 20.0);
}

TEST(RentalPlan, CpuFiguresGiveUnknownFitOnAGpu) {
  auto q = Request(Basis(DeviceClass::kCpu, 300, 500'000),  // an RSS far above any card
                   {Card("H100", DeviceClass::kCuda, 80, 1, {{3, 400}}),
                    Card("host", DeviceClass::kCpu, 1024, 1, {{3, 50}})},
                   1000);
  q.assume_scaling = 1;
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.value().cards[0].fit, "unknown");
  EXPECT_EQ(plan.value().cards[1].fit, "yes");  // RSS against a CPU node's memory is judged
  const PlanRow* r = Row(plan.value(), "H100", 3, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->fit, "unknown");
  EXPECT_TRUE(r->fits);  // unknown does not exclude, it labels
  EXPECT_EQ(Row(plan.value(), "host", 3, 1)->rate_basis, "measured");
}

TEST(RentalPlan, ModelTooLargeForOneCardNeedsModelParallelism) {
  // 30 GB peak on the GPU: fits 48 GB (43.2 usable), not 24 GB (21.6 usable); several 24 GB
  // cards do not pool their memory.
  auto q = Request(Basis(DeviceClass::kCuda, 10, 30 * 1024.0),
                   {Card("small", DeviceClass::kCuda, 24, 1, {{30, 100}}),
                    Card("big", DeviceClass::kCuda, 48, 1, {{30, 900}})},
                   1000);
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  const RentalPlan& p = plan.value();
  EXPECT_EQ(p.cards[0].fit, "no");
  EXPECT_NE(p.cards[0].note.find("needs model parallelism; not covered"), std::string::npos);
  EXPECT_EQ(Row(p, "small", 30, 10), nullptr);  // no plan for that card
  EXPECT_EQ(p.cards[1].fit, "yes");
  EXPECT_EQ(p.rows[*p.cheapest].card, "big");
  // Only the small card: nothing fits.
  q.prices.cards.pop_back();
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan.value().any_fits());
  EXPECT_EQ(RentalPlanToJson(plan.value())["verdict"], "none_fits");
  EXPECT_TRUE(RentalPlanToJson(plan.value())["cheapest"].is_null());
  // The headroom decides at the edge: 0 keeps nothing back.
  q.basis.peak_memory_mb = 24 * 1024.0;
  q.headroom = 0;
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.value().cards[0].fit, "yes");
}

TEST(RentalPlan, TheOutputsBytesAndCopyOffTimeAreInEveryRowsNeededHours) {
  // 12 items wrote 36,000 bytes: 3,000 an item, 3.6 TB for 1.2 billion; at 100 MB/s that is
  // 10 h of copying, on top of compute and the allowance, in every row.
  auto q = Request(Basis(DeviceClass::kCpu, 1000, 10),
                   {Card("c", DeviceClass::kCpu, 8, 1, {{3, 10}, {7, 20}})}, 1'200'000'000);
  q.basis.output_bytes = 36'000;
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const OutputProjection& o = plan.value().output;
  ASSERT_TRUE(o.bytes_per_item && o.corpus_bytes);
  EXPECT_DOUBLE_EQ(*o.bytes_per_item, 3000);
  EXPECT_DOUBLE_EQ(*o.corpus_bytes, 3.6e12);
  EXPECT_NEAR(o.copy_off_hours, 10, 1e-9);
  for (const PlanRow& r : plan.value().rows) {
    EXPECT_DOUBLE_EQ(r.copy_off_hours, 10);
    EXPECT_NEAR(r.needed_hours, r.compute_hours + 10 + 8, 1e-9);
  }
  // 10 lots: 1.2e9 / (1000 x 10) / 3600 = 33.3 h of compute + 18 = 51.3 h, within 3 days; at
  // 10 MB/s the copy alone takes 100 h, and no 3-day plan fits.
  EXPECT_TRUE(Row(plan.value(), "c", 3, 10)->fits);
  q.copy_off_mb_per_s = 10;
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(plan.value().output.copy_off_hours, 100, 1e-9);
  for (int lots = 1; lots <= kMaxLots; ++lots) EXPECT_FALSE(Row(plan.value(), "c", 3, lots)->fits);
  // Unknown bytes (a sweep's): no copy-off in the needed hours, and a warning says so.
  q.basis.output_bytes.reset();
  q.basis.folder_kind = "sweep";
  plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan.value().output.corpus_bytes.has_value());
  EXPECT_EQ(Row(plan.value(), "c", 3, 1)->copy_off_hours, 0);
  bool warned = false;
  for (const auto& w : plan.value().warnings)
    warned |= w.find("outputs' size is unknown") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(RentalMeasurement, OutputsAreTheFilesThatGrowWithItemsAsStoredNeverALink) {
  MemoryFileSystem fsys;
  ASSERT_TRUE(fsys.CreateDirectories("m/data/shards/shard-0-of-2").ok());
  ASSERT_TRUE(fsys.CreateDirectories("m/data/shards/shard-1-of-2").ok());
  ASSERT_TRUE(fsys.WriteFileAtomic("m/data/results.jsonl", std::string(100, 'r')).ok());
  ASSERT_TRUE(fsys.WriteFileAtomic("m/data/vectors.npy", std::string(1000, 'v')).ok());
  ASSERT_TRUE(fsys.WriteFileAtomic("m/data/report.json", std::string(5000, 'x')).ok());  // not an output
  ASSERT_TRUE(fsys.WriteFileAtomic("m/data/shards/shard-0-of-2/journal.jsonl", std::string(10, 'j')).ok());
  ASSERT_TRUE(fsys.WriteFileAtomic("m/data/shards/shard-1-of-2/journal.jsonl", std::string(20, 'j')).ok());
  ASSERT_TRUE(fsys.WriteFileAtomic("outside", std::string(1 << 20, 'o')).ok());
  fsys.AddSymlink("m/data/vectors.sidecar", "../../outside");  // a link is never counted
  Measurement m;
  m.folder_kind = "merged";
  ASSERT_TRUE(MeasureOutputs(fsys, "m", m).ok());
  ASSERT_TRUE(m.output_bytes.has_value());
  EXPECT_EQ(*m.output_bytes, 100u + 1000 + 10 + 20);
  EXPECT_EQ(m.output_files, (std::vector<std::string>{"data/results.jsonl", "data/vectors.npy",
                                                      "data/shards/shard-0-of-2/journal.jsonl",
                                                      "data/shards/shard-1-of-2/journal.jsonl"}));
  m.folder_kind = "run";  // a run has no shard journals
  ASSERT_TRUE(MeasureOutputs(fsys, "m", m).ok());
  EXPECT_EQ(*m.output_bytes, 1100u);
  m.folder_kind = "sweep";  // keeps no outputs
  ASSERT_TRUE(MeasureOutputs(fsys, "m", m).ok());
  EXPECT_FALSE(m.output_bytes.has_value());
  EXPECT_TRUE(m.output_files.empty());
}

TEST(RentalPlan, RefusesBadRequestFigures) {
  auto base = Request(Basis(DeviceClass::kCpu, 10, 10), {Card("c", DeviceClass::kCpu, 8, 1, {{3, 1}})}, 10);
  auto q = base;
  q.corpus.items = 0;
  EXPECT_FALSE(BuildRentalPlan(q).ok());
  q = base;
  q.allowance_hours = std::nan("");
  EXPECT_EQ(BuildRentalPlan(q).error().where, "--allowance-hours");
  q = base;
  q.headroom = 1.5;
  EXPECT_EQ(BuildRentalPlan(q).error().where, "--headroom");
  q = base;
  q.assume_scaling = -1;
  EXPECT_EQ(BuildRentalPlan(q).error().where, "--assume-scaling");
  q = base;
  q.assume_scaling = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(BuildRentalPlan(q).ok());
  q = base;
  q.basis.items_per_s_per_card = 0;
  EXPECT_FALSE(BuildRentalPlan(q).ok());
  for (double bad : {-0.1, 24.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    q = base;
    q.time_resolution_hours = bad;
    auto refused = BuildRentalPlan(q);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().where, "--time-resolution");
  }
  for (double bad : {0.0, -1.0, 2e6, std::nan(""), std::numeric_limits<double>::infinity()}) {
    q = base;
    q.copy_off_mb_per_s = bad;
    auto refused = BuildRentalPlan(q);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().where, "--copy-off-mb-per-s");
  }
}

TEST(RentalPlan, DocumentHasTheShapeDecideReads) {
  auto q = Request(Basis(DeviceClass::kCpu, 10, 10), {Card("c", DeviceClass::kCpu, 8, 1, {{3, 1}})}, 10);
  q.prices.example = true;
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok());
  auto j = RentalPlanToJson(plan.value());
  EXPECT_EQ(j["kind"], "pilot-plan");
  EXPECT_EQ(j["format_version"], 3);
  EXPECT_EQ(j["projection"]["by"], "items");
  EXPECT_EQ(j["projection"]["factor"], 1.0);
  for (const char* key :
       {"basis", "corpus", "projection", "allowance_hours", "time_resolution_hours", "pick_rule", "prices",
        "plans", "cards", "cheapest", "fastest", "verdict", "warnings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"folder", "folder_kind", "device", "device_class", "items", "items_per_s_per_card",
                          "peak_memory_mb", "memory_basis", "assume_scaling"}) {
    EXPECT_TRUE(j["basis"].contains(key)) << key;
  }
  for (const char* key :
       {"card", "period_days", "lots", "cards", "fit", "compute_hours", "needed_hours", "period_suffices",
        "cost", "cost_per_million_items", "cost_per_million_tokens", "fits"}) {
    EXPECT_TRUE(j["plans"][0].contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(j["plans"][0]["cost_per_million_items"].get<double>(), 1 * 1e6 / 10);
  EXPECT_TRUE(j["plans"][0]["cost_per_million_tokens"].is_null());
  EXPECT_EQ(j["prices"]["example"], true);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("EXAMPLE"), std::string::npos);
}

// --- the price file ------------------------------------------------------------------------

const char* const kGoodPrices = R"({"example": true, "currency": "EUR", "note": "made up",
  "cards": [{"name": "B200", "class": "cuda", "memory_gb": 180, "cards_per_lot": 2,
             "lot_price": {"7": 3900, "30": 14500}},
            {"name": "MI300X", "class": "rocm", "memory_gb": 192, "cards_per_lot": 1,
             "lot_price": {"3": 480}}]})";

TEST(RentalPrices, ParsesAGoodFile) {
  auto p = ParsePrices(kGoodPrices, "prices.json");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_TRUE(p.value().example);
  EXPECT_EQ(p.value().currency, "EUR");
  ASSERT_EQ(p.value().cards.size(), 2u);
  EXPECT_EQ(p.value().cards[0].cards_per_lot, 2);
  EXPECT_EQ(p.value().cards[0].lot_price.size(), 2u);
  EXPECT_EQ(p.value().cards[1].device_class, DeviceClass::kRocm);
}

// Replaces the first occurrence of `from` in the good file by `to`.
std::string Edited(const std::string& from, const std::string& to) {
  std::string s = kGoodPrices;
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void ExpectRefused(const std::string& text, const std::string& key) {
  auto p = ParsePrices(text, "prices.json");
  ASSERT_FALSE(p.ok()) << text;
  EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(p.error().where.find("prices.json"), std::string::npos) << p.error().where;
  EXPECT_NE(p.error().where.find(key), std::string::npos) << "where: " << p.error().where << ", want " << key;
}

TEST(RentalPrices, ValidationErrorsNameTheKey) {
  ExpectRefused(Edited("\"note\"", "\"notes\""), "notes");
  ExpectRefused(Edited("\"class\": \"cuda\"", "\"class\": \"tpu\""), "cards[0].class");
  ExpectRefused(Edited("\"memory_gb\": 180", "\"memory_gb\": 0"), "cards[0].memory_gb");
  ExpectRefused(Edited("\"memory_gb\": 180", "\"memory_gb\": \"180\""), "cards[0].memory_gb");
  ExpectRefused(Edited("\"cards_per_lot\": 2", "\"cards_per_lot\": 17"), "cards[0].cards_per_lot");
  ExpectRefused(Edited("\"cards_per_lot\": 2", "\"cards_per_lot\": 2.5"), "cards[0].cards_per_lot");
  ExpectRefused(Edited("\"cards_per_lot\": 2", "\"cards_per_lot\": 0"), "cards[0].cards_per_lot");
  ExpectRefused(Edited("\"7\": 3900", "\"14\": 3900"), "cards[0].lot_price.14");
  ExpectRefused(Edited("\"7\": 3900", "\"7\": -1"), "cards[0].lot_price.7");
  ExpectRefused(Edited("\"7\": 3900", "\"7\": 0"), "cards[0].lot_price.7");
  ExpectRefused(Edited("\"7\": 3900", "\"7\": 1e999"), "prices.json");  // refused by the parser itself
  ExpectRefused(Edited("\"7\": 3900", "\"7\": null"), "cards[0].lot_price.7");
  ExpectRefused(Edited("\"lot_price\": {\"3\": 480}", "\"lot_price\": {}"), "cards[1].lot_price");
  ExpectRefused(Edited("\"name\": \"MI300X\"", "\"name\": \"B200\""), "cards[1].name");
  ExpectRefused(Edited("\"name\": \"MI300X\"", "\"name\": \"bad\\u0001name\""), "cards[1].name");
  ExpectRefused(Edited("\"name\": \"MI300X\", ", ""), "cards[1].name");
  ExpectRefused(Edited("\"cards_per_lot\": 1,", "\"cards_per_lot\": 1, \"speed\": 3,"), "cards[1].speed");
  ExpectRefused(Edited("\"example\": true", "\"example\": \"yes\""), "example");
  ExpectRefused(Edited("\"currency\": \"EUR\"", "\"currency\": 5"), "currency");
  ExpectRefused(R"({"currency": "EUR", "cards": []})", "cards");
  ExpectRefused("[]", "prices.json");
  ExpectRefused("{", "prices.json");
}

TEST(RentalPrices, CapsSizeDepthAndCount) {
  ExpectRefused(std::string(kPricesBytes + 1, ' '), "prices.json");
  ExpectRefused(std::string(100, '[') + std::string(100, ']'), "prices.json");
  std::string many = R"({"currency": "EUR", "cards": [)";
  for (std::size_t i = 0; i <= kMaxCardTypes; ++i) {
    many += (i ? "," : "") + std::string(R"({"name": "c)") + std::to_string(i) +
            R"(", "class": "cpu", "memory_gb": 1, "cards_per_lot": 1, "lot_price": {"3": 1}})";
  }
  ExpectRefused(many + "]}", "cards");
}

TEST(RentalPrices, LoadRefusesAFifoAndHashesTheBytes) {
  MemoryFileSystem mfs;
  mfs.AddFolder("/p");
  mfs.AddSpecial("/p/fifo.json");
  auto fifo = LoadPrices(mfs, "/p/fifo.json");
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().where.find("fifo.json"), std::string::npos);
  mfs.AddFile("/p/prices.json", kGoodPrices);
  auto p = LoadPrices(mfs, "/p/prices.json");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ(p.value().sha256.size(), 64u);
  EXPECT_EQ(p.value().file, "/p/prices.json");
}

// --- the figures of a folder ---------------------------------------------------------------

// A whole report.json as a run writes it, with these figures (12 items, all accepted).
json ReportDoc(double rate, double rss, std::optional<double> device_peak, std::size_t shards = 0,
               double shard_rate_sum = 0) {
  Report r;
  r.output = &ClassificationOutput();
  r.total = r.accepted = 12;
  r.items_per_second = rate;
  r.peak_rss_mb = rss;
  r.device_peak_mb = device_peak;
  r.shards = shards;
  r.shard_rate_sum = shard_rate_sum;
  return json::parse(PrettyJson(ReportToJson(r)));
}

std::map<std::string, json> RunDocs() {
  return {{"data/run.json", json::parse(R"({"plan": {"device": "cuda:0"}})")},
          {"data/environment.json", json::parse(R"({"libtorch": {"rocm_available": false}})")},
          {"data/report.json", ReportDoc(50.0, 900, 300.0)}};
}

TEST(RentalMeasurement, RunFolderFigures) {
  auto m = MeasurementFromDocuments("runs/r", "run", RunDocs());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m.value().device_class, DeviceClass::kCuda);
  EXPECT_EQ(m.value().items, 12u);
  EXPECT_DOUBLE_EQ(m.value().items_per_s_per_card, 50);
  EXPECT_DOUBLE_EQ(m.value().peak_memory_mb, 300);  // the device's peak on a GPU
  EXPECT_EQ(m.value().memory_basis, "device");
  auto docs = RunDocs();
  docs["data/environment.json"]["libtorch"]["rocm_available"] = true;  // ROCm names its devices cuda
  EXPECT_EQ(MeasurementFromDocuments("runs/r", "run", docs).value().device_class, DeviceClass::kRocm);
  docs = RunDocs();
  docs["data/run.json"]["plan"]["device"] = "cpu";
  m = MeasurementFromDocuments("runs/r", "run", docs);
  EXPECT_EQ(m.value().memory_basis, "rss");
  EXPECT_DOUBLE_EQ(m.value().peak_memory_mb, 900);
}

TEST(RentalMeasurement, WrongTypesNameFileAndKey) {
  auto docs = RunDocs();
  docs["data/report.json"]["throughput_items_per_s"] = "fast";
  auto m = MeasurementFromDocuments("runs/r", "run", docs);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(m.error().where.find("data/report.json key throughput_items_per_s"), std::string::npos)
      << m.error().where;
  docs = RunDocs();
  docs["data/report.json"]["counts"] = json::array();
  EXPECT_NE(MeasurementFromDocuments("runs/r", "run", docs).error().where.find("counts"), std::string::npos);
  docs = RunDocs();
  docs["data/run.json"]["plan"]["device"] = 7;
  EXPECT_NE(MeasurementFromDocuments("runs/r", "run", docs).error().where.find("plan.device"),
            std::string::npos);
  docs = RunDocs();
  docs["data/run.json"]["plan"]["device"] = "tpu";
  EXPECT_FALSE(MeasurementFromDocuments("runs/r", "run", docs).ok());
  docs = RunDocs();
  docs["data/report.json"]["throughput_items_per_s"] = 0;
  EXPECT_FALSE(MeasurementFromDocuments("runs/r", "run", docs).ok());
  docs = RunDocs();
  docs["data/report.json"] = json::array();
  EXPECT_FALSE(MeasurementFromDocuments("runs/r", "run", docs).ok());
  EXPECT_FALSE(MeasurementFromDocuments("runs/r", "decision", RunDocs()).ok());
}

TEST(RentalMeasurement, MergedFolderRatePerWorker) {
  std::map<std::string, json> docs = {
      {"data/run.json", json::parse(R"({"plan": {"device": null}})")},
      {"data/shards/shard-0-of-2/run.json", json::parse(R"({"plan": {"device": "cpu"}})")},
      {"data/shards/shard-1-of-2/run.json", json::parse(R"({"plan": {"device": "cpu"}})")},
      {"data/report.json", ReportDoc(30, 170, std::nullopt, 2, 120)}};
  auto m = MeasurementFromDocuments("runs/m", "merged", docs);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_DOUBLE_EQ(m.value().items_per_s_per_card, 60);
  EXPECT_EQ(m.value().device, "cpu");
  docs["data/shards/shard-1-of-2/run.json"]["plan"]["device"] = "cuda:1";
  EXPECT_FALSE(MeasurementFromDocuments("runs/m", "merged", docs).ok());  // mixed classes
}

TEST(RentalMeasurement, SweepWeightsRecommendedSizesByGroupItems) {
  std::map<std::string, json> docs = {{"data/sweep.json", json::parse(R"({
      "measured_on": {"device": "cpu"},
      "groups": [{"group": 1, "items": 30, "sampled": 3}, {"group": 2, "items": 10, "sampled": 2}],
      "cells": [{"group": 1, "batch_size": 2, "items_per_second": 100},
                {"group": 1, "batch_size": 4, "items_per_second": 300},
                {"group": 2, "batch_size": 4, "items_per_second": 10}],
      "recommendation": [{"group": 1, "batch_size": 4, "peak_memory_mb": 200},
                         {"group": 2, "batch_size": 4, "peak_memory_mb": 250}]})")}};
  auto m = MeasurementFromDocuments("sw", "sweep", docs);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  // 30 items at 300/s (0.1 s) + 10 at 10/s (1 s): 40 items in 1.1 s.
  EXPECT_NEAR(m.value().items_per_s_per_card, 40 / 1.1, 1e-9);
  EXPECT_DOUBLE_EQ(m.value().peak_memory_mb, 250);
  EXPECT_EQ(m.value().items, 5u);
  docs["data/sweep.json"]["recommendation"][1]["batch_size"] = nullptr;
  auto none = MeasurementFromDocuments("sw", "sweep", docs);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().where.find("recommendation[1].batch_size"), std::string::npos) << none.error().where;
}

// --- lengths in tokens ---------------------------------------------------------------------

PlanTokenizer TinyBert(std::size_t max_length) {
  std::ifstream in(std::string(PILOT_TOKENIZER_DATA) + "/tiny-bert.json", std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  auto t = ParseTokenizerJson(buf.str(), "tiny-bert.json");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().ToString());
  PlanTokenizer p;
  p.tokenizer = t.ok() ? std::move(t.value()) : nullptr;
  p.settings.max_length = max_length;
  p.file = "tiny-bert.json";
  p.truncation = "truncate";
  p.max_bytes = 1000;
  return p;
}

// A manifest of texts under /c (JSON Lines), each pinned by its sha256; `text(i)` gives item i's
// text, or nullopt for an item whose file is absent.
void AddCorpus(MemoryFileSystem& mfs, std::size_t n,
               const std::function<std::optional<std::string>(std::size_t)>& text) {
  std::string lines;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string id = "t" + std::to_string(i);
    auto t = text(i);
    if (t) mfs.AddFile("/c/" + id + ".txt", *t);
    lines +=
        R"({"id":")" + id + R"(","path":")" + id + R"(.txt","sha256":")" + Sha256Hex(t ? *t : "") + "\"}\n";
  }
  mfs.AddFile("/c/manifest.jsonl", lines);
}

std::size_t TokensOf(const PlanTokenizer& t, const std::string& text) {
  TokenizerSettings s = t.settings;
  s.max_length = 1 << 20;
  return EncodeText(*t.tokenizer, s, text).tokens;
}

TEST(RentalTokens, ALargeManifestIsSampledEveryKthItemOverItsWhole) {
  // 10,001 items: every 2nd is tokenized (5,001), spread over the whole manifest, and the
  // counted tokens are those items' own.
  MemoryFileSystem mfs;
  const std::vector<std::string> texts = {"the program", "free software of the program", "GNU", "a notice"};
  AddCorpus(mfs, 10001, [&](std::size_t i) { return texts[(i / 2) % texts.size()]; });
  const PlanTokenizer tok = TinyBert(512);
  std::size_t calls = 0;
  TokenMix m = MeasureTokens(mfs, "/c/manifest.jsonl", "/c", tok, [&](std::size_t, std::size_t) { ++calls; });
  EXPECT_EQ(m.items, 10001u);
  EXPECT_EQ(m.stride, 2u);
  EXPECT_EQ(m.sampled, 5001u);
  EXPECT_EQ(m.encoded, 5001u);
  EXPECT_EQ(m.unread, 0u);
  std::uint64_t want = 0;
  for (std::size_t i = 0; i < 10001; i += 2) want += TokensOf(tok, texts[(i / 2) % texts.size()]);
  EXPECT_EQ(m.tokens, want);
  EXPECT_EQ(m.raw_tokens, want);
  EXPECT_DOUBLE_EQ(m.mean_tokens(), static_cast<double>(want) / 5001);
  EXPECT_GE(calls, 1u);  // progress, at least at the end of a long sample
}

TEST(RentalTokens, ItemsOverMaxLengthCountItAndItemsARunRejectsCountNothing) {
  MemoryFileSystem mfs;
  const std::string longer = "free software of the program free software of the program";
  AddCorpus(mfs, 6, [&](std::size_t i) -> std::optional<std::string> {
    switch (i) {
      case 0:
        return std::string("the program");
      case 1:
        return longer;
      case 2:
        return std::nullopt;  // missing
      case 3:
        return std::string("caf\xe9");  // not UTF-8
      case 4:
        return std::string(2000, 'a');  // over max_bytes (1000): never read
      default:
        return std::string("   \n");  // only whitespace: empty_input
    }
  });
  const PlanTokenizer tok = TinyBert(8);
  ASSERT_GT(TokensOf(tok, longer), 8u);
  TokenMix m = MeasureTokens(mfs, "/c/manifest.jsonl", "/c", tok);
  EXPECT_EQ(m.sampled, 6u);
  EXPECT_EQ(m.encoded, 2u);
  EXPECT_EQ(m.unread, 4u);
  EXPECT_EQ(m.over_max_length, 1u);
  EXPECT_EQ(m.tokens, TokensOf(tok, "the program") + 8);
  EXPECT_EQ(m.raw_tokens, TokensOf(tok, "the program") + TokensOf(tok, longer));
  EXPECT_DOUBLE_EQ(m.mean_tokens(), static_cast<double>(m.tokens) / 6);
  // A manifest that cannot be read: an unknown mix, never a failure.
  TokenMix none = MeasureTokens(mfs, "/c/absent.jsonl", "/c", tok);
  EXPECT_FALSE(none.known());
  EXPECT_EQ(none.sampled, 0u);
}

std::string TinyBertBytes() {
  std::ifstream in(std::string(PILOT_TOKENIZER_DATA) + "/tiny-bert.json", std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A folder /f as a run leaves it for plan: run.json recording `params_path` (JSON, or null),
// and the parameter copy naming `tokenizer` (relative to the parameters' folder) pinned to
// tiny-bert.json's sha256.
void AddFolder(MemoryFileSystem& mfs, const std::string& params_path, const std::string& tokenizer) {
  mfs.AddFile("/f/data/run.json", R"({"plan": {"params": )" + params_path + "}}");
  mfs.AddFile("/f/data/params.json",
              R"({"manifest": "m.json", "stage": {"kind": "torchscript-classifier", "model": "m.pt",
                  "tokenizer": {"file": ")" +
                  tokenizer + R"(", "sha256": ")" + Sha256Hex(TinyBertBytes()) +
                  R"(", "max_length": 32, "truncation": "truncate"}},
                  "allowed_categories": ["neg", "pos"]})");
}

TEST(RentalTokens, TheFoldersTokenizerIsReadWhereTheRunFoundItNeverFromTheFolderItself) {
  MemoryFileSystem mfs;
  mfs.AddFile("/cfg/tok.json", TinyBertBytes());
  AddFolder(mfs, R"("/cfg/p.json")", "tok.json");
  std::string why;
  auto found = LoadFolderTokenizer(mfs, "/f", std::nullopt, why);
  ASSERT_TRUE(found.ok()) << found.error().ToString();
  ASSERT_TRUE(found.value().has_value()) << why;
  EXPECT_EQ(found.value()->file, "/cfg/tok.json");
  EXPECT_EQ(found.value()->settings.max_length, 32u);
  EXPECT_EQ(found.value()->truncation, "truncate");

  // The same pinned bytes inside the folder (a copy may bring any file and its digest): not
  // read unasked, whether the recorded parameter path leads there or none is recorded.
  MemoryFileSystem inside;
  inside.AddFile("/f/data/tok.json", TinyBertBytes());
  AddFolder(inside, R"("/f/data/p.json")", "tok.json");
  auto refused = LoadFolderTokenizer(inside, "/f", std::nullopt, why);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused.value().has_value());
  EXPECT_NE(why.find("leads into the folder itself"), std::string::npos) << why;
  AddFolder(inside, "null", "data/tok.json");
  refused = LoadFolderTokenizer(inside, "/f", std::nullopt, why);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused.value().has_value());
  EXPECT_NE(why.find("give --tokenizer FILE"), std::string::npos) << why;
  // Given by the user, it is read wherever it is.
  auto given = LoadFolderTokenizer(inside, "/f", std::filesystem::path("/f/data/tok.json"), why);
  ASSERT_TRUE(given.ok()) << given.error().ToString();
  EXPECT_TRUE(given.value().has_value());

  // Another file where the run found it: by items, its digest never told; given, an error.
  MemoryFileSystem other;
  other.AddFile("/cfg/tok.json", "{}");
  AddFolder(other, R"("/cfg/p.json")", "tok.json");
  auto changed = LoadFolderTokenizer(other, "/f", std::nullopt, why);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed.value().has_value());
  EXPECT_NE(why.find("not the file the run pinned"), std::string::npos) << why;
  EXPECT_EQ(why.find(Sha256Hex("{}")), std::string::npos) << why;
  auto bad = LoadFolderTokenizer(other, "/f", std::filesystem::path("/cfg/tok.json"), why);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("stage.tokenizer.sha256 pins"), std::string::npos) << bad.error().what;
}

TEST(RentalTokens, AnInputOverThePlansReadCapCountsMaxLengthUnread) {
  // max_bytes 64 MiB, an input of 17 MiB: never read (plan reads 16 MiB at most), counted at
  // max_length, as no 16 MiB of text fits any max_length.
  MemoryFileSystem mfs;
  AddCorpus(mfs, 2, [](std::size_t i) -> std::optional<std::string> {
    return i == 0 ? std::string("the program") : std::string(17u << 20, 'a');
  });
  PlanTokenizer tok = TinyBert(8);
  tok.max_bytes = 64u << 20;
  TokenMix m = MeasureTokens(mfs, "/c/manifest.jsonl", "/c", tok);
  EXPECT_EQ(m.sampled, 2u);
  EXPECT_EQ(m.encoded, 1u);
  EXPECT_EQ(m.too_long_to_read, 1u);
  EXPECT_EQ(m.over_max_length, 1u);
  EXPECT_EQ(m.unread, 0u);
  EXPECT_EQ(m.tokens, TokensOf(tok, "the program") + 8);
}

TEST(RentalTokens, APlanByTokensScalesComputeByTheCorpusTokensOverThePilots) {
  // 3.6M items at 100 items/s: 10 h by items; the corpus' items average 30 tokens, the
  // pilot's 12: 25 h by tokens.
  auto q = Request(Basis(DeviceClass::kCpu, 100, 1000), {Card("node", DeviceClass::kCpu, 64, 1, {{3, 30}})},
                   3'600'000);
  TokenProjection t;
  t.tokenizer_file = "tiny-bert.json";
  t.max_length = 64;
  t.truncation = "truncate";
  t.pilot.items = t.pilot.sampled = t.pilot.encoded = 10;
  t.pilot.tokens = t.pilot.raw_tokens = 120;
  t.corpus.items = 3'600'000;
  t.corpus.stride = 360;
  t.corpus.sampled = t.corpus.encoded = 10000;
  t.corpus.tokens = t.corpus.raw_tokens = 300000;
  q.tokens = t;
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const PlanRow* r = Row(plan.value(), "node", 3, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(r->compute_hours, 25.0, 1e-9);
  // 30 for 3.6M items of 30 tokens each: 108M tokens, 0.2778 per million.
  EXPECT_DOUBLE_EQ(r->cost_per_million_items, 30 * 1e6 / 3'600'000);
  ASSERT_TRUE(r->cost_per_million_tokens.has_value());
  EXPECT_DOUBLE_EQ(*r->cost_per_million_tokens, 30 * 1e6 / (3'600'000 * 30.0));
  const auto doc = RentalPlanToJson(plan.value());
  EXPECT_EQ(doc["format_version"], 3);
  EXPECT_EQ(doc["projection"]["by"], "tokens");
  EXPECT_DOUBLE_EQ(doc["projection"]["factor"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(doc["projection"]["corpus"]["mean_tokens"].get<double>(), 30.0);
  EXPECT_EQ(doc["projection"]["tokenizer"]["file"], "tiny-bert.json");
  std::string warnings;
  for (const auto& w : plan.value().warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("average 30.0 tokens, the pilot's 12.0 (x2.50)"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("10000 of 3600000 items (every 360th)"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("scales by item count only"), std::string::npos) << warnings;

  // The run's own tokens disagree with its inputs tokenized now: said.
  q.basis.recorded_tokens = 119;
  auto changed = BuildRentalPlan(q);
  ASSERT_TRUE(changed.ok());
  std::string said;
  for (const auto& w : changed.value().warnings) said += w + "\n";
  EXPECT_NE(said.find("tokenize to 120 tokens now; the run counted 119"), std::string::npos) << said;

  // By items, the reason is in the warnings and the document.
  q.tokens.reset();
  q.by_items_why = "the corpus is an item count";
  auto by_items = BuildRentalPlan(q);
  ASSERT_TRUE(by_items.ok());
  EXPECT_NEAR(Row(by_items.value(), "node", 3, 1)->compute_hours, 10.0, 1e-9);
  const auto items_doc = RentalPlanToJson(by_items.value());
  EXPECT_EQ(items_doc["projection"]["by"], "items");
  EXPECT_EQ(items_doc["projection"]["why"], "the corpus is an item count");

  // A projection whose pilot side encoded nothing is refused, not divided by zero.
  t.pilot.encoded = 0;
  t.pilot.tokens = 0;
  q.tokens = t;
  auto empty = BuildRentalPlan(q);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().what.find("both the pilot's and the corpus' inputs tokenized"), std::string::npos);

  // A factor past a million (one token among 10,000 pilot items, 300 a corpus item) is
  // refused, not planned on.
  t.pilot.sampled = t.pilot.encoded = 10000;
  t.pilot.tokens = 1;
  t.corpus.tokens = 3'000'000;
  q.tokens = t;
  auto huge = BuildRentalPlan(q);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().what.find("more than a million times as many"), std::string::npos)
      << huge.error().what;
}

}  // namespace
}  // namespace pilot
