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
};

// Most labels a package may declare (each is checked further by the stage).
inline constexpr std::size_t kMaxPackageLabels = 1u << 16;
// Largest metadata value read, in bytes.
inline constexpr std::size_t kMaxPackageMetadataValue = 4u << 20;

// Reads the "pilot.*" entries of a .pt2 package's metadata: integers in plain decimal (an
// optional '-' and 1-18 digits), `pilot.labels` a JSON array of at most kMaxPackageLabels
// strings, `pilot.input_kind` and `pilot.output` as they are. Other keys (the package's own,
// e.g. AOTI_DEVICE_KEY) are ignored. Refuses (exit 2) a value of the wrong form, naming the
// key and `source`; never echoes a value.
Result<ModelContract> ContractFromPackageMetadata(const std::map<std::string, std::string>& metadata,
                                                  const std::string& source);

}  // namespace pilot
