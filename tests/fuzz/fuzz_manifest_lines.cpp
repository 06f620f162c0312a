// Fuzzes ParseManifestLines (a bag's manifest-sha256.txt / tagmanifest-sha256.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "pilot/bag.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseManifestLines(text, "fuzz/manifest-sha256.txt");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  PILOT_FUZZ_CHECK(parsed.value().size() <= lines);
  for (const auto& line : parsed.value()) {
    PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(line.sha256));
    PILOT_FUZZ_CHECK(!line.path.empty());
    // Percent-encoding a path and decoding it again gives the path back (RFC 8493 §2.1.3).
    PILOT_FUZZ_CHECK(DecodeManifestPath(EncodeManifestPath(line.path)) == line.path);
    const std::string encoded = EncodeManifestPath(line.path);
    PILOT_FUZZ_CHECK(encoded.find('\n') == std::string::npos);
    PILOT_FUZZ_CHECK(encoded.find('\r') == std::string::npos);
  }
  return 0;
}
