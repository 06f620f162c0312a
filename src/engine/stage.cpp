#include "pilot/stage.h"

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
  return OutputRules{stage.labels, stage.dim, stage.min_confidence, allowed_categories};
}

}  // namespace pilot
