// The embedding output kind: a float vector of the model's `dim`, kept in data/vectors.npy.
#include <algorithm>
#include <cmath>

#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/output_kind.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/vectors.h"

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
    if (rules.vectors_float16 && !FitsHalf(out.vector[k])) {
      return OutputRejection{std::string(reason::kInvalidOutput),
                             "the vector's value " + std::to_string(k) + " (" +
                                 std::to_string(out.vector[k]) +
                                 ") is beyond float16's range (65504), the parameters' vectors_dtype"};
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
     << r.accepted << " vectors of dim " << r.dim << " in `data/vectors.npy` ("
     << (r.format_version >= 4 ? "in the parameters' vectors_dtype, as its header says" : "float32")
     << "; row k is the k-th accepted item in manifest order).\n\n";
}

// Row k of data/vectors.npy is the k-th accepted item in manifest order.
std::optional<std::string> CheckAccepted(const ResultRecord& r, const AcceptedRules& rules) {
  if (!r.dim || *r.dim != rules.dim || !r.row)
    return "accepted without the embedding's row and dim " + std::to_string(rules.dim);
  if (*r.row != rules.accepted_before) {
    return "has row " + std::to_string(*r.row) + "; as accepted item " +
           std::to_string(rules.accepted_before) + " in manifest order it must have row " +
           std::to_string(rules.accepted_before);
  }
  return std::nullopt;
}

// Two runs' vectors: the same length, then the largest difference of a value within the
// tolerance; the cosines are figures.
class Comparison : public OutputComparison {
 public:
  explicit Comparison(const ComparisonInputs& inputs) : in_(inputs) {}

  std::string Shown(const ResultRecord&) const override { return "(vector)"; }

  Result<std::optional<OutputDifference>> Compare(const ResultRecord& a, const ResultRecord& b,
                                                  bool& same_outcome) override {
    if (!a.row || !b.row) return BadInput("an accepted embedding without its row: '" + a.id + "'", in_.where);
    auto v = in_.row(false, *a.row, a.id);
    if (!v.ok()) return v.error();
    auto w = in_.row(true, *b.row, b.id);
    if (!w.ok()) return w.error();
    if (v.value().size() != w.value().size()) {
      return std::optional<OutputDifference>(
          OutputDifference{"dim", std::to_string(v.value().size()), std::to_string(w.value().size())});
    }
    same_outcome = true;
    double d = 0, dot = 0, na2 = 0, nb2 = 0;
    for (std::size_t k = 0; k < v.value().size(); ++k) {
      const double p = v.value()[k], q = w.value()[k];
      d = std::max(d, std::fabs(p - q));
      dot += p * q;
      na2 += p * p;
      nb2 += q * q;
    }
    const double cos = na2 > 0 && nb2 > 0 ? dot / std::sqrt(na2 * nb2) : (na2 == nb2 ? 1.0 : 0.0);
    max_ = std::max(max_, d);
    min_cos_ = std::min(min_cos_, cos);
    sum_cos_ += cos;
    if (d <= in_.tolerance) return std::optional<OutputDifference>();
    return std::optional<OutputDifference>(
        OutputDifference{"vector", "max |a - b| " + FixedDecimals(d, 6), "cosine " + FixedDecimals(cos, 6)});
  }

  void Figures(std::size_t both_accepted, std::size_t, nlohmann::ordered_json& items) const override {
    items["max_vector_difference"] = max_;
    items["min_cosine"] = both_accepted ? nlohmann::ordered_json(min_cos_) : nlohmann::ordered_json();
    items["mean_cosine"] = both_accepted
                               ? nlohmann::ordered_json(sum_cos_ / static_cast<double>(both_accepted))
                               : nlohmann::ordered_json();
  }

 private:
  ComparisonInputs in_;
  double max_ = 0, min_cos_ = 1, sum_cos_ = 0;
};

std::unique_ptr<OutputComparison> Compare(const ComparisonInputs& inputs) {
  return std::make_unique<Comparison>(inputs);
}

const OutputKindSpec kEmbedding{"embedding",   /*labels=*/false, /*vectors=*/true, /*generates=*/false,
                                Judge,         PlanFields,       ReportJson,       ReportMarkdown,
                                CheckAccepted, Compare};

}  // namespace

const OutputKindSpec& EmbeddingOutput() { return kEmbedding; }

}  // namespace pilot
