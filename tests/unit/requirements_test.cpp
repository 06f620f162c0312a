#include "pilot/requirements.h"

#include <gtest/gtest.h>

#include "pilot/params.h"

namespace pilot {
namespace {

TEST(Requirements, EveryUnmetRequirementIsListedAtOnce) {
  Requires req;
  req.backend = "cuda";
  req.min_device_count = 2;
  req.min_device_memory_mb = 40000;
  req.min_libtorch_version = "2.1";
  req.min_free_disk_mb = 1e9;
  Received cpu_box{"cpu", 0, 0, "1.13.0", 5000};
  auto unmet = UnmetRequirements(req, cpu_box);
  ASSERT_EQ(unmet.size(), 5u);
  EXPECT_EQ(unmet[0], "backend: cuda required, cpu received");
  EXPECT_NE(unmet[1].find("0 GPU(s) visible"), std::string::npos);
  EXPECT_NE(unmet[2].find("no GPU visible"), std::string::npos);
  EXPECT_EQ(unmet[3], "min_libtorch_version: 2.1 required, 1.13.0 received");
  EXPECT_NE(unmet[4].find("min_free_disk_mb"), std::string::npos);

  Received gpu_box{"cuda", 2, 81559, "2.4.1+cu121", 2e9};
  EXPECT_TRUE(UnmetRequirements(req, gpu_box).empty());
  EXPECT_TRUE(UnmetRequirements(Requires{}, cpu_box).empty());
}

TEST(Requirements, VersionsCompareNumerically) {
  EXPECT_EQ(*ParseVersion("2.4.1+cu121"), (std::vector<int>{2, 4, 1}));
  EXPECT_EQ(*ParseVersion("1.13"), (std::vector<int>{1, 13}));
  EXPECT_FALSE(ParseVersion("latest").has_value());
  Requires req;
  req.min_libtorch_version = "1.9";
  EXPECT_TRUE(UnmetRequirements(req, Received{"cpu", 0, 0, "1.13.0", 0}).empty()) << "1.13 > 1.9";
}

TEST(Requirements, ParsedFromParametersStrictly) {
  auto parse = [&](const std::string& req) {
    return ParseParams(R"({"manifest": "m.json", "stage": {"kind": "k", "model": "m.pt"},
                          "allowed_categories": ["en"], "requires": )" +
                           req + "}",
                       "/p", "pilot.json");
  };
  auto ok = parse(R"({"backend": "cuda", "min_device_count": 1, "min_device_memory_mb": 16000,
                      "min_libtorch_version": "2.1", "min_free_disk_mb": 1000})");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(*ok.value().requires_.backend, "cuda");
  EXPECT_EQ(*ok.value().requires_.min_device_count, 1);
  auto typo = parse(R"({"min_gpu_count": 1})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().what.find("requires.min_gpu_count"), std::string::npos);
  EXPECT_FALSE(parse(R"({"backend": "tpu"})").ok());
  EXPECT_FALSE(parse(R"({"min_libtorch_version": "new"})").ok());
}

}  // namespace
}  // namespace pilot
