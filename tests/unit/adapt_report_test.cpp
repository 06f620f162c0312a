#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "pilot/adapt/adapt_records.h"

namespace pilot {
namespace {

using J = nlohmann::ordered_json;

const std::string kAdaptedHex(64, 'a');
const std::string kBaseHex(64, 'b');

J SampleReport() {
  return J::parse(R"({
    "run_id": "20261201T000000Z-abc123", "pilot_version": "0.9.0", "pilot_revision": "deadbeef",
    "state": "finished",
    "base_model": {"path": "/abs/path/langid.pt", "sha256": ")" +
                  kBaseHex + R"("},
    "adapted_model": {"path": "data/model/adapted.pt", "sha256": ")" +
                  kAdaptedHex + R"(", "bytes": 4200000},
    "data": {"train_manifest_sha256": ")" +
                  std::string(64, 'c') + R"(", "eval_manifest_sha256": ")" + std::string(64, 'd') +
                  R"(", "train_accounting_sha256": ")" + std::string(64, 'e') + R"("},
    "train": {"items": 451, "used": 450, "rejected": 1, "reasons": {"invalid_encoding": 1}},
    "eval": {"items": 200, "evaluated": 200, "rejected": 0, "reasons": {}},
    "training": {"optimiser": "adam", "learning_rate": 0.01, "momentum": 0, "weight_decay": 0, "batch_size": 16,
                 "steps": 200, "steps_per_epoch": 29, "seed": 7, "threads": 2, "device": "cpu",
                 "dtype": "float32", "trainable": ["emb", "fc_w", "fc_b"], "trainable_values": 1048848,
                 "seconds": 12.5, "steps_per_second": 16.0, "sessions": 2, "libtorch": "1.13.1"},
    "checkpoints": {"every": 25, "written": 8, "kept": ["data/checkpoints/step-00000175.ckpt",
                    "data/checkpoints/step-00000200.ckpt"], "pruned": 5,
                    "best": "data/checkpoints/step-00000150.ckpt", "best_step": 150,
                    "mean_write_ms": 21.3, "max_write_ms": 40.1, "bytes": 12600000},
    "evaluation": {
      "base": {"correct": 150, "total": 200, "accuracy": 0.75,
               "per_label": {"de": {"correct": 110, "total": 150}, "fr": {"correct": 40, "total": 50}}},
      "adapted": {"correct": 174, "total": 200, "accuracy": 0.87,
                  "per_label": {"de": {"correct": 129, "total": 150}, "fr": {"correct": 45, "total": 50}}},
      "gain": 0.12},
    "loss": {"first": 2.1, "last": 0.3, "steps": 200},
    "final_params_digest": ")" +
                  std::string(64, 'f') + R"(",
    "acceptance": {"criteria": [{"name": "min_eval_accuracy", "threshold": 0.9, "value": 0.87, "met": false},
                                {"name": "min_gain", "threshold": 0.05, "value": 0.12, "met": true}],
                   "met": false},
    "verdict": "acceptance_unmet"
  })");
}

std::vector<double> Falling(std::size_t n) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(2.0 - 0.01 * static_cast<double>(i % 200));
  return v;
}

// The "x,y" pairs of the loss curve's polyline; empty when there is none.
std::vector<std::string> PolylinePoints(const std::string& html) {
  const auto at = html.find("<polyline");
  if (at == std::string::npos) return {};
  const auto open = html.find("points=\"", at) + 8;
  const auto close = html.find('"', open);
  std::istringstream in(html.substr(open, close - open));
  std::vector<std::string> points;
  for (std::string p; in >> p;) points.push_back(p);
  return points;
}

// The line of `text` holding `needle`.
std::string LineWith(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return "";
  const auto begin = text.rfind('\n', at) + 1;  // npos + 1 == 0
  return text.substr(begin, text.find('\n', at) - begin);
}

// Cell separators of a Markdown table row: '|' not escaped by a backslash.
int UnescapedPipes(const std::string& row) {
  int pipes = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\') {
      ++i;
    } else if (row[i] == '|') {
      ++pipes;
    }
  }
  return pipes;
}

TEST(AdaptReport, LossCurveHasOnePointPerStep) {
  const std::string html = RenderAdaptHtml(SampleReport(), Falling(200));
  const auto points = PolylinePoints(html);
  ASSERT_EQ(points.size(), 200u);
  // Step 1 (the highest loss) at the top left, step 200 (the lowest) at the bottom right.
  EXPECT_EQ(points.front(), "72.0,30.0");
  EXPECT_EQ(points.back(), "620.0,236.0");
  EXPECT_NE(html.find(">200</text>"), std::string::npos) << "x axis ends at the last step";
  EXPECT_NE(html.find(">2</text>"), std::string::npos) << "y axis shows the highest loss";
  EXPECT_NE(html.find(">0.01</text>"), std::string::npos) << "y axis shows the lowest loss";
  EXPECT_EQ(html.find("consecutive steps"), std::string::npos) << "a short run is not averaged";
}

