// Fuzzes ParseTokenizerJson (a Hugging Face tokenizer.json): never throws or crashes; a
// refusal is a bad-input error naming the file; an accepted tokenizer encodes a few texts
// with ids in [0, 2^31) and keeps truncation's promises.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = ParseTokenizerJson(text, "fuzz/tokenizer.json");
  if (!t.ok()) {
    PILOT_FUZZ_CHECK(t.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(t.error().where.find("fuzz/tokenizer.json") != std::string::npos);
    return 0;
  }
  const Tokenizer& tok = *t.value();
  for (const char* sample :
       {"", "Hello, World! café 日本 🙂 [CLS] <mask>", "  \t\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    TokenizerSettings s;
    s.max_length = 8;
    s.truncation = Truncation::kTruncate;
    TokenizedText out = EncodeText(tok, s, sample);
    if (!out.error.empty()) {
      PILOT_FUZZ_CHECK(out.ids.empty());
      continue;
    }
    PILOT_FUZZ_CHECK(out.ids.size() == out.type_ids.size());
    PILOT_FUZZ_CHECK(out.ids.size() <= out.tokens);
    if (tok.SpecialTokenCount() <= s.max_length) PILOT_FUZZ_CHECK(out.ids.size() <= s.max_length);
    for (std::int64_t id : out.ids) PILOT_FUZZ_CHECK(id >= 0 && id <= 0x7FFFFFFF);
  }
  (void)tok.Describe().dump();
  return 0;
}
