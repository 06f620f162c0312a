#include "pilot/run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pilot/clock.h"
#include "pilot/utf8.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::FaultyFileSystem;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

std::vector<std::string> ResultLines(const fs::path& run) {
  std::vector<std::string> out;
  std::istringstream in(ReadText(run / "data/results.jsonl"));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

using testing::FakeClock;

// Every timestamp a run writes comes from the Clock it is given: the journal's header,
// session and batch records, run.json and the bag's Bagging-Date.
TEST(Run, EveryTimestampComesFromTheClock) {
  Fixture f({{"a", "fr salut"}, {"b", "en hi"}, {"c", "de hallo"}});
  f.plan.params.batch_size = 2;
  FakeStage stage;
  FakeClock clock;
  auto out = ExecuteRun(RealFileSystem(), clock, f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  const fs::path run = out.value().run_dir;
  EXPECT_NE(ReadText(run / "bag-info.txt").find("Bagging-Date: 2031-01-02\n"), std::string::npos);
  auto record = nlohmann::json::parse(ReadText(run / "data/run.json"));
  EXPECT_EQ(record["started_at"], "2031-01-02T03:04:05Z");
  EXPECT_EQ(record["finished_at"], "2031-01-02T03:04:05Z");
  std::istringstream journal(ReadText(run / "data/journal.jsonl"));
  int stamped = 0;
  for (std::string line; std::getline(journal, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "header") {
      EXPECT_EQ(j["started_at"], "2031-01-02T03:04:05Z");
    }
    if (j.contains("at_unix")) {
      EXPECT_NEAR(j["at_unix"].get<double>(), 1925089445.0, 10.0) << line;
      ++stamped;
    }
  }
  EXPECT_EQ(stamped, 3);  // the session and two batches
}

// The first writes of a run are its copies and the journal's header: a failure there is the
// machine's (exit 3), the folder never started, and resume says so rather than resuming.
TEST(Run, AFailureBeforeTheJournalsHeaderLeavesAFolderThatNeverStarted) {
  for (int n = 1; n <= 3; ++n) {
    Fixture f({{"a", "fr salut"}, {"b", "en hi"}});
    FakeStage stage;
    FaultyFileSystem faulty(n);
    auto out = ExecuteRun(faulty, testing::SharedClock(), f.plan, stage);
    ASSERT_FALSE(out.ok()) << "write " << n;
    EXPECT_EQ(out.error().kind, ErrorKind::kEnvironment) << "write " << n << ": " << out.error().ToString();
    EXPECT_NE(out.error().hint.find("start a new run"), std::string::npos) << out.error().ToString();
    const fs::path dir = f.plan.runs_dir / "test-run";
    EXPECT_TRUE(fs::exists(dir / "data")) << "write " << n;
    auto resumed = PrepareResume(RealFileSystem(), dir);
    ASSERT_FALSE(resumed.ok()) << "write " << n;
    EXPECT_NE(resumed.error().what.find("never started"), std::string::npos) << resumed.error().what;
  }
}

TEST(Run, EveryIdOnceInManifestOrderAndTheFolderVerifies) {
  Fixture f(
      {{"a", "fr salut"}, {"b", "en hi"}, {"c", ""}, {"d", "ru privet"}, {"e", "fail now"}, {"f", "low x"}});
  f.Expect("a", "fr");
  f.ExpectRejection("c", "empty_input");
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().verdict, RunVerdict::kPassed);
  EXPECT_TRUE(out.value().verify.ok());
  auto lines = ResultLines(out.value().run_dir);
  ASSERT_EQ(lines.size(), 6u);
  const char* want[] = {R"("id":"a","status":"accepted","category":"fr")",
                        R"("id":"b","status":"accepted")",
                        R"("id":"c","status":"rejected","reason":"empty_input")",
                        R"("id":"d","status":"rejected","reason":"category_not_allowed")",
                        R"("id":"e","status":"rejected","reason":"stage_error","detail":"scripted failure")",
                        R"("id":"f","status":"rejected","reason":"low_confidence")"};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NE(lines[i].find(want[i]), std::string::npos) << lines[i];
  EXPECT_EQ(out.value().report.accepted + out.value().report.rejected, 6u);
  // batch_size 2; the empty item never reaches the stage; the batch {e, f} fails as a whole
  // and is bisected, so that only e is rejected.
  EXPECT_EQ(stage.batch_sizes, (std::vector<std::size_t>{2, 1, 2, 1, 1}));
  EXPECT_EQ(out.value().report.batch_failure_count, 1u);
  for (const char* f_name :
       {"bagit.txt", "bag-info.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt", "data/run.json",
        "data/manifest.json", "data/params.json", "data/environment.json", "data/journal.jsonl",
        "data/results.jsonl", "data/report.json", "data/report.md"}) {
    EXPECT_TRUE(fs::exists(out.value().run_dir / f_name)) << f_name;
  }
  EXPECT_EQ(ReadText(out.value().run_dir / "data/manifest.json"), ReadText(f.inputs / "manifest.json"));
  EXPECT_EQ(ReadText(out.value().run_dir / "data/params.json"), f.plan.params_bytes);
}

TEST(Run, AnExistingRunFolderIsNeverTouched) {
  Fixture f(testing::Items{{"a", "fr salut"}});
  FakeStage stage;
  fs::create_directories(f.plan.runs_dir / "test-run");
  testing::WriteText(f.plan.runs_dir / "test-run/keep.txt", "precious");
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(out.error().what.find("already exists"), std::string::npos);
  EXPECT_EQ(ReadText(f.plan.runs_dir / "test-run/keep.txt"), "precious");
  EXPECT_EQ(std::distance(fs::directory_iterator(f.plan.runs_dir / "test-run"), fs::directory_iterator()), 1);
  EXPECT_TRUE(stage.batch_sizes.empty());
}

TEST(Run, InvalidRunIdIsRefusedBeforeAnythingIsCreated) {
  Fixture f(testing::Items{{"a", "fr salut"}});
  FakeStage stage;
  for (const char* bad : {"../escape", ".hidden", "a/b", ""}) {
    f.plan.run_id = bad;
    if (f.plan.run_id.empty()) continue;  // empty means "generate one"
    auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_FALSE(fs::exists(f.plan.runs_dir)) << bad;
  }
}

TEST(Run, GeneratedRunIdsAreFreshAndValid) {
  std::string a = NewRunId(testing::SharedClock()), b = NewRunId(testing::SharedClock());
  EXPECT_NE(a, b);
  EXPECT_TRUE(IsValidRunId(a));
  EXPECT_EQ(a.size(), std::string("20261129T191036Z-3f9a1c").size());
}

TEST(Run, AcceptanceNotMetExitsFourButVerifies) {
  Fixture f({{"a", "fr salut"}, {"b", "en hello"}});
  f.Expect("a", "de");
  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "batch_size": 2, "acceptance": {"min_accuracy": 0.5}})");
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value().verdict, RunVerdict::kAcceptanceFailed);
  EXPECT_TRUE(out.value().verify.ok());
}

