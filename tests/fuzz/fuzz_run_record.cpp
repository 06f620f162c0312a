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
  // Format 2's fields: the output kind a registered one; a kind with vectors has its dim in
  // range, none else; a
  // folder that declares no kind is a format-1 run.
  PILOT_FUZZ_CHECK(r.output != nullptr && FindOutputKind(r.output->name) == r.output);
  if (r.output->vectors) {
    PILOT_FUZZ_CHECK(r.dim >= 1 && r.dim <= limits::kEmbeddingDim);
  } else {
    PILOT_FUZZ_CHECK(r.dim == 0);
  }
  if (!r.kind_declared) PILOT_FUZZ_CHECK(r.folder_kind == "run" && r.format_version == 1);
  PILOT_FUZZ_CHECK(r.format_version >= 0);
  return 0;
}
