#include "pilot/model_contract.h"

#include "pilot/json_util.h"

namespace pilot {
namespace {

constexpr const char* kHint = "see docs/models.md, 'Models as .pt2 packages'";

// The key is the package's: shown only when it is plainly a name (KeyForMessage).
Error Wrong(const std::string& key, const std::string& what, const std::string& source) {
  return BadInput("the package's metadata '" + KeyForMessage(key) + "' " + what, source, kHint);
}

std::optional<std::int64_t> Decimal(const std::string& v) {
  std::size_t i = v.size() > 0 && v[0] == '-' ? 1 : 0;
  if (v.size() == i || v.size() - i > 18) return std::nullopt;
  std::int64_t n = 0;
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return std::nullopt;
    n = n * 10 + (v[i] - '0');
  }
  return v[0] == '-' ? -n : n;
}

}  // namespace

Result<ModelContract> ContractFromPackageMetadata(const std::map<std::string, std::string>& metadata,
                                                  const std::string& source) {
  ModelContract c;
  for (const auto& [key, value] : metadata) {
    if (key.rfind("pilot.", 0) != 0) continue;
    const std::string name = key.substr(6);
    if (value.size() > kMaxPackageMetadataValue) {
      return Wrong(key, "is larger than " + std::to_string(kMaxPackageMetadataValue) + " bytes", source);
    }
    std::optional<std::int64_t>* integer = name == "dim"                  ? &c.dim
                                           : name == "ngram_min"          ? &c.ngram_min
                                           : name == "ngram_max"          ? &c.ngram_max
                                           : name == "buckets"            ? &c.buckets
                                           : name == "max_chars"          ? &c.max_chars
                                           : name == "token_type_ids"     ? &c.token_type_ids
                                           : name == "generator_contract" ? &c.generator_contract
                                           : name == "layers"             ? &c.layers
                                           : name == "kv_heads"           ? &c.kv_heads
                                           : name == "head_dim"           ? &c.head_dim
                                           : name == "context"            ? &c.context
                                           : name == "vocab"              ? &c.vocab
                                                                          : nullptr;
    if (integer) {
      *integer = Decimal(value);
      if (!*integer) return Wrong(key, "must be a decimal integer of at most 18 digits", source);
    } else if (name == "labels") {
      auto doc = ParseJson(value, source, 2);
      if (!doc.ok()) return Wrong(key, "must be a JSON array of strings: " + doc.error().what, source);
      if (!doc.value().is_array()) return Wrong(key, "must be a JSON array of strings", source);
      if (doc.value().size() > kMaxPackageLabels) {
        return Wrong(key, "holds more than " + std::to_string(kMaxPackageLabels) + " labels", source);
      }
      c.labels.emplace();
      for (const auto& l : doc.value()) {
        if (!l.is_string()) return Wrong(key, "must be a JSON array of strings", source);
        c.labels->push_back(l.get<std::string>());
      }
    } else if (name == "eos_token_ids") {
      auto doc = ParseJson(value, source, 2);
      const char* want = "must be a JSON array of integers in 0..2147483647";
      if (!doc.ok() || !doc.value().is_array()) return Wrong(key, want, source);
      if (doc.value().size() > kMaxEosTokenIds) {
        return Wrong(key, "holds more than " + std::to_string(kMaxEosTokenIds) + " ids", source);
      }
      c.eos_token_ids.emplace();
      for (const auto& e : doc.value()) {
        if (!e.is_number_unsigned() || e.get<std::uint64_t>() > 2147483647u) return Wrong(key, want, source);
        c.eos_token_ids->push_back(static_cast<std::int64_t>(e.get<std::uint64_t>()));
      }
    } else if (name == "input_kind") {
      c.input_kind = value;
    } else if (name == "output") {
      c.output = value;
    } else if (name == "kv_dtype") {
      c.kv_dtype = value;
    } else {
      return Wrong(key,
                   "is not a name pilot reads (dim, labels, input_kind, output, ngram_min, ngram_max, "
                   "buckets, max_chars, token_type_ids, generator_contract, layers, kv_heads, head_dim, "
                   "context, vocab, eos_token_ids, kv_dtype)",
                   source);
    }
  }
  return c;
}

}  // namespace pilot
