// The output-kind registry (pilot/output_kind.h): lookup by name, each kind's judging, its
// run-record fields and its report sections, and a run record naming an unknown kind.
#include "pilot/output_kind.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/run_record.h"

namespace pilot {
namespace {

OutputRules Classifier() { return OutputRules{{"en", "fr", "de"}, 0, 0.5, {"en", "fr"}}; }
OutputRules Embedder(std::size_t dim) { return OutputRules{{}, dim, 0, {}}; }

ItemOutput Label(std::string label, double confidence) {
  ItemOutput o;
  o.ok = true;
  o.label = std::move(label);
  o.confidence = confidence;
  return o;
}

ItemOutput Vector(std::vector<float> v) {
  ItemOutput o;
  o.ok = true;
  o.vector = std::move(v);
  return o;
}

TEST(OutputKind, EveryRegisteredKindIsFoundByItsOwnNameAndNoOther) {
  std::set<std::string> names;
  for (const OutputKindSpec* kind : OutputKinds()) {
    ASSERT_NE(kind, nullptr);
    EXPECT_TRUE(names.insert(kind->name).second) << "two kinds named " << kind->name;
    EXPECT_EQ(FindOutputKind(kind->name), kind);
    EXPECT_NE(OutputKindChoices().find(std::string("'") + kind->name + "'"), std::string::npos);
    EXPECT_TRUE(kind->judge && kind->plan_fields && kind->report_json && kind->report_md) << kind->name;
  }
  EXPECT_GE(names.size(), 2u);
  EXPECT_EQ(FindOutputKind(""), nullptr);
  EXPECT_EQ(FindOutputKind("Classification"), nullptr);
  EXPECT_EQ(FindOutputKind(std::string("embedding\0x", 11)), nullptr);
  EXPECT_EQ(&ClassificationOutput(), FindOutputKind("classification"));
  EXPECT_EQ(&EmbeddingOutput(), FindOutputKind("embedding"));
}

TEST(OutputKind, ClassificationJudgesTheLabelItsProbabilityAndTheAllowedCategories) {
  const OutputKindSpec& kind = ClassificationOutput();
  EXPECT_TRUE(kind.labels);
  EXPECT_FALSE(kind.vectors);
  ResultRecord r;
  EXPECT_FALSE(kind.judge(Label("fr", 0.8), Classifier(), r));
  EXPECT_EQ(r.category, "fr");
  EXPECT_DOUBLE_EQ(r.confidence, 0.8);
  EXPECT_FALSE(r.dim);

  struct Case {
    ItemOutput out;
    std::string reason;
    std::string detail;
  };
  ItemOutput bad_score = Label("en", 0.9);
  bad_score.scores = {0.9f, -0.1f};
  const std::vector<Case> cases = {
      {Label("en", std::nan("")), "invalid_output", "not finite"},
      {Label("en", 1.5), "invalid_output", "not a probability"},
      {Label("xx", 0.9), "invalid_output", "not one of its declared labels"},
      {bad_score, "invalid_output", "a score of the model"},
      {Label("de", 0.9), "category_not_allowed", "model says 'de' (0.900)"},
      {Label("en", 0.4), "low_confidence", "below min_confidence 0.500"},
  };
  for (const auto& c : cases) {
    ResultRecord untouched;
    auto rejected = kind.judge(c.out, Classifier(), untouched);
    ASSERT_TRUE(rejected) << c.reason;
    EXPECT_EQ(rejected->reason, c.reason);
    EXPECT_NE(rejected->detail.find(c.detail), std::string::npos) << rejected->detail;
    EXPECT_TRUE(untouched.category.empty()) << "a rejection sets no accepted field";
  }
}

TEST(OutputKind, EmbeddingJudgesTheLengthAndFiniteValues) {
  const OutputKindSpec& kind = EmbeddingOutput();
  EXPECT_FALSE(kind.labels);
  EXPECT_TRUE(kind.vectors);
  ResultRecord r;
  EXPECT_FALSE(kind.judge(Vector({1, 2, 3}), Embedder(3), r));
  ASSERT_TRUE(r.dim);
  EXPECT_EQ(*r.dim, 3u);
  ResultRecord untouched;
  auto short_vector = kind.judge(Vector({1, 2}), Embedder(3), untouched);
  ASSERT_TRUE(short_vector);
  EXPECT_EQ(short_vector->reason, "invalid_output");
  EXPECT_NE(short_vector->detail.find("returned 2 values, its dim is 3"), std::string::npos);
  auto nan = kind.judge(Vector({1, std::nanf(""), 3}), Embedder(3), untouched);
  ASSERT_TRUE(nan);
  EXPECT_NE(nan->detail.find("value 1 is not finite"), std::string::npos);
  EXPECT_FALSE(untouched.dim);
}

TEST(OutputKind, EachKindWritesItsOwnPlanFieldsAndReportSections) {
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();
  ClassificationOutput().plan_fields(Classifier(), plan);
  EXPECT_EQ(plan["labels"], nlohmann::ordered_json({"en", "fr", "de"}));
  EXPECT_EQ(plan["allowed_categories"], nlohmann::ordered_json({"en", "fr"}));
  EXPECT_FALSE(plan.contains("dim"));
  plan = nlohmann::ordered_json::object();
  EmbeddingOutput().plan_fields(Embedder(8), plan);
  EXPECT_EQ(plan["dim"], 8);
  EXPECT_EQ(plan["vectors"], "data/vectors.npy");
  EXPECT_FALSE(plan.contains("labels"));

  Manifest m;
  m.items = {{"a", "a", "", std::nullopt, std::nullopt}};
  ResultRecord accepted;
  accepted.id = "a";
  accepted.accepted = true;
  accepted.dim = 8;
  Report embedded =
      BuildReport(EmbeddingOutput(), m, {accepted}, Acceptance{}, RunMetrics{1, 1, std::nullopt, 0, {}});
  embedded.dim = 8;
  auto j = ReportToJson(embedded);
  EXPECT_EQ(j["output_kind"], "embedding");
  EXPECT_EQ(j["embedding"]["rows"], 1);
  EXPECT_EQ(j["embedding"]["dim"], 8);
  std::ostringstream md;
  EmbeddingOutput().report_md(embedded, md);
  EXPECT_NE(md.str().find("1 vectors of dim 8"), std::string::npos);

  accepted.dim.reset();
  accepted.category = "en";
  Report classified =
      BuildReport(ClassificationOutput(), m, {accepted}, Acceptance{}, RunMetrics{1, 1, std::nullopt, 0, {}});
  auto c = ReportToJson(classified);
  EXPECT_EQ(c["output_kind"], "classification");
  EXPECT_FALSE(c.contains("embedding"));
  EXPECT_EQ(c["by_category"]["en"], 1);
}

TEST(OutputKind, ARunRecordNamingAnUnknownKindIsRefusedWithTheChoices) {
  const std::string sha(64, 'a');
  const std::string head =
      R"({"run_id":"r","state":"finished","manifest_copy":"data/manifest.json","manifest_sha256":")" + sha +
      R"(","params_sha256":")" + sha + R"(","model_sha256":")" + sha + R"(","plan":{"inputs_root":"/x")";
  auto none = ParseRunRecord(head + "}}", "run.json");
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_EQ(none.value().output, OutputKinds().front()) << "a record that names no kind is of the first one";
  for (const char* bad : {R"("generation")", R"("")", "7", "null", R"("EMBEDDING")"}) {
    auto r = ParseRunRecord(head + R"(,"output":)" + bad + "}}", "run.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().what.find("'plan.output' is not an output kind"), std::string::npos)
        << r.error().what;
    EXPECT_NE(r.error().what.find(OutputKindChoices()), std::string::npos);
    EXPECT_EQ(r.error().where, "run.json");
  }
  auto vectors = ParseRunRecord(head + R"(,"output":"embedding","dim":16}})", "run.json");
  ASSERT_TRUE(vectors.ok()) << vectors.error().ToString();
  EXPECT_EQ(vectors.value().output, &EmbeddingOutput());
  EXPECT_EQ(vectors.value().dim, 16u);
  EXPECT_FALSE(ParseRunRecord(head + R"(,"output":"embedding"}})", "run.json").ok())
      << "a kind with vectors needs dim";
}

}  // namespace
}  // namespace pilot
