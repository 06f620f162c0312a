#include "unicode_text.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <map>
#include <mutex>
#include <utility>

namespace pilot::unicode {
namespace {

bool YoungerThan(char32_t c, Version cut) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  // An unassigned code point has age 0.0: "younger" than nothing, it stays unassigned.
  if (age[0] != cut.major) return age[0] > cut.major;
  return age[1] > cut.minor;
}

const UNormalizer2* Base(Form form) {
  UErrorCode err = U_ZERO_ERROR;
  switch (form) {
    case Form::kNfc:
      return unorm2_getNFCInstance(&err);
    case Form::kNfd:
      return unorm2_getNFDInstance(&err);
    case Form::kNfkc:
      return unorm2_getNFKCInstance(&err);
    case Form::kNfkd:
      return unorm2_getNFKDInstance(&err);
  }
  return nullptr;
}

// One filtered normalizer per (form, cut), built once and kept for the process (ICU's
// normalizers are safe to use from several threads once built). Held from a pointer that is
// never freed, so that it is still reachable at exit (no destructor order to get wrong).
const UNormalizer2* Filtered(Form form, Version cut) {
  struct Made {
    USet* set = nullptr;
    const UNormalizer2* norm = nullptr;
  };
  static std::mutex mu;
  static auto* cache = new std::map<std::pair<int, int>, Made>();
  const int key = static_cast<int>(form);
  const int version = cut.major * 100 + cut.minor;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find({key, version});
  if (it != cache->end()) return it->second.norm;
  Made made;
  made.norm = Base(form);
  if (made.norm) {
    // [:age=V:] holds the code points assigned in V or earlier (UTS #18).
    std::string pattern = "[:age=" + std::to_string(cut.major) + "." + std::to_string(cut.minor) + ":]";
    std::u16string upattern(pattern.begin(), pattern.end());
    UErrorCode err = U_ZERO_ERROR;
    made.set = uset_openPattern(upattern.data(), static_cast<int32_t>(upattern.size()), &err);
    if (U_SUCCESS(err)) {
      uset_freeze(made.set);
      UNormalizer2* filtered = unorm2_openFiltered(made.norm, made.set, &err);
      if (U_SUCCESS(err)) made.norm = filtered;
    }
  }
  (*cache)[{key, version}] = made;
  return made.norm;
}

// Code points whose general category changed after they were assigned, which no character
// age can tell: (code point, the version that changed it, the category before). Found by
// comparing every code point with tokenizers' tables (tests/tokenizer/check-unicode.py).
struct CategoryChange {
  char32_t c;
  Version changed;
  int before;
};
constexpr CategoryChange kCategoryChanges[] = {
    {0x1734, {14, 0}, U_NON_SPACING_MARK},        // HANUNOO SIGN PAMUDPOD: Mn, then Mc
    {0x1885, {9, 0}, U_OTHER_LETTER},             // MONGOLIAN LETTER ALI GALI BALUDA: Lo, then Mn
    {0x1886, {9, 0}, U_OTHER_LETTER},             // MONGOLIAN LETTER ALI GALI THREE BALUDA: Lo, then Mn
    {0xA9BD, {12, 0}, U_COMBINING_SPACING_MARK},  // JAVANESE CONSONANT SIGN KERET: Mc, then Mn
    {0x111C9, {10, 0}, U_OTHER_PUNCTUATION},      // SHARADA SANDHI MARK: Po through 9.0, then Mn
    {0x1CF2, {10, 0}, U_COMBINING_SPACING_MARK},  // VEDIC SIGN ARDHAVISARGA: Mc, then Lo
    {0x1CF3, {10, 0}, U_COMBINING_SPACING_MARK},  // VEDIC SIGN ROTATED ARDHAVISARGA: Mc, then Lo
    {0x166D, {12, 0}, U_OTHER_PUNCTUATION},       // CANADIAN SYLLABICS CHI SIGN: Po, then So
};

bool Before(Version a, Version b) { return a.major != b.major ? a.major < b.major : a.minor < b.minor; }

}  // namespace

bool AssignedBy(char32_t c, Version cut) {
  return u_charType(static_cast<UChar32>(c)) != U_UNASSIGNED && !YoungerThan(c, cut);
}

int CategoryAt(char32_t c, Version cut) {
  if (YoungerThan(c, cut)) return U_UNASSIGNED;
  for (const auto& change : kCategoryChanges) {
    if (change.c == c && Before(cut, change.changed)) return change.before;
  }
  return u_charType(static_cast<UChar32>(c));
}

