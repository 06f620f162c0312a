// pilot compare over runs the engine wrote with the fake stage: agreement item by item, one
// change against several, a confidence beyond tolerance, and refusals.
#include "pilot/verdict/compare.h"

#include <gtest/gtest.h>

#include "pilot/clock.h"
#include "pilot/run.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

// Lowers the confidence of the first item of each batch by `delta`.
class NudgedStage : public FakeStage {
 public:
  explicit NudgedStage(double delta) : delta_(delta) {}
  BatchOutput Process(const std::vector<std::string_view>& texts) override {
    BatchOutput b = FakeStage::Process(texts);
    if (b.ok && !b.items.empty() && b.items[0].ok) b.items[0].confidence -= delta_;
    return b;
  }

 private:
  double delta_;
};

fs::path MakeRun(Fixture& f, Stage& stage, const std::string& id) {
  f.plan.run_id = id;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  EXPECT_TRUE(out.ok()) << out.error().ToString();
  return out.value().run_dir;
}

const testing::Items kItems = {
    {"a", "fr salut"}, {"b", "en hi"}, {"c", ""}, {"d", "de hallo"}, {"e", "ru privet"}};

void Label(Fixture& f) {
  f.Expect("a", "fr");
  f.Expect("b", "en");
  f.ExpectRejection("c", "empty_input");
}

TEST(Compare, OnlyTheBatchSizeChangedAndEveryItemAgrees) {
  Fixture f(kItems);
  Label(f);
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  f.plan.params.batch_size = 1;
  fs::path b = MakeRun(f, stage, "b");
  auto out = CompareRuns(RealFileSystem(), a, b, CompareOptions{0.0});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  const auto& d = out.value().document;
  EXPECT_TRUE(out.value().within_tolerance);
  EXPECT_EQ(d["items"]["total"], 5);
  EXPECT_EQ(d["items"]["agree"], 5);
  EXPECT_EQ(d["items"]["same_status"], 5);
  ASSERT_EQ(d["changes"].size(), 1u) << d["changes"].dump();
  EXPECT_EQ(d["changes"][0]["name"], "batch_size");
  EXPECT_EQ(d["changes"][0]["a"], "2");
  EXPECT_EQ(d["changes"][0]["b"], "1");
  EXPECT_EQ(d["change_summary"], "only batch_size changed (2 -> 1)");
  EXPECT_TRUE(d["warnings"].empty());
  EXPECT_EQ(d["quality"]["accuracy_delta"], 0.0);
  EXPECT_NE(CompareMarkdown(d).find("| batch_size | 2 | 1 | run.json plan |"), std::string::npos);
}

// The dtype compared is the one the model held: a model saved in bfloat16 and run as saved is
// named as a dtype change, and a dtype option that changes nothing is no change.
TEST(Compare, TheDtypeTheModelHeldIsNamedNotTheOption) {
  Fixture f(kItems);
  Label(f);
  FakeStage f32;
  f32.SetDetail("dtype", "float32");
  f32.SetDetail("held_dtype", "float32");
  f.plan.params.stage.options = {{"dtype", "float32"}};
  fs::path a = MakeRun(f, f32, "a");
  FakeStage saved_bf16;
  saved_bf16.SetDetail("dtype", "as saved");
  saved_bf16.SetDetail("held_dtype", "bfloat16");
  f.plan.params.stage.options = nlohmann::json::object();
  fs::path b = MakeRun(f, saved_bf16, "b");
  FakeStage as_saved_f32;
  as_saved_f32.SetDetail("dtype", "as saved");
  as_saved_f32.SetDetail("held_dtype", "float32");
  fs::path c = MakeRun(f, as_saved_f32, "c");

  auto ab = CompareRuns(RealFileSystem(), a, b, CompareOptions{0.0});
  ASSERT_TRUE(ab.ok()) << ab.error().ToString();
  const auto& d = ab.value().document;
  ASSERT_EQ(d["changes"].size(), 1u) << d["changes"].dump();
  EXPECT_EQ(d["changes"][0]["name"], "dtype");
  EXPECT_EQ(d["change_summary"], "only dtype changed (float32 -> bfloat16)");
  EXPECT_EQ(d["a"]["dtype"], "float32");
  EXPECT_EQ(d["b"]["dtype"], "bfloat16");

  auto ac = CompareRuns(RealFileSystem(), a, c, CompareOptions{0.0});
  ASSERT_TRUE(ac.ok()) << ac.error().ToString();
  EXPECT_TRUE(ac.value().document["changes"].empty()) << ac.value().document["changes"].dump();
}

