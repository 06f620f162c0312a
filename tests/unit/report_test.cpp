#include "pilot/report.h"

#include <gtest/gtest.h>

#include <functional>

#include "pilot/folder_files.h"
#include "pilot/json_util.h"
#include "test_support.h"

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

// Four items: two labelled (one judged right), two expected rejections (one met).
Manifest SampleManifest() {
  Manifest m;
  m.items = {{"a", "a", "", std::string("fr"), std::nullopt},
             {"b", "b", "", std::string("de"), std::nullopt},
             {"c", "c", "", std::nullopt, std::string("empty_input")},
             {"d", "d", "", std::nullopt, std::string("too_large")}};
  return m;
}
std::vector<ResultRecord> SampleRecords() {
  return {Accepted("a", "fr", 2), Accepted("b", "en", 4), ResultRecord::Rejected("c", "empty_input", "empty"),
          ResultRecord::Rejected("d", "missing_file", "gone")};
}

TEST(Report, CountsQualityExpectedRejectionsAndCriteria) {
  const Manifest m = SampleManifest();
  const std::vector<ResultRecord> recs = SampleRecords();
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

TEST(Report, TokenFiguresComeFromTheTokenizedRecordsOnly) {
  Manifest m;
  std::vector<ResultRecord> recs;
  for (int i = 0; i < 4; ++i) {
    m.items.push_back({"t" + std::to_string(i), "t", "", std::nullopt, std::nullopt});
    ResultRecord r = Accepted("t" + std::to_string(i), "fr", 1);
    r.tokens = 10u * (i + 1);  // 10, 20, 30, 40
    r.truncated = i == 3;
    recs.push_back(r);
  }
  m.items.push_back({"u", "u", "", std::nullopt, std::nullopt});
  recs.push_back(ResultRecord::Rejected("u", "empty_input", "the file is empty"));
  Report r =
      BuildReport(ClassificationOutput(), m, recs, Acceptance{}, RunMetrics{2.0, 1, std::nullopt, 0, {}});
  auto t = ReportToJson(r)["tokens"];
  EXPECT_EQ(t["items"], 4);
  EXPECT_EQ(t["p50"], 20.0);
  EXPECT_EQ(t["p95"], 40.0);
  EXPECT_EQ(t["max"], 40);
  EXPECT_EQ(t["total"], 100);
  EXPECT_EQ(t["truncated"], 1);
  EXPECT_EQ(t["throughput_tokens_per_s"], 50.0);
  EXPECT_NE(
      ReportToMarkdown(r, "run", recs).find("Tokens per item (4 items): p50 20, p95 40, max 40; 1 truncated"),
      std::string::npos);
  // Read back as the workflows read it; and no `tokens` at all without a tokenized record.
  auto back = RecordedReportFromJson(nlohmann::json::parse(PrettyJson(ReportToJson(r))), "report.json", "");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  ASSERT_TRUE(back.value().tokens);
  EXPECT_EQ(back.value().tokens->total, 100u);
  EXPECT_EQ(back.value().tokens->truncated, 1u);
  Report plain = BuildReport(ClassificationOutput(), m, {Accepted("t0", "fr", 1)}, Acceptance{},
                             RunMetrics{1, 1, std::nullopt, 0, {}});
  EXPECT_FALSE(ReportToJson(plain).contains("tokens"));
}

TEST(ResultRecord, TokensAndTruncatedRoundTripThroughBothReaders) {
  ResultRecord r = Accepted("doc-1", "fr", 1.5);
  r.model = "sha256:ab";
  r.tokens = 36;
  r.truncated = true;
  const std::string line = ToJsonLine(r);
  EXPECT_NE(line.find(R"("tokens":36,"truncated":true)"), std::string::npos) << line;
  for (const auto& back :
       {ParseResultRecord(line, "r"), Result<ResultRecord>(*ScanResultRecord(line, false))}) {
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value().tokens, 36u);
    EXPECT_TRUE(back.value().truncated);
  }
  // `truncated` without `tokens`, and a count past the cap, are refused.
  EXPECT_FALSE(
      ParseResultRecord(R"({"id":"a","status":"accepted","category":"x","truncated":true})", "r").ok());
  EXPECT_FALSE(ParseResultRecord(R"({"id":"a","status":"accepted","category":"x","tokens":-1})", "r").ok());
  EXPECT_FALSE(
      ParseResultRecord(R"({"id":"a","status":"accepted","category":"x","tokens":1099511627777})", "r").ok());
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

// Accuracy can hide a dead class: per label, the support, predictions, precision and recall;
// the labels never predicted; the confusion matrix; min_recall_per_label over them.
TEST(Report, PerLabelQualityShowsADeadClass) {
  Manifest m;
  m.items = {{"a", "a", "", std::string("fr"), std::nullopt}, {"b", "b", "", std::string("de"), std::nullopt},
             {"c", "c", "", std::string("de"), std::nullopt}, {"d", "d", "", std::string("en"), std::nullopt},
             {"e", "e", "", std::string("de"), std::nullopt}, {"f", "f", "", std::nullopt, std::nullopt}};
  const std::vector<ResultRecord> recs = {Accepted("a", "fr", 1),
                                          Accepted("b", "fr", 1),
                                          Accepted("c", "fr", 1),
                                          Accepted("d", "en", 1),
                                          ResultRecord::Rejected("e", "low_confidence", "0.2"),
                                          Accepted("f", "de", 1)};  // unlabelled: not counted
  Acceptance acc;
  acc.min_accuracy = 0.4;
  acc.min_recall_per_label = 0.5;
  Report r = BuildReport(ClassificationOutput(), m, recs, acc, RunMetrics{1, 1, std::nullopt, 0, {}});
  EXPECT_EQ(r.correct, 2u);
  ASSERT_EQ(r.per_label.size(), 3u);
  const LabelQuality& de = r.per_label[0];
  EXPECT_EQ(de.label, "de");
  EXPECT_EQ(de.support, 3u);
  EXPECT_EQ(de.predicted, 0u);
  EXPECT_FALSE(de.precision());
  EXPECT_EQ(de.recall(), 0.0);
  const LabelQuality& fr = r.per_label[2];
  EXPECT_EQ(fr.label, "fr");
  EXPECT_EQ(fr.support, 1u);
  EXPECT_EQ(fr.predicted, 3u);
  EXPECT_DOUBLE_EQ(*fr.precision(), 1.0 / 3);
  EXPECT_EQ(fr.recall(), 1.0);
  EXPECT_EQ(r.never_predicted, std::vector<std::string>{"de"});
  ASSERT_EQ(r.criteria.size(), 2u);
  EXPECT_TRUE(r.criteria[0].met);  // accuracy 2/5 = 0.4
  EXPECT_EQ(r.criteria[1].name, "min_recall_per_label");
  EXPECT_DOUBLE_EQ(r.criteria[1].value, 0.0);
  EXPECT_FALSE(r.criteria[1].met);
  EXPECT_FALSE(r.acceptance_met);

  const auto j = ReportToJson(r);
  EXPECT_EQ(j["quality"]["per_label"][0]["label"], "de");
  EXPECT_TRUE(j["quality"]["per_label"][0]["precision"].is_null());
  EXPECT_EQ(j["quality"]["per_label"][0]["recall"], 0.0);
  EXPECT_EQ(j["quality"]["never_predicted"].dump(), R"(["de"])");
  EXPECT_EQ(j["quality"]["confusion"][0]["expected"], "de");
  EXPECT_EQ(j["quality"]["confusion"][0]["predicted"]["fr"], 2u);
  EXPECT_EQ(j["quality"]["confusion"][0]["rejected"], 1u);
  const std::string md = ReportToMarkdown(r, "run", recs);
  EXPECT_NE(md.find("| de | 3 | 0 | 0 | - | 0.000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fr | 1 | 3 | 1 | 0.333 | 1.000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("**Never predicted:** de (0 of 3 labelled items)"), std::string::npos) << md;
  EXPECT_NE(md.find("| de | 0 | 2 | 1 |"), std::string::npos) << md;  // columns en, fr, rejected

  // Read back, the per-label figures and the dead class are the run's.
  auto read = RecordedReportFromJson(nlohmann::json::parse(PrettyJson(j)), "report.json", "");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  ASSERT_EQ(read.value().per_label.size(), 3u);
  EXPECT_EQ(read.value().per_label[2].predicted, 3u);
  EXPECT_EQ(read.value().never_predicted, std::vector<std::string>{"de"});

  // A folder of run format 2 is rebuilt as it was written: without them.
  ReportBuilder older(ClassificationOutput(), 0, 2);
  for (std::size_t i = 0; i < recs.size(); ++i) older.Add(m.items[i], recs[i]);
  const auto j2 = ReportToJson(older.Finish(Acceptance{}, RunMetrics{1, 1, std::nullopt, 0, {}}));
  EXPECT_FALSE(j2["quality"].contains("per_label"));
  EXPECT_FALSE(j2["quality"].contains("confusion"));
}

// However many labels a manifest expects, the report stays bounded: report.json lists
// kReportLabels and counts the rest, report.md and the never-predicted lines are capped.
TEST(Report, ManyLabelsAreListedUpToTheirCaps) {
  Manifest m;
  std::vector<ResultRecord> recs;
  const std::size_t n = kReportLabels + 5;
  for (std::size_t i = 0; i < n; ++i) {
    char label[16];
    std::snprintf(label, sizeof label, "l%06zu", i);
    m.items.push_back({"i" + std::to_string(i), "p", "", std::string(label), std::nullopt});
    recs.push_back(Accepted("i" + std::to_string(i), "fr", 1));
  }
  Report r =
      BuildReport(ClassificationOutput(), m, recs, Acceptance{}, RunMetrics{1, 1, std::nullopt, 0, {}});
  ASSERT_EQ(r.per_label.size(), n + 1);  // and "fr", predicted, never expected
  EXPECT_EQ(r.never_predicted.size(), n);
  EXPECT_EQ(SupportOf(r.per_label, "l000007"), 1u);
  EXPECT_EQ(SupportOf(r.per_label, "absent"), 0u);
  const auto j = ReportToJson(r);
  EXPECT_EQ(j["quality"]["per_label"].size(), kReportLabels);
  EXPECT_EQ(j["quality"]["confusion"].size(), kReportLabels);
  EXPECT_EQ(j["quality"]["never_predicted"].size(), kReportLabels);
  EXPECT_EQ(j["quality"]["labels_not_listed"], 6u);
  EXPECT_LT(PrettyJson(j).size(), 8u << 20);
  const std::string md = ReportToMarkdown(r, "run", {});
  EXPECT_NE(md.find("The first 100 of " + std::to_string(n + 1) + " labels"), std::string::npos);
  EXPECT_NE(md.find("**Never predicted:** " + std::to_string(n - kListedNeverPredicted) + " more labels"),
            std::string::npos);
  EXPECT_LT(md.size(), 64u << 10);
}

// The report of the first test, as the run writes it.
Report SampleReport() {
  Acceptance acc;
  acc.min_accuracy = 0.75;
  return BuildReport(ClassificationOutput(), SampleManifest(), SampleRecords(), acc,
                     RunMetrics{2.0, 100, 512.0, 0, {}});
}

nlohmann::json WrittenJson(const Report& r) { return nlohmann::json::parse(PrettyJson(ReportToJson(r))); }

TEST(RecordedReport, ReadsBackEveryFigureTheRunWrote) {
  const Report r = SampleReport();
  auto read = RecordedReportFromJson(WrittenJson(r), "R/data/report.json", "hint");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  const RecordedReport& got = read.value();
  EXPECT_EQ(got.output_kind, ClassificationOutput().name);
  EXPECT_EQ(got.total, 4u);
  EXPECT_EQ(got.accepted, 2u);
  EXPECT_EQ(got.rejected, 2u);
  EXPECT_EQ(got.by_reason, r.by_reason);
  EXPECT_EQ(got.by_category, r.by_category);
  EXPECT_EQ(got.labelled, 2u);
  EXPECT_EQ(got.correct, 1u);
  ASSERT_TRUE(got.accuracy);
  EXPECT_DOUBLE_EQ(*got.accuracy, 0.5);
  EXPECT_EQ(got.expected_rejections, 2u);
  EXPECT_EQ(got.expected_rejections_met, 1u);
  EXPECT_EQ(got.expected_rejections_unmet, std::vector<std::string>{"d"});
  EXPECT_EQ(got.latency_samples, r.latency_samples);
  EXPECT_DOUBLE_EQ(got.p95_ms, r.p95_ms);
  EXPECT_DOUBLE_EQ(got.items_per_second, r.items_per_second);
  EXPECT_DOUBLE_EQ(got.peak_rss_mb, 100);
  ASSERT_TRUE(got.device_peak_mb);
  EXPECT_DOUBLE_EQ(*got.device_peak_mb, 512);
  EXPECT_FALSE(got.shards);
  ASSERT_EQ(got.criteria.size(), 1u);
  EXPECT_EQ(got.criteria[0].name, r.criteria[0].name);
  EXPECT_DOUBLE_EQ(got.criteria[0].limit, 0.75);
  EXPECT_FALSE(got.criteria[0].met);
  EXPECT_FALSE(got.acceptance_met);
  EXPECT_EQ(got.verdict, "acceptance_not_met");

  // A merged folder's report carries its shards.
  Report merged = r;
  merged.shards = 3;
  merged.shard_rate_sum = 42.5;
  auto m = RecordedReportFromJson(WrittenJson(merged), "M/data/report.json", "hint");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m.value().shards, std::optional<std::size_t>(3));
  EXPECT_DOUBLE_EQ(m.value().shard_rate_sum, 42.5);
}

TEST(RecordedReport, AFormat1ReportWithoutOutputKindOrBatchFailuresReads) {
  nlohmann::json doc = WrittenJson(SampleReport());
  doc.erase("output_kind");
  doc.erase("batch_failures");
  auto read = RecordedReportFromJson(doc, "R/data/report.json", "hint");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read.value().output_kind, "");
  EXPECT_EQ(read.value().total, 4u);
}

// Every damaged figure is refused naming the file and the key path, never read as 0.
TEST(RecordedReport, ADamagedFigureIsRefusedNamingTheKey) {
  const nlohmann::json good = WrittenJson(SampleReport());
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> damage;
    const char* key;  // the key path the error names
  };
  const std::vector<Case> cases = {
      {"counts missing", [](nlohmann::json& j) { j.erase("counts"); }, "counts"},
      {"total a string", [](nlohmann::json& j) { j["counts"]["total"] = "4"; }, "counts.total"},
      {"rejected negative", [](nlohmann::json& j) { j["counts"]["rejected"] = -2; }, "counts.rejected"},
      {"counts do not add up", [](nlohmann::json& j) { j["counts"]["accepted"] = 3u; }, "counts"},
      {"a reason count a float", [](nlohmann::json& j) { j["by_reason"]["empty_input"] = 1.5; },
       "by_reason.empty_input"},
      {"accuracy above one", [](nlohmann::json& j) { j["quality"]["accuracy"] = 1.5; }, "quality"},
      {"more correct than labelled", [](nlohmann::json& j) { j["quality"]["correct"] = 9u; }, "quality"},
      {"a label more correct than expected",
       [](nlohmann::json& j) { j["quality"]["per_label"][0]["correct"] = 7u; }, "quality.per_label[0]"},
      {"a label's name a number", [](nlohmann::json& j) { j["quality"]["per_label"][1]["label"] = 3; },
       "quality.per_label[1].label"},
      {"per_label not a list", [](nlohmann::json& j) { j["quality"]["per_label"] = "all"; },
       "quality.per_label"},
      {"never_predicted holds a number", [](nlohmann::json& j) { j["quality"]["never_predicted"] = {1}; },
       "quality.never_predicted"},
      {"unmet ids not ids",
       [](nlohmann::json& j) {
         j["expected_rejections"]["unmet_ids"] = {1, 2};
       },
       "expected_rejections.unmet_ids"},
      {"p95 missing", [](nlohmann::json& j) { j["latency_ms"].erase("p95"); }, "latency_ms.p95"},
      {"rate a string", [](nlohmann::json& j) { j["throughput_items_per_s"] = "fast"; },
       "throughput_items_per_s"},
      {"peak negative", [](nlohmann::json& j) { j["peak_rss_mb"] = -1.0; }, "peak_rss_mb"},
      {"device peak a string", [](nlohmann::json& j) { j["device_peak_memory_mb"] = "lots"; },
       "device_peak_memory_mb"},
      {"shards without a count", [](nlohmann::json& j) { j["shards"] = nlohmann::json::object(); },
       "shards.count"},
      {"acceptance met not a bool", [](nlohmann::json& j) { j["acceptance"]["met"] = "no"; },
       "acceptance.met"},
      {"verdict that lies", [](nlohmann::json& j) { j["verdict"] = "accepted"; }, "verdict"},
      {"output kind a number", [](nlohmann::json& j) { j["output_kind"] = 7; }, "output_kind"},
      {"output kind empty", [](nlohmann::json& j) { j["output_kind"] = ""; }, "output_kind"},
      {"device peak negative", [](nlohmann::json& j) { j["device_peak_memory_mb"] = -3.0; },
       "device_peak_memory_mb"},
      {"criterion without a name",
       [](nlohmann::json& j) { j["acceptance"]["criteria"][0].erase("criterion"); },
       "acceptance.criteria[].criterion"},
      {"criterion limit a string",
       [](nlohmann::json& j) { j["acceptance"]["criteria"][0]["limit"] = "high"; }, "acceptance.criteria"},
      {"criteria not a list", [](nlohmann::json& j) { j["acceptance"]["criteria"] = "all"; },
       "acceptance.criteria"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = good;
    c.damage(doc);
    auto read = RecordedReportFromJson(doc, "R/data/report.json", "check it with pilot verify");
    ASSERT_FALSE(read.ok()) << c.what;
    EXPECT_EQ(read.error().kind, ErrorKind::kBadInput) << c.what;
    EXPECT_EQ(read.error().where, std::string("R/data/report.json key ") + c.key) << c.what;
    EXPECT_EQ(read.error().hint, "check it with pilot verify") << c.what;
  }
  auto not_object = RecordedReportFromJson(nlohmann::json::array(), "R/data/report.json", "hint");
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().where, "R/data/report.json");
}

