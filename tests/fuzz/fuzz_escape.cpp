// Fuzzes the escapers (escape.h) with arbitrary bytes: whatever comes in, no byte a terminal
// acts on comes out (C0, DEL, a C1 control, a bidi override), a Markdown cell has no bare '|',
// '<', '>' or line break, HTML has no '<', '>', '"' or '\'', and a CSV field is one line that
// never starts a formula.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/escape.h"

namespace {

bool TerminalSafe(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const auto n = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    const auto m = i + 2 < s.size() ? static_cast<unsigned char>(s[i + 2]) : 0;
    if (c == 0xc2 && n >= 0x80 && n <= 0x9f) return false;  // C1
    if (c == 0xe2 && n == 0x80 && (m == 0x8e || m == 0x8f || (m >= 0xa8 && m <= 0xae))) return false;
    if (c == 0xe2 && n == 0x81 && m >= 0xa6 && m <= 0xa9) return false;  // isolates
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string term = EscapeTerminal(in);
  PILOT_FUZZ_CHECK(TerminalSafe(term));
  const std::string md = EscapeMarkdown(in);
  PILOT_FUZZ_CHECK(TerminalSafe(md));
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '<' || md[i] == '>') PILOT_FUZZ_CHECK(false);
    if (md[i] == '|' || md[i] == '[' || md[i] == '`') {
      // Escaped: an odd run of backslashes before it.
      std::size_t k = 0;
      while (k < i && md[i - 1 - k] == '\\') ++k;
      PILOT_FUZZ_CHECK(k % 2 == 1);
    }
  }
  const std::string html = EscapeHtml(in);
  PILOT_FUZZ_CHECK(TerminalSafe(html));
  PILOT_FUZZ_CHECK(html.find_first_of("<>\"'") == std::string::npos);
  const std::string csv = EscapeCsv(in);
  PILOT_FUZZ_CHECK(TerminalSafe(csv));
  std::string_view field(csv);
  if (!field.empty() && field.front() == '"') field.remove_prefix(1);
  PILOT_FUZZ_CHECK(field.empty() || (field.front() != '=' && field.front() != '+' && field.front() != '-' &&
                                     field.front() != '@'));
  return 0;
}
