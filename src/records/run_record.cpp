#include "pilot/run_record.h"

#include "pilot/json_util.h"
#include "pilot/limits.h"

namespace pilot {

Result<RunRecord> ParseRunRecord(std::string_view text, const std::string& where) {
  if (text.size() > limits::kRunRecordBytes) {
    return BadInput("larger than pilot's cap of " + std::to_string(limits::kRunRecordBytes) + " bytes", where);
  }
  auto parsed = ParseJson(text, where);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  if (!j.is_object()) return BadInput("not a JSON object", where);
  RunRecord r;
  auto field = [&](const char* key, std::string& out) -> Status {
    auto v = StringAt(j, key);
    if (!v) return BadInput(std::string("'") + key + "' is missing or not a string", where);
    out = *v;
    return {};
  };
  for (auto [key, out] : {std::pair{"run_id", &r.run_id}, std::pair{"state", &r.state},
                          std::pair{"manifest_copy", &r.manifest_copy}, std::pair{"manifest_sha256", &r.manifest_sha256},
                          std::pair{"params_sha256", &r.params_sha256}, std::pair{"model_sha256", &r.model_sha256}}) {
    if (Status st = field(key, *out); !st.ok()) return st.error();
  }
  if (r.manifest_copy != "data/manifest.json" && r.manifest_copy != "data/manifest.jsonl") {
    return BadInput("'manifest_copy' is neither data/manifest.json nor data/manifest.jsonl", where);
  }
  if (j.contains("plan")) {
    if (!j["plan"].is_object()) return BadInput("'plan' is not an object", where);
    r.inputs_root = StringAt(j["plan"], "inputs_root").value_or("");
  }
  return r;
}

}  // namespace pilot
