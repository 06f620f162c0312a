// Fuzzes CheckEvidenceDocument (a doctor report, compare.json or plan.json handed to
// `pilot decide`, any of which may have been edited): the first byte picks the kind, the rest
// is the document. Every outcome is ok or bad input naming the file; never a throw, never a
// crash on a wrong type, a huge number or NaN-like text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/verdict/decide.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  if (size == 0) return 0;
  static const char* kKinds[] = {"doctor", "compare", "plan"};
  const std::string kind = kKinds[data[0] % 3];
  std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
  Status st = CheckEvidenceDocument(kind, doc, "evidence.json");
  if (!st.ok()) {
    PILOT_FUZZ_CHECK(st.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(st.error().where == "evidence.json");
    PILOT_FUZZ_CHECK(st.error().what.size() < 4000);
  }
  return 0;
}
