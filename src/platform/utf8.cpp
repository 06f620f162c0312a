#include "pilot/utf8.h"

#include <cstdio>

namespace pilot {

Utf8Check CheckUtf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  auto fail = [&](std::size_t at, const char* why) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "byte 0x%02x at offset %zu is not UTF-8 (%s)", s[at], at, why);
    return Utf8Check{false, at, buf};
  };
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlongs
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
    } else {
      return fail(i, "invalid lead byte");
    }
    if (i + len > n) return fail(i, "truncated sequence");
    if (s[i + 1] < lo || s[i + 1] > hi) return fail(i + 1, "invalid continuation");
    for (std::size_t k = 2; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return fail(i + k, "invalid continuation");
    }
    i += len;
  }
  return {};
}

std::string LossyUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  auto cont = [&](std::size_t k, unsigned lo, unsigned hi) {
    return k < s.size() && static_cast<unsigned char>(s[k]) >= lo && static_cast<unsigned char>(s[k]) <= hi;
  };
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t width = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    if (b >= 0xC2 && b <= 0xDF) {
      width = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      width = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      width = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    }
    std::size_t good = width == 0 ? 0 : 1;  // bytes of a well-formed prefix
    if (width > 0 && cont(i + 1, lo, hi)) {
      good = 2;
      while (good < width && cont(i + good, 0x80, 0xBF)) ++good;
    }
    if (width > 0 && good == width) {
      out.append(s.substr(i, width));
      i += width;
    } else {
      out.append("\xEF\xBF\xBD");
      i += std::max<std::size_t>(good, 1);
    }
  }
  return out;
}

std::string TruncateUtf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // back to a lead byte
  return std::string(text.substr(0, cut)) + "\u2026";
}

}  // namespace pilot
