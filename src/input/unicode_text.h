// The Unicode facts the tokenizers need, from ICU (Debian's libicu, Unicode 15.0 in ICU 72),
// cut to an older Unicode version by character age (u_charAge) where the reference tokenizer
// was built on older tables: a code point assigned after the cut is treated as the older
// tables treat it, unassigned. Internal to src/input/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pilot::unicode {

// A Unicode version, major.minor.
struct Version {
  int major = 0, minor = 0;
};

// True when `c` was assigned in `cut` or earlier.
bool AssignedBy(char32_t c, Version cut);

// The general category (ICU's UCharCategory value) of `c` as of `cut`: unassigned (Cn)
// when `c` is younger.
int CategoryAt(char32_t c, Version cut);
bool IsPunctuationAt(char32_t c, Version cut);     // Pc Pd Ps Pe Pi Pf Po
bool IsLetterAt(char32_t c, Version cut);          // Lu Ll Lt Lm Lo
bool IsNumberAt(char32_t c, Version cut);          // Nd Nl No
bool IsNonspacingMarkAt(char32_t c, Version cut);  // Mn
bool IsMarkAt(char32_t c, Version cut);            // Mn Mc Me
bool IsOtherAt(char32_t c, Version cut);           // Cc Cf Co Cs Cn
bool IsWhiteSpace(char32_t c);                     // the White_Space property

// The full lower-case mapping of the single code point `c` (no context: U+03A3 maps to U+03C3
// anywhere), appended to `out`.
void AppendLower(char32_t c, std::u32string& out);

// Normalization forms, applied to code points assigned by `cut` only: a younger code point
// is left as it is and splits the text as an unassigned one would (ICU's FilteredNormalizer2
// over the set [:age=cut:]).
enum class Form { kNfc, kNfd, kNfkc, kNfkd };
std::u32string Normalize(const std::u32string& text, Form form, Version cut);

// The Unicode version of the ICU in use ("15.0").
std::string IcuUnicodeVersion();

// One code point of UTF-8 (already validated) at text[i]: its length in bytes; a stray or cut
// byte is U+FFFD, one byte long.
std::size_t CodePointAt(std::string_view text, std::size_t i, char32_t& c);
// UTF-8 (already validated) to code points and back.
std::u32string DecodeUtf8(std::string_view text);
void AppendUtf8(char32_t c, std::string& out);
std::string EncodeUtf8(std::u32string_view text);

}  // namespace pilot::unicode
