// Shared helpers of the libFuzzer targets (tests/fuzz/README.md). A violated invariant
// prints what was violated and aborts, so that libFuzzer records the input as a crash.
// Nothing here catches exceptions: one escaping a parse function must crash the fuzzer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#define PILOT_FUZZ_CHECK(cond)                                                                        \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "pilot fuzz invariant violated: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (0)

namespace pilot::fuzz {

// 64 lower-case hex digits, checked independently of the library's IsSha256Hex.
inline bool IsLowerHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// 1-128 characters of [A-Za-z0-9._-], checked independently of IsValidItemId.
inline bool IsItemId(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace pilot::fuzz