TEST(Run, UnmetExpectedRejectionFailsVerification) {
  Fixture f(testing::Items{{"a", "fr salut"}});
  f.ExpectRejection("a", "invalid_encoding");
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value().verdict, RunVerdict::kVerifyFailed);
  ASSERT_EQ(out.value().verify.findings.size(), 1u);
  EXPECT_EQ(out.value().verify.findings[0].where, "a");
}

// Fail every write in turn: the run stops with a clear error, and whatever was left can
// never pass for a finished run (no bag manifests, verify fails).
TEST(Run, AFailedWriteNeverLeavesSomethingThatPassesForFinished) {
  Fixture probe({{"a", "fr salut"}, {"b", "en hi"}, {"c", "de hallo"}});
  FakeStage s0;
  FaultyFileSystem counting;
  ASSERT_TRUE(ExecuteRun(counting, testing::SharedClock(), probe.plan, s0).ok());
  const int total_writes = counting.writes;
  ASSERT_GT(total_writes, 10);
  for (int n = 1; n <= total_writes; ++n) {
    Fixture f({{"a", "fr salut"}, {"b", "en hi"}, {"c", "de hallo"}});
    FakeStage stage;
    FaultyFileSystem faulty(n);
    auto out = ExecuteRun(faulty, testing::SharedClock(), f.plan, stage);
    ASSERT_FALSE(out.ok()) << "write " << n;
    EXPECT_NE(out.error().what.find("injected"), std::string::npos);
    fs::path run = f.plan.runs_dir / "test-run";
    EXPECT_FALSE(fs::exists(run / "tagmanifest-sha256.txt")) << "write " << n;
    EXPECT_FALSE(VerifyRunFolder(RealFileSystem(), run, {}).ok()) << "write " << n;
  }
}

