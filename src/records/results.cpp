#include "pilot/results.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/reasons.h"
#include "pilot/utf8.h"

namespace pilot {

namespace reason {

const std::vector<std::string_view>& All() {
  static const std::vector<std::string_view> kAll = {
      kMissingFile,       kUnreadable,      kPathOutsideRoot, kInputChanged,       kEmptyInput,
      kTooLarge,          kInvalidEncoding, kLowConfidence,   kCategoryNotAllowed, kStageError,
      kDeviceOutOfMemory, kInvalidOutput,   kTooManyTokens,   kPromptTooLong};
  return kAll;
}

bool IsKnown(std::string_view code) {
  const auto& all = All();
  return std::find(all.begin(), all.end(), code) != all.end();
}

}  // namespace reason

bool IsFinishReason(std::string_view reason) {
  return reason == "stop" || reason == "eos" || reason == "length";
}

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
    if (r.vector_sha256) j["vector_sha256"] = *r.vector_sha256;
  } else if (r.accepted && r.completion) {
    const Completion& c = *r.completion;
    j["completion"] = c.text;
    j["completion_tokens"] = c.ids.size();
    j["finish_reason"] = c.finish_reason;
    j["completion_ids"] = c.ids;
    j["ttft_ms"] = c.ttft_ms;
    if (c.tpot_ms) j["tpot_ms"] = *c.tpot_ms;
    j["prefill_ms"] = c.prefill_ms;
    j["decode_ms"] = c.decode_ms;
    j["kv_cache_bytes"] = c.kv_cache_bytes;
    if (c.slot_steps) j["slot_steps"] = *c.slot_steps;
    j["near_tie_steps"] = c.near_tie_steps;
  } else if (r.accepted) {
    j["category"] = r.category;
    j["confidence"] = r.confidence;
  } else {
    j["reason"] = r.reason;
    j["detail"] = r.detail;
  }
  if (!r.model.empty()) j["model"] = r.model;
  if (r.latency_ms) j["latency_ms"] = *r.latency_ms;
  if (r.tokens) j["tokens"] = *r.tokens;
  if (r.truncated) j["truncated"] = true;
  if (r.expected) j["expected"] = *r.expected;
  return j;
}

namespace {

// An accepted generator record's completion: every field required, typed and in range, the ids
// as many as completion_tokens says.
Result<Completion> ParseCompletion(const nlohmann::json& j, const std::string& where) {
  Completion c;
  if (!j["completion"].is_string() ||
      j["completion"].get_ref<const std::string&>().size() > kMaxCompletionBytes) {
    return BadInput(
        "'completion' is not a string of at most " + std::to_string(kMaxCompletionBytes) + " bytes", where);
  }
  c.text = j["completion"].get<std::string>();
  auto it = j.find("finish_reason");
  if (it == j.end() || !it->is_string() || !IsFinishReason(it->get<std::string>())) {
    return BadInput("'finish_reason' is not one of stop, eos, length", where);
  }
  c.finish_reason = it->get<std::string>();
  it = j.find("completion_ids");
  if (it == j.end() || !it->is_array() || it->size() > kMaxCompletionIds) {
    return BadInput(
        "'completion_ids' is not an array of at most " + std::to_string(kMaxCompletionIds) + " ids", where);
  }
  for (const auto& id : *it) {
    if (!id.is_number_unsigned() || id.get<std::uint64_t>() > 2147483647u) {
      return BadInput("'completion_ids' holds a value that is not a token id in 0..2147483647", where);
    }
    c.ids.push_back(static_cast<std::int64_t>(id.get<std::uint64_t>()));
  }
  auto count = UnsignedAt(j, "completion_tokens");
  if (!count || *count != c.ids.size() || c.ids.empty()) {
    return BadInput("'completion_tokens' is not the count of completion_ids (at least 1)", where);
  }
  for (auto [key, dest] : {std::pair{"ttft_ms", &c.ttft_ms}, std::pair{"prefill_ms", &c.prefill_ms},
                           std::pair{"decode_ms", &c.decode_ms}}) {
    auto v = j.find(key);
    if (v == j.end() || !v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0) {
      return BadInput(std::string("'") + key + "' is not a number of milliseconds at or above 0", where);
    }
    *dest = v->get<double>();
  }
  // tpot_ms exactly beside two tokens or more, as pilot writes it.
  if (j.contains("tpot_ms") != (c.ids.size() >= 2)) {
    return BadInput("'tpot_ms' must be given exactly when there are two completion tokens or more", where);
  }
  if (j.contains("tpot_ms")) {
    const auto& v = j["tpot_ms"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      return BadInput("'tpot_ms' is not a number of milliseconds at or above 0", where);
    }
    c.tpot_ms = v.get<double>();
  }
  auto kv = UnsignedAt(j, "kv_cache_bytes");
  if (!kv || *kv == 0 || *kv > (std::uint64_t{1} << 62)) {
    return BadInput("'kv_cache_bytes' is not a count of bytes above 0", where);
  }
  c.kv_cache_bytes = *kv;
  if (j.contains("slot_steps")) {
    const auto& v = j["slot_steps"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      return BadInput("'slot_steps' is not a number at or above 0", where);
    }
    c.slot_steps = v.get<double>();
  }
  // Ascending steps of the completion, as pilot writes them; absent in an older record.
  if (j.contains("near_tie_steps")) {
    const auto& v = j["near_tie_steps"];
    if (!v.is_array() || v.size() > c.ids.size()) {
      return BadInput("'near_tie_steps' is not an array of at most completion_tokens steps", where);
    }
    for (const auto& step : v) {
      if (!step.is_number_unsigned() || step.get<std::uint64_t>() >= c.ids.size() ||
          (!c.near_tie_steps.empty() && step.get<std::uint64_t>() <= c.near_tie_steps.back())) {
        return BadInput("'near_tie_steps' holds a value that is not a rising step below completion_tokens",
                        where);
      }
      c.near_tie_steps.push_back(step.get<std::uint64_t>());
    }
  }
  return c;
}

}  // namespace

