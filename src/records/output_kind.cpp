// The list of output kinds (pilot/output_kind.h): a new kind is one line here.
#include "pilot/output_kind.h"

namespace pilot {

const std::vector<const OutputKindSpec*>& OutputKinds() {
  static const std::vector<const OutputKindSpec*> kinds{&ClassificationOutput(), &EmbeddingOutput(),
                                                        &GenerationOutput()};
  return kinds;
}

const OutputKindSpec* FindOutputKind(std::string_view name) {
  for (const OutputKindSpec* kind : OutputKinds()) {
    if (name == kind->name) return kind;
  }
  return nullptr;
}

std::string OutputKindChoices() {
  std::string s;
  const auto& kinds = OutputKinds();
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    s += std::string(k == 0 ? "" : k + 1 == kinds.size() ? " or " : ", ") + "'" + kinds[k]->name + "'";
  }
  return s;
}

}  // namespace pilot