TEST(AdaptReport, LongRunIsDownsampledToAtMostAThousandPoints) {
  EXPECT_EQ(PolylinePoints(RenderAdaptHtml(SampleReport(), Falling(1000))).size(), 1000u);
  const std::string html = RenderAdaptHtml(SampleReport(), Falling(5000));
  EXPECT_EQ(PolylinePoints(html).size(), 1000u);
  EXPECT_NE(html.find("mean of 5 consecutive steps"), std::string::npos);
  const auto odd = PolylinePoints(RenderAdaptHtml(SampleReport(), Falling(2503)));
  EXPECT_EQ(odd.size(), 835u) << "groups of 3, the last one a single step";
  EXPECT_EQ(odd.back().substr(0, 6), "620.0,") << "the last point reaches the last step";
}

TEST(AdaptReport, NonFiniteLossesAreSkipped) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::string html = RenderAdaptHtml(SampleReport(), {1.0, nan, inf, 0.5});
  const auto points = PolylinePoints(html);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0], "72.0,30.0");
  EXPECT_EQ(points[1], "620.0,236.0") << "step 4 of 4, the lowest loss";
  EXPECT_NE(html.find("2 non-finite"), std::string::npos);

  const std::string none = RenderAdaptHtml(SampleReport(), {nan, nan});
  EXPECT_TRUE(PolylinePoints(none).empty());
  EXPECT_NE(none.find("No finite training loss"), std::string::npos);
  EXPECT_TRUE(PolylinePoints(RenderAdaptHtml(SampleReport(), {})).empty());
}

TEST(AdaptReport, MarkdownSummaryAndPerLabelBeforeAfter) {
  const std::string md = RenderAdaptMarkdown(SampleReport());
  EXPECT_EQ(md.rfind("# Adaptation 20261201T000000Z-abc123\n", 0), 0u);
  EXPECT_NE(md.find("**75.0% (150 / 200)**"), std::string::npos);
  EXPECT_NE(md.find("**87.0% (174 / 200)**"), std::string::npos);
  EXPECT_NE(md.find("**+12.0 points**"), std::string::npos);
  EXPECT_NE(md.find("acceptance criteria NOT met"), std::string::npos);
  EXPECT_NE(md.find("| label | items | base accuracy | adapted accuracy | change (points) |"),
            std::string::npos);
  EXPECT_NE(md.find("| de | 150 | 73.3% | 86.0% | +12.7 |"), std::string::npos);
  EXPECT_NE(md.find("| fr | 50 | 80.0% | 90.0% | +10.0 |"), std::string::npos);
  EXPECT_LT(md.find("| de |"), md.find("| fr |"));
  EXPECT_NE(md.find("| 451 | 450 | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| invalid_encoding | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| 200 | 200 | 0 |"), std::string::npos);
  EXPECT_NE(md.find("| epochs | — (a step count was given) |"), std::string::npos);
  EXPECT_NE(md.find("| trainable | emb, fc_w, fc_b |"), std::string::npos);
  EXPECT_NE(md.find("data/checkpoints/step-00000175.ckpt, data/checkpoints/step-00000200.ckpt"),
            std::string::npos);
  EXPECT_NE(md.find("| best | data/checkpoints/step-00000150.ckpt (step 150) |"), std::string::npos);
  EXPECT_NE(md.find("| mean write | 21.3 ms |"), std::string::npos);
  EXPECT_NE(md.find("| sha256 | " + kAdaptedHex + " |"), std::string::npos);
  EXPECT_NE(md.find("| min_eval_accuracy | 0.9 | 0.87 | NO |"), std::string::npos);
  EXPECT_NE(md.find("| min_gain | 0.05 | 0.12 | yes |"), std::string::npos);
  EXPECT_NE(md.find("```json\n\"stage\": {\"kind\": \"torchscript-classifier\", \"model\": \"<path to the "
                    "folder>/data/model/adapted.pt\", \"model_sha256\": \"" +
                    kAdaptedHex + "\"}\n```"),
            std::string::npos);
}

