#include "pilot/adapt/adapt_params.h"

#include <cmath>
#include <set>
#include <type_traits>

#include "pilot/credentials.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/params.h"

namespace pilot {
namespace {

using nlohmann::json;

constexpr const char* kHint = "see config/adapt.json and docs/adapt.md, 'Parameters'";
constexpr std::uint64_t kMaxSeed =
    9007199254740991ull;  // 2^53 - 1: every such seed is exact as a JSON double
constexpr std::uint64_t kMaxMaxBytes = 1ull << 30;
constexpr std::size_t kMaxParameterName = 128;

// Checks the keys of one object against the allowed ones; `where` is its key path.
Status CheckKeys(const json& obj, std::initializer_list<const char*> allowed, const std::string& where,
                 const std::string& source) {
  return CheckKnownKeys(obj, allowed, where, source, kHint);
}

// Typed reads of one object's members; every message names the key path and the file.
SettingsReader Reader(const json& obj, const std::string& prefix, const std::string& source) {
  return SettingsReader(obj, prefix, source, kHint);
}

bool IsParameterName(std::string_view name) {
  if (name.empty() || name.size() > kMaxParameterName) return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Status ParseTrain(const json& train, const std::string& source, AdaptParams& p) {
  PILOT_TRY(CheckKeys(train,
                      {"parameters", "optimiser", "learning_rate", "momentum", "weight_decay", "batch_size",
                       "epochs", "steps", "seed", "threads", "checkpoint_every", "keep_checkpoints", "dtype"},
                      "train", source));
  const SettingsReader r = Reader(train, "train", source);
  if (r.Has("parameters")) {
    const json& params = train["parameters"];
    if (params.is_string()) {
      if (params.get<std::string>() != "all")
        return r.Wrong("parameters", "must be \"all\" or an array of parameter names");
    } else if (params.is_array() && !params.empty()) {
      std::set<std::string> seen;
      for (const auto& name : params) {
        if (!name.is_string() || !IsParameterName(name.get<std::string>())) {
          return r.Wrong("parameters", "must hold parameter names of 1-128 characters of [A-Za-z0-9._-]");
        }
        if (!seen.insert(name.get<std::string>()).second) {
          return r.Wrong("parameters", "lists '" + name.get<std::string>() + "' twice");
        }
        p.trainable.push_back(name.get<std::string>());
      }
    } else {
      return r.Wrong("parameters", "must be \"all\" or a non-empty array of parameter names");
    }
  }
  PILOT_TRY(r.OneOf("optimiser", p.optimiser, {"adam", "sgd"}));
  PILOT_TRY(r.Number("learning_rate", p.learning_rate, 0, 10, /*open_lo=*/true));
  if (r.Has("momentum") && p.optimiser != "sgd") {
    return r.Wrong("momentum",
                   "applies to the sgd optimiser only (this file trains with " + p.optimiser + ")");
  }
  PILOT_TRY(r.Number("momentum", p.momentum, 0, 1, false, /*open_hi=*/true));
  PILOT_TRY(r.Number("weight_decay", p.weight_decay, 0, 1));
  PILOT_TRY(r.Whole("batch_size", p.batch_size, 1, kMaxAdaptBatch));
  if (r.Has("epochs") == r.Has("steps")) {
    return r.Wrong(r.Has("epochs") ? "steps" : "epochs",
                   r.Has("epochs") ? "cannot be given with 'train.epochs': give one of the two"
                                   : "or 'train.steps' is required: give one of the two");
  }
  if (r.Has("epochs")) {
    int epochs = 0;
    PILOT_TRY(r.Whole("epochs", epochs, 1, 10000));
    p.epochs = epochs;
  } else {
    std::uint64_t steps = 0;
    PILOT_TRY(r.Whole("steps", steps, 1, kMaxAdaptSteps));
    p.steps = steps;
  }
  PILOT_TRY(r.Whole("seed", p.seed, 0, kMaxSeed));
  if (!r.Has("threads"))
    return r.Wrong("threads", "is required: a resume trains with the same number of threads");
  PILOT_TRY(r.Whole("threads", p.threads, 1, kMaxAdaptThreads));
  PILOT_TRY(r.Whole("checkpoint_every", p.checkpoint_every, 1, kMaxAdaptSteps));
  PILOT_TRY(r.Whole("keep_checkpoints", p.keep_checkpoints, 1, kMaxKeepCheckpoints));
  PILOT_TRY(r.OneOf("dtype", p.dtype, {"float32", "bfloat16", "float16"}));
  return {};
}

}  // namespace

Result<AdaptParams> ParseAdaptParams(std::string_view text, const std::filesystem::path& base_dir,
                                     const std::string& source) {
  if (text.size() > limits::kParamsBytes) {
    return BadInput("the adaptation parameters are larger than pilot's cap of " +
                        std::to_string(limits::kParamsBytes) + " bytes",
                    source, kHint);
  }
  auto parsed = ParseJson(text, source);
  if (!parsed.ok()) return parsed.error();
  const json& doc = parsed.value();
  if (!doc.is_object()) return BadInput("adaptation parameters must be a JSON object", source, kHint);
  // Credentials first: the message must be about the secret, not about an unknown key.
  PILOT_TRY(CheckNoCredentials(doc, source));
  PILOT_TRY(CheckKeys(doc,
                      {"description", "base_model", "train_manifest", "eval_manifest", "train", "device",
                       "limits", "acceptance"},
                      "", source));
  AdaptParams p;
  const SettingsReader top = Reader(doc, "", source);
  if (top.Has("description") && !doc["description"].is_string())
    return top.Wrong("description", "must be a string");

  if (!top.Has("base_model")) return top.Wrong("base_model", "is required: {\"path\": ..., \"sha256\": ...}");
  PILOT_TRY(CheckKeys(doc["base_model"], {"path", "sha256"}, "base_model", source));
  const SettingsReader model = Reader(doc["base_model"], "base_model", source);
  PILOT_TRY(model.Path("path", base_dir, p.base_model));
  if (!model.Has("sha256")) return model.Wrong("sha256", "is required: the base model is pinned");
  PILOT_TRY(model.String("sha256", p.base_model_sha256, true));
  if (!IsSha256Hex(p.base_model_sha256)) return model.Wrong("sha256", "must be 64 lower-case hex digits");

  PILOT_TRY(top.Path("train_manifest", base_dir, p.train_manifest));
  PILOT_TRY(top.Path("eval_manifest", base_dir, p.eval_manifest));

  if (!top.Has("train"))
    return top.Wrong("train", "is required (with 'threads' and one of 'epochs' or 'steps')");
  PILOT_TRY(ParseTrain(doc["train"], source, p));

  if (top.Has("device")) {
    PILOT_TRY(top.String("device", p.device, true));
    if (!IsKnownDevice(p.device))
      return top.Wrong("device", "must be one of auto, cpu, cuda, rocm, cuda:N, rocm:N");
  }
  if (top.Has("limits")) {
    PILOT_TRY(CheckKeys(doc["limits"], {"max_bytes"}, "limits", source));
    PILOT_TRY(Reader(doc["limits"], "limits", source).Whole("max_bytes", p.max_bytes, 1, kMaxMaxBytes));
  }
  if (top.Has("acceptance")) {
    PILOT_TRY(CheckKeys(doc["acceptance"], {"min_eval_accuracy", "min_gain"}, "acceptance", source));
    const SettingsReader a = Reader(doc["acceptance"], "acceptance", source);
    PILOT_TRY(a.Optional("min_eval_accuracy", p.acceptance.min_eval_accuracy, 0, 1));
    PILOT_TRY(a.Optional("min_gain", p.acceptance.min_gain, -1, 1));
  }
  return p;
}

}  // namespace pilot
