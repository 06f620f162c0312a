// Fuzzes each tokenizer model's encode on any text: the WordPiece, byte-level BPE, Unigram
// (Metaspace) and SentencePiece tokenizers of tests/tokenizer/data/. The input is first checked as UTF-8, as
// pilot's prechecks do before a tokenizer sees an item. Never crashes; ids stay in the
// vocabulary's range; encoding is deterministic; truncation keeps max_length. And decoding (a
// generator's completions): the byte-level tokenizer with a ByteLevel decoder gives the text
// back exactly; any bytes read as ids decode to valid UTF-8; the UTF-8 repair (LossyUtf8) of
// any bytes is valid UTF-8 and leaves valid text as it is.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "pilot/tokenizer.h"
#include "pilot/utf8.h"

namespace {

std::unique_ptr<pilot::Tokenizer> Load(const std::string& name) {
  std::ifstream in(std::string(PILOT_TOKENIZER_DATA) + "/" + name, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  auto t = name.find(".model") != std::string::npos
               ? pilot::ParseSentencePieceModel(buf.str(), name, true, true)
               : pilot::ParseTokenizerJson(buf.str(), name);
  PILOT_FUZZ_CHECK(t.ok());
  return std::move(t.value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  static const std::vector<std::unique_ptr<Tokenizer>> tokenizers = [] {
    std::vector<std::unique_ptr<Tokenizer>> v;
    for (const char* name : {"tiny-bert.json", "tiny-roberta.json", "tiny-unigram.json", "tiny.model"})
      v.push_back(Load(name));
    return v;
  }();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::unique_ptr<Tokenizer> bytelevel = Load("tiny-bytelevel.json");
  const std::string repaired = LossyUtf8(text);
  PILOT_FUZZ_CHECK(CheckUtf8(repaired).valid);
  PILOT_FUZZ_CHECK(repaired.size() <= 3 * text.size());
  // Any ids, even outside the vocabulary, decode to valid UTF-8.
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i + 2 <= size; i += 2)
    ids.push_back(static_cast<std::int64_t>(data[i]) * 256 + data[i + 1] - 300);
  PILOT_FUZZ_CHECK(CheckUtf8(bytelevel->DecodeIds(ids)).valid);
  if (!CheckUtf8(text).valid) return 0;
  PILOT_FUZZ_CHECK(repaired == text);
  {
    TokenizerSettings s;
    s.max_length = 1u << 20;
    PILOT_FUZZ_CHECK(bytelevel->DecodeIds(EncodeText(*bytelevel, s, text).ids) == text);
  }
  for (const auto& t : tokenizers) {
    const std::int64_t vocab = t->Describe()["vocab_size"].get<std::int64_t>();
    TokenizerSettings s;
    s.max_length = 1u << 20;
    TokenizedText whole = EncodeText(*t, s, text);
    PILOT_FUZZ_CHECK(whole.error.empty());  // these pipelines never grow a text past its bound
    for (std::int64_t id : whole.ids) PILOT_FUZZ_CHECK(id >= 0 && id < vocab);
    PILOT_FUZZ_CHECK(whole.ids.size() == whole.tokens);
    PILOT_FUZZ_CHECK(EncodeText(*t, s, text).ids == whole.ids);
    s.max_length = 6;
    s.truncation = Truncation::kTruncate;
    TokenizedText cut = EncodeText(*t, s, text);
    PILOT_FUZZ_CHECK(cut.ids.size() <= 6);
    PILOT_FUZZ_CHECK(cut.truncated == (whole.tokens > 6));
    PILOT_FUZZ_CHECK(cut.tokens == whole.tokens);
  }
  return 0;
}
