// Fuzzes ParsePrices (`pilot plan --prices`): an ok result holds only card types inside the
// documented ranges, and the plan built on it never divides by zero nor prices a lot twice.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/verdict/rental_plan.h"

namespace {

bool Printable(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParsePrices(text, "fuzz/prices.json");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(parsed.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(!parsed.error().what.empty() && !parsed.error().where.empty());
    PILOT_FUZZ_CHECK(parsed.error().where.find("fuzz/prices.json") != std::string::npos);
    return 0;
  }
  const PriceList& p = parsed.value();
  PILOT_FUZZ_CHECK(size <= kPricesBytes);
  PILOT_FUZZ_CHECK(Printable(p.currency, 16));
  PILOT_FUZZ_CHECK(p.note.empty() || Printable(p.note, kMaxPriceNoteChars));
  PILOT_FUZZ_CHECK(!p.cards.empty() && p.cards.size() <= kMaxCardTypes);
  std::set<std::string> names;
  for (const CardType& c : p.cards) {
    PILOT_FUZZ_CHECK(Printable(c.name, kMaxCardNameChars));
    PILOT_FUZZ_CHECK(names.insert(c.name).second);
    PILOT_FUZZ_CHECK(std::isfinite(c.memory_gb) && c.memory_gb > 0);
    PILOT_FUZZ_CHECK(c.cards_per_lot >= 1 && c.cards_per_lot <= kMaxCardsPerLot);
    PILOT_FUZZ_CHECK(!c.lot_price.empty());
    for (const auto& [days, price] : c.lot_price) {
      PILOT_FUZZ_CHECK(days == 3 || days == 7 || days == 30);
      PILOT_FUZZ_CHECK(std::isfinite(price) && price > 0);
    }
    PILOT_FUZZ_CHECK(ParseDeviceClass(DeviceClassName(c.device_class)) == c.device_class);
    PILOT_FUZZ_CHECK(c.match.size() <= kMaxMatches);
    for (const std::string& m : c.match) PILOT_FUZZ_CHECK(Printable(m, kMaxCardNameChars));
  }
  // The plan on these prices: finite numbers, a lot priced once, a B200-like lot of several cards too.
  PlanRequest q;
  q.prices = p;
  q.corpus.items = 1000000;
  q.basis.device = "cuda:0";
  q.basis.device_class = DeviceClass::kCuda;
  q.basis.items_per_s_per_card = 10;
  q.basis.peak_memory_mb = 1000;
  q.basis.memory_basis = "device";
  q.basis.device_name = "NVIDIA H100 80GB HBM3";  // a calibration's: matched against each card's `match`
  q.assume_scaling = 2;
  auto plan = BuildRentalPlan(q);
  PILOT_FUZZ_CHECK(plan.ok());
  for (const PlanRow& r : plan.value().rows) {
    PILOT_FUZZ_CHECK(r.lots >= 1 && r.lots <= kMaxLots && r.cards >= r.lots);
    PILOT_FUZZ_CHECK(std::isfinite(r.compute_hours) && r.compute_hours > 0);
    PILOT_FUZZ_CHECK(std::isfinite(r.cost) && r.cost > 0);
    PILOT_FUZZ_CHECK(r.fits == (r.fit != "no" && r.period_suffices));
  }
  for (std::size_t i = 0; i < plan.value().cards.size(); ++i) {
    const CardVerdict& v = plan.value().cards[i];
    if (v.measured_card) PILOT_FUZZ_CHECK(v.device_class == "cuda");
  }
  if (plan.value().cheapest) PILOT_FUZZ_CHECK(plan.value().rows[*plan.value().cheapest].fits);
  if (plan.value().fastest) PILOT_FUZZ_CHECK(plan.value().rows[*plan.value().fastest].fits);
  return 0;
}
