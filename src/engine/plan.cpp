#include "pilot/plan.h"

#include <algorithm>

#include "pilot/json_util.h"

namespace pilot {

Status CheckStageFitsParams(const StageDescription& stage, const Params& params) {
  if (stage.output != OutputKind::kClassification) {
    if (!params.allowed_categories.empty()) {
      return BadInput("'allowed_categories' applies only to a stage that classifies; stage kind '" + stage.kind +
                          "' produces " + OutputKindName(stage.output) + "s",
                      "allowed_categories", "remove allowed_categories from the parameters");
    }
    return {};
  }
  if (params.allowed_categories.empty()) {
    return BadInput("'allowed_categories' is required: stage kind '" + stage.kind + "' classifies", "allowed_categories",
                    "list the categories to accept, from the model's labels");
  }
  for (const auto& c : params.allowed_categories) {
    if (std::find(stage.labels.begin(), stage.labels.end(), c) == stage.labels.end()) {
      std::string all;
      for (const auto& l : stage.labels) all += (all.empty() ? "" : " ") + l;
      return BadInput("allowed category '" + KeyForMessage(c) + "' is not a label of the model", "allowed_categories",
                      "the model's labels are: " + all);
    }
  }
  return {};
}

}  // namespace pilot
