// One escaper per place where untrusted text lands (docs/security.md, "Text from untrusted
// sources"). Text from a model, a manifest, a folder, a scheduler or a person never reaches a
// terminal, a report or a page raw: it goes through the escaper of the place it lands in, and
// only through that one. Each escaper first makes the text safe for a terminal (every other
// place is also read in one), then adds what its own syntax needs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pilot {

// For a terminal, a log line or a message: C0 controls (ESC, CR, LF, ...), DEL and the C1
// controls (U+0080-U+009F, which include the 8-bit CSI) as \xNN; the bidirectional
// overrides and isolates and the line/paragraph separators (U+200E, U+200F, U+2028-U+202E,
// U+2066-U+2069), which reorder or break what a reader sees, as \u{NNNN}; a byte that is
// not UTF-8 as \xNN. Everything else, backslashes included, is kept as it is.
std::string EscapeTerminal(std::string_view text);

// For Markdown, in a table cell or inline in a line: EscapeTerminal (so no line break), then
// '&', '<' and '>' as HTML entities (no tag or entity is ever rendered), and the characters
// that make Markdown syntax inside a line ('\\', '`', '*', '[', ']', '|', '~') escaped with a
// backslash: a cell stays one cell, a text stays text, with no link, image or code span.
// ('_' and '#' are kept: inside a word or a line they start nothing, and ids hold them.)
std::string EscapeMarkdown(std::string_view text);

// For HTML text or a quoted attribute value: EscapeTerminal, then & < > " ' as entities.
std::string EscapeHtml(std::string_view text);

// For one CSV field (RFC 4180), read by a spreadsheet: EscapeTerminal (so one record stays
// one line), a leading '=', '+', '-' or '@' (a formula to a spreadsheet) prefixed with
// an apostrophe, then the field quoted (quotes doubled) when it holds ',', '"', ';' or a
// leading or trailing space. Numbers pilot computes are written as they are, never through
// this: only text goes in. (A tab or CR is already escaped by EscapeTerminal.)
std::string EscapeCsv(std::string_view text);

// A number for a message or a page: `digits` decimals, as printf's "%.*f" (bounded: a value
// too long for 63 characters is cut).
std::string FixedDecimals(double v, int digits);

// EscapeTerminal of at most `max_bytes` of `text` (cut at a character boundary, "…" added).
std::string ShowUntrusted(std::string_view text, std::size_t max_bytes = 200);

}  // namespace pilot
