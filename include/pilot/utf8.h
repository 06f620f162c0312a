// Strict UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pilot {

struct Utf8Check {
  bool valid = true;
  std::size_t offset = 0;  // first bad byte
  std::string detail;      // e.g. "byte 0xff at offset 17 is not UTF-8"
};

Utf8Check CheckUtf8(std::string_view bytes);

// At most `max_bytes` of `text`, cut at a character boundary (never inside a UTF-8
// sequence), with "…" appended when cut.
std::string TruncateUtf8(std::string_view text, std::size_t max_bytes);

// `bytes` as valid UTF-8: each ill-formed subsequence (Unicode's "maximal subpart", as Rust's
// String::from_utf8_lossy and Python's errors="replace" cut them) replaced by U+FFFD.
std::string LossyUtf8(std::string_view bytes);

}  // namespace pilot
