// Fuzzes ParseSidecarHeader (the first 16 bytes of data/vectors.sidecar) and, on the same
// bytes, BagInfoValue (bag-info.txt's "Label: value" lines, which declare the folder's kind
// and format): neither crashes; a parsed dim is in range; a header pilot writes for it
// parses back; a value found is one line's, trimmed.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/folder_kind.h"
#include "pilot/limits.h"
#include "pilot/vectors.h"

namespace {

void CheckBagInfoValue(std::string_view text, std::string_view label) {
  std::string value = pilot::BagInfoValue(text, label);
  if (value.empty()) return;
  // One line's value, trimmed: no newline inside, no leading space, no trailing space or CR,
  // and it occurs in the text after the label and its colon.
  PILOT_FUZZ_CHECK(value.find('\n') == std::string::npos);
  PILOT_FUZZ_CHECK(value.front() != ' ');
  PILOT_FUZZ_CHECK(value.back() != ' ' && value.back() != '\r');
  PILOT_FUZZ_CHECK(text.find(value) != std::string_view::npos);
  std::string key(label);
  key += ':';
  PILOT_FUZZ_CHECK(text.find(key) != std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseSidecarHeader(bytes, "fuzz/data/vectors.sidecar");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
  } else {
    const std::uint32_t dim = parsed.value();
    PILOT_FUZZ_CHECK(dim >= 1 && dim <= limits::kEmbeddingDim);
    PILOT_FUZZ_CHECK(size >= kSidecarHeaderBytes);
    PILOT_FUZZ_CHECK(std::memcmp(data, "PILOTVEC", 8) == 0);
    // The header pilot writes for this dim is the 16 bytes just parsed, and parses back.
    std::string written = SidecarHeader(dim);
    PILOT_FUZZ_CHECK(written.size() == kSidecarHeaderBytes);
    PILOT_FUZZ_CHECK(bytes.substr(0, kSidecarHeaderBytes) == written);
    auto again = ParseSidecarHeader(written, "fuzz/roundtrip");
    PILOT_FUZZ_CHECK(again.ok() && again.value() == dim);
    // An entry's size as the reader computes it does not wrap for the largest id.
    PILOT_FUZZ_CHECK(SidecarEntryBytes(128, dim) == 4 + 128 + 4ull * dim);
  }
  CheckBagInfoValue(bytes, "Pilot-Folder-Kind");
  CheckBagInfoValue(bytes, "Pilot-Format-Version");
  CheckBagInfoValue(bytes, "Payload-Oxum");
  // A label that is a prefix of another ("Pilot" of "Pilot-Folder-Kind") names only itself.
  CheckBagInfoValue(bytes, "Pilot");
  return 0;
}
