// Fuzzes ParseManifest. Built twice: fuzz_manifest_json (a .json manifest) and
// fuzz_manifest_jsonl (PILOT_FUZZ_JSONL=1, JSON Lines), so that each seed corpus holds real
// manifest files as they are.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/manifest.h"
#include "pilot/reasons.h"

#ifndef PILOT_FUZZ_JSONL
#define PILOT_FUZZ_JSONL 0
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  constexpr bool kJsonl = PILOT_FUZZ_JSONL != 0;
  const std::string source = kJsonl ? "fuzz/manifest.jsonl" : "fuzz/manifest.json";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // `pilot manifest`'s test for a manifest among the inputs takes any bytes.
  const bool starts_as_manifest = StartsAsManifest(text);
  if (kJsonl) {
    // The line scanner (the fast path) never reads a line differently from the JSON parser:
    // whatever it accepts is one object with exactly the fields it returns.
    for (std::size_t start = 0; start <= text.size();) {
      std::size_t nl = text.find('\n', start);
      std::string_view line =
          text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
      start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      auto fast = ScanManifestLine(line);
      if (!fast) continue;
      auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
      PILOT_FUZZ_CHECK(j.is_object());
      std::size_t fields = 3 + (fast->expected ? 1 : 0) + (fast->expected_rejection ? 1 : 0);
      PILOT_FUZZ_CHECK(j.size() == fields);
      PILOT_FUZZ_CHECK(j.value("id", std::string("\x01")) == fast->id);
      PILOT_FUZZ_CHECK(j.value("path", std::string("\x01")) == fast->path);
      PILOT_FUZZ_CHECK(j.value("sha256", std::string("\x01")) == fast->sha256);
      if (fast->expected) PILOT_FUZZ_CHECK(j.value("expected", std::string("\x01")) == *fast->expected);
      if (fast->expected_rejection) {
        PILOT_FUZZ_CHECK(j.value("expected_rejection", std::string("\x01")) == *fast->expected_rejection);
      }
    }
  }
  auto parsed = ParseManifest(text, kJsonl, source);
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const Manifest& m = parsed.value();
  PILOT_FUZZ_CHECK(!m.items.empty());
  if (kJsonl) PILOT_FUZZ_CHECK(m.name == "manifest");
  // Whatever parses as a JSON manifest, and what pilot writes, is never pinned as an input.
  if (!kJsonl) PILOT_FUZZ_CHECK(starts_as_manifest);
  PILOT_FUZZ_CHECK(StartsAsManifest(ManifestToJson(m)));
  std::set<std::string> ids;
  for (const auto& item : m.items) {
    PILOT_FUZZ_CHECK(fuzz::IsItemId(item.id));
    PILOT_FUZZ_CHECK(IsValidItemId(item.id));
    PILOT_FUZZ_CHECK(ids.insert(item.id).second);
    PILOT_FUZZ_CHECK(!item.path.empty());
    PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(item.sha256));
    PILOT_FUZZ_CHECK(!(item.expected && item.expected_rejection));
    if (item.expected) {
      PILOT_FUZZ_CHECK(!item.expected->empty() && item.expected->size() <= 256);
      for (unsigned char c : *item.expected) PILOT_FUZZ_CHECK(c >= 0x20 && c != 0x7f);
    }
    if (item.expected_rejection) PILOT_FUZZ_CHECK(reason::IsKnown(*item.expected_rejection));
  }
  // What `pilot manifest` would write back parses to the same manifest.
  auto again = ParseManifest(ManifestToJson(m), false, "fuzz/roundtrip.json");
  PILOT_FUZZ_CHECK(again.ok());
  const Manifest& r = again.value();
  PILOT_FUZZ_CHECK(r.name == m.name);
  PILOT_FUZZ_CHECK(r.items.size() == m.items.size());
  for (std::size_t i = 0; i < m.items.size(); ++i) {
    PILOT_FUZZ_CHECK(r.items[i].id == m.items[i].id);
    PILOT_FUZZ_CHECK(r.items[i].path == m.items[i].path);
    PILOT_FUZZ_CHECK(r.items[i].sha256 == m.items[i].sha256);
    PILOT_FUZZ_CHECK(r.items[i].expected == m.items[i].expected);
    PILOT_FUZZ_CHECK(r.items[i].expected_rejection == m.items[i].expected_rejection);
  }
  return 0;
}
