// Tokenizers pilot runs itself, off the model's thread: a Hugging Face `tokenizer.json`
// (the BERT WordPiece and the RoBERTa/GPT-2 byte-level BPE families) or a SentencePiece
// `.model` (through Debian's libsentencepiece). Each gives the ids the reference library gives
// for the same text (docs/tokenizers.md says which components, and the parity measured). A
// component pilot does not implement is refused by name, never approximated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/status.h"

namespace pilot {

// Largest tokenizer file read (bytes), most vocabulary entries and merges, longest token.
inline constexpr std::size_t kMaxTokenizerBytes = 64u << 20;
inline constexpr std::size_t kMaxTokenizerVocab = 4u << 20;
inline constexpr std::size_t kMaxTokenBytes = 1024;
// A Unigram vocabulary's pieces, their bytes together (XLM-R's 250,002 hold about 2 MiB): the
// bound on its trie, one node of about 70 bytes (its edges included) a byte at most.
inline constexpr std::size_t kMaxUnigramBytes = 4u << 20;
inline constexpr std::size_t kMaxPipelineSteps = 64;  // normalizers, and pre-tokenizers
inline constexpr std::size_t kMaxInsertedChars = 64;  // a Replace's or Prepend's content
inline constexpr std::size_t kMaxAddedTokens = 65536;
inline constexpr std::size_t kMaxAddedTokenBytes = 1u << 20;  // their contents together
// A text the pipeline grows past this many code points (32 times its own, plus 1024) is not
// encoded: the item fails rather than the process running out of memory.
inline constexpr std::size_t kGrowthFactor = 32, kGrowthSlack = 1024;

// One text's ids once the post-processor's special tokens are added.
struct TokenizedText {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> type_ids;  // token_type_ids: 0 for a single sequence's tokens
  std::size_t tokens = 0;              // the length before any truncation, special tokens included
  bool truncated = false;
  std::string error;  // not empty: the text could not be encoded (ids empty), and why
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The content ids of valid UTF-8 `text`, without special tokens, into `ids`. False, with
  // `error`, when the text cannot be encoded (the pipeline would grow it past its bound, the
  // library failed). Never throws.
  virtual bool EncodeContent(std::string_view text, std::vector<std::int64_t>& ids,
                             std::string& error) const = 0;
  // How many special tokens the post-processor adds to a single sequence.
  virtual std::size_t SpecialTokenCount() const = 0;
  // `content` with the special tokens added, and its type ids.
  virtual void AddSpecialTokens(const std::vector<std::int64_t>& content, bool add_special,
                                TokenizedText& out) const = 0;
  // The id of `token` in the vocabulary or the added tokens.
  virtual std::optional<std::int64_t> TokenId(std::string_view token) const = 0;
  // Decoding, for a generator's completions (docs/generation.md, "Decoding"): the name of the
  // decoder pilot runs for this tokenizer, or empty when it implements none for it (`why` then
  // says what the tokenizer has), and the text of `ids` as that decoder gives it, the special
  // tokens left out and ill-formed UTF-8 replaced by U+FFFD (tokenizers' decode with
  // skip_special_tokens). An id outside the vocabulary gives nothing. Never throws.
  virtual std::string Decoder(std::string& why) const {
    why = "this tokenizer format has no decoder in pilot";
    return "";
  }
  // The bytes of one token as the decoder maps it, before the UTF-8 repair (empty for a
  // special token or an unknown id): concatenated, then LossyUtf8, they give DecodeIds.
  virtual std::string TokenBytes(std::int64_t id) const {
    (void)id;
    return "";
  }
  std::string DecodeIds(const std::vector<std::int64_t>& ids) const;
  // What it is, for run.json: {"format": "tokenizer.json", "model": "WordPiece",
  // "normalizer": [...], "pre_tokenizer": [...], "post_processor": "...", "unicode": {...}}.
  virtual nlohmann::ordered_json Describe() const = 0;
};

// Reads a Hugging Face tokenizer.json. Refuses (exit 2, naming `source` and the key path):
// malformed JSON, a component pilot does not implement (by its "type"), a vocabulary or merge
// list over the limits above, a merge naming a token not in the vocabulary, a BPE with
// dropout (random), an added token with single_word, a pipeline over its bounds (more than
// kMaxPipelineSteps steps, more than one ByteLevel, a Replace or Prepend of more than
// kMaxInsertedChars code points, added tokens over kMaxAddedTokens or kMaxAddedTokenBytes in
// all, a template that does not hold the text exactly once). Never throws.
Result<std::unique_ptr<Tokenizer>> ParseTokenizerJson(std::string_view text, const std::string& source);

// Reads a SentencePiece model (the serialized ModelProto). `add_bos`/`add_eos` add the
// model's own <s> and </s> ids. With `fairseq`, the ids are XLM-R's (fairseq's dictionary, as
// transformers' XLM-R tokenizers give them): <s> 0, <pad> 1, </s> 2, <unk> 3, every other piece
// its SentencePiece id plus 1, <mask> the last; the model must have XLM-R's layout (<unk> 0,
// <s> 1, </s> 2). Refuses (exit 2) a file libsentencepiece cannot load.
Result<std::unique_ptr<Tokenizer>> ParseSentencePieceModel(std::string_view bytes, const std::string& source,
                                                           bool add_bos, bool add_eos, bool fairseq = false);

// The settings a pilot runs a tokenizer with (params' stage.tokenizer).
enum class Truncation { kReject, kTruncate };
struct TokenizerSettings {
  std::size_t max_length = 512;
  Truncation truncation = Truncation::kReject;
  bool add_special_tokens = true;
  std::size_t pad_to_multiple_of = 0;  // 0: pad to the batch's longest
  std::int64_t pad_id = 0;
};

// Encodes `text` under `settings`: content ids, truncated to leave room for the special
// tokens when the whole would exceed max_length and truncation is kTruncate, then the special
// tokens. With kReject an over-long text keeps all its ids (the caller rejects it by
// `tokens`). A text that cannot be encoded gives `error` and no ids. Never throws.
TokenizedText EncodeText(const Tokenizer& tokenizer, const TokenizerSettings& settings,
                         std::string_view text);

}  // namespace pilot
