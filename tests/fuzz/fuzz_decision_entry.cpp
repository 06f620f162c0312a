// Fuzzes ParseDecisionEntry (one line of a run folder's decisions.jsonl, which verify reads
// from copies that may be hostile): an error is bad input naming the line, never a throw; an
// accepted entry is numbered in range, has one of the four decisions, and names only
// decision-<entry>-<kind>.json files with a sha256 each.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/verdict/decision_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  auto got = ParseDecisionEntry(line, "decisions.jsonl:1");
  if (!got.ok()) {
    PILOT_FUZZ_CHECK(got.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(got.error().where == "decisions.jsonl:1");
    PILOT_FUZZ_CHECK(got.error().what.size() < 1000);
    return 0;
  }
  const DecisionEntry& e = got.value();
  PILOT_FUZZ_CHECK(e.entry >= 1 && e.entry <= kMaxDecisions);
  PILOT_FUZZ_CHECK(e.decision == "go" || e.decision == "fix-env" || e.decision == "revise-config" ||
                   e.decision == "measure-first");
  const std::string prefix = "decision-" + std::to_string(e.entry) + "-";
  for (const auto& [file, sha] : e.evidence) {
    PILOT_FUZZ_CHECK(file.rfind(prefix, 0) == 0 && file.find('/') == std::string::npos && file.size() <= 64);
    PILOT_FUZZ_CHECK(pilot::fuzz::IsLowerHex64(sha));
  }
  return 0;
}
