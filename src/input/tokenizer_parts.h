// The pieces of a Hugging Face tokenizer pipeline: normalizers, pre-tokenizers and models,
// over code points. Internal to src/input/ (tokenizer_json.cpp assembles them; the unit
// tests and the fuzz target drive them one by one).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "unicode_text.h"

namespace pilot::tok {

// The Unicode each component of tokenizers 0.23 was built on, as measured against it code
// point by code point (tests/tokenizer/probe.py; docs/tokenizers.md, "Unicode").
inline constexpr unicode::Version kNormalizationUnicode{9, 0};  // NFC/NFD/NFKC/NFKD
inline constexpr unicode::Version kCategoryUnicode{8, 0};       // BERT's punctuation, control, Mn
// ByteLevel's \p{L} \p{N}: Oniguruma's tables are at least as new as ICU's (15.0), so no cut.
inline constexpr unicode::Version kRegexUnicode{255, 0};

using Normalizer = std::function<void(std::u32string&)>;
// Splits each piece further (or maps it, as ByteLevel does); drops empty pieces.
using PreTokenizer = std::function<void(std::vector<std::u32string>&)>;

struct BertNormalizerOptions {
  bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;
};
void BertNormalize(std::u32string& s, const BertNormalizerOptions& o);
void StripNonspacingMarks(std::u32string& s);  // BERT's strip_accents: Mn, Unicode 8.0
void StripMarks(std::u32string& s);            // the StripAccents normalizer: Mn Mc Me, Unicode 9.0
void Lowercase(std::u32string& s);

void BertPreTokenize(std::vector<std::u32string>& pieces);
void WhitespaceSplit(std::vector<std::u32string>& pieces);
// GPT-2's split ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)
// when use_regex, then each piece's UTF-8 bytes as GPT-2's byte characters.
void ByteLevelPreTokenize(std::vector<std::u32string>& pieces, bool add_prefix_space, bool use_regex);
// GPT-2's byte-to-character table.
char32_t ByteChar(unsigned char b);
// Its inverse: the byte a ByteLevel character stands for, or nullopt.
std::optional<unsigned char> CharByte(char32_t c);

class Model {
 public:
  virtual ~Model() = default;
  virtual void Tokenize(const std::u32string& piece, std::vector<std::int64_t>& out) const = 0;
  virtual const char* Name() const = 0;
};

using Vocab = std::unordered_map<std::string, std::int64_t>;

struct WordPieceOptions {
  Vocab vocab;
  std::string unk_token = "[UNK]";
  std::string prefix = "##";
  std::size_t max_input_chars_per_word = 100;
};
// Fails (returns null, `error` set) when unk_token is not in the vocabulary.
std::unique_ptr<Model> MakeWordPiece(WordPieceOptions o, std::string& error);

struct BpeOptions {
  Vocab vocab;
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::optional<std::string> unk_token;
  std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
};
// Fails (null, `error` naming the merge's index) on a merge whose parts or result are not in
// the vocabulary.
std::unique_ptr<Model> MakeBpe(BpeOptions o, std::string& error);

struct UnigramOptions {
  std::vector<std::pair<std::string, double>> pieces;  // the vocabulary: piece and score, id = index
  std::optional<std::int64_t> unk_id;
  bool byte_fallback = false;
};
// tokenizers' Unigram: the best-scoring split of each piece (Viterbi over the pieces that match
// at each character, in f64; the first of equal scores kept), an unknown character scored the
// lowest score minus 10, consecutive unknowns fused into one unk. With byte_fallback, a piece
// not in the vocabulary becomes its bytes' <0xNN> tokens. Without an unk_id, an unknown
// character that wins its place throws (the item's error, as in tokenizers). Fails (null,
// `error` set) on an unk_id past the vocabulary.
std::unique_ptr<Model> MakeUnigram(UnigramOptions o, std::string& error);

// Metaspace: each space becomes `replacement`, and `replacement` is put in front of a piece that
// does not start with it (prepend_scheme "always"; not with "never"); with `split`, each piece
// is then cut before every `replacement` (the replacement kept with what follows it).
void MetaspacePreTokenize(std::vector<std::u32string>& pieces, char32_t replacement, bool prepend,
                          bool split);

}  // namespace pilot::tok
