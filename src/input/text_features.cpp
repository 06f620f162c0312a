#include "pilot/text_features.h"

namespace pilot {
namespace {

// Decodes valid UTF-8 (invalid bytes become U+FFFD, never reached after the precheck).
char32_t Next(std::string_view s, std::size_t& i) {
  auto c = static_cast<unsigned char>(s[i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

// Letters and marks of the scripts the features care about; everything else separates.
bool IsLetter(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c == 0xD7 || c == 0xF7) return false;
  if (c >= 0xC0 && c <= 0x24F) return true;     // Latin-1 letters, Latin Extended-A/B
  if (c >= 0x370 && c <= 0x52F) return true;    // Greek, Cyrillic
  if (c >= 0x3040 && c <= 0x30FF) return true;  // Hiragana, Katakana
  if (c >= 0x4E00 && c <= 0x9FFF) return true;  // CJK ideographs
  if (c >= 0x1E00 && c <= 0x1FFF) return true;  // Latin Extended Additional, Greek Extended
  if (c >= 0x0590 && c <= 0x08FF) return true;  // Hebrew, Arabic
  if (c >= 0x0900 && c <= 0x0DFF) return true;  // Indic scripts
  if (c >= 0xAC00 && c <= 0xD7AF) return true;  // Hangul
  return false;
}

char32_t Lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;     // Latin-1
  if (c >= 0x410 && c <= 0x42F) return c + 32;                // Cyrillic А-Я
  if (c >= 0x400 && c <= 0x40F) return c + 80;                // Cyrillic Ѐ-Џ
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;  // Greek Α-Ω
  return c;
}

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::u32string NormaliseForNgrams(std::string_view text, int max_chars) {
  std::u32string out = U" ";
  std::size_t i = 0;
  int letters = 0;
  while (i < text.size() && letters < max_chars) {
    char32_t c = Next(text, i);
    if (IsLetter(c)) {
      out += Lower(c);
      ++letters;
    } else if (out.back() != U' ') {
      out += U' ';
    }
  }
  if (out.back() != U' ') out += U' ';
  return out;
}

std::size_t AppendNgramIds(std::string_view text, const NgramContract& contract,
                           std::vector<std::int64_t>& out) {
  std::u32string cps = NormaliseForNgrams(text, contract.max_chars);
  const std::size_t before = out.size();
  std::string bytes;
  for (int n = contract.ngram_min; n <= contract.ngram_max; ++n) {
    if (cps.size() < static_cast<std::size_t>(n)) break;
    for (std::size_t start = 0; start + n <= cps.size(); ++start) {
      if (n == 1 && cps[start] == U' ') continue;
      bytes.clear();
      for (int k = 0; k < n; ++k) AppendUtf8(cps[start + k], bytes);
      std::uint32_t h = 2166136261u ^ static_cast<std::uint32_t>(n);
      for (unsigned char b : bytes) {
        h ^= b;
        h *= 16777619u;
      }
      out.push_back(static_cast<std::int64_t>(h % static_cast<std::uint32_t>(contract.buckets)));
    }
  }
  if (out.size() == before) out.push_back(0);
  return out.size() - before;
}

}  // namespace pilot
