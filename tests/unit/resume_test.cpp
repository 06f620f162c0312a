#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "pilot/run.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::FaultyFileSystem;
using testing::Fixture;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

testing::Items TenItems() {
  return {{"i01", "fr un"},  {"i02", "en two"}, {"i03", ""},        {"i04", "de drei"}, {"i05", "ru chetyre"},
          {"i06", "fail x"}, {"i07", "low y"},  {"i08", "fr huit"}, {"i09", "en nine"}, {"i10", "de zehn"}};
}

// results.jsonl without the fields that legitimately differ between runs (latency).
std::string Outcomes(const fs::path& run) {
  std::istringstream in(ReadText(run / "data/results.jsonl"));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    auto rec = ParseResultRecord(line, "r");
    out += rec.value().id + " " + (rec.value().accepted ? rec.value().category : rec.value().reason) + "\n";
  }
  return out;
}

std::string Straight(Fixture& f) {
  FakeStage stage;
  RunPlan plan = f.plan;
  plan.run_id = "straight";
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage);
  EXPECT_TRUE(out.ok());
  return Outcomes(out.value().run_dir);
}

Result<RunOutcome> Resume(const fs::path& dir, FakeStage& stage) {
  auto setup = PrepareResume(RealFileSystem(), dir);
  if (!setup.ok()) return setup.error();
  return ResumeRun(RealFileSystem(), testing::SharedClock(), setup.value(), stage);
}

TEST(Resume, StoppedRunFinishesAsAStraightRunWouldProcessingOnlyTheRest) {
  Fixture f(TenItems());
  const std::string want = Straight(f);
  FakeStage first;
  RunControl stop;
  stop.stop_after = 4;
  auto part = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, first, stop);
  ASSERT_TRUE(part.ok());
  EXPECT_TRUE(part.value().interrupted);
  EXPECT_EQ(part.value().verdict, RunVerdict::kInterrupted);
  EXPECT_EQ(part.value().progress.done, 4u);
  const fs::path dir = part.value().run_dir;
  EXPECT_FALSE(fs::exists(dir / "tagmanifest-sha256.txt"));
  EXPECT_FALSE(VerifyRunFolder(RealFileSystem(), dir, {}).ok());

  auto status = ReadRunStatus(RealFileSystem(), dir);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status.value().state, "interrupted");
  EXPECT_EQ(status.value().done, 4u);
  EXPECT_EQ(status.value().total, 10u);
  EXPECT_EQ(status.value().accepted + status.value().rejected, 4u);

  FakeStage second;
  auto done = Resume(dir, second);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done.value().verdict, RunVerdict::kPassed);
  EXPECT_TRUE(done.value().verify.ok());
  EXPECT_EQ(Outcomes(dir), want);
  // Items 5..10 were not staged before: 6 items in batches of 2, plus the bisection of the
  // batch {i05, i06} that "fail x" fails as a whole (2 more calls of one item).
  std::size_t staged = 0;
  for (auto n : second.batch_sizes) staged += n;
  EXPECT_EQ(staged, 8u) << "only the items without a result reach the stage again";
  EXPECT_EQ(second.batch_sizes, (std::vector<std::size_t>{2, 1, 1, 2, 2}));
  EXPECT_EQ(ReadRunStatus(RealFileSystem(), dir).value().state, "finished");
  EXPECT_FALSE(fs::exists(dir / ".lock"));
}

class ResumeRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    f_ = std::make_unique<Fixture>(TenItems());
    FakeStage stage;
    RunControl stop;
    stop.stop_after = 2;
    auto part = ExecuteRun(RealFileSystem(), testing::SharedClock(), f_->plan, stage, stop);
    ASSERT_TRUE(part.ok());
    dir_ = part.value().run_dir;
    journal_before_ = ReadText(dir_ / "data/journal.jsonl");
  }
  void ExpectRefused(const std::string& what, const std::string& where) {
    auto setup = PrepareResume(RealFileSystem(), dir_);
    ASSERT_FALSE(setup.ok());
    EXPECT_EQ(setup.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(setup.error().what.find(what), std::string::npos) << setup.error().ToString();
    EXPECT_NE(setup.error().where.find(where), std::string::npos) << setup.error().ToString();
    EXPECT_EQ(ReadText(dir_ / "data/journal.jsonl"), journal_before_);
  }
  std::unique_ptr<Fixture> f_;
  fs::path dir_;
  std::string journal_before_;
};

