// Fuzzes ParseParams: an ok result holds only values inside the documented ranges.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/params.h"

namespace {

bool InRange(const std::optional<double>& v, double lo, double hi) {
  return !v || (!std::isnan(*v) && *v >= lo && *v <= hi);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  static const std::filesystem::path kBase = "/fuzz/config";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseParams(text, kBase, "fuzz/params.json");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const Params& p = parsed.value();
  PILOT_FUZZ_CHECK(!p.manifest.empty());
  PILOT_FUZZ_CHECK(!p.stage.kind.empty());
  PILOT_FUZZ_CHECK(!p.stage.model.empty());
  if (p.stage.model_sha256) PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(*p.stage.model_sha256));
  PILOT_FUZZ_CHECK(p.stage.options.is_object());
  // allowed_categories is optional here: a classifying stage requires it, an embedding one
  // refuses it, checked against the loaded stage (CheckStageFitsParams). When given, it is a
  // non-empty list of distinct, non-empty labels.
  std::set<std::string> seen;
  for (const auto& c : p.allowed_categories) {
    PILOT_FUZZ_CHECK(!c.empty());
    PILOT_FUZZ_CHECK(seen.insert(c).second);
  }
  PILOT_FUZZ_CHECK(IsKnownDevice(p.device));
  PILOT_FUZZ_CHECK(p.batch_size >= 1 && p.batch_size <= 65536);
  PILOT_FUZZ_CHECK(p.threads >= 0 && p.threads <= 1024);
  PILOT_FUZZ_CHECK(p.seed <= 9007199254740991ull);
  PILOT_FUZZ_CHECK(p.max_bytes >= 1 && p.max_bytes <= 1000000000000ull);
  PILOT_FUZZ_CHECK(InRange(p.acceptance.min_accuracy, 0, 1));
  PILOT_FUZZ_CHECK(InRange(p.acceptance.max_p95_latency_ms, 0, 1e9));
  PILOT_FUZZ_CHECK(InRange(p.acceptance.max_peak_rss_mb, 0, 1e9));
  PILOT_FUZZ_CHECK(InRange(p.acceptance.min_accepted_fraction, 0, 1));
  if (p.requires_.backend) {
    const std::string& b = *p.requires_.backend;
    PILOT_FUZZ_CHECK(b == "cpu" || b == "cuda" || b == "rocm");
  }
  if (p.requires_.min_device_count) {
    PILOT_FUZZ_CHECK(*p.requires_.min_device_count >= 0 && *p.requires_.min_device_count <= 1024);
  }
  PILOT_FUZZ_CHECK(InRange(p.requires_.min_device_memory_mb, 0, 1e9));
  PILOT_FUZZ_CHECK(InRange(p.requires_.min_free_disk_mb, 0, 1e12));
  if (p.requires_.min_libtorch_version) {
    PILOT_FUZZ_CHECK(ParseVersion(*p.requires_.min_libtorch_version).has_value());
  }
  return 0;
}