TEST(RecordedReport, ReadFromAFolderNeverFollowsALink) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "run/data");
  testing::WriteText(dir / "elsewhere.json", PrettyJson(ReportToJson(SampleReport())));
  std::filesystem::create_symlink(dir / "elsewhere.json", dir / "run" / kReportJson);
  auto linked = ReadRecordedReport(RealFileSystem(), dir / "run", "hint");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().where.find("report.json"), std::string::npos) << linked.error().ToString();
  EXPECT_NE(linked.error().what.find("never follows one"), std::string::npos) << linked.error().ToString();

  std::filesystem::remove(dir / "run" / kReportJson);
  testing::WriteText(dir / "run" / kReportJson, PrettyJson(ReportToJson(SampleReport())));
  auto read = ReadRecordedReport(RealFileSystem(), dir / "run", "hint");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read.value().total, 4u);
}

TEST(JsonFields, NamesTheFileAndKeyPathOfEveryWrongField) {
  const JsonFields f("F.json", "fix it");
  const nlohmann::json doc = {{"o", {{"n", 1.5}, {"u", 3u}, {"s", "x"}, {"b", true}, {"z", nullptr}}},
                              {"a", nlohmann::json::array()}};
  EXPECT_TRUE(f.Object(doc, "o").ok());
  EXPECT_TRUE(f.Array(doc, "a").ok());
  const nlohmann::json& o = doc["o"];
  EXPECT_DOUBLE_EQ(f.Number(o, "n", "o").value(), 1.5);
  EXPECT_EQ(f.Unsigned(o, "u", "o").value(), 3u);
  EXPECT_EQ(f.String(o, "s", "o").value(), "x");
  EXPECT_TRUE(f.Bool(o, "b", "o").value());
  EXPECT_FALSE(f.NumberOrNull(o, "z", "o").value());
  EXPECT_FALSE(f.NumberOrNull(o, "absent", "o").value());

  auto wrong = f.Unsigned(o, "n", "o");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().what, "'o.n' is missing or not a whole number");
  EXPECT_EQ(wrong.error().where, "F.json key o.n");
  EXPECT_EQ(wrong.error().hint, "fix it");
  EXPECT_FALSE(f.Object(doc, "a").ok());
  EXPECT_FALSE(f.Array(doc, "o").ok());
  EXPECT_FALSE(f.Number(o, "s", "o").ok());
  EXPECT_FALSE(f.Bool(o, "u", "o").ok());
  EXPECT_FALSE(f.String(o, "u", "o").ok());
  EXPECT_FALSE(f.String(nlohmann::json{{"s", std::string(300, 'x')}}, "s").ok()) << "bounded";
  EXPECT_FALSE(f.Number(nlohmann::json{{"n", -1}}, "n").ok()) << "not below 0";
  EXPECT_FALSE(f.Object(nlohmann::json::array(), "o").ok()) << "a list has no members";
}

}  // namespace
}  // namespace pilot
