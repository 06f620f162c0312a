#include "pilot/batch_plan.h"

#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"

namespace pilot {

nlohmann::ordered_json BatchPlanToJson(const BatchPlan& p) {
  nlohmann::ordered_json j;
  j["measure"] = p.measure;
  j["model_sha256"] = p.model_sha256;
  j["sweep_fingerprint"] = p.sweep_fingerprint;
  auto groups = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < p.max_lengths.size(); ++i) {
    groups.push_back({{"group", i + 1}, {"max_length", p.max_lengths[i]}, {"batch_size", p.batch_sizes[i]}});
  }
  j["groups"] = groups;
  return j;
}

Result<BatchPlan> ParseBatchPlan(std::string_view text, const std::string& where) {
  if (text.size() > limits::kBatchPlanBytes)
    return BadInput("larger than pilot's cap for a batch plan", where);
  auto parsed = ParseJson(text, where);
  if (!parsed.ok()) return parsed.error();
  const auto& j = parsed.value();
  auto bad = [&](const std::string& what) { return BadInput("the batch plan is malformed: " + what, where); };
  BatchPlan p;
  auto measure = StringAt(j, "measure");
  auto model = StringAt(j, "model_sha256");
  auto fingerprint = StringAt(j, "sweep_fingerprint");
  if (!measure || (*measure != "bytes" && *measure != "features"))
    return bad("'measure' is neither bytes nor features");
  if (!model || !IsSha256Hex(*model)) return bad("'model_sha256' is not a sha256");
  if (!fingerprint || !IsSha256Hex(*fingerprint)) return bad("'sweep_fingerprint' is not a sha256");
  p.measure = *measure;
  p.model_sha256 = *model;
  p.sweep_fingerprint = *fingerprint;
  if (!j.contains("groups") || !j["groups"].is_array() || j["groups"].empty() ||
      j["groups"].size() > kMaxGroups) {
    return bad("'groups' is not a list of 1.." + std::to_string(kMaxGroups) + " groups");
  }
  for (std::size_t i = 0; i < j["groups"].size(); ++i) {
    const auto& e = j["groups"][i];
    auto number = UnsignedAt(e, "group");
    auto max = UnsignedAt(e, "max_length");
    auto batch = UnsignedAt(e, "batch_size");
    if (!number || *number != i + 1 || !max || !batch || *batch < 1 || *batch > kMaxBatchSize ||
        (!p.max_lengths.empty() && *max <= p.max_lengths.back())) {
      return bad("group " + std::to_string(i + 1) +
                 " is malformed (groups ascend by 'max_length', batch sizes 1.." +
                 std::to_string(kMaxBatchSize) + ")");
    }
    p.max_lengths.push_back(*max);
    p.batch_sizes.push_back(static_cast<int>(*batch));
  }
  return p;
}

std::size_t GroupForLength(const std::vector<std::uint64_t>& max_lengths, std::uint64_t length) {
  for (std::size_t g = 0; g < max_lengths.size(); ++g) {
    if (length <= max_lengths[g]) return g;
  }
  return max_lengths.empty() ? 0 : max_lengths.size() - 1;
}

}  // namespace pilot
