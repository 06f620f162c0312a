#include "pilot/params.h"

#include <set>

#include "pilot/credentials.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"

namespace pilot {
namespace {

using nlohmann::json;

// Checks the keys of one object against the allowed ones; `where` is its key path.
Status CheckKeys(const json& obj, std::initializer_list<const char*> allowed, const std::string& where,
                 const std::string& source) {
  return CheckKnownKeys(obj, allowed, where, source, "see config/pilot.json");
}

// Typed reads of one object's members; every message names the key path and the file.
SettingsReader Reader(const json& obj, const std::string& prefix, const std::string& source) {
  return SettingsReader(obj, prefix, source, "see docs/formats.md, 'Parameters'");
}

Result<TokenizerParams> ParseTokenizerParams(const json& obj, const std::filesystem::path& base_dir,
                                             const std::string& source) {
  const SettingsReader st =
      SettingsReader(obj, "stage.tokenizer", source, "see docs/tokenizers.md, 'In a pilot'");
  if (!obj.is_object()) {
    static const json kNone = json::object();
    return SettingsReader(kNone, "stage", source, "see docs/tokenizers.md, 'In a pilot'")
        .Wrong("tokenizer", "must be an object");
  }
  PILOT_TRY(CheckKnownKeys(obj,
                           {"file", "sha256", "format", "max_length", "truncation", "pad_to_multiple_of",
                            "add_special_tokens", "pad_token", "add_bos", "add_eos", "ids"},
                           "stage.tokenizer", source, "see docs/tokenizers.md, 'In a pilot'"));
  TokenizerParams t;
  PILOT_TRY(st.Path("file", base_dir, t.file));
  PILOT_TRY(st.String("sha256", t.sha256, true));
  if (!IsSha256Hex(t.sha256)) return st.Wrong("sha256", "must be 64 lower-case hex digits");
  const std::string name = t.file.filename().string();
  t.format =
      name.size() > 6 && name.compare(name.size() - 6, 6, ".model") == 0 ? "sentencepiece" : "tokenizer.json";
  PILOT_TRY(st.OneOf("format", t.format, {"tokenizer.json", "sentencepiece"}));
  if (!st.Has("max_length")) return st.Wrong("max_length", "is required: the most tokens a text may take");
  PILOT_TRY(st.Whole("max_length", t.max_length, 1, kMaxTokenizerMaxLength));
  PILOT_TRY(st.OneOf("truncation", t.truncation, {"reject", "truncate"}));
  PILOT_TRY(st.Whole("pad_to_multiple_of", t.pad_to_multiple_of, 1, 4096));
  for (auto [key, dest] : {std::pair{"add_special_tokens", &t.add_special_tokens},
                           std::pair{"add_bos", &t.add_bos}, std::pair{"add_eos", &t.add_eos}}) {
    if (!obj.contains(key)) continue;
    if (!obj[key].is_boolean()) return st.Wrong(key, "must be true or false");
    *dest = obj[key].get<bool>();
  }
  if ((t.add_bos || t.add_eos) && t.format != "sentencepiece") {
    return st.Wrong(
        t.add_bos ? "add_bos" : "add_eos",
        "applies to a SentencePiece model only: a tokenizer.json's post-processor adds its special tokens");
  }
  PILOT_TRY(st.OneOf("ids", t.ids, {"sentencepiece", "fairseq"}));
  if (t.ids == "fairseq" && t.format != "sentencepiece") {
    return st.Wrong("ids", "applies to a SentencePiece model only: a tokenizer.json holds its own ids");
  }
  if (obj.contains("pad_token")) {
    std::string pad;
    PILOT_TRY(st.String("pad_token", pad, true));
    t.pad_token = pad;
  }
  return t;
}

}  // namespace

bool IsKnownDevice(std::string_view device) {
  if (device == "auto" || device == "cpu" || device == "cuda" || device == "rocm") return true;
  // cuda:N or rocm:N, N a device index (at most 3 digits, no sign or space).
  for (std::string_view base : {"cuda:", "rocm:"}) {
    if (device.substr(0, base.size()) != base) continue;
    std::string_view n = device.substr(base.size());
    if (n.empty() || n.size() > 3) return false;
    for (char c : n) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  }
  return false;
}

namespace {

Result<GenerationSettings> ParseGeneration(const json& obj, std::uint64_t seed, const std::string& source) {
  PILOT_TRY(CheckKeys(obj,
                      {"max_new_tokens", "temperature", "top_k", "top_p", "stop", "stop_token_ids", "seed",
                       "batching", "ignore_eos"},
                      kGenerationParamsKey, source));
  const SettingsReader r =
      SettingsReader(obj, kGenerationParamsKey, source, "see docs/generation.md, 'Settings'");
  GenerationSettings g;
  g.seed = seed;
  if (!r.Has("max_new_tokens"))
    return r.Wrong("max_new_tokens", "is required: the most tokens a completion may take");
  PILOT_TRY(r.Whole("max_new_tokens", g.max_new_tokens, 1, kMaxNewTokens));
  PILOT_TRY(r.Number("temperature", g.temperature, 0, 100));
  PILOT_TRY(r.Whole("top_k", g.top_k, 0, 1u << 24));
  PILOT_TRY(r.Number("top_p", g.top_p, 0, 1, /*open_lo=*/true));
  PILOT_TRY(r.Whole("seed", g.seed, 0, 9007199254740991ull));
  PILOT_TRY(r.OneOf("batching", g.batching, {"in-flight", "static"}));
  if (r.Has("ignore_eos")) {
    if (!obj["ignore_eos"].is_boolean()) return r.Wrong("ignore_eos", "must be true or false");
    g.ignore_eos = obj["ignore_eos"].get<bool>();
  }
  if (obj.contains("stop")) {
    const json& stop = obj["stop"];
    if (!stop.is_array() || stop.size() > kMaxStopStrings) {
      return r.Wrong("stop", "must be an array of at most " + std::to_string(kMaxStopStrings) + " strings");
    }
    for (const auto& s : stop) {
      if (!s.is_string() || s.get<std::string>().empty() ||
          s.get<std::string>().size() > kMaxStopStringBytes) {
        return r.Wrong("stop", "must hold strings of 1 to " + std::to_string(kMaxStopStringBytes) + " bytes");
      }
      g.stop.push_back(s.get<std::string>());
    }
  }
  if (obj.contains("stop_token_ids")) {
    const json& ids = obj["stop_token_ids"];
    if (!ids.is_array() || ids.size() > kMaxStopTokenIds) {
      return r.Wrong("stop_token_ids",
                     "must be an array of at most " + std::to_string(kMaxStopTokenIds) + " token ids");
    }
    for (const auto& id : ids) {
      if (!id.is_number_unsigned() || id.get<std::uint64_t>() > 2147483647u) {
        return r.Wrong("stop_token_ids", "must hold token ids in 0..2147483647");
      }
      g.stop_token_ids.push_back(static_cast<std::int64_t>(id.get<std::uint64_t>()));
    }
  }
  return g;
}

}  // namespace

nlohmann::ordered_json GenerationToJson(const GenerationSettings& g) {
  return {{"max_new_tokens", g.max_new_tokens},
          {"decoding", g.temperature > 0 ? "sampling" : "greedy"},
          {"temperature", g.temperature},
          {"top_k", g.top_k},
          {"top_p", g.top_p},
          {"stop", g.stop},
          {"stop_token_ids", g.stop_token_ids},
          {"seed", g.seed},
          {"batching", g.batching},
          {"ignore_eos", g.ignore_eos}};
}

Result<Params> ParseParams(std::string_view text, const std::filesystem::path& base_dir,
                           const std::string& source) {
  auto parsed = ParseJson(text, source);
  if (!parsed.ok()) return parsed.error();
  const json& doc = parsed.value();
  if (!doc.is_object()) return BadInput("parameters must be a JSON object", source);
  // Credentials first: the message must be about the secret, not about an unknown key.
  PILOT_TRY(CheckNoCredentials(doc, source));
  PILOT_TRY(CheckKeys(doc,
                      {"description", "manifest", "stage", "allowed_categories", "device", "batch_size",
                       "batch_plan", "threads", "prepare_threads", "seed", "limits", "acceptance", "requires",
                       "vectors_dtype", kGenerationParamsKey, "service"},
                      "", source));
  Params p;
  const SettingsReader top = Reader(doc, "", source);
  std::string manifest;
  PILOT_TRY(top.String("manifest", manifest, true));
  p.manifest = (base_dir / manifest).lexically_normal();

  if (!doc.contains("stage")) return top.Wrong("stage", "is required");
  const json& stage = doc["stage"];
  PILOT_TRY(CheckKeys(stage, {"kind", "model", "model_sha256", "options", "tokenizer"}, "stage", source));
  const SettingsReader st = Reader(stage, "stage", source);
  std::string model;
  PILOT_TRY(st.String("kind", p.stage.kind, true));
  PILOT_TRY(st.String("model", model, true));
  p.stage.model = (base_dir / model).lexically_normal();
  if (stage.contains("model_sha256")) {
    std::string pin;
    PILOT_TRY(st.String("model_sha256", pin, true));
    if (!IsSha256Hex(pin)) return st.Wrong("model_sha256", "must be 64 lower-case hex digits");
    p.stage.model_sha256 = pin;
  }
  // A .pt2 package is native code that the stage unpacks and loads: the pin is the user's
  // decision to trust it, and it is checked before anything is unpacked.
  if (p.stage.kind.rfind("aoti-", 0) == 0 && !p.stage.model_sha256) {
    return st.Wrong("model_sha256",
                    "is required for the " + p.stage.kind +
                        " kind: a .pt2 package is native code that is loaded, so it must be pinned");
  }
  if (stage.contains("options")) {
    if (!stage["options"].is_object()) return st.Wrong("options", "must be an object");
    p.stage.options = stage["options"];
  }
  if (stage.contains("tokenizer")) {
    auto tokenizer = ParseTokenizerParams(stage["tokenizer"], base_dir, source);
    if (!tokenizer.ok()) return tokenizer.error();
    p.stage.tokenizer = std::move(tokenizer).value();
  }

  // Required for a stage that classifies, refused for one that does not: the engine checks
  // that against the stage's kind once the stage is loaded (CheckStageFitsParams).
  const json& allowed = doc.contains("allowed_categories") ? doc["allowed_categories"] : json::array();
  if (doc.contains("allowed_categories") && (!allowed.is_array() || allowed.empty())) {
    return top.Wrong("allowed_categories", "must be a non-empty array of labels");
  }
  std::set<std::string> seen;
  for (const auto& c : allowed) {
    if (!c.is_string() || c.get<std::string>().empty()) {
      return top.Wrong("allowed_categories", "must hold non-empty strings");
    }
    if (!seen.insert(c.get<std::string>()).second) {
      return top.Wrong("allowed_categories", "lists '" + c.get<std::string>() + "' twice");
    }
    p.allowed_categories.push_back(c.get<std::string>());
  }

  if (doc.contains("device")) {
    PILOT_TRY(top.String("device", p.device, true));
    if (!IsKnownDevice(p.device))
      return top.Wrong("device", "must be one of auto, cpu, cuda, rocm, cuda:N, rocm:N");
  }
  PILOT_TRY(top.Whole("batch_size", p.batch_size, 1, 65536));
  if (doc.contains("batch_plan")) {
    std::string plan;
    PILOT_TRY(top.String("batch_plan", plan, true));
    p.batch_plan = (base_dir / plan).lexically_normal();
  }
  PILOT_TRY(top.Whole("threads", p.threads, 0, 1024));
  PILOT_TRY(top.Whole("prepare_threads", p.prepare_threads, 1, 64));
  PILOT_TRY(top.Whole("seed", p.seed, 0, 9007199254740991ull));
  if (doc.contains("vectors_dtype")) {
    PILOT_TRY(top.String("vectors_dtype", p.vectors_dtype, true));
    if (p.vectors_dtype != "float32" && p.vectors_dtype != "float16")
      return top.Wrong("vectors_dtype", "must be float32 or float16");
  }
  if (doc.contains(kGenerationParamsKey)) {
    auto g = ParseGeneration(doc[kGenerationParamsKey], p.seed, source);
    if (!g.ok()) return g.error();
    p.generation = std::move(g).value();
  }
  if (doc.contains("service")) {
    if (!doc["service"].is_object()) return top.Wrong("service", "must be an object (see docs/load.md)");
    p.service = doc["service"];
  }
  if (doc.contains("limits")) {
    PILOT_TRY(CheckKeys(doc["limits"], {"max_bytes"}, "limits", source));
    PILOT_TRY(Reader(doc["limits"], "limits", source).Whole("max_bytes", p.max_bytes, 1, 1000000000000ull));
  }
  if (doc.contains("acceptance")) {
    const json& acc = doc["acceptance"];
    PILOT_TRY(CheckKeys(acc,
                        {"min_accuracy", "min_recall_per_label", "max_p95_latency_ms", "max_peak_rss_mb",
                         "min_accepted_fraction"},
                        "acceptance", source));
    const SettingsReader a = Reader(acc, "acceptance", source);
    PILOT_TRY(a.Optional("min_accuracy", p.acceptance.min_accuracy, 0, 1));
    PILOT_TRY(a.Optional("min_recall_per_label", p.acceptance.min_recall_per_label, 0, 1));
    PILOT_TRY(a.Optional("max_p95_latency_ms", p.acceptance.max_p95_latency_ms, 0, 1e9));
    PILOT_TRY(a.Optional("max_peak_rss_mb", p.acceptance.max_peak_rss_mb, 0, 1e9));
    PILOT_TRY(a.Optional("min_accepted_fraction", p.acceptance.min_accepted_fraction, 0, 1));
  }
  if (doc.contains("requires")) {
    const json& req = doc["requires"];
    PILOT_TRY(CheckKeys(
        req,
        {"backend", "min_device_count", "min_device_memory_mb", "min_libtorch_version", "min_free_disk_mb"},
        "requires", source));
    const SettingsReader r = Reader(req, "requires", source);
    if (req.contains("backend")) {
      std::string b;
      PILOT_TRY(r.String("backend", b, true));
      if (b != "cpu" && b != "cuda" && b != "rocm")
        return r.Wrong("backend", "must be one of cpu, cuda, rocm");
      p.requires_.backend = b;
    }
    if (req.contains("min_device_count")) {
      int n = 0;
      PILOT_TRY(r.Whole("min_device_count", n, 0, 1024));
      p.requires_.min_device_count = n;
    }
    PILOT_TRY(r.Optional("min_device_memory_mb", p.requires_.min_device_memory_mb, 0, 1e9));
    PILOT_TRY(r.Optional("min_free_disk_mb", p.requires_.min_free_disk_mb, 0, 1e12));
    if (req.contains("min_libtorch_version")) {
      std::string v;
      PILOT_TRY(r.String("min_libtorch_version", v, true));
      if (!ParseVersion(v)) return r.Wrong("min_libtorch_version", "must look like 1.13 or 2.4.1");
      p.requires_.min_libtorch_version = v;
    }
  }
  return p;
}

std::optional<std::vector<int>> ParseVersion(std::string_view v) {
  std::vector<int> parts;
  int cur = -1;
  for (char c : v) {
    if (c >= '0' && c <= '9') {
      if (cur > 99999) return std::nullopt;  // no version part is this long; never overflow
      cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
    } else if (c == '.' && cur >= 0) {
      parts.push_back(cur);
      cur = -1;
    } else if ((c == '+' || c == 'a' || c == '-') && cur >= 0) {
      break;  // 2.4.1+cu121, 2.5.0a0: local and pre-release parts do not order here
    } else {
      return std::nullopt;
    }
  }
  if (cur >= 0) parts.push_back(cur);
  if (parts.empty()) return std::nullopt;
  return parts;
}

Result<Params> LoadParams(FileSystem& fs, const std::filesystem::path& file) {
  auto text = ReadCapped(fs, file, limits::kParamsBytes, "parameter file");
  if (!text.ok()) return text.error();
  std::filesystem::path base = file.parent_path();
  if (base.empty()) base = ".";
  return ParseParams(text.value(), std::filesystem::absolute(base), file.string());
}

}  // namespace pilot
