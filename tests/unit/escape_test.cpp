// The escapers, one per place untrusted text lands: each test feeds the hostile texts seen in
// reviews (ESC sequences, 8-bit CSI, bidi overrides, tags, table pipes, formulas) and checks
// what comes out, byte for byte.
#include "pilot/escape.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

// No byte that a terminal acts on: C0, DEL, and the UTF-8 of a C1 control.
bool TerminalSafe(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return false;
  }
  return true;
}

TEST(EscapeTerminal, KeepsPlainAndUnicodeText) {
  EXPECT_EQ(EscapeTerminal("plain text, déjà vu — 日本語 𝄞"), "plain text, déjà vu — 日本語 𝄞");
  EXPECT_EQ(EscapeTerminal(R"(a\b)"), R"(a\b)");
  EXPECT_EQ(EscapeTerminal(""), "");
}

TEST(EscapeTerminal, ShowsControlsAndNonUtf8AsEscapes) {
  EXPECT_EQ(EscapeTerminal("\x1b[2J\x1b]0;owned\x07"), "\\x1b[2J\\x1b]0;owned\\x07");
  EXPECT_EQ(EscapeTerminal("a\nb\rc\td"), "a\\x0ab\\x0dc\\x09d");
  EXPECT_EQ(EscapeTerminal(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(EscapeTerminal("\x7f"), "\\x7f");
  EXPECT_EQ(EscapeTerminal("\xc2\x9b"
                           "31m"),
            "\\x9b31m");                                         // the 8-bit CSI, as UTF-8
  EXPECT_EQ(EscapeTerminal("M\xfcller"), "M\\xfcller");          // Latin-1, not UTF-8
  EXPECT_EQ(EscapeTerminal("\xe6\x97"), "\\xe6\\x97");           // a truncated sequence
  EXPECT_EQ(EscapeTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(EscapeTerminal, ShowsBidiOverridesAndLineSeparators) {
  EXPECT_EQ(EscapeTerminal("admin\xe2\x80\xae"
                           "txt.exe"),
            "admin\\u{202e}txt.exe");
  EXPECT_EQ(EscapeTerminal("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");
  EXPECT_EQ(EscapeTerminal("a\xe2\x80\xa8"
                           "b"),
            "a\\u{2028}b");
}

TEST(EscapeMarkdown, OneCellStaysOneCellAndTextStaysText) {
  const std::string cell = EscapeMarkdown("a|b\n| x | y |");
  EXPECT_EQ(cell, "a\\|b\\\\x0a\\| x \\| y \\|");
  EXPECT_EQ(cell.find('\n'), std::string::npos);
  EXPECT_EQ(EscapeMarkdown("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(EscapeMarkdown("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(EscapeMarkdown("[click](javascript:alert(1))"), "\\[click\\](javascript:alert(1))");
  EXPECT_EQ(EscapeMarkdown("![x](http://e/t.png)"), "!\\[x\\](http://e/t.png)");
  EXPECT_EQ(EscapeMarkdown("**bold** `code` ~~s~~ &amp; a\\|b"),
            "\\*\\*bold\\*\\* \\`code\\` \\~\\~s\\~\\~ &amp;amp; a\\\\\\|b");
  EXPECT_EQ(EscapeMarkdown("doc_01.txt en 0.93 #3"), "doc_01.txt en 0.93 #3");
  EXPECT_TRUE(TerminalSafe(EscapeMarkdown("\x1b[31mred\xc2\x9b")));
}

TEST(EscapeHtml, NoTagNoAttributeBreakout) {
  EXPECT_EQ(EscapeHtml("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;");
  EXPECT_EQ(EscapeHtml("\x1b[0m"), "\\x1b[0m");
  EXPECT_EQ(EscapeHtml("ok"), "ok");
}

TEST(EscapeCsv, FormulasAreDefusedAndFieldsStayWhole) {
  EXPECT_EQ(EscapeCsv("=HYPERLINK(\"http://e\",\"x\")"), "\"'=HYPERLINK(\"\"http://e\"\",\"\"x\"\")\"");
  EXPECT_EQ(EscapeCsv("+1+1"), "'+1+1");
  EXPECT_EQ(EscapeCsv("-2+3"), "'-2+3");
  EXPECT_EQ(EscapeCsv("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(EscapeCsv("\tx"), "\\x09x");  // a leading tab is escaped, never kept
  EXPECT_EQ(EscapeCsv("a,b"), "\"a,b\"");
  EXPECT_EQ(EscapeCsv("a;b"), "\"a;b\"");
  EXPECT_EQ(EscapeCsv(" padded "), "\" padded \"");
  EXPECT_EQ(EscapeCsv("line1\nline2"), "line1\\x0aline2");
  EXPECT_EQ(EscapeCsv("out of memory"), "out of memory");
  EXPECT_EQ(EscapeCsv(""), "");
}

TEST(ShowUntrusted, CutsThenEscapes) {
  EXPECT_EQ(ShowUntrusted("\x1b"
                          "abcdef",
                          4),
            "\\x1babc\u2026");
  EXPECT_EQ(ShowUntrusted("short", 100), "short");
}

}  // namespace
}  // namespace pilot
