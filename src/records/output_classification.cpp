// The classification output kind: a label the model declared, with its probability.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pilot/escape.h"
#include "pilot/output_kind.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"

namespace pilot {

namespace {

std::string Score(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// What the harness demands of a classifier's output, whatever the stage: a label the model
// declared and a probability in [0, 1]. Anything else is the model's fault, not the item's
// data, and gets its own reason so that it is never mistaken for a verdict.
std::optional<std::string> Invalid(const ItemOutput& out, const OutputRules& rules) {
  if (!std::isfinite(out.confidence) || out.confidence < 0 || out.confidence > 1) {
    return "the model's score is " +
           (std::isfinite(out.confidence) ? Score(out.confidence) : std::string("not finite")) +
           ", not a probability in [0, 1]";
  }
  if (std::find(rules.labels.begin(), rules.labels.end(), out.label) == rules.labels.end()) {
    return "the model's label is not one of its declared labels";
  }
  for (float p : out.scores) {
    if (!std::isfinite(p) || p < 0 || p > 1.0f + 1e-5f)
      return "a score of the model is not a probability in [0, 1]";
  }
  return std::nullopt;
}

std::optional<OutputRejection> Judge(const ItemOutput& out, const OutputRules& rules,
                                     ResultRecord& accepted) {
  if (auto invalid = Invalid(out, rules))
    return OutputRejection{std::string(reason::kInvalidOutput), *invalid};
  if (std::find(rules.allowed.begin(), rules.allowed.end(), out.label) == rules.allowed.end()) {
    return OutputRejection{
        std::string(reason::kCategoryNotAllowed),
        "model says '" + out.label + "' (" + Score(out.confidence) + "), not in allowed_categories"};
  }
  if (out.confidence < rules.min_confidence) {
    return OutputRejection{std::string(reason::kLowConfidence),
                           "top label '" + out.label + "' at " + Score(out.confidence) +
                               " is below min_confidence " + Score(rules.min_confidence)};
  }
  accepted.category = out.label;
  accepted.confidence = out.confidence;
  return std::nullopt;
}

void PlanFields(const OutputRules& rules, nlohmann::ordered_json& plan) {
  plan["labels"] = rules.labels;
  plan["allowed_categories"] = rules.allowed;
}

void ReportJson(const Report&, nlohmann::ordered_json&) {}
void ReportMarkdown(const Report&, std::ostream&) {}

std::optional<std::string> CheckAccepted(const ResultRecord& r, const AcceptedRules& rules) {
  if (rules.allowed && !rules.allowed->count(r.category))
    return "accepted with category '" + r.category + "', not in allowed_categories";
  return std::nullopt;
}

// Two runs' categories: the same label, then its probability within the tolerance.
class Comparison : public OutputComparison {
 public:
  explicit Comparison(double tolerance) : tolerance_(tolerance) {}

  std::string Shown(const ResultRecord& r) const override { return r.category; }

  Result<std::optional<OutputDifference>> Compare(const ResultRecord& a, const ResultRecord& b,
                                                  bool& same_outcome) override {
    if (a.category != b.category) {
      return std::optional<OutputDifference>(
          OutputDifference{"category", a.category + " (" + FixedDecimals(a.confidence, 4) + ")",
                           b.category + " (" + FixedDecimals(b.confidence, 4) + ")"});
    }
    same_outcome = true;
    const double d = std::fabs(a.confidence - b.confidence);
    max_ = std::max(max_, d);
    sum_ += d;
    if (d <= tolerance_) return std::optional<OutputDifference>();
    return std::optional<OutputDifference>(
        OutputDifference{"confidence", FixedDecimals(a.confidence, 6), FixedDecimals(b.confidence, 6)});
  }

  void Figures(std::size_t, std::size_t same_outcome, nlohmann::ordered_json& items) const override {
    items["max_confidence_difference"] = max_;
    items["mean_confidence_difference"] =
        same_outcome > 0 ? nlohmann::ordered_json(sum_ / static_cast<double>(same_outcome))
                         : nlohmann::ordered_json();
  }

 private:
  double tolerance_;
  double max_ = 0, sum_ = 0;
};

std::unique_ptr<OutputComparison> Compare(const ComparisonInputs& inputs) {
  return std::make_unique<Comparison>(inputs.tolerance);
}

const OutputKindSpec kClassification{
    "classification", /*labels=*/true, /*vectors=*/false, /*generates=*/false, Judge,
    PlanFields,       ReportJson,      ReportMarkdown,    CheckAccepted,       Compare};

}  // namespace

const OutputKindSpec& ClassificationOutput() { return kClassification; }

}  // namespace pilot
