#include "pilot/params.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

const char* kValid = R"({
  "manifest": "../data/m.json",
  "stage": {"kind": "torchscript-classifier", "model": "models/x.pt", "options": {"min_confidence": 0.5}},
  "allowed_categories": ["en", "fr"],
  "device": "cpu", "batch_size": 16, "threads": 2, "seed": 7,
  "limits": {"max_bytes": 1000},
  "acceptance": {"min_accuracy": 0.9, "min_recall_per_label": 0.25, "max_p95_latency_ms": 50}
})";

TEST(Params, ParsesAndResolvesPathsAgainstTheFilesFolder) {
  auto p = ParseParams(kValid, "/proj/config", "config/pilot.json");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ(p.value().manifest, "/proj/data/m.json");
  EXPECT_EQ(p.value().stage.model, "/proj/config/models/x.pt");
  EXPECT_EQ(p.value().batch_size, 16);
  EXPECT_EQ(p.value().max_bytes, 1000u);
  EXPECT_DOUBLE_EQ(*p.value().acceptance.min_accuracy, 0.9);
  EXPECT_DOUBLE_EQ(*p.value().acceptance.min_recall_per_label, 0.25);
  EXPECT_FALSE(p.value().acceptance.max_peak_rss_mb.has_value());
}

std::string With(const std::string& from, const std::string& to) {
  std::string s = kValid;
  s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(Params, UnknownKeysAreRefusedByName) {
  auto top = ParseParams(With("\"seed\"", "\"sede\""), "/p", "pilot.json");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.error().what.find("'sede'"), std::string::npos);
  EXPECT_EQ(top.error().where, "pilot.json");
  auto nested = ParseParams(With("\"max_p95_latency_ms\"", "\"max_p59_latency_ms\""), "/p", "pilot.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().what.find("acceptance.max_p59_latency_ms"), std::string::npos);
}

TEST(Params, BadValuesNameTheirKey) {
  for (auto [from, to, key] :
       {std::tuple{"\"cpu\"", "\"tpu\"", "device"}, std::tuple{"16,", "0,", "batch_size"},
        std::tuple{"16,", "1.5,", "batch_size"}, std::tuple{"[\"en\", \"fr\"]", "[]", "allowed_categories"},
        std::tuple{"[\"en\", \"fr\"]", "[\"en\", \"en\"]", "allowed_categories"},
        std::tuple{"0.9", "1.9", "acceptance.min_accuracy"},
        std::tuple{"0.25", "-0.5", "acceptance.min_recall_per_label"},
        std::tuple{"0.25", "\"half\"", "acceptance.min_recall_per_label"}}) {
    auto p = ParseParams(With(from, to), "/p", "pilot.json");
    ASSERT_FALSE(p.ok()) << key;
    EXPECT_NE(p.error().what.find(key), std::string::npos) << p.error().what;
  }
  EXPECT_FALSE(ParseParams(R"({"stage": {}})", "/p", "pilot.json").ok());
  EXPECT_FALSE(ParseParams("[1]", "/p", "pilot.json").ok());
}

TEST(Params, CredentialIsRefusedWithoutEchoingIt) {
  const std::string secret = "hunter2-very-secret";
  auto p = ParseParams(With("\"seed\": 7", "\"seed\": 7, \"db_password\": \"" + secret + "\""), "/p",
                       "pilot.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what.find("db_password"), std::string::npos);
  EXPECT_NE(p.error().hint.find("environment"), std::string::npos);
  EXPECT_EQ(p.error().ToString().find(secret), std::string::npos);
}

TEST(Params, CredentialInsideStageOptionsIsRefused) {
  auto p = ParseParams(With("\"min_confidence\": 0.5", "\"api_key\": \"abc\""), "/p", "pilot.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what.find("stage.options.api_key"), std::string::npos);
}

}  // namespace
}  // namespace pilot