TEST(Compare, AConfidenceBeyondToleranceIsListedAndSeveralChangesWarn) {
  Fixture f(kItems);
  Label(f);
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  NudgedStage nudged(0.01);
  f.plan.params.batch_size = 4;  // one batch: only item a is nudged
  f.plan.params.seed = 7;
  fs::path b = MakeRun(f, nudged, "b");
  auto loose = CompareRuns(RealFileSystem(), a, b, CompareOptions{0.02});
  ASSERT_TRUE(loose.ok()) << loose.error().ToString();
  EXPECT_TRUE(loose.value().within_tolerance);
  EXPECT_NEAR(loose.value().document["items"]["max_confidence_difference"].get<double>(), 0.01, 1e-9);
  auto tight = CompareRuns(RealFileSystem(), a, b, CompareOptions{0.001});
  ASSERT_TRUE(tight.ok());
  const auto& d = tight.value().document;
  EXPECT_FALSE(tight.value().within_tolerance);
  EXPECT_EQ(d["verdict"], "differ");
  ASSERT_EQ(d["differences"].size(), 1u);
  EXPECT_EQ(d["differences"][0]["id"], "a");
  EXPECT_EQ(d["differences"][0]["what"], "confidence");
  EXPECT_EQ(d["changes"].size(), 2u);  // batch_size and seed
  EXPECT_FALSE(d["one_change"].get<bool>());
  ASSERT_EQ(d["warnings"].size(), 1u);
  EXPECT_NE(d["warnings"][0].get<std::string>().find("one change at a time"), std::string::npos);
}

TEST(Compare, DifferentManifestsAreRefusedNamingBothHashes) {
  Fixture f(kItems);
  Label(f);
  Fixture g(testing::Items{{"a", "fr salut"}});
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  fs::path b = MakeRun(g, stage, "b");
  auto out = CompareRuns(RealFileSystem(), a, b, CompareOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(out.error().what.find("different manifests"), std::string::npos);
  auto sha = [](const fs::path& run) {
    std::string j = ReadText(run / "data/run.json");
    auto at = j.find("\"manifest_sha256\": \"") + 20;
    return j.substr(at, 64);
  };
  EXPECT_NE(out.error().what.find(sha(a)), std::string::npos);
  EXPECT_NE(out.error().what.find(sha(b)), std::string::npos);
}

TEST(Compare, AFolderThatFailsVerificationIsNotCompared) {
  Fixture f(kItems);
  Label(f);
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  fs::path b = MakeRun(f, stage, "b");
  WriteText(b / "data/report.md", "changed");
  auto out = CompareRuns(RealFileSystem(), a, b, CompareOptions{});
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out.value().failed_verification.size(), 1u);
  EXPECT_TRUE(out.value().document.is_null());
}

TEST(Compare, WriteNeverOverwrites) {
  testing::TempDir t;
  Fixture f(kItems);
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  auto compared = CompareRuns(RealFileSystem(), a, a, CompareOptions{});
  ASSERT_TRUE(compared.ok());
  const nlohmann::ordered_json& doc = compared.value().document;
  EXPECT_EQ(doc["change_summary"],
            "nothing changed in the parameters, model, software or environment: a repeat of the same run");
  ASSERT_TRUE(WriteCompare(RealFileSystem(), t / "out", doc).ok());
  EXPECT_TRUE(fs::exists(t / "out/compare.json"));
  auto again = WriteCompare(RealFileSystem(), t / "out", doc);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().what.find("never overwritten"), std::string::npos);
  fs::create_directory_symlink(t / "out", t / "link");
  EXPECT_FALSE(WriteCompare(RealFileSystem(), t / "link", doc).ok());
}

TEST(Compare, AFolderPathWithMarkdownIsEscapedTextNotACodeSpan) {
  // A backslash escape does not work inside a code span: a path with a backtick there would end
  // the span early and show the rest raw. The path is written as escaped text instead.
  testing::TempDir t;
  Fixture f(kItems);
  FakeStage stage;
  fs::path a = MakeRun(f, stage, "a");
  auto compared = CompareRuns(RealFileSystem(), a, a, CompareOptions{});
  ASSERT_TRUE(compared.ok());
  nlohmann::ordered_json doc = compared.value().document;
  doc["a"]["folder"] = "w`x|<b>y";
  ASSERT_TRUE(WriteCompare(RealFileSystem(), t / "out", doc).ok());
  const std::string md = ReadText(t / "out/compare.md");
  const auto begin = md.find("- A: ");
  ASSERT_NE(begin, std::string::npos) << md;
  const std::string line = md.substr(begin, md.find('\n', begin) - begin);
  EXPECT_EQ(line.find("<b>"), std::string::npos) << line;
  EXPECT_EQ(line.find("x|"), std::string::npos) << line;
  for (std::size_t i = line.find('`'); i != std::string::npos; i = line.find('`', i + 1)) {
    EXPECT_EQ(line[i - 1], '\\') << "an unescaped backtick in: " << line;
  }
}

}  // namespace
}  // namespace pilot
