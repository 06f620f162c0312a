// Fuzzes ContractFromPackageMetadata (a .pt2 package's "pilot.*" metadata): never throws; an
// ok result holds exactly the pilot.* keys given, integers as written, labels as strings.
// The input is key/value pairs separated by NUL bytes (key, value, key, value, ...).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "fuzz_check.h"
#include "pilot/model_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::map<std::string, std::string> meta;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t k_end = text.find('\0', pos);
    if (k_end == std::string::npos) k_end = text.size();
    std::size_t v_end = k_end < text.size() ? text.find('\0', k_end + 1) : std::string::npos;
    if (v_end == std::string::npos) v_end = text.size();
    std::string key = text.substr(pos, k_end - pos);
    std::string value = k_end < text.size() ? text.substr(k_end + 1, v_end - k_end - 1) : "";
    meta[key] = value;
    pos = v_end + 1;
  }
  auto c = ContractFromPackageMetadata(meta, "fuzz.pt2");
  if (!c.ok()) {
    PILOT_FUZZ_CHECK(!c.error().what.empty());
    PILOT_FUZZ_CHECK(c.error().kind == ErrorKind::kBadInput);
    return 0;
  }
  const ModelContract& m = c.value();
  auto has = [&](const char* k) { return meta.count(std::string("pilot.") + k) == 1; };
  PILOT_FUZZ_CHECK(m.labels.has_value() == has("labels"));
  PILOT_FUZZ_CHECK(m.dim.has_value() == has("dim"));
  PILOT_FUZZ_CHECK(m.buckets.has_value() == has("buckets"));
  PILOT_FUZZ_CHECK(m.input_kind.has_value() == has("input_kind"));
  if (m.input_kind) PILOT_FUZZ_CHECK(*m.input_kind == meta.at("pilot.input_kind"));
  if (m.dim)
    PILOT_FUZZ_CHECK(std::to_string(*m.dim) == meta.at("pilot.dim") || meta.at("pilot.dim")[0] == '0' ||
                     meta.at("pilot.dim").rfind("-0", 0) == 0);
  if (m.labels) PILOT_FUZZ_CHECK(m.labels->size() <= kMaxPackageLabels);
  return 0;
}