// Outputs no model may give are the model's fault: invalid_output, never accepted.
TEST(Run, ScoresOutsideZeroOneAreInvalidOutput) {
  Fixture f({{"a", "score5 x"}, {"b", "nan x"}, {"c", "en fine"}, {"d", "zz undeclared label"}});
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  const std::string results = ReadText(out.value().run_dir / "data/results.jsonl");
  EXPECT_EQ(out.value().report.by_reason.at("invalid_output"), 3u) << results;
  EXPECT_NE(results.find("not a probability in [0, 1]"), std::string::npos) << results;
  EXPECT_NE(results.find("not one of its declared labels"), std::string::npos) << results;
  EXPECT_TRUE(out.value().verify.ok());
}

// A long label of multi-byte characters once made a detail string cut inside a character
// abort the run; the record keeps it whole and valid.
TEST(Run, ALongMultiByteLabelStaysValidUtf8) {
  std::string label;
  for (int i = 0; i < 120; ++i) label += "\xe6\x97\xa5";
  Fixture f({{"a", label + " text"}, {"b", "en fine"}});
  FakeStage stage;
  stage.AddLabel(label);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  const std::string results = ReadText(out.value().run_dir / "data/results.jsonl");
  EXPECT_NE(results.find("category_not_allowed"), std::string::npos);
  EXPECT_NE(results.find(label), std::string::npos);
  EXPECT_TRUE(CheckUtf8(results).valid);
  EXPECT_TRUE(out.value().verify.ok());
}

// A JSON Lines manifest edited in place after validation: the run reads its pinned copy.
TEST(Run, ItemsComeFromThePinnedCopyNotTheOriginal) {
  Fixture f({{"a", "en one"}, {"b", "fr two"}});
  const fs::path jsonl = f.inputs / "m.jsonl";
  std::string lines;
  for (const auto& item : f.manifest.items) {
    lines +=
        "{\"id\":\"" + item.id + "\",\"path\":\"" + item.path + "\",\"sha256\":\"" + item.sha256 + "\"}\n";
  }
  WriteText(jsonl, lines);
  f.plan.manifest = ManifestSource::Open(RealFileSystem(), jsonl).value();
  class EditingStage : public FakeStage {
   public:
    explicit EditingStage(fs::path file) : file_(std::move(file)) {}
    BatchOutput Process(const std::vector<std::string_view>& texts) override {
      WriteText(file_, "{\"id\":\"evil\",\"path\":\"a.txt\",\"sha256\":\"" + std::string(64, 'a') + "\"}\n");
      return FakeStage::Process(texts);
    }

   private:
    fs::path file_;
  } stage(jsonl);
  f.plan.params.batch_size = 1;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().report.total, 2u);
  EXPECT_TRUE(out.value().verify.ok());
  EXPECT_EQ(ReadText(out.value().run_dir / "data/results.jsonl").find("evil"), std::string::npos);
}

}  // namespace
}  // namespace pilot
