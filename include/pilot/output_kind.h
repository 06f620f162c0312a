// Output kinds: what a stage produces for each accepted item, as registered values. Each
// kind carries how an outcome is judged, what an accepted record and the run record hold,
// and its sections of the report; the engine, the report, merge, compare and verify call
// through it and never compare kind names (MLPerf LoadGen's rule: the harness never knows
// the model). Adding a kind is one file beside output_classification.cpp and one line in
// output_kind.cpp's list (ARCHITECTURE.md, "Adding an output kind").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/results.h"
#include "pilot/status.h"

namespace pilot {

struct Report;

// One input's outcome from a stage. What a valid one carries is the kind's business.
struct ItemOutput {
  bool ok = false;
  std::string error;   // !ok: what failed for this item alone
  std::string reason;  // !ok: the reason code the stage gives (pilot/reasons.h); empty: stage_error
  // A tokenized input: its length in tokens (before any truncation), and whether it was cut.
  std::optional<std::uint64_t> tokens;
  bool truncated = false;
  // a kind with labels
  std::string label;          // the model's top label
  double confidence = 0;      // its probability
  std::vector<float> scores;  // the probability of every label (for device comparisons)
  // a kind with vectors
  std::vector<float> vector;
  // a kind that generates (`tokens` is then the prompt's length)
  std::optional<Completion> completion;
};

// What judging an item needs from the stage and the parameters, fixed for a run.
struct OutputRules {
  std::vector<std::string> labels;  // declared by the model (a kind with labels)
  std::size_t dim = 0;              // the vectors' length (a kind with vectors)
  double min_confidence = 0;
  std::vector<std::string> allowed;  // allowed_categories (a kind with labels: required)
  bool vectors_float16 = false;      // vectors_dtype float16: a value beyond its range is refused
  std::uint64_t max_new_tokens = 0;  // a kind that generates: the parameters' generation.max_new_tokens
  std::uint64_t vocab = 0;           // a kind that generates: the model's vocabulary (ids below it)
};

// A valid output the harness will not accept: the reason (pilot/reasons.h) and its detail.
struct OutputRejection {
  std::string reason;
  std::string detail;
};

// Verify: what an accepted record must agree with, from the run that wrote it.
struct AcceptedRules {
  std::uint32_t dim = 0;                           // run.json's plan.dim (a kind with vectors)
  const std::set<std::string>* allowed = nullptr;  // the parameters' allowed_categories
  std::uint64_t accepted_before = 0;               // items accepted ahead of it, in manifest order
  // A kind that generates: run.json's plan.max_new_tokens and plan.vocab, and the ids that end
  // a completion (plan.model_contract.eos_token_ids, .generation.stop_token_ids).
  std::uint64_t max_new_tokens = 0, vocab = 0;
  const std::vector<std::int64_t>* eos_token_ids = nullptr;
  const std::vector<std::int64_t>* stop_token_ids = nullptr;
};

// Compare: how two runs' accepted outputs of one id differ ("category", "confidence",
// "vector", ...), each side's value as text.
struct OutputDifference {
  std::string what, a, b;
};

// Compare: the accepted outputs of two runs, id by id, and the kind's figures over them.
class OutputComparison {
 public:
  virtual ~OutputComparison() = default;
  // What an accepted record shows where the two runs' statuses differ ("accepted " + this).
  virtual std::string Shown(const ResultRecord& r) const = 0;
  // Both runs accepted the id: nullopt when their outputs agree within the tolerance, else the
  // difference. `same_outcome` is set when the outcome itself is the same (the category, the
  // vector's length), a difference within it aside.
  virtual Result<std::optional<OutputDifference>> Compare(const ResultRecord& a, const ResultRecord& b,
                                                          bool& same_outcome) = 0;
  // The kind's figures, added to compare.json's `items`: `both_accepted` ids were accepted by
  // both runs, `same_outcome` ids (accepted or rejected) had the same outcome in both.
  virtual void Figures(std::size_t both_accepted, std::size_t same_outcome,
                       nlohmann::ordered_json& items) const = 0;
};

// What a comparison reads beyond the records.
struct ComparisonInputs {
  double tolerance = 0;
  std::string where;  // the second folder, named in an error
  // A kind with vectors: side A's (b == false) or side B's row of data/vectors.npy.
  std::function<Result<std::vector<float>>(bool b, std::uint64_t row, const std::string& id)> row;
};

struct OutputKindSpec {
  // run.json's plan.output, report.json's output_kind, the sweep's stage.output.
  const char* name;
  // What an accepted item carries, which the workflows read (merge joins them, compare
  // measures their agreement, verify recounts them):
  bool labels;     // a category the model declared, with its probability: allowed_categories,
                   // min_confidence and the labelled items' accuracy apply
  bool vectors;    // a float32 row of the model's `dim` in data/vectors.npy
  bool generates;  // a completion decoded under the parameters' `generation` (required for it,
                   // refused for any other kind)
  // Judges a valid output (ok): nullopt, with the accepted fields set on `accepted`, or why
  // the harness rejects it.
  std::optional<OutputRejection> (*judge)(const ItemOutput& out, const OutputRules& rules,
                                          ResultRecord& accepted);
  // The kind's fields of run.json's `plan`.
  void (*plan_fields)(const OutputRules& rules, nlohmann::ordered_json& plan);
  // The kind's section of report.json (added to `report`) and of report.md.
  void (*report_json)(const Report& r, nlohmann::ordered_json& report);
  void (*report_md)(const Report& r, std::ostream& md);
  // Verify: what is wrong with an accepted record of results.jsonl (a category outside those
  // allowed, a row out of order), or nullopt.
  std::optional<std::string> (*check_accepted)(const ResultRecord& r, const AcceptedRules& rules);
  // Compare: a comparison of two runs' accepted outputs.
  std::unique_ptr<OutputComparison> (*compare)(const ComparisonInputs& inputs);
};

// The registered kinds, in registration order. The first is the kind of every run record that
// names none (format 1, from before output kinds were recorded).
const std::vector<const OutputKindSpec*>& OutputKinds();
// The kind of that name, or null.
const OutputKindSpec* FindOutputKind(std::string_view name);
// "'classification' or 'embedding'": for the message that refuses an unknown name.
std::string OutputKindChoices();

// The registered kinds, for the stages that produce them (a stage knows its output).
const OutputKindSpec& ClassificationOutput();
const OutputKindSpec& EmbeddingOutput();
const OutputKindSpec& GenerationOutput();

}  // namespace pilot
