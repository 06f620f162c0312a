// The run's setup as one library call (run_session.h), driven with a fake runtime: the plan,
// the environment against `requires`, the stage and its fit, and a shard's folder continued.
#include "pilot/run_session.h"

#include <gtest/gtest.h>

#include "pilot/folder_files.h"
#include "test_support.h"

namespace pilot {
namespace {

using testing::Fixture;
using testing::ReadText;

using testing::FakeRuntime;

const testing::Items kItems = {{"a", "en one"},  {"b", "fr deux"}, {"c", "de drei"},
                               {"d", "en four"}, {"e", "fr cinq"}, {"f", "de sechs"}};

SessionRequest NewRun(const Fixture& f) {
  SessionRequest request;
  request.run.params_file = f.dir / "params.json";
  request.run.runs_dir = f.dir / "runs";
  request.run.run_id = "r1";
  request.run.command_line = {"pilot", "run"};
  return request;
}

std::size_t Entries(const std::filesystem::path& dir) {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

TEST(RunSession, OneCallPlansChecksAndBuildsTheStageThenRunsToTheEnd) {
  Fixture f(kItems);
  FakeRuntime runtime;
  auto session = OpenRunSession(RealFileSystem(), runtime, NewRun(f));
  ASSERT_TRUE(session.ok()) << session.error().ToString();
  RunSession& s = session.value();
  ASSERT_TRUE(s.plan);
  EXPECT_FALSE(s.resume);
  EXPECT_FALSE(s.finished);
  ASSERT_TRUE(s.stage);
  EXPECT_EQ(runtime.stages_built, 1);
  EXPECT_EQ(s.plan->environment["libtorch"]["version"], "fake");
  EXPECT_EQ(s.plan->environment["device_used"], "cpu");
  EXPECT_EQ(s.plan->environment["received"]["backend"], "cpu");
  EXPECT_TRUE(s.plan->environment.contains("host"));
  EXPECT_EQ(Entries(f.dir / "runs"), 0u) << "the setup creates nothing";

  auto outcome = RunToEnd(RealFileSystem(), testing::SharedClock(), s, {});
  ASSERT_TRUE(outcome.ok()) << outcome.error().ToString();
  EXPECT_EQ(outcome.value().verdict, RunVerdict::kPassed);
  EXPECT_EQ(outcome.value().report.total, kItems.size());
  EXPECT_NE(ReadText(f.dir / "runs/r1/data/environment.json").find("\"fake\""), std::string::npos);
}

TEST(RunSession, UnmetRequirementsAreRefusedBeforeAnythingIsCreated) {
  Fixture f(kItems);
  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "requires": {"backend": "cuda", "min_device_count": 4}})");
  FakeRuntime runtime;
  auto session = OpenRunSession(RealFileSystem(), runtime, NewRun(f));
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().kind, ErrorKind::kEnvironment);
  EXPECT_NE(session.error().what.find("2 requirement(s) not met"), std::string::npos) << session.error().what;
  EXPECT_NE(session.error().hint.find("no run folder was created"), std::string::npos);
  EXPECT_EQ(runtime.stages_built, 0) << "no model is loaded for a machine that cannot run it";
  EXPECT_EQ(Entries(f.dir / "runs"), 0u);
}

TEST(RunSession, ARuntimeThatDoesNotLoadIsTheErrorAndNothingIsCreated) {
  Fixture f(kItems);
  FakeRuntime runtime;
  runtime.fails = EnvironmentError("cannot load the module", "libpilot-torch.so", "rebuild it");
  auto session = OpenRunSession(RealFileSystem(), runtime, NewRun(f));
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().where, "libpilot-torch.so");
  EXPECT_EQ(Entries(f.dir / "runs"), 0u);
}

TEST(RunSession, AStageThatDoesNotFitTheParametersIsRefusedNamingTheKey) {
  Fixture f(kItems);
  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "xx"]})");
  FakeRuntime runtime;
  auto session = OpenRunSession(RealFileSystem(), runtime, NewRun(f));
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(session.error().ToString().find("allowed_categories"), std::string::npos)
      << session.error().ToString();
  EXPECT_EQ(Entries(f.dir / "runs"), 0u);
}

TEST(RunSession, TorchrunsLocalRankPicksThisHostsDevice) {
  Fixture f(kItems);
  FakeRuntime runtime;
  runtime.backend = "cuda";
  SessionRequest request = NewRun(f);
  request.run.shard = ShardSpec{1, 2};
  request.local_rank = 1;
  auto session = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(session.ok()) << session.error().ToString();
  EXPECT_EQ(session.value().plan->params.device, "cuda:1");
  EXPECT_EQ(session.value().plan->environment["device_used"], "cuda:1");

  request.run.device = "cuda:0";  // a fixed device is kept as given
  auto fixed = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(fixed.ok()) << fixed.error().ToString();
  EXPECT_EQ(fixed.value().plan->params.device, "cuda:0");
}

