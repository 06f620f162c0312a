#include "pilot/results.h"

#include <algorithm>
#include <limits>

#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/reasons.h"

namespace pilot {

namespace reason {

const std::vector<std::string_view>& All() {
  static const std::vector<std::string_view> kAll = {
      kMissingFile,   kUnreadable,         kPathOutsideRoot,    kInputChanged,
      kEmptyInput,    kTooLarge,           kInvalidEncoding,    kLowConfidence,
      kCategoryNotAllowed, kStageError,    kDeviceOutOfMemory, kInvalidOutput};
  return kAll;
}

bool IsKnown(std::string_view code) {
  const auto& all = All();
  return std::find(all.begin(), all.end(), code) != all.end();
}

}  // namespace reason

ResultRecord ResultRecord::Rejected(std::string id, std::string_view reason, std::string detail) {
  ResultRecord r;
  r.id = std::move(id);
  r.accepted = false;
  r.reason = std::string(reason);
  r.detail = std::move(detail);
  return r;
}

std::string ToJsonLine(const ResultRecord& r) { return JsonLine(ToJson(r)); }

nlohmann::ordered_json ToJson(const ResultRecord& r, nlohmann::ordered_json j) {
  j["id"] = r.id;
  j["status"] = r.accepted ? "accepted" : "rejected";
  if (r.accepted && r.dim) {
    if (r.row) j["row"] = *r.row;
    j["dim"] = *r.dim;
    if (r.vector_at) j["vector_at"] = *r.vector_at;
  } else if (r.accepted) {
    j["category"] = r.category;
    j["confidence"] = r.confidence;
  } else {
    j["reason"] = r.reason;
    j["detail"] = r.detail;
  }
  if (!r.model.empty()) j["model"] = r.model;
  if (r.latency_ms) j["latency_ms"] = *r.latency_ms;
  return j;
}

Result<ResultRecord> ParseResultRecord(std::string_view line, const std::string& where) {
  auto parsed = ParseJson(line, where);
  if (!parsed.ok()) return parsed.error();
  const auto& j = parsed.value();
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!j.is_object() || !IsValidItemId(str("id"))) return BadInput("result record without a valid id", where);
  ResultRecord r;
  r.id = str("id");
  std::string status = str("status");
  if (status == "accepted") {
    r.accepted = true;
    auto count = [&](const char* key, std::uint64_t max) -> std::optional<std::uint64_t> {
      auto v = UnsignedAt(j, key);
      if (v && *v <= max) return v;
      return std::nullopt;
    };
    if (j.contains("dim")) {
      auto dim = count("dim", limits::kEmbeddingDim);
      if (!dim || *dim == 0) {
        return BadInput("'dim' is not a count in 1.." + std::to_string(limits::kEmbeddingDim), where + " id " + r.id);
      }
      r.dim = static_cast<std::uint32_t>(*dim);
      for (auto [key, dest] : {std::pair{"row", &r.row}, std::pair{"vector_at", &r.vector_at}}) {
        if (!j.contains(key)) continue;
        *dest = count(key, std::numeric_limits<std::int64_t>::max());
        if (!*dest) return BadInput(std::string("'") + key + "' is not a count", where + " id " + r.id);
      }
    }
    if (!r.dim) {  // an embedding has no category: one beside a dim is not read (nor written)
      r.category = str("category");
      if (j.contains("confidence") && j["confidence"].is_number()) r.confidence = j["confidence"].get<double>();
    }
  } else if (status == "rejected") {
    r.reason = str("reason");
    r.detail = str("detail");
  } else {
    return BadInput("status must be 'accepted' or 'rejected', got '" + KeyForMessage(status) + "'", where + " id " + r.id);
  }
  r.model = str("model");
  if (j.contains("latency_ms") && j["latency_ms"].is_number()) r.latency_ms = j["latency_ms"].get<double>();
  return r;
}

}  // namespace pilot