TEST_F(ResumeRefusal, ChangedCopyOfTheManifest) {
  WriteText(dir_ / "data/manifest.json", ReadText(dir_ / "data/manifest.json") + " ");
  ExpectRefused("the manifest changed", "data/manifest.json");
}

TEST_F(ResumeRefusal, ChangedParameters) {
  WriteText(dir_ / "data/params.json", ReadText(dir_ / "data/params.json") + " ");
  ExpectRefused("the parameter file changed", "data/params.json");
}

TEST_F(ResumeRefusal, ChangedModel) {
  WriteText(f_->dir / "model.bin", "another model");
  ExpectRefused("the model file changed", "model.bin");
}

TEST_F(ResumeRefusal, SecondWriter) {
  auto held = RunLock::Acquire(RealFileSystem(), dir_);
  ASSERT_TRUE(held.ok());
  ExpectRefused("being written by process " + std::to_string(::getpid()), dir_.string());
}

TEST_F(ResumeRefusal, FinishedRun) {
  FakeStage stage;
  ASSERT_TRUE(Resume(dir_, stage).ok());
  journal_before_ = ReadText(dir_ / "data/journal.jsonl");
  ExpectRefused("already finished", dir_.string());
  EXPECT_FALSE(fs::exists(dir_ / ".lock")) << "a refused resume leaves a finished folder untouched";
}

TEST_F(ResumeRefusal, ALockThatIsASymlinkTouchesNothingOutside) {
  TempDir outside;
  WriteText(outside / "victim.txt", "precious\n");
  fs::create_symlink(outside / "victim.txt", dir_ / ".lock");
  ExpectRefused("is a symlink", ".lock");
  EXPECT_EQ(ReadText(outside / "victim.txt"), "precious\n");
}

TEST_F(ResumeRefusal, AJournalThatIsASymlinkIsNeitherAppendedNorTruncated) {
  TempDir outside;
  const std::string copy = journal_before_ + "{\"type\":\"batch\"";  // a torn record: resume would truncate
  WriteText(outside / "journal.jsonl", copy);
  fs::remove(dir_ / "data/journal.jsonl");
  fs::create_symlink(outside / "journal.jsonl", dir_ / "data/journal.jsonl");
  journal_before_ = copy;
  ExpectRefused("is a symlink", "journal.jsonl");
  EXPECT_EQ(ReadText(outside / "journal.jsonl"), copy);
  EXPECT_FALSE(fs::exists(dir_ / ".lock")) << "a refused resume leaves no lock behind";
}

TEST_F(ResumeRefusal, ADataFolderThatIsASymlink) {
  TempDir outside;
  fs::rename(dir_ / "data", outside / "data");
  fs::create_directory_symlink(outside / "data", dir_ / "data");
  ExpectRefused("data/ is a symlink", "data");
}

TEST_F(ResumeRefusal, AFifoInTheFolder) {
  ASSERT_EQ(::mkfifo((dir_ / "data/report.json").c_str(), 0600), 0);
  ExpectRefused("not a regular file", "report.json");
}

TEST_F(ResumeRefusal, AHeaderNamingADeviceAsTheModel) {
  std::string j = journal_before_;
  auto at = j.find("\"model\":\"");
  ASSERT_NE(at, std::string::npos);
  auto end = j.find('"', at + 9);
  j.replace(at + 9, end - at - 9, "/dev/zero");
  WriteText(dir_ / "data/journal.jsonl", j);
  journal_before_ = j;
  ExpectRefused("the model file is missing or unreadable", "/dev/zero");
}