// A resubmitted shard task: the same request continues its folder, then finds it finished.
TEST(RunSession, AShardsExistingFolderResumesThenVerifiesOnceFinished) {
  Fixture f(kItems);
  FakeRuntime runtime;
  SessionRequest request = NewRun(f);
  request.run.shard = ShardSpec{0, 1};
  std::vector<std::string> notes;
  request.on_note = [&](const std::string& n) { notes.push_back(n); };

  auto first = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  RunControl stop;
  stop.stop_after = 2;
  auto interrupted = RunToEnd(RealFileSystem(), testing::SharedClock(), first.value(), stop);
  ASSERT_TRUE(interrupted.ok()) << interrupted.error().ToString();
  ASSERT_TRUE(interrupted.value().interrupted);
  EXPECT_TRUE(notes.empty());

  auto again = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  ASSERT_TRUE(again.value().resume);
  EXPECT_FALSE(again.value().plan);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("shard 0/1 resumes its folder"), std::string::npos) << notes[0];
  auto finished = RunToEnd(RealFileSystem(), testing::SharedClock(), again.value(), {});
  ASSERT_TRUE(finished.ok()) << finished.error().ToString();
  EXPECT_FALSE(finished.value().interrupted);
  EXPECT_EQ(finished.value().report.total, kItems.size());
  EXPECT_TRUE(finished.value().verify.ok());
  const std::string results = ReadText(f.dir / "runs/r1/data/results.jsonl");

  notes.clear();
  const int built_before = runtime.stages_built;
  // A finished shard needs no model: a runtime that cannot even load is never asked.
  runtime.fails = EnvironmentError("cannot load the module", "libpilot-torch.so");
  auto done = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done.value().finished);
  ASSERT_TRUE(done.value().resume && done.value().resume->finished_verify);
  EXPECT_TRUE(done.value().resume->finished_verify->ok());
  EXPECT_EQ(runtime.stages_built, built_before) << "a finished shard loads no model";
  runtime.fails.reset();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("already finished"), std::string::npos) << notes[0];
  EXPECT_FALSE(RunToEnd(RealFileSystem(), testing::SharedClock(), done.value(), {}).ok());
  EXPECT_EQ(ReadText(f.dir / "runs/r1/data/results.jsonl"), results) << "nothing was rewritten";
}

TEST(RunSession, AShardFolderOfAnotherShardOrOtherParametersIsNeverContinued) {
  Fixture f(kItems);
  FakeRuntime runtime;
  SessionRequest request = NewRun(f);
  request.run.shard = ShardSpec{0, 2};
  auto first = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  RunControl stop;
  stop.stop_after = 1;
  ASSERT_TRUE(RunToEnd(RealFileSystem(), testing::SharedClock(), first.value(), stop).ok());
  const std::string journal = ReadText(f.dir / "runs/r1" / kJournal);

  SessionRequest other = request;
  other.run.shard = ShardSpec{1, 2};
  auto wrong_shard = OpenRunSession(RealFileSystem(), runtime, other);
  ASSERT_FALSE(wrong_shard.ok());
  EXPECT_NE(wrong_shard.error().what.find("holds shard 0/2, not shard 1/2"), std::string::npos)
      << wrong_shard.error().what;
  EXPECT_EQ(wrong_shard.error().where, (f.dir / "runs/r1").string());

  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "batch_size": 3})");
  auto changed = OpenRunSession(RealFileSystem(), runtime, request);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().what.find("exists for another parameters"), std::string::npos)
      << changed.error().what;
  EXPECT_EQ(ReadText(f.dir / "runs/r1" / kJournal), journal) << "the refused folder is untouched";
}

TEST(RunSession, ResumeTakesTheFolderAloneAndAnotherDevice) {
  Fixture f(kItems);
  FakeRuntime runtime;
  auto first = OpenRunSession(RealFileSystem(), runtime, NewRun(f));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  RunControl stop;
  stop.stop_after = 2;
  ASSERT_TRUE(RunToEnd(RealFileSystem(), testing::SharedClock(), first.value(), stop).value().interrupted);

  const std::string journal = ReadText(f.dir / "runs/r1" / kJournal);

  // A device this machine lacks is refused, and the folder stays as it was, resumable.
  SessionRequest resume;
  resume.resume = f.dir / "runs/r1";
  resume.device = "cuda";
  resume.run.command_line = {"pilot", "resume"};
  auto refused = OpenRunSession(RealFileSystem(), runtime, resume);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kEnvironment);
  EXPECT_NE(refused.error().hint.find("the run folder stays resumable"), std::string::npos)
      << refused.error().hint;
  EXPECT_EQ(ReadText(f.dir / "runs/r1" / kJournal), journal);

  resume.device = "cpu";
  auto session = OpenRunSession(RealFileSystem(), runtime, resume);
  ASSERT_TRUE(session.ok()) << session.error().ToString();
  ASSERT_TRUE(session.value().resume);
  EXPECT_EQ(session.value().resume->plan.params.device, "cpu");
  EXPECT_EQ(session.value().resume->plan.command_line, resume.run.command_line);
  auto finished = RunToEnd(RealFileSystem(), testing::SharedClock(), session.value(), {});
  ASSERT_TRUE(finished.ok()) << finished.error().ToString();
  EXPECT_EQ(finished.value().verdict, RunVerdict::kPassed);
  EXPECT_EQ(finished.value().report.total, kItems.size());
}

}  // namespace
}  // namespace pilot
