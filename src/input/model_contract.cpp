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
    std::optional<std::int64_t>* integer = name == "dim"              ? &c.dim
                                           : name == "ngram_min"      ? &c.ngram_min
                                           : name == "ngram_max"      ? &c.ngram_max
                                           : name == "buckets"        ? &c.buckets
                                           : name == "max_chars"      ? &c.max_chars
                                           : name == "token_type_ids" ? &c.token_type_ids
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
    } else if (name == "input_kind") {
      c.input_kind = value;
    } else if (name == "output") {
      c.output = value;
    } else {
      return Wrong(key,
                   "is not a name pilot reads (dim, labels, input_kind, output, ngram_min, ngram_max, "
                   "buckets, max_chars, token_type_ids)",
                   source);
    }
  }
  return c;
}

}  // namespace pilot