TEST(AdaptReport, HtmlHasBarsPerLabelAndIsSelfContained) {
  const std::string html = RenderAdaptHtml(SampleReport(), Falling(10));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(
      html.find("<td>fr</td><td class=\"r\">50</td><td class=\"r\"><span class=\"bar\"><span "
                "style=\"width:80.0%\"></span></span>80.0%</td><td class=\"r\"><span class=\"bar\"><span "
                "style=\"width:90.0%\"></span></span>90.0%</td><td class=\"r\">+10.0</td>"),
      std::string::npos);
  EXPECT_NE(html.find("&lt;path to the folder&gt;/data/model/adapted.pt"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos) << "no external reference, not even an SVG namespace";
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

TEST(AdaptReport, HostileValuesAreEscaped) {
  J report = SampleReport();
  const std::string hostile = "<script>|x\ny";
  report["run_id"] = "<script>alert(1)</script>";
  report["evaluation"]["base"]["per_label"][hostile] = {{"correct", 1}, {"total", 2}};
  report["evaluation"]["adapted"]["per_label"][hostile] = {{"correct", 2}, {"total", 2}};
  report["train"]["reasons"]["a|b\r\n| injected | row |"] = 3;
  report["adapted_model"]["path"] = "data/\"x\n```\n<b>";

  const std::string md = RenderAdaptMarkdown(report);
  EXPECT_EQ(md.find("<script"), std::string::npos);
  const std::string row = LineWith(md, "script&gt;\\|x");
  ASSERT_FALSE(row.empty()) << md;
  EXPECT_EQ(row, "| &lt;script&gt;\\|x\\\\x0ay | 2 | 50.0% | 100.0% | +50.0 |");
  EXPECT_EQ(UnescapedPipes(row), 6) << "five cells, the label's '|' escaped";
  const std::string reason = LineWith(md, "injected");
  EXPECT_EQ(UnescapedPipes(reason), 3) << reason;
  EXPECT_EQ(md.find("\n| injected"), std::string::npos) << "a newline in a value cannot start a row";
  EXPECT_NE(md.find("| adapted model | data/\"x\\\\x0a\\`\\`\\`\\\\x0a&lt;b&gt; |"), std::string::npos);
  // The code block stays one line: the path's newline and quote are JSON-escaped.
  EXPECT_NE(md.find("\"model\": \"<path to the folder>/data/\\\"x\\n```\\n<b>\""), std::string::npos);

  const std::string html = RenderAdaptHtml(report, Falling(5));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<td>data/&quot;x\\x0a```\\x0a&lt;b&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;script&gt;|x\\x0ay</td>"), std::string::npos);
  EXPECT_NE(html.find("<title>pilot adapt &lt;script&gt;alert(1)&lt;/script&gt;</title>"), std::string::npos);
}

TEST(AdaptReport, LabelsAreCapped) {
  J report = SampleReport();
  for (int i = 0; i < 250; ++i) {
    report["evaluation"]["adapted"]["per_label"]["l" + std::to_string(1000 + i)] = {{"correct", 1},
                                                                                    {"total", 1}};
  }
  const std::string md = RenderAdaptMarkdown(report);
  EXPECT_NE(md.find("| l1197 |"), std::string::npos);  // de, fr, then l1000..l1197: 200 rows
  EXPECT_EQ(md.find("| l1198 |"), std::string::npos);
  EXPECT_NE(md.find("… and 52 more labels, not shown."), std::string::npos);
}

TEST(AdaptReport, MissingOrMistypedFieldsDoNotThrow) {
  const J mistyped = J::parse(R"({
    "run_id": 5, "state": [], "training": "x", "train": {"items": -3, "reasons": [1]},
    "eval": {"reasons": {"r": "many"}},
    "evaluation": {"base": [], "adapted": {"accuracy": "high", "per_label": {"fr": "x", "de": {"total": 0}}},
                   "gain": "big"},
    "checkpoints": {"kept": "one", "bytes": 1.5, "written": 1e300},
    "adapted_model": {"sha256": "ABC", "path": 7},
    "acceptance": {"criteria": [1, {"name": 3, "met": "yes"}]}, "loss": {"first": "a"}, "verdict": {}
  })");
  for (const J& report : {J(), J::array(), J::object(), J("text"), mistyped}) {
    std::string md, html, card;
    EXPECT_NO_THROW(md = RenderAdaptMarkdown(report)) << report.dump();
    EXPECT_NO_THROW(html = RenderAdaptHtml(report, {1.0, 0.5})) << report.dump();
    EXPECT_NO_THROW(card = RenderAdaptModelCard(report)) << report.dump();
    EXPECT_NE(md.find("# Adaptation —"), std::string::npos);
    EXPECT_NE(md.find("—"), std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_FALSE(ModelCardSha256(card).has_value()) << "no valid sha256, none stated";
  }
  const std::string md = RenderAdaptMarkdown(mistyped);
  EXPECT_NE(md.find("| fr | — | — | — | — |"), std::string::npos);
  EXPECT_NE(md.find("| kept | — |"), std::string::npos);
  EXPECT_NE(md.find("| written | — |"), std::string::npos);
  EXPECT_NE(md.find("unknown (—)"), std::string::npos);
  EXPECT_NE(md.find("\"model_sha256\": \"<the sha256 of the adapted model>\""), std::string::npos);
}

TEST(AdaptReport, ModelCardStatesTheAdaptedModelAndItsLimits) {
  const std::string card = RenderAdaptModelCard(SampleReport());
  EXPECT_EQ(card.rfind("# Model card: adapted model\n", 0), 0u);
  EXPECT_NE(card.find("\n- sha256: `" + kAdaptedHex + "`\n"), std::string::npos);
  EXPECT_NE(card.find("- base model sha256: `" + kBaseHex + "`"), std::string::npos);
  EXPECT_NE(card.find("- base model: /abs/path/langid.pt"), std::string::npos);
  EXPECT_NE(card.find("- training manifest sha256: `" + std::string(64, 'c') + "`"), std::string::npos);
  EXPECT_NE(card.find("- evaluation manifest sha256: `" + std::string(64, 'd') + "`"), std::string::npos);
  EXPECT_NE(card.find("- optimiser: adam"), std::string::npos);
  EXPECT_NE(card.find("- learning rate: 0.01"), std::string::npos);
  EXPECT_NE(card.find("- batch size: 16"), std::string::npos);
  EXPECT_NE(card.find("- seed: 7"), std::string::npos);
  EXPECT_NE(card.find("- base model accuracy: 75.0% (150 / 200)"), std::string::npos);
  EXPECT_NE(card.find("- adapted model accuracy: 87.0% (174 / 200)"), std::string::npos);
  EXPECT_NE(card.find("- gain: +12.0 points"), std::string::npos);
  EXPECT_NE(card.find("- loss: first step 2.1, last step 0.3 (200 steps)"), std::string::npos);
  EXPECT_NE(card.find("| fr | 50 | 80.0% | 90.0% | +10.0 |"), std::string::npos);
  EXPECT_NE(card.find("- pilot version: 0.9.0"), std::string::npos);
  EXPECT_NE(card.find("- pilot revision: deadbeef"), std::string::npos);
  EXPECT_NE(card.find("- run id: 20261201T000000Z-abc123"), std::string::npos);
  EXPECT_NE(card.find("## Limits"), std::string::npos);
  EXPECT_NE(card.find("not across GPU runs"), std::string::npos);
}

TEST(AdaptReport, ModelCardSha256RoundTripsAndRejectsMalformedLines) {
  EXPECT_EQ(ModelCardSha256(RenderAdaptModelCard(SampleReport())).value_or(""), kAdaptedHex);

  EXPECT_FALSE(ModelCardSha256("").has_value());
  EXPECT_FALSE(ModelCardSha256("# Model card: adapted model\n\n- file: data/model/adapted.pt\n").has_value());
  EXPECT_FALSE(ModelCardSha256("- sha256: `" + std::string(64, 'A') + "`\n").has_value()) << "upper case";
  EXPECT_FALSE(ModelCardSha256("- sha256: `" + std::string(63, 'a') + "`\n").has_value()) << "too short";
  EXPECT_FALSE(ModelCardSha256("- sha256: `" + std::string(64, 'g') + "`\n").has_value()) << "not hex";
  EXPECT_FALSE(ModelCardSha256("- sha256: `" + kAdaptedHex + "\n").has_value()) << "no closing backtick";
  EXPECT_FALSE(ModelCardSha256("- sha256: `" + kAdaptedHex + "\n`").has_value())
      << "closing backtick on the next line";
  EXPECT_FALSE(ModelCardSha256("  - sha256: `" + kAdaptedHex + "`\n").has_value()) << "not at the line start";
  // Only the first such line counts: a malformed one is not rescued by a later one.
  EXPECT_FALSE(ModelCardSha256("- sha256: `x`\n- sha256: `" + kAdaptedHex + "`\n").has_value());
  EXPECT_EQ(ModelCardSha256("x\r\n- sha256: `" + kAdaptedHex + "`\r\n").value_or(""), kAdaptedHex);
  EXPECT_EQ(ModelCardSha256("- sha256: `" + kAdaptedHex + "`").value_or(""), kAdaptedHex)
      << "no final newline";

  // Without a valid adapted sha256 the card states none, and no other value stands in for it.
  J report = SampleReport();
  report["adapted_model"]["sha256"] = "not-a-digest";
  report["adapted_model"]["path"] = "x\n- sha256: `" + kBaseHex + "`";
  const std::string card = RenderAdaptModelCard(report);
  EXPECT_FALSE(ModelCardSha256(card).has_value()) << card;
  EXPECT_NE(card.find("- sha256: —\n"), std::string::npos);
  report["adapted_model"].erase("sha256");
  EXPECT_FALSE(ModelCardSha256(RenderAdaptModelCard(report)).has_value());
}

}  // namespace
}  // namespace pilot
