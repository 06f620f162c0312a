// Featurisation for the "hashed_char_ngrams" input contract, shared by the TorchScript
// stage and the trainer so that both see exactly the same features: the text is
// lower-cased (ASCII), runs of non-letters become one space, it is padded with spaces, and
// every codepoint n-gram with n in [ngram_min, ngram_max] is hashed (FNV-1a, 32 bit,
// over its UTF-8 bytes) into `buckets`. At most `max_chars` codepoints are used.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pilot {

struct NgramContract {
  int ngram_min = 1;
  int ngram_max = 4;
  std::int64_t buckets = 1 << 16;
  int max_chars = 2048;
};

// Normalised codepoints of `text` (assumed valid UTF-8), padded with spaces.
std::u32string NormaliseForNgrams(std::string_view text, int max_chars);

// Appends the bucket ids of `text` to `out`; returns how many were appended (at least 1:
// an empty text yields the bucket of a single space).
std::size_t AppendNgramIds(std::string_view text, const NgramContract& contract,
                           std::vector<std::int64_t>& out);

}  // namespace pilot
