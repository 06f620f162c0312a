// Fuzzes ParseNpyHeader (the first bytes of data/vectors.npy, float32 or float16): an ok shape is consistent
// with the bytes it was parsed from, and the header pilot writes for it parses back to it.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/vectors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view prefix(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseNpyHeader(prefix, "fuzz/data/vectors.npy");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const NpyShape& s = parsed.value();
  // The magic and version 1.0 are there, and the data starts right after the header whose
  // length (little-endian u16 at byte 8) the file declares: inside the bytes given, on a
  // 64-byte boundary, after the header's closing newline.
  PILOT_FUZZ_CHECK(size >= 10);
  PILOT_FUZZ_CHECK(prefix.substr(0, 8) == std::string_view("\x93NUMPY\x01\x00", 8));
  const std::uint64_t header_len =
      static_cast<std::uint64_t>(data[8]) | (static_cast<std::uint64_t>(data[9]) << 8);
  PILOT_FUZZ_CHECK(s.data_offset == 10 + header_len);
  PILOT_FUZZ_CHECK(s.data_offset <= size);
  PILOT_FUZZ_CHECK(s.data_offset % 64 == 0);
  PILOT_FUZZ_CHECK(prefix[s.data_offset - 1] == '\n');
  // At most 18 digits each: no wrapped or saturated value.
  constexpr std::uint64_t kMaxDims = 999999999999999999ull;
  PILOT_FUZZ_CHECK(s.rows <= kMaxDims && s.cols <= kMaxDims);
  // Only '<f4' or '<f2' in C order is accepted: the header says so, and the dtype is its.
  std::string_view header = prefix.substr(10, static_cast<std::size_t>(header_len));
  PILOT_FUZZ_CHECK(header.find(s.dtype == VectorDtype::kFloat16 ? "'<f2'" : "'<f4'") !=
                   std::string_view::npos);
  PILOT_FUZZ_CHECK(s.row_bytes() == s.cols * DtypeBytes(s.dtype));
  PILOT_FUZZ_CHECK(header.find("False") != std::string_view::npos);
  // The header pilot writes for this shape parses back to the same shape, its data 64-aligned.
  if (s.cols > 0 && s.cols <= std::numeric_limits<std::uint32_t>::max()) {
    std::string written = NpyHeader(s.rows, static_cast<std::uint32_t>(s.cols), s.dtype);
    PILOT_FUZZ_CHECK(written.size() % 64 == 0);
    auto again = ParseNpyHeader(written, "fuzz/roundtrip");
    PILOT_FUZZ_CHECK(again.ok());
    PILOT_FUZZ_CHECK(again.value().rows == s.rows);
    PILOT_FUZZ_CHECK(again.value().cols == s.cols);
    PILOT_FUZZ_CHECK(again.value().dtype == s.dtype);
    PILOT_FUZZ_CHECK(again.value().data_offset == written.size());
    // ... and with data after it (what verify reads: the header and the file's first bytes).
    auto with_data = ParseNpyHeader(written + std::string(64, '\x7f'), "fuzz/roundtrip+data");
    PILOT_FUZZ_CHECK(with_data.ok() && with_data.value().data_offset == written.size());
  }
  return 0;
}
