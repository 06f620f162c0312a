// The tokenizer test tool.
//   pilot-tokenizer-probe                 for every code point, what pilot's tokenizer
//                                         components make of it, in the form
//                                         tests/tokenizer/probe.py prints tokenizers' answers
//   pilot-tokenizer-probe --unassigned    the code points ICU does not know (one per line)
//   pilot-tokenizer-probe --younger-than-9  those ICU knows that Unicode 9.0 did not
//   pilot-tokenizer-probe --encode FILE TEXTS [--spm | --fairseq]
//                                         each line of TEXTS (a JSON string) encoded by the
//                                         tokenizer FILE, with special tokens: ids joined by
//                                         spaces, one line per text (tests/tokenizer/parity.py)
#include <unicode/uchar.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "pilot/tokenizer.h"
#include "tokenizer_parts.h"
#include "unicode_text.h"

namespace {

using namespace pilot;

// Python's json.dumps(ensure_ascii=True) of a string.
std::string Quote(const std::u32string& s) {
  std::string out = "\"";
  char buf[16];
  auto unit = [&](unsigned u) {
    std::snprintf(buf, sizeof buf, "\\u%04x", u);
    out += buf;
  };
  for (char32_t c : s) {
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20) {
      unit(c);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x10000) {
      unit(c);
    } else {
      const char32_t v = c - 0x10000;
      unit(0xD800 + (v >> 10));
      unit(0xDC00 + (v & 0x3FF));
    }
  }
  return out + "\"";
}

std::string List(const std::vector<std::u32string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Quote(v[i]);
  return out + "]";
}

}  // namespace

int Encode(const char* file, const char* texts, bool spm, bool fairseq) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  auto tokenizer = spm ? ParseSentencePieceModel(buf.str(), file, fairseq, true, fairseq)
                       : ParseTokenizerJson(buf.str(), file);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.error().ToString().c_str());
    return 2;
  }
  std::ifstream lines(texts, std::ios::binary);
  std::string line, out;
  TokenizerSettings settings;
  settings.max_length = SIZE_MAX;
  while (std::getline(lines, line)) {
    const std::string text = nlohmann::json::parse(line).get<std::string>();
    const TokenizedText t = EncodeText(*tokenizer.value(), settings, text);
    out.clear();
    for (std::size_t i = 0; i < t.ids.size(); ++i) out += (i ? " " : "") + std::to_string(t.ids[i]);
    out += "\n";
    std::fputs(out.c_str(), stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--encode") == 0) {
    const bool fairseq = argc >= 5 && std::strcmp(argv[4], "--fairseq") == 0;
    return Encode(argv[2], argv[3], argc >= 5 && (fairseq || std::strcmp(argv[4], "--spm") == 0), fairseq);
  }
  if (argc == 2 && std::strcmp(argv[1], "--younger-than-9") == 0) {
    for (char32_t cp = 0; cp < 0x110000; ++cp) {
      if (u_charType(static_cast<UChar32>(cp)) != U_UNASSIGNED && !unicode::AssignedBy(cp, {9, 0})) {
        std::printf("%u\n", static_cast<unsigned>(cp));
      }
    }
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--unassigned") == 0) {
    for (UChar32 cp = 0; cp < 0x110000; ++cp) {
      if (u_charType(cp) == U_UNASSIGNED) std::printf("%d\n", cp);
    }
    return 0;
  }
  using tok::BertNormalizerOptions;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::u32string c(1, cp);
    std::string row = "[" + std::to_string(cp);
    auto bert = [&](BertNormalizerOptions o) {
      std::u32string s = c;
      tok::BertNormalize(s, o);
      row += ", " + Quote(s);
    };
    bert({true, false, false, false});
    bert({false, true, false, false});
    bert({false, false, true, false});
    bert({false, false, false, true});
    {
      std::u32string s = c;
      tok::StripMarks(s);
      row += ", " + Quote(s);
    }
    for (auto form : {unicode::Form::kNfkc, unicode::Form::kNfd, unicode::Form::kNfc, unicode::Form::kNfkd}) {
      row += ", " + Quote(unicode::Normalize(c, form, tok::kNormalizationUnicode));
    }
    std::vector<std::u32string> p{U"a" + c + U"b"};
    tok::BertPreTokenize(p);
    row += ", " + List(p);
    std::vector<std::u32string> q{U"a" + c + U"1" + c + U" " + c};
    tok::ByteLevelPreTokenize(q, false, true);
    row += ", " + List(q) + "]\n";
    std::fputs(row.c_str(), stdout);
  }
  return 0;
}
