#include "pilot/report.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

ResultRecord Accepted(const std::string& id, const std::string& cat, double latency) {
  ResultRecord r;
  r.id = id;
  r.accepted = true;
  r.category = cat;
  r.confidence = 0.9;
  r.latency_ms = latency;
  return r;
}

TEST(Report, PercentilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 50);
  EXPECT_DOUBLE_EQ(Percentile(v, 95), 95);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 99);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(Report, CountsQualityExpectedRejectionsAndCriteria) {
  Manifest m;
  m.items = {{"a", "a", "", std::string("fr"), std::nullopt},
             {"b", "b", "", std::string("de"), std::nullopt},
             {"c", "c", "", std::nullopt, std::string("empty_input")},
             {"d", "d", "", std::nullopt, std::string("too_large")}};
  std::vector<ResultRecord> recs = {Accepted("a", "fr", 2), Accepted("b", "en", 4),
                                    ResultRecord::Rejected("c", "empty_input", "empty"),
                                    ResultRecord::Rejected("d", "missing_file", "gone")};
  Acceptance acc;
  acc.min_accuracy = 0.75;
  acc.max_p95_latency_ms = 10;
  Report r = BuildReport(ClassificationOutput(), m, recs, acc, RunMetrics{2.0, 100, std::nullopt, 0, {}});
  EXPECT_EQ(r.total, 4u);
  EXPECT_EQ(r.accepted, 2u);
  EXPECT_EQ(r.rejected, 2u);
  EXPECT_EQ(r.by_category["fr"], 1u);
  EXPECT_EQ(r.by_reason["missing_file"], 1u);
  EXPECT_EQ(r.labelled, 2u);
  EXPECT_EQ(r.correct, 1u);
  EXPECT_EQ(r.expected_rejections_met, 1u);
  ASSERT_EQ(r.expected_rejections_unmet.size(), 1u);
  EXPECT_EQ(r.expected_rejections_unmet[0], "d");
  EXPECT_DOUBLE_EQ(r.items_per_second, 2.0);
  ASSERT_EQ(r.criteria.size(), 2u);
  EXPECT_FALSE(r.criteria[0].met);  // accuracy 0.5 < 0.75
  EXPECT_TRUE(r.criteria[1].met);   // p95 4 ms <= 10
  EXPECT_FALSE(r.acceptance_met);
  auto j = ReportToJson(r);
  EXPECT_EQ(j["counts"]["accepted"], 2);
  EXPECT_EQ(j["verdict"], "acceptance_not_met");
  EXPECT_TRUE(j["device_peak_memory_mb"].is_null()) << "no GPU, no device figure";
}

TEST(Report, CriterionWithoutDataIsNotMet) {
  Manifest m;
  m.items = {{"a", "a", "", std::nullopt, std::nullopt}};
  Acceptance acc;
  acc.min_accuracy = 0.5;
  Report r =
      BuildReport(ClassificationOutput(), m, {Accepted("a", "fr", 1)}, acc, RunMetrics{1, 1, 250.0, 0, {}});
  ASSERT_EQ(r.criteria.size(), 1u);
  EXPECT_FALSE(r.criteria[0].measured);
  EXPECT_FALSE(r.acceptance_met);
  EXPECT_EQ(ReportToJson(r)["device_peak_memory_mb"], 250.0);
}

}  // namespace
}  // namespace pilot