bool IsPunctuationAt(char32_t c, Version cut) {
  switch (CategoryAt(c, cut)) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool IsLetterAt(char32_t c, Version cut) {
  switch (CategoryAt(c, cut)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return true;
    default:
      return false;
  }
}

bool IsNumberAt(char32_t c, Version cut) {
  switch (CategoryAt(c, cut)) {
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return true;
    default:
      return false;
  }
}

bool IsNonspacingMarkAt(char32_t c, Version cut) { return CategoryAt(c, cut) == U_NON_SPACING_MARK; }

bool IsMarkAt(char32_t c, Version cut) {
  const int category = CategoryAt(c, cut);
  return category == U_NON_SPACING_MARK || category == U_COMBINING_SPACING_MARK ||
         category == U_ENCLOSING_MARK;
}

bool IsOtherAt(char32_t c, Version cut) {
  switch (CategoryAt(c, cut)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
    case U_UNASSIGNED:
      return true;
    default:
      return false;
  }
}

bool IsWhiteSpace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }

void AppendLower(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  if (!u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CHANGES_WHEN_LOWERCASED)) {
    out.push_back(c);
    return;
  }
  UChar src[2];
  int32_t n = 0;
  U16_APPEND_UNSAFE(src, n, static_cast<UChar32>(c));
  UChar dst[16];
  UErrorCode err = U_ZERO_ERROR;
  const int32_t len = u_strToLower(dst, 16, src, n, "", &err);
  if (U_FAILURE(err) || len > 16) {
    out.push_back(c);
    return;
  }
  for (int32_t i = 0; i < len;) {
    UChar32 cp;
    U16_NEXT_UNSAFE(dst, i, cp);
    out.push_back(static_cast<char32_t>(cp));
  }
}

std::u32string Normalize(const std::u32string& text, Form form, Version cut) {
  const UNormalizer2* norm = Filtered(form, cut);
  if (!norm || text.empty()) return text;
  std::u16string src;
  src.reserve(text.size());
  for (char32_t c : text) {
    UChar buf[2];
    int32_t n = 0;
    U16_APPEND_UNSAFE(buf, n, static_cast<UChar32>(c));
    src.append(reinterpret_cast<const char16_t*>(buf), static_cast<std::size_t>(n));
  }
  UErrorCode err = U_ZERO_ERROR;
  const auto* usrc = reinterpret_cast<const UChar*>(src.data());
  const auto ulen = static_cast<int32_t>(src.size());
  if (unorm2_quickCheck(norm, usrc, ulen, &err) == UNORM_YES && U_SUCCESS(err)) return text;
  err = U_ZERO_ERROR;
  // NFKD grows a code unit by at most 18 (U+FDFA); start at 3x and retry at the size asked.
  std::u16string dst(src.size() * 3 + 16, u'\0');
  int32_t len = unorm2_normalize(norm, usrc, ulen, reinterpret_cast<UChar*>(dst.data()),
                                 static_cast<int32_t>(dst.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    err = U_ZERO_ERROR;
    dst.assign(static_cast<std::size_t>(len), u'\0');
    len = unorm2_normalize(norm, usrc, ulen, reinterpret_cast<UChar*>(dst.data()), len, &err);
  }
  if (U_FAILURE(err)) return text;
  std::u32string out;
  out.reserve(static_cast<std::size_t>(len));
  const auto* d = reinterpret_cast<const UChar*>(dst.data());
  for (int32_t i = 0; i < len;) {
    UChar32 cp;
    U16_NEXT_UNSAFE(d, i, cp);
    out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

std::string IcuUnicodeVersion() {
  UVersionInfo v;
  u_getUnicodeVersion(v);
  return std::to_string(v[0]) + "." + std::to_string(v[1]);
}

std::size_t CodePointAt(std::string_view text, std::size_t i, char32_t& c) {
  const auto b = static_cast<unsigned char>(text[i]);
  const std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > text.size()) {  // never for validated text: replaced, not trusted
    c = 0xFFFD;
    return 1;
  }
  c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return len;
}

std::u32string DecodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    i += CodePointAt(text, i, c);
    out.push_back(c);
  }
  return out;
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string EncodeUtf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) AppendUtf8(c, out);
  return out;
}

}  // namespace pilot::unicode
