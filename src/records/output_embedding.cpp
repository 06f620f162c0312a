// The embedding output kind: a float vector of the model's `dim`, kept in data/vectors.npy.
#include <cmath>

#include "pilot/folder_files.h"
#include "pilot/output_kind.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"

namespace pilot {

namespace {

// An embedding must have the model's declared length and only finite values.
std::optional<OutputRejection> Judge(const ItemOutput& out, const OutputRules& rules,
                                     ResultRecord& accepted) {
  if (out.vector.size() != rules.dim) {
    return OutputRejection{std::string(reason::kInvalidOutput),
                           "the model returned " + std::to_string(out.vector.size()) +
                               " values, its dim is " + std::to_string(rules.dim)};
  }
  for (std::size_t k = 0; k < out.vector.size(); ++k) {
    if (!std::isfinite(out.vector[k])) {
      return OutputRejection{std::string(reason::kInvalidOutput),
                             "the vector's value " + std::to_string(k) + " is not finite"};
    }
  }
  accepted.dim = static_cast<std::uint32_t>(rules.dim);
  return std::nullopt;
}

void PlanFields(const OutputRules& rules, nlohmann::ordered_json& plan) {
  plan["dim"] = rules.dim;
  plan["vectors"] = kVectorsNpy;
}

void ReportJson(const Report& r, nlohmann::ordered_json& report) {
  report["embedding"] = {{"dim", r.dim}, {"rows", r.accepted}, {"file", kVectorsNpy}};
}

void ReportMarkdown(const Report& r, std::ostream& md) {
  md << "## Embeddings\n\n"
     << r.accepted << " vectors of dim " << r.dim
     << " in `data/vectors.npy` (float32; row k is the k-th accepted item in manifest order).\n\n";
}

const OutputKindSpec kEmbedding{"embedding", /*labels=*/false, /*vectors=*/true, Judge,
                                PlanFields,  ReportJson,       ReportMarkdown};

}  // namespace

const OutputKindSpec& EmbeddingOutput() { return kEmbedding; }

}  // namespace pilot
