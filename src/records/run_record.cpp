#include "pilot/run_record.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "pilot/folder_files.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/model_contract.h"
#include "pilot/params.h"

namespace pilot {

namespace {

// "2026-11-29T19:10:36Z" as seconds since the epoch.
std::optional<double> ParseUtc(const std::string& iso) {
  std::tm tm{};
  if (iso.size() != 20 || iso[19] != 'Z') return std::nullopt;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm));
}

RecordedSpan SpanOfRecord(const nlohmann::json& run_json) {
  auto precise = [&](const char* key) -> std::optional<double> {
    auto v = NumberAt(run_json, key);
    if (!v || !std::isfinite(*v)) return std::nullopt;
    return v;
  };
  RecordedSpan span{precise("started_unix"), precise("finished_unix")};
  if (!span.started || !span.finished) {  // a record from a pilot that kept whole seconds only
    span.started = ParseUtc(StringAt(run_json, "started_at").value_or(""));
    span.finished = ParseUtc(StringAt(run_json, "finished_at").value_or(""));
  }
  return span;
}

// plan's effective settings: each optional, each of its one type when present.
Status ParseSettings(const nlohmann::json& plan, const std::string& where, RecordedSettings& s) {
  auto text = [&](const nlohmann::json& obj, const char* key, const char* path,
                  std::optional<std::string>& out) -> Status {
    if (!obj.contains(key) || obj[key].is_null()) return {};
    auto v = StringAt(obj, key);
    if (!v) return BadInput(std::string("'") + path + "' is not a string", where);
    out = *v;
    return {};
  };
  PILOT_TRY(text(plan, "device", "plan.device", s.device));
  if (plan.contains("model_contract") && plan["model_contract"].is_object()) {
    PILOT_TRY(text(plan["model_contract"], "dtype", "plan.model_contract.dtype", s.dtype));
    PILOT_TRY(text(plan["model_contract"], "held_dtype", "plan.model_contract.held_dtype", s.held_dtype));
  }
  for (auto [key, out] : {std::pair{"batch_size", &s.batch_size}, std::pair{"threads", &s.threads},
                          std::pair{"seed", &s.seed}, std::pair{"max_bytes", &s.max_bytes}}) {
    if (!plan.contains(key)) continue;
    auto v = UnsignedAt(plan, key);
    if (!v) return BadInput(std::string("'plan.") + key + "' is not a whole number", where);
    *out = *v;
  }
  if (plan.contains("batch_plan")) {
    const auto& bp = plan["batch_plan"];
    if (!bp.is_null() && !(bp.is_object() && StringAt(bp, "sha256"))) {
      return BadInput("'plan.batch_plan' is neither null nor a batch plan with its 'sha256'", where);
    }
    s.batch_plan = bp;
  }
  return {};
}

}  // namespace

