// The output-kind registry (pilot/output_kind.h): lookup by name, each kind's judging, its
// run-record fields and its report sections, verify's check of an accepted record, compare's
// comparison of two, and a run record naming an unknown kind.
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
    EXPECT_TRUE(kind->judge && kind->plan_fields && kind->report_json && kind->report_md &&
                kind->check_accepted && kind->compare)
        << kind->name;
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

ResultRecord AcceptedCategory(std::string category, double confidence) {
  ResultRecord r;
  r.id = "a";
  r.accepted = true;
  r.category = std::move(category);
  r.confidence = confidence;
  return r;
}

ResultRecord AcceptedRow(std::uint64_t row, std::uint32_t dim) {
  ResultRecord r;
  r.id = "a";
  r.accepted = true;
  r.row = row;
  r.dim = dim;
  return r;
}

TEST(OutputKind, VerifyChecksAnAcceptedRecordAgainstItsKindsRules) {
  const std::set<std::string> allowed = {"en", "fr"};
  const OutputKindSpec& c = ClassificationOutput();
  EXPECT_FALSE(c.check_accepted(AcceptedCategory("fr", 0.9), AcceptedRules{0, &allowed, 0}));
  auto outside = c.check_accepted(AcceptedCategory("de", 0.9), AcceptedRules{0, &allowed, 0});
  ASSERT_TRUE(outside);
  EXPECT_NE(outside->find("'de', not in allowed_categories"), std::string::npos) << *outside;

  const OutputKindSpec& e = EmbeddingOutput();
  EXPECT_FALSE(e.check_accepted(AcceptedRow(3, 8), AcceptedRules{8, &allowed, 3}));
  auto order = e.check_accepted(AcceptedRow(2, 8), AcceptedRules{8, &allowed, 3});
  ASSERT_TRUE(order);
  EXPECT_NE(order->find("has row 2; as accepted item 3"), std::string::npos) << *order;
  auto dim = e.check_accepted(AcceptedRow(3, 4), AcceptedRules{8, &allowed, 3});
  ASSERT_TRUE(dim);
  EXPECT_NE(dim->find("row and dim 8"), std::string::npos) << *dim;
  ResultRecord rowless = AcceptedRow(3, 8);
  rowless.row.reset();
  EXPECT_TRUE(e.check_accepted(rowless, AcceptedRules{8, &allowed, 3}));
}

TEST(OutputKind, ClassificationComparesTheCategoryThenItsProbabilityWithinTheTolerance) {
  ComparisonInputs in;
  in.tolerance = 0.01;
  auto cmp = ClassificationOutput().compare(in);
  EXPECT_EQ(cmp->Shown(AcceptedCategory("en", 0.9)), "en");
  bool same = false;
  auto close = cmp->Compare(AcceptedCategory("en", 0.90), AcceptedCategory("en", 0.905), same);
  ASSERT_TRUE(close.ok());
  EXPECT_FALSE(close.value());
  EXPECT_TRUE(same);
  same = false;
  auto far = cmp->Compare(AcceptedCategory("en", 0.90), AcceptedCategory("en", 0.95), same);
  ASSERT_TRUE(far.ok() && far.value());
  EXPECT_TRUE(same);
  EXPECT_EQ(far.value()->what, "confidence");
  EXPECT_EQ(far.value()->a, "0.900000");
  EXPECT_EQ(far.value()->b, "0.950000");
  same = false;
  auto other = cmp->Compare(AcceptedCategory("en", 0.90), AcceptedCategory("fr", 0.7), same);
  ASSERT_TRUE(other.ok() && other.value());
  EXPECT_FALSE(same);
  EXPECT_EQ(other.value()->what, "category");
  EXPECT_EQ(other.value()->b, "fr (0.7000)");
  nlohmann::ordered_json items;
  cmp->Figures(3, 2, items);
  EXPECT_NEAR(items["max_confidence_difference"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(items["mean_confidence_difference"].get<double>(), 0.055 / 2, 1e-12);
  nlohmann::ordered_json none;
  ClassificationOutput().compare(in)->Figures(0, 0, none);
  EXPECT_TRUE(none["mean_confidence_difference"].is_null());
}

TEST(OutputKind, EmbeddingComparesEachSidesRowThroughTheReaderItIsGiven) {
  std::vector<std::vector<float>> a = {{1, 0}, {0, 1}}, b = {{1, 0}, {1, 1, 0}};
  ComparisonInputs in;
  in.tolerance = 1e-4;
  in.where = "B";
  std::vector<std::pair<bool, std::uint64_t>> asked;
  in.row = [&](bool side_b, std::uint64_t row, const std::string& id) -> Result<std::vector<float>> {
    asked.emplace_back(side_b, row);
    const auto& rows = side_b ? b : a;
    if (row >= rows.size()) return BadInput("the row of '" + id + "' is outside vectors.npy", "npy");
    return rows[row];
  };
  auto cmp = EmbeddingOutput().compare(in);
  EXPECT_EQ(cmp->Shown(AcceptedRow(0, 2)), "(vector)");
  bool same = false;
  auto equal = cmp->Compare(AcceptedRow(0, 2), AcceptedRow(0, 2), same);
  ASSERT_TRUE(equal.ok());
  EXPECT_FALSE(equal.value());
  EXPECT_TRUE(same);
  EXPECT_EQ(asked, (std::vector<std::pair<bool, std::uint64_t>>{{false, 0}, {true, 0}}));
  same = false;
  auto dim = cmp->Compare(AcceptedRow(1, 2), AcceptedRow(1, 3), same);
  ASSERT_TRUE(dim.ok() && dim.value());
  EXPECT_FALSE(same);
  EXPECT_EQ(dim.value()->what, "dim");
  EXPECT_EQ(dim.value()->a + "/" + dim.value()->b, "2/3");
  auto turned = cmp->Compare(AcceptedRow(1, 2), AcceptedRow(0, 2), same);  // (0,1) against (1,0)
  ASSERT_TRUE(turned.ok() && turned.value());
  EXPECT_EQ(turned.value()->what, "vector");
  EXPECT_EQ(turned.value()->b, "cosine 0.000000");
  auto outside = cmp->Compare(AcceptedRow(5, 2), AcceptedRow(0, 2), same);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().what.find("outside vectors.npy"), std::string::npos);
  ResultRecord rowless = AcceptedRow(0, 2);
  rowless.row.reset();
  auto missing = cmp->Compare(rowless, AcceptedRow(0, 2), same);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().where, "B");
  nlohmann::ordered_json items;
  cmp->Figures(2, 2, items);
  EXPECT_DOUBLE_EQ(items["max_vector_difference"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(items["min_cosine"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(items["mean_cosine"].get<double>(), 0.5);
}

TEST(OutputKind, ARunRecordNamingAnUnknownKindIsRefusedWithTheChoices) {
  const std::string sha(64, 'a');
  const std::string head =
      R"({"run_id":"r","state":"finished","manifest_copy":"data/manifest.json","manifest_sha256":")" + sha +
      R"(","params_sha256":")" + sha + R"(","model_sha256":")" + sha + R"(","plan":{"inputs_root":"/x")";
  auto none = ParseRunRecord(head + "}}", "run.json");
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_EQ(none.value().output, OutputKinds().front()) << "a record that names no kind is of the first one";
  for (const char* bad : {R"("regression")", R"("")", "7", "null", R"("EMBEDDING")"}) {
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
