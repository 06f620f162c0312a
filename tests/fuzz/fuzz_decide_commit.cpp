// Fuzzes ParseDecideCommit (the COMMIT.json of an interrupted `pilot decide`, which the next
// decide or resume reads from a folder that may be hostile): an error is bad input naming the
// file, never a throw; an accepted record names only files decide writes (no '/', no "..",
// decisions.jsonl among them, the tag manifest last), each with a sha256.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/verdict/decide.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto got = ParseDecideCommit(text, "COMMIT.json");
  if (!got.ok()) {
    PILOT_FUZZ_CHECK(got.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(got.error().where == "COMMIT.json");
    PILOT_FUZZ_CHECK(got.error().what.size() < 1000);
    return 0;
  }
  const DecideCommit& c = got.value();
  PILOT_FUZZ_CHECK(c.entry >= 1 && c.entry <= 1000);
  PILOT_FUZZ_CHECK(pilot::fuzz::IsLowerHex64(c.before));
  PILOT_FUZZ_CHECK(!c.files.empty() && c.files.size() <= 32);
  PILOT_FUZZ_CHECK(c.files.back().first == "tagmanifest-sha256.txt");
  std::set<std::string> names;
  for (const auto& [file, sha] : c.files) {
    PILOT_FUZZ_CHECK(file.find('/') == std::string::npos && file.find("..") == std::string::npos);
    PILOT_FUZZ_CHECK(!file.empty() && file.size() <= 64);
    PILOT_FUZZ_CHECK(pilot::fuzz::IsLowerHex64(sha));
    PILOT_FUZZ_CHECK(names.insert(file).second);
  }
  PILOT_FUZZ_CHECK(names.count("decisions.jsonl") == 1);
  return 0;
}