Result<ResultRecord> ParseResultRecord(std::string_view line, const std::string& where) {
  auto parsed = ParseJson(line, where);
  if (!parsed.ok()) return parsed.error();
  return ResultRecordFromJson(parsed.value(), where);
}

Result<ResultRecord> ResultRecordFromJson(const nlohmann::json& j, const std::string& where) {
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
        return BadInput("'dim' is not a count in 1.." + std::to_string(limits::kEmbeddingDim),
                        where + " id " + r.id);
      }
      r.dim = static_cast<std::uint32_t>(*dim);
      for (auto [key, dest] : {std::pair{"row", &r.row}, std::pair{"vector_at", &r.vector_at}}) {
        if (!j.contains(key)) continue;
        *dest = count(key, std::numeric_limits<std::int64_t>::max());
        if (!*dest) return BadInput(std::string("'") + key + "' is not a count", where + " id " + r.id);
      }
      if (j.contains("vector_sha256")) {
        std::string digest = str("vector_sha256");
        if (!IsSha256Hex(digest)) {
          return BadInput("'vector_sha256' is not 64 lower-case hex digits", where + " id " + r.id);
        }
        r.vector_sha256 = std::move(digest);
      }
    }
    if (!r.dim && j.contains("completion")) {
      auto c = ParseCompletion(j, where + " id " + r.id);
      if (!c.ok()) return c.error();
      r.completion = std::move(c).value();
    } else if (!r.dim) {  // an embedding has no category: one beside a dim is not read (nor written)
      r.category = str("category");
      if (j.contains("confidence") && j["confidence"].is_number())
        r.confidence = j["confidence"].get<double>();
    }
  } else if (status == "rejected") {
    r.reason = str("reason");
    r.detail = str("detail");
  } else {
    return BadInput("status must be 'accepted' or 'rejected', got '" + KeyForMessage(status) + "'",
                    where + " id " + r.id);
  }
  r.model = str("model");
  if (j.contains("latency_ms") && j["latency_ms"].is_number()) r.latency_ms = j["latency_ms"].get<double>();
  if (j.contains("tokens")) {
    auto tokens = UnsignedAt(j, "tokens");
    if (!tokens || *tokens > kMaxRecordTokens) {
      return BadInput("'tokens' is not a count in 0.." + std::to_string(kMaxRecordTokens),
                      where + " id " + r.id);
    }
    r.tokens = tokens;
  }
  if (j.contains("truncated")) {
    if (!j["truncated"].is_boolean() || !r.tokens) {
      return BadInput("'truncated' must be true or false, beside 'tokens'", where + " id " + r.id);
    }
    r.truncated = j["truncated"].get<bool>();
  }
  if (j.contains("expected")) {
    if (!j["expected"].is_string()) return BadInput("'expected' is not a string", where + " id " + r.id);
    r.expected = j["expected"].get<std::string>();
  }
  return r;
}

