// ContractFromPackageMetadata: the "pilot.*" metadata of a .pt2 package, read strictly.
#include "pilot/model_contract.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

const std::string kSource = "models/m.pt2";

TEST(PackageMetadata, ReadsTheBundledModelsContract) {
  auto c = ContractFromPackageMetadata({{"AOTI_DEVICE_KEY", "cpu"},
                                        {"pilot.input_kind", "hashed_char_ngrams"},
                                        {"pilot.labels", R"(["en", "fr", "ja"])"},
                                        {"pilot.output", "probabilities"},
                                        {"pilot.ngram_min", "1"},
                                        {"pilot.ngram_max", "4"},
                                        {"pilot.buckets", "65536"},
                                        {"pilot.max_chars", "2048"}},
                                       kSource);
  ASSERT_TRUE(c.ok()) << c.error().what;
  EXPECT_EQ(*c.value().labels, (std::vector<std::string>{"en", "fr", "ja"}));
  EXPECT_EQ(*c.value().input_kind, "hashed_char_ngrams");
  EXPECT_EQ(*c.value().buckets, 65536);
  EXPECT_EQ(*c.value().ngram_max, 4);
  EXPECT_FALSE(c.value().dim);  // absent stays absent: the stage names what is missing
}

TEST(PackageMetadata, NegativeAndLargeIntegersAreReadForTheStageToRangeCheck) {
  auto c =
      ContractFromPackageMetadata({{"pilot.dim", "-3"}, {"pilot.buckets", "999999999999999999"}}, kSource);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c.value().dim, -3);
  EXPECT_EQ(*c.value().buckets, 999999999999999999);
}

TEST(PackageMetadata, MalformedValuesAreRefusedNamingTheKeyNotTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pilot.dim", ""},
      {"pilot.dim", "16 "},
      {"pilot.dim", "0x10"},
      {"pilot.dim", "1e3"},
      {"pilot.dim", "-"},
      {"pilot.buckets", "9999999999999999999"},  // 19 digits: would overflow
      {"pilot.labels", "en,fr"},
      {"pilot.labels", R"({"a": "en"})"},
      {"pilot.labels", R"(["en", 3])"},
      {"pilot.labels", R"([["en"]])"},
      {"pilot.labels", std::string(100, '[')},
      {"pilot.labels", R"(["en", "fr")"},
      {"pilot.lables", R"(["en"])"},  // a typo is not silently ignored
  };
  for (const auto& [key, value] : cases) {
    auto c = ContractFromPackageMetadata({{key, value}}, kSource);
    ASSERT_FALSE(c.ok()) << key << " = " << value;
    EXPECT_EQ(c.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(c.error().what.find(key), std::string::npos) << c.error().what;
    EXPECT_NE(c.error().where.find(kSource), std::string::npos) << c.error().where;
    if (value.size() > 3) {
      EXPECT_EQ(c.error().what.find(value), std::string::npos) << c.error().what;
    }
  }
}

TEST(PackageMetadata, SizeCapsHold) {
  EXPECT_FALSE(ContractFromPackageMetadata(
                   {{"pilot.input_kind", std::string(kMaxPackageMetadataValue + 1, 'x')}}, kSource)
                   .ok());
  std::string many = "[";
  for (std::size_t i = 0; i <= kMaxPackageLabels; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  many += "]";
  auto c = ContractFromPackageMetadata({{"pilot.labels", many}}, kSource);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().what.find("more than"), std::string::npos);
}

}  // namespace
}  // namespace pilot
