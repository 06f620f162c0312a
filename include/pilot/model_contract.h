// The contract a model declares: its labels (a classifier) or dim (an embedding), its input
// kind and n-gram settings. A TorchScript module carries it as attributes; a .pt2 package as
// metadata strings under "pilot.<name>", read here (no torch needed, so it is fuzzed).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pilot/status.h"

namespace pilot {

struct ModelContract {
  std::optional<std::vector<std::string>> labels;
  std::optional<std::int64_t> dim, ngram_min, ngram_max, buckets, max_chars;
  std::optional<std::int64_t> token_type_ids;  // token_ids: 1 when forward takes token_type_ids
  std::optional<std::string> input_kind, output;
  // A generator (docs/generation.md, "The generator contract"): the contract's version, the KV
  // cache's shape (layers, key/value heads, head dim), the positions it can hold (context), the
  // logits' length (vocab) and the ids that end a sequence.
  std::optional<std::int64_t> generator_contract, layers, kv_heads, head_dim, context, vocab;
  std::optional<std::vector<std::int64_t>> eos_token_ids;
  std::optional<std::string> kv_dtype;  // the cache's dtype: float32 | bfloat16 | float16
};

// The largest vocabulary a generator may declare (ids are int32 in records).
inline constexpr std::uint64_t kMaxGeneratorVocab = std::uint64_t{1} << 31;
// Most end-of-sequence ids a generator may declare.
inline constexpr std::size_t kMaxEosTokenIds = 64;

// Most labels a package may declare (each is checked further by the stage).
inline constexpr std::size_t kMaxPackageLabels = 1u << 16;
// Largest metadata value read, in bytes.
inline constexpr std::size_t kMaxPackageMetadataValue = 4u << 20;

// Reads the "pilot.*" entries of a .pt2 package's metadata: integers in plain decimal (an
// optional '-' and 1-18 digits), `pilot.labels` a JSON array of at most kMaxPackageLabels
// strings, `pilot.eos_token_ids` a JSON array of at most kMaxEosTokenIds integers in
// 0..2^31-1, `pilot.input_kind` and `pilot.output` as they are. Other keys (the package's own,
// e.g. AOTI_DEVICE_KEY) are ignored. Refuses (exit 2) a value of the wrong form, naming the
// key and `source`; never echoes a value.
Result<ModelContract> ContractFromPackageMetadata(const std::map<std::string, std::string>& metadata,
                                                  const std::string& source);

}  // namespace pilot