namespace {

// A cursor over one canonical record.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  bool Eat(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  // "…": no backslash, no control byte, valid UTF-8 (what nlohmann would accept unescaped).
  bool String(std::string& out) {
    if (!Eat("\"")) return false;
    auto end = s_.find('"', at_);
    if (end == std::string_view::npos) return false;
    std::string_view v = s_.substr(at_, end - at_);
    for (unsigned char c : v) {
      if (c < 0x20 || c == '\\') return false;
    }
    if (!CheckUtf8(v).valid) return false;
    out.assign(v);
    at_ = end + 1;
    return true;
  }
  // A JSON number as nlohmann would read it into a double (both round correctly).
  bool Number(double& out) {
    std::size_t end = at_;
    while (end < s_.size() && std::strchr("0123456789+-.eE", s_[end]) != nullptr && s_[end] != '\0') ++end;
    std::string_view v = s_.substr(at_, end - at_);
    if (!IsJsonNumber(v)) return false;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || ptr != v.data() + v.size() || !std::isfinite(out)) return false;
    at_ = end;
    return true;
  }
  // Digits only: a JSON unsigned integer without leading zeros.
  bool Unsigned(std::uint64_t& out) {
    std::size_t end = at_;
    while (end < s_.size() && s_[end] >= '0' && s_[end] <= '9') ++end;
    std::string_view v = s_.substr(at_, end - at_);
    if (v.empty() || v.size() > 19 || (v.size() > 1 && v[0] == '0')) return false;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || ptr != v.data() + v.size()) return false;
    at_ = end;
    return true;
  }
  bool AtEnd() const { return at_ == s_.size(); }

 private:
  // RFC 8259's number grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?
  static bool IsJsonNumber(std::string_view v) {
    std::size_t i = 0;
    auto digits = [&] {
      std::size_t start = i;
      while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
      return i > start;
    };
    if (i < v.size() && v[i] == '-') ++i;
    if (i < v.size() && v[i] == '0') {
      ++i;
    } else if (!digits()) {
      return false;
    }
    if (i < v.size() && v[i] == '.') {
      ++i;
      if (!digits()) return false;
    }
    if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
      ++i;
      if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return i == v.size();
  }
  std::string_view s_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<ResultRecord> ScanResultRecord(std::string_view line, bool journal) {
  Scanner s(line);
  ResultRecord r;
  if (!s.Eat(journal ? "{\"type\":\"result\",\"id\":" : "{\"id\":") || !s.String(r.id) ||
      !IsValidItemId(r.id)) {
    return std::nullopt;
  }
  if (s.Eat(",\"status\":\"accepted\"")) {
    r.accepted = true;
    std::uint64_t dim = 0, n = 0;
    if (s.Eat(",\"category\":")) {
      if (!s.String(r.category) || !s.Eat(",\"confidence\":") || !s.Number(r.confidence)) return std::nullopt;
    } else if (s.Eat(",\"row\":")) {
      if (!s.Unsigned(n) || !s.Eat(",\"dim\":") || !s.Unsigned(dim)) return std::nullopt;
      r.row = n;
    } else if (s.Eat(",\"dim\":")) {
      if (!s.Unsigned(dim)) return std::nullopt;
      if (s.Eat(",\"vector_at\":")) {
        if (!s.Unsigned(n)) return std::nullopt;
        r.vector_at = n;
      }
    } else {
      return std::nullopt;
    }
    if ((r.row && *r.row > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) ||
        (r.vector_at &&
         *r.vector_at > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
      return std::nullopt;
    }
    if (r.row || dim) {
      if (dim == 0 || dim > limits::kEmbeddingDim) return std::nullopt;
      r.dim = static_cast<std::uint32_t>(dim);
    }
  } else if (s.Eat(",\"status\":\"rejected\",\"reason\":")) {
    if (!s.String(r.reason) || !s.Eat(",\"detail\":") || !s.String(r.detail)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (s.Eat(",\"model\":") && !s.String(r.model)) return std::nullopt;
  if (s.Eat(",\"latency_ms\":")) {
    double ms = 0;
    if (!s.Number(ms)) return std::nullopt;
    r.latency_ms = ms;
  }
  if (s.Eat(",\"tokens\":")) {
    std::uint64_t n = 0;
    if (!s.Unsigned(n) || n > kMaxRecordTokens) return std::nullopt;
    r.tokens = n;
    if (s.Eat(",\"truncated\":true")) r.truncated = true;
  }
  if (!journal && s.Eat(",\"expected\":")) {
    std::string expected;
    if (!s.String(expected)) return std::nullopt;
    r.expected = std::move(expected);
  }
  if (!s.Eat("}") || !s.AtEnd()) return std::nullopt;
  return r;
}

}  // namespace pilot
