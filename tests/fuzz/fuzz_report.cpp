// Fuzzes RecordedReportFromJson (data/report.json read back by status, merge, compare, plan and
// decide), after ParseJson as ReadRecordedReport does.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/json_util.h"
#include "pilot/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = ParseJson(text, "fuzz/data/report.json");
  if (!doc.ok()) return 0;
  auto parsed = RecordedReportFromJson(doc.value(), "fuzz/data/report.json", "hint");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(parsed.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(parsed.error().where.rfind("fuzz/data/report.json", 0) == 0);
    return 0;
  }
  const RecordedReport& r = parsed.value();
  PILOT_FUZZ_CHECK(r.accepted + r.rejected == r.total);
  PILOT_FUZZ_CHECK(r.correct <= r.labelled);
  PILOT_FUZZ_CHECK(!r.accuracy || (std::isfinite(*r.accuracy) && *r.accuracy >= 0 && *r.accuracy <= 1));
  for (double v : {r.p50_ms, r.p95_ms, r.p99_ms, r.items_per_second, r.peak_rss_mb, r.shard_rate_sum}) {
    PILOT_FUZZ_CHECK(std::isfinite(v) && v >= 0);
  }
  PILOT_FUZZ_CHECK(!r.device_peak_mb || (std::isfinite(*r.device_peak_mb) && *r.device_peak_mb >= 0));
  PILOT_FUZZ_CHECK(r.verdict == (r.acceptance_met ? "accepted" : "acceptance_not_met"));
  for (const auto& c : r.criteria) {
    PILOT_FUZZ_CHECK(!c.name.empty() && std::isfinite(c.limit) && std::isfinite(c.value));
  }
  return 0;
}