Result<RunRecord> ParseRunRecord(std::string_view text, const std::string& where) {
  if (text.size() > limits::kRunRecordBytes) {
    return BadInput("larger than pilot's cap of " + std::to_string(limits::kRunRecordBytes) + " bytes",
                    where);
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
  for (auto [key, out] :
       {std::pair{"run_id", &r.run_id}, std::pair{"state", &r.state},
        std::pair{"manifest_copy", &r.manifest_copy}, std::pair{"manifest_sha256", &r.manifest_sha256},
        std::pair{"params_sha256", &r.params_sha256}, std::pair{"model_sha256", &r.model_sha256}}) {
    if (Status st = field(key, *out); !st.ok()) return st.error();
  }
  if (r.manifest_copy != kManifestCopyJson && r.manifest_copy != kManifestCopyJsonl) {
    return BadInput("'manifest_copy' is neither data/manifest.json nor data/manifest.jsonl", where);
  }
  if (j.contains("folder_kind") || j.contains("format_version")) {
    auto kind = StringAt(j, "folder_kind");
    auto version = UnsignedAt(j, "format_version");
    if (!kind || !version || *version > 1000000) {
      return BadInput("'folder_kind' must be a string and 'format_version' a count", where);
    }
    r.folder_kind = *kind;
    r.format_version = static_cast<int>(*version);
    r.kind_declared = true;
  }
  if (j.contains("shard") && !j["shard"].is_null()) {
    const auto& s = j["shard"];
    const std::uint64_t none = ~std::uint64_t{0};
    const std::uint64_t index = UnsignedAt(s, "index").value_or(none);
    const std::uint64_t count = UnsignedAt(s, "count").value_or(0);
    const std::uint64_t items = UnsignedAt(s, "items").value_or(none);
    if (count < 1 || count > kMaxShards || index >= count || items == none) {
      return BadInput(
          "'shard' is not {index, count, items} with index < count <= " + std::to_string(kMaxShards), where);
    }
    r.shard = ShardSpec{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(count)};
    r.shard_items = static_cast<std::size_t>(items);
  }
  if (r.folder_kind == kFolderKindShard && !r.shard)
    return BadInput("a folder of kind 'shard' without 'shard'", where);
  if (r.folder_kind != kFolderKindShard && r.shard) {
    return BadInput("'shard' in a folder of kind '" + KeyForMessage(r.folder_kind) + "'", where);
  }
  if (r.folder_kind == kFolderKindMerged) {
    const auto merge = j.find("merge");
    auto n = merge != j.end() ? UnsignedAt(*merge, "shard_count") : std::nullopt;
    if (!n || *n < 1 || *n > kMaxShards) {
      return BadInput("'merge.shard_count' must be a count in 1.." + std::to_string(kMaxShards), where);
    }
    r.merged_shards = static_cast<std::uint32_t>(*n);
  }
  if (j.contains("plan")) {
    const auto& plan = j["plan"];
    if (!plan.is_object()) return BadInput("'plan' is not an object", where);
    r.inputs_root = StringAt(plan, "inputs_root").value_or("");
    if (plan.contains("output")) {
      auto output = StringAt(plan, "output");
      const OutputKindSpec* kind = output ? FindOutputKind(*output) : nullptr;
      if (!kind) return BadInput("'plan.output' is not an output kind (" + OutputKindChoices() + ")", where);
      r.output = kind;
    }
    if (r.output->vectors) {
      auto dim = UnsignedAt(plan, "dim");
      if (!dim || *dim == 0 || *dim > limits::kEmbeddingDim) {
        return BadInput("'plan.dim' must be a count in 1.." + std::to_string(limits::kEmbeddingDim), where);
      }
      r.dim = static_cast<std::uint32_t>(*dim);
    }
    if (r.output->generates) {
      auto max_new = UnsignedAt(plan, "max_new_tokens");
      auto vocab = UnsignedAt(plan, "vocab");
      if (!max_new || *max_new == 0 || *max_new > kMaxNewTokens)
        return BadInput("'plan.max_new_tokens' must be a count in 1.." + std::to_string(kMaxNewTokens),
                        where);
      if (!vocab || *vocab == 0 || *vocab > kMaxGeneratorVocab)
        return BadInput("'plan.vocab' must be a count in 1.." + std::to_string(kMaxGeneratorVocab), where);
      r.max_new_tokens = *max_new;
      r.vocab = *vocab;
      // The ids that end a completion: at most 64 each, token ids below the vocabulary.
      auto ids = [&](const nlohmann::json* list, const char* key, std::vector<std::int64_t>& out) -> Status {
        if (!list || !list->is_array() || list->size() > 64) {
          return BadInput(std::string("'") + key + "' must be an array of at most 64 token ids", where);
        }
        for (const auto& id : *list) {
          if (!id.is_number_unsigned() || id.get<std::uint64_t>() >= *vocab) {
            return BadInput(
                std::string("'") + key + "' holds a value that is not a token id below plan.vocab", where);
          }
          out.push_back(static_cast<std::int64_t>(id.get<std::uint64_t>()));
        }
        return {};
      };
      const auto contract = plan.find("model_contract");
      const nlohmann::json* c = contract != plan.end() && contract->is_object() ? &*contract : nullptr;
      const nlohmann::json* eos = c && c->contains("eos_token_ids") ? &(*c)["eos_token_ids"] : nullptr;
      const nlohmann::json* settings =
          c && c->contains(kGenerationParamsKey) && (*c)[kGenerationParamsKey].is_object()
              ? &(*c)[kGenerationParamsKey]
              : nullptr;
      const nlohmann::json* stop =
          settings && settings->contains("stop_token_ids") ? &(*settings)["stop_token_ids"] : nullptr;
      // ignore_eos (a benchmark's setting): the model's end-of-sequence ids end nothing.
      const nlohmann::json* ignore =
          settings && settings->contains("ignore_eos") ? &(*settings)["ignore_eos"] : nullptr;
      if (ignore && !ignore->is_boolean()) {
        return BadInput("'plan.model_contract.generation.ignore_eos' is not true or false", where);
      }
      PILOT_TRY(ids(eos, "plan.model_contract.eos_token_ids", r.eos_token_ids));
      if (ignore && ignore->get<bool>()) r.eos_token_ids.clear();
      PILOT_TRY(ids(stop, "plan.model_contract.generation.stop_token_ids", r.stop_token_ids));
    }
    PILOT_TRY(ParseSettings(plan, where, r.settings));
  }
  for (auto [key, out] :
       {std::pair{"pilot_version", &r.pilot_version}, std::pair{"source_revision", &r.source_revision}}) {
    if (!j.contains(key)) continue;
    auto v = StringAt(j, key);
    if (!v) return BadInput(std::string("'") + key + "' is not a string", where);
    *out = *v;
  }
  r.started_at = StringAt(j, "started_at").value_or("");
  r.finished_at = StringAt(j, "finished_at").value_or("");
  r.span = SpanOfRecord(j);
  return r;
}

std::string MergedShardFolder(const ShardSpec& spec) {
  return std::string(kShardsFolder) + "/" + ShardRunId(spec);
}

}  // namespace pilot
