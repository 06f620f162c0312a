// Fuzzes ParseRunRecord (data/run.json).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/limits.h"
#include "pilot/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseRunRecord(text, "fuzz/data/run.json");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const RunRecord& r = parsed.value();
  PILOT_FUZZ_CHECK(size <= limits::kRunRecordBytes);
  // The state is whatever the file says (verify judges it); the copy's name is checked.
  PILOT_FUZZ_CHECK(r.manifest_copy == "data/manifest.json" || r.manifest_copy == "data/manifest.jsonl");
  return 0;
}