TEST(Resume, ARelativeFolderNameWorksFromInsideTheRunsFolder) {
  Fixture f(TenItems());
  FakeStage stage;
  RunControl stop;
  stop.stop_after = 2;
  auto part = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage, stop);
  ASSERT_TRUE(part.ok());
  const fs::path cwd = fs::current_path();
  fs::current_path(f.plan.runs_dir);
  auto setup = PrepareResume(RealFileSystem(), part.value().run_id);
  fs::current_path(cwd);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  EXPECT_TRUE(setup.value().plan.runs_dir.is_absolute());
  EXPECT_EQ(setup.value().run_dir, part.value().run_dir);
}

TEST(Resume, AFinishedRunWithAStaleLockIsNotRewritten) {
  Fixture f(TenItems());
  FakeStage stage;
  auto done = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(done.ok());
  const fs::path dir = done.value().run_dir;
  const std::string tags = ReadText(dir / "tagmanifest-sha256.txt");
  const std::string results = ReadText(dir / "data/results.jsonl");
  const auto run_json_time = fs::last_write_time(dir / "data/run.json");
  WriteText(dir / ".lock", "999999\n");  // a process killed after its last write, before removing it
  auto setup = PrepareResume(RealFileSystem(), dir);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  EXPECT_TRUE(setup.value().already_finished);
  ASSERT_TRUE(setup.value().finished_verify.has_value());
  EXPECT_TRUE(setup.value().finished_verify->ok());
  EXPECT_FALSE(fs::exists(dir / ".lock"));
  EXPECT_EQ(ReadText(dir / "tagmanifest-sha256.txt"), tags);
  EXPECT_EQ(ReadText(dir / "data/results.jsonl"), results);
  EXPECT_EQ(fs::last_write_time(dir / "data/run.json"), run_json_time);
}

TEST(Resume, AWriteFailureDuringWorkIsExitFiveAndResumable) {
  Fixture f(TenItems());
  FakeStage stage;
  FaultyFileSystem faulty(5);
  auto out = ExecuteRun(faulty, testing::SharedClock(), f.plan, stage);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::kWorkFailed) << out.error().ToString();
  EXPECT_NE(out.error().hint.find("pilot resume"), std::string::npos);
}

// The disk fails at every write in turn (a full disk: part of an append lands). Half of
// the cases also lose whatever was not fsynced, as after a power cut. Every one resumes to
// the same results as a straight run, each id exactly once.
TEST(Resume, AfterAFailedWriteAtEveryPointAndLostUnsyncedData) {
  Fixture probe(TenItems());
  const std::string want = Straight(probe);
  FaultyFileSystem counting;
  FakeStage s0;
  RunPlan plan = probe.plan;
  plan.run_id = "count";
  ASSERT_TRUE(ExecuteRun(counting, testing::SharedClock(), plan, s0).ok());
  const int total = counting.writes;
  int resumed = 0;
  for (int n = 1; n <= total; ++n) {
    Fixture f(TenItems());
    FakeStage stage;
    FaultyFileSystem faulty(n);
    auto out = ExecuteRun(faulty, testing::SharedClock(), f.plan, stage);
    ASSERT_FALSE(out.ok()) << "write " << n;
    // Writes 1-3 are the manifest's copy, the parameters' copy and the journal's header.
    const bool before_header = n <= 3;
    EXPECT_NE(out.error().hint.find(before_header ? "start a new run" : "pilot resume"), std::string::npos)
        << out.error().ToString();
    if (n % 2) faulty.DropUnsynced();
    const fs::path dir = f.plan.runs_dir / "test-run";
    FakeStage again;
    auto done = Resume(dir, again);
    if (before_header) {  // the journal's header never landed: nothing was processed
      ASSERT_FALSE(done.ok());
      EXPECT_NE(done.error().what.find("never started"), std::string::npos) << done.error().what;
      continue;
    }
    ASSERT_TRUE(done.ok()) << "write " << n << ": " << done.error().ToString();
    EXPECT_EQ(done.value().verdict, RunVerdict::kPassed) << "write " << n;
    EXPECT_EQ(Outcomes(dir), want) << "write " << n;
    ++resumed;
  }
  EXPECT_EQ(resumed, total - 3);
}

}  // namespace
}  // namespace pilot
