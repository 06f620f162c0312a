#include "pilot/stage.h"

#include "pilot/hash.h"
#include "pilot/json_util.h"

namespace pilot {

const char* InputKindName(InputKind kind) { return kind == InputKind::kBytes ? "bytes" : "text"; }

void StageRegistry::Register(const std::string& kind, Factory factory) {
  factories_[kind] = std::move(factory);
}

Result<std::unique_ptr<Stage>> StageRegistry::Create(const StageConfig& config) const {
  auto it = factories_.find(config.kind);
  if (it == factories_.end()) {
    std::string kinds;
    for (const auto& k : Kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
    return BadInput("unknown stage kind '" + config.kind + "'", "stage.kind", "registered kinds: " + kinds);
  }
  return it->second(config);
}

std::vector<std::string> StageRegistry::Kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : factories_) out.push_back(k);
  return out;
}

std::uint64_t InputLength(const Stage& stage, std::string_view input, bool& features) {
  PreparedInput p;
  if (stage.Prepare(input, p)) {
    features = true;
    return p.ids.size();
  }
  features = false;
  return input.size();
}

Status CheckStageDeclaresOutput(const StageDescription& stage) {
  if (stage.output) return {};
  return BadInput("stage kind '" + stage.kind + "' declares no output kind", "stage.kind",
                  "a stage sets StageDescription::output to a registered output kind");
}

OutputRules RulesFor(const StageDescription& stage, const std::vector<std::string>& allowed_categories) {
  OutputRules r{stage.labels, stage.dim, stage.min_confidence, allowed_categories};
  r.vocab = stage.vocab;
  return r;
}

}  // namespace pilot

namespace pilot {

Status LoadStageTokenizer(FileSystem& fsys, const TokenizerParams& params, StageConfig& config) {
  const std::string where = params.file.string();
  auto bytes = ReadCapped(fsys, params.file, kMaxTokenizerBytes, "tokenizer file");
  if (!bytes.ok()) return bytes.error();
  const std::string digest = Sha256Hex(bytes.value());
  if (digest != params.sha256) {
    return BadInput(
        "tokenizer sha256 is " + digest + " but stage.tokenizer.sha256 pins " + params.sha256, where,
        "restore the pinned tokenizer, or update stage.tokenizer.sha256 if the change is intended");
  }
  auto parsed = params.format == "sentencepiece"
                    ? ParseSentencePieceModel(bytes.value(), where, params.add_bos, params.add_eos,
                                              params.ids == "fairseq")
                    : ParseTokenizerJson(bytes.value(), where);
  if (!parsed.ok()) return parsed.error();
  std::shared_ptr<const Tokenizer> tokenizer = std::move(parsed).value();
  TokenizerSettings s;
  s.max_length = params.max_length;
  s.truncation = params.truncation == "truncate" ? Truncation::kTruncate : Truncation::kReject;
  s.add_special_tokens = params.add_special_tokens;
  s.pad_to_multiple_of = params.pad_to_multiple_of;
  std::string pad_token = "(id 0)";
  if (params.pad_token) {
    auto id = tokenizer->TokenId(*params.pad_token);
    if (!id) {
      return BadInput("stage.tokenizer.pad_token '" + ValueForMessage(*params.pad_token) +
                          "' is not a token of " + "the tokenizer",
                      where + " key stage.tokenizer.pad_token",
                      "name the tokenizer's padding token, or leave it out");
    }
    s.pad_id = *id;
    pad_token = *params.pad_token;
  } else {
    for (const char* candidate : {"[PAD]", "<pad>"}) {
      if (auto id = tokenizer->TokenId(candidate)) {
        s.pad_id = *id;
        pad_token = candidate;
        break;
      }
    }
  }
  const std::size_t specials = s.add_special_tokens ? tokenizer->SpecialTokenCount() : 0;
  if (specials >= s.max_length) {
    return BadInput("stage.tokenizer.max_length " + std::to_string(s.max_length) +
                        " leaves no room beside the " + std::to_string(specials) +
                        " special tokens the tokenizer adds",
                    where + " key stage.tokenizer.max_length", "raise max_length");
  }
  nlohmann::ordered_json r;
  r["file"] = params.file.filename().string();
  r["sha256"] = params.sha256;
  r["format"] = params.format;
  if (params.format == "sentencepiece") r["ids"] = params.ids;
  r["max_length"] = s.max_length;
  r["truncation"] = params.truncation;
  r["padding"] = s.pad_to_multiple_of ? "longest, to a multiple of " + std::to_string(s.pad_to_multiple_of)
                                      : std::string("longest");
  r["add_special_tokens"] = s.add_special_tokens;
  r["special_tokens_added"] = specials;
  r["pad_token"] = pad_token;
  r["pad_id"] = s.pad_id;
  r["tokenizer"] = tokenizer->Describe();
  config.tokenizer = std::move(tokenizer);
  config.tokenizer_settings = s;
  config.tokenizer_record = std::move(r);
  return {};
}

}  // namespace pilot
