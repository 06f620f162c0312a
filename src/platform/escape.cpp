#include "pilot/escape.h"

#include <cstdint>
#include <cstdio>

#include "pilot/utf8.h"

namespace pilot {
namespace {

constexpr const char* kHex = "0123456789abcdef";

void AppendByte(std::string& out, unsigned char b) {
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 0xf];
}

// The length of the UTF-8 sequence at s[i] and its code point; 0 when it is not one (the
// same rules as CheckUtf8: no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t DecodeAt(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  return len;
}

// Code points that reorder or break what a reader sees.
bool IsLayoutControl(std::uint32_t cp) {
  return cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// The entity for the characters both HTML and Markdown (rendered to HTML) must not show raw:
// one table for EscapeMarkdown and EscapeHtml. Null for any other character.
const char* HtmlEntity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    default:
      return nullptr;
  }
}

}  // namespace

std::string EscapeTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::uint32_t cp = 0;
    const std::size_t len = DecodeAt(text, i, cp);
    if (len == 0) {  // not UTF-8: the byte itself, shown
      AppendByte(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (cp < 0x20 || cp == 0x7F) {
      AppendByte(out, static_cast<unsigned char>(cp));
    } else if (cp >= 0x80 && cp <= 0x9F) {
      AppendByte(out, static_cast<unsigned char>(cp));  // a C1 control, as its code point
    } else if (IsLayoutControl(cp)) {
      out += "\\u{";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
      out += '}';
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string EscapeMarkdown(std::string_view text) {
  const std::string safe = EscapeTerminal(text);
  std::string out;
  out.reserve(safe.size() + 8);
  for (char c : safe) {
    if (const char* entity = HtmlEntity(c)) {
      out += entity;
      continue;
    }
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '[':
      case ']':
      case '|':
      case '~':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHtml(std::string_view text) {
  const std::string safe = EscapeTerminal(text);
  std::string out;
  out.reserve(safe.size() + 8);
  for (char c : safe) {
    if (const char* entity = HtmlEntity(c)) {
      out += entity;
      continue;
    }
    switch (c) {
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeCsv(std::string_view text) {
  std::string safe = EscapeTerminal(text);
  if (!safe.empty() && (safe[0] == '=' || safe[0] == '+' || safe[0] == '-' || safe[0] == '@'))
    safe.insert(0, "'");
  // A tab or CR was escaped above (\x09, \x0d): no field starts with one any more.
  const bool quote = safe.find_first_of(",\";") != std::string::npos ||
                     (!safe.empty() && (safe.front() == ' ' || safe.back() == ' '));
  if (!quote) return safe;
  std::string out = "\"";
  for (char c : safe) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string ShowUntrusted(std::string_view text, std::size_t max_bytes) {
  return EscapeTerminal(TruncateUtf8(text, max_bytes));
}

std::string FixedDecimals(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace pilot
