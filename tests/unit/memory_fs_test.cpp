// The in-memory file system, and the whole engine on it: a run, its bag, verify, status,
// an interrupted run resumed. Every path lives under a root that does not exist on disk,
// so a library file access that bypassed the FileSystem seam would fail these tests.
#include "pilot/memory_fs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <iterator>

#include "pilot/bag.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/plan.h"
#include "pilot/results.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;

// A root that is not on this machine's disk: whatever is found there came from the seam.
const fs::path kRoot = "/pilot-memory-fs-test-" + std::to_string(::getpid());

using testing::FakeClock;

TEST(MemoryFileSystem, ReadsWritesAppendsAndListsAsTheRealOneDoes) {
  MemoryFileSystem m;
  const fs::path d = kRoot / "d";
  ASSERT_TRUE(m.CreateDirectories(d / "sub").ok());
  ASSERT_TRUE(m.WriteFileAtomic(d / "a.txt", "one\ntwo\n").ok());
  auto append = m.OpenAppend(d / "b.log");
  ASSERT_TRUE(append.ok());
  ASSERT_TRUE(append.value()->Append("x").ok());
  ASSERT_TRUE(append.value()->Append("yz").ok());
  EXPECT_EQ(m.Contents(d / "b.log"), "xyz");
  ASSERT_TRUE(m.Truncate(d / "b.log", 1).ok());
  EXPECT_EQ(m.Contents(d / "b.log"), "x");
  EXPECT_EQ(m.ReadFile(d / "a.txt", 100).value(), "one\ntwo\n");
  EXPECT_EQ(m.ReadFile(d / "a.txt", 2).value(), "one")
      << "at most max_bytes + 1: the caller sees it is larger";
  EXPECT_EQ(m.Stat(d / "a.txt").value().size, 8u);
  EXPECT_FALSE(m.Stat(d / "none").value().exists);

  auto names = m.ListDirectory(d);
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names.value().size(), 3u);
  EXPECT_EQ(names.value()[0].name, "a.txt");
  EXPECT_EQ(names.value()[1].name, "b.log");
  EXPECT_EQ(names.value()[2].name, "sub");
  EXPECT_TRUE(names.value()[2].stat.directory);
  EXPECT_FALSE(m.ListDirectory(d / "a.txt").ok());

  auto lines = LineReader::Open(m, d / "a.txt", 10);
  ASSERT_TRUE(lines.ok());
  std::string line;
  ASSERT_TRUE(lines.value().Next(line).value());
  EXPECT_EQ(line, "one");
  ASSERT_TRUE(lines.value().Next(line).value());
  EXPECT_EQ(line, "two");
  EXPECT_FALSE(lines.value().Next(line).value());
  EXPECT_EQ(Sha256File(m, d / "a.txt").value(), Sha256Hex("one\ntwo\n"));

  EXPECT_FALSE(m.CreateDirectoryExclusive(d).ok()) << "a folder is never reused";
  EXPECT_TRUE(m.CreateDirectoryExclusive(d / "fresh").ok());
  ASSERT_TRUE(m.RemoveFile(d / "a.txt").ok());
  EXPECT_TRUE(m.RemoveFile(d / "a.txt").ok()) << "a missing file is fine";
  EXPECT_FALSE(m.RemoveFile(d / "sub").ok());
  EXPECT_FALSE(m.CreateDirectories(d / "b.log" / "x").ok());
}

TEST(MemoryFileSystem, RefusesToWriteThroughALinkOrReadWhatIsNotARegularFile) {
  MemoryFileSystem m;
  const fs::path d = kRoot / "h";
  m.AddFile(kRoot / "outside/secret", "keep");
  m.AddSymlink(d / "link", kRoot / "outside/secret");
  m.AddSymlink(d / "folder-link", kRoot / "outside");
  m.AddSpecial(d / "fifo");
  m.AddSymlink(d / "loop", d / "loop");

  EXPECT_FALSE(m.WriteFileAtomic(d / "link", "x").ok());
  EXPECT_FALSE(m.OpenAppend(d / "link").ok());
  EXPECT_FALSE(m.Truncate(d / "link", 0).ok());
  EXPECT_FALSE(m.WriteFileAtomic(d / "folder-link/new", "x").ok()) << "the folder itself is a link";
  EXPECT_FALSE(m.TryLock(d / "link", true, true).ok());
  EXPECT_EQ(m.Contents(kRoot / "outside/secret"), "keep");
  EXPECT_FALSE(m.Contents(kRoot / "outside/new").has_value());

  EXPECT_FALSE(m.OpenRead(d / "link", /*follow_symlinks=*/false).ok());
  EXPECT_EQ(m.ReadFile(d / "link", 10).value(), "keep") << "followed where following is asked for";
  EXPECT_TRUE(m.LinkStat(d / "link").value().symlink);
  EXPECT_TRUE(m.Stat(d / "link").value().regular);
  auto fifo = m.OpenRead(d / "fifo", true);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().what.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(m.OpenRead(d, true).ok());
  EXPECT_FALSE(m.Stat(d / "loop").ok()) << "a loop of links is an error, not a hang";
  EXPECT_FALSE(Sha256File(m, d / "fifo").ok());

  // Resolve: weakly canonical, as std::filesystem's.
  EXPECT_EQ(m.Resolve(d / "folder-link/secret").value(), kRoot / "outside/secret");
  EXPECT_EQ(m.Resolve(d / "folder-link/missing/x").value(), kRoot / "outside/missing/x");
  EXPECT_FALSE(ConfinePath(m, d, "link").inside) << "a link out of the root is an escape";
  EXPECT_TRUE(ConfinePath(m, d, "plain.txt").inside);
}

// A file written in pieces appears whole at Commit or not at all, on both file systems.
void AtomicFileContract(FileSystem& files, const fs::path& dir,
                        const std::function<std::string(const fs::path&)>& read,
                        const std::function<std::size_t(const fs::path&)>& count) {
  ASSERT_TRUE(files.CreateDirectories(dir).ok());
  ASSERT_TRUE(files.WriteFileAtomic(dir / "r.jsonl", "old\n").ok());
  {
    auto dropped = files.CreateAtomic(dir / "r.jsonl");
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(dropped.value()->Append("new 1\n").ok());
  }
  EXPECT_EQ(read(dir / "r.jsonl"), "old\n") << "dropped without Commit: the previous contents";
  EXPECT_EQ(count(dir), 1u) << "and no temp file left";
  auto kept = files.CreateAtomic(dir / "r.jsonl");
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept.value()->Append("new 1\n").ok());
  ASSERT_TRUE(kept.value()->Append("new 2\n").ok());
  EXPECT_EQ(read(dir / "r.jsonl"), "old\n") << "nothing shows before Commit";
  ASSERT_TRUE(kept.value()->Commit().ok());
  EXPECT_EQ(read(dir / "r.jsonl"), "new 1\nnew 2\n");
  EXPECT_EQ(count(dir), 1u);
  EXPECT_FALSE(kept.value()->Commit().ok()) << "once";
}

TEST(MemoryFileSystem, AnAtomicFileAppearsWholeOrNotAtAllAsOnDisk) {
  MemoryFileSystem m;
  AtomicFileContract(
      m, kRoot / "a", [&](const fs::path& f) { return m.Contents(f).value_or("<none>"); },
      [&](const fs::path& d) { return m.ListDirectory(d).value().size(); });
  m.AddSymlink(kRoot / "a/link", kRoot / "elsewhere");
  EXPECT_FALSE(m.CreateAtomic(kRoot / "a/link").ok()) << "never through a link";

  testing::TempDir t;
  AtomicFileContract(
      RealFileSystem(), t / "a", [](const fs::path& f) { return testing::ReadText(f); },
      [](const fs::path& d) {
        return static_cast<std::size_t>(std::distance(fs::directory_iterator(d), {}));
      });
  fs::create_symlink(t / "elsewhere", t / "a/link");
  EXPECT_FALSE(RealFileSystem().CreateAtomic(t / "a/link").ok()) << "never through a link";
  EXPECT_FALSE(fs::exists(t / "elsewhere"));
}

TEST(MemoryFileSystem, LocksConflictAsFlockDoes) {
  MemoryFileSystem m;
  const fs::path run = kRoot / "run";
  m.AddFolder(run);
  auto held = RunLock::Acquire(m, run);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(LockHolder(m, run), static_cast<long>(::getpid()));
  auto second = RunLock::Acquire(m, run);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().what.find("being written by process " + std::to_string(::getpid())),
            std::string::npos);
  { RunLock gone = std::move(held).value(); }
  EXPECT_FALSE(m.Contents(run / kLockFile).has_value()) << "a lock this process created goes with it";
  EXPECT_FALSE(LockHolder(m, run).has_value());
  EXPECT_TRUE(RunLock::Acquire(m, run).ok());
}

// Inputs, parameters and model, all in memory.
struct MemoryInputs {
  MemoryFileSystem files;
  fs::path dir = kRoot / "in";
  explicit MemoryInputs(const testing::Items& items) {
    std::string manifest;
    for (const auto& [id, text] : items) {
      files.AddFile(dir / "docs" / (id + ".txt"), text);
      manifest +=
          R"({"id":")" + id + R"(","path":"docs/)" + id + R"(.txt","sha256":")" + Sha256Hex(text) + "\"}\n";
    }
    files.AddFile(dir / "manifest.jsonl", manifest);
    files.AddFile(dir / "model.bin", "fake model");
    files.AddFile(dir / "params.json", R"({"manifest": "manifest.jsonl",
      "stage": {"kind": "fake", "model": "model.bin"},
      "allowed_categories": ["en", "fr", "de"], "batch_size": 2})");
  }
  Result<RunPlan> Plan(const std::string& run_id) {
    RunRequest request;
    request.params_file = dir / "params.json";
    request.runs_dir = kRoot / "runs";
    request.run_id = run_id;
    request.command_line = {"pilot", "run"};
    return BuildRunPlan(files, request);
  }
};

testing::Items Items() {
  return {{"a", "fr un"}, {"b", "en two"}, {"c", ""}, {"d", "de drei"}, {"e", "ru chetyre"}, {"f", "fail x"}};
}

TEST(MemoryFileSystem, AWholeRunItsBagAndItsVerificationTouchNoDisk) {
  MemoryInputs in(Items());
  auto plan = in.Plan("mem");
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  FakeStage stage;
  FakeClock clock;
  auto out = ExecuteRun(in.files, clock, plan.value(), stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok())
      << (out.value().verify.findings.empty() ? "" : out.value().verify.findings[0].what);
  EXPECT_EQ(out.value().report.accepted + out.value().report.rejected, 6u);
  EXPECT_FALSE(fs::exists(kRoot)) << "nothing reached the disk";

  const fs::path run = kRoot / "runs/mem";
  for (const char* rel : {"bagit.txt", "bag-info.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt",
                          "data/results.jsonl", "data/journal.jsonl", "data/manifest.jsonl",
                          "data/params.json", "data/report.json", "data/run.json"}) {
    EXPECT_TRUE(in.files.Contents(run / rel).has_value()) << rel;
  }
  EXPECT_FALSE(in.files.Contents(run / kLockFile).has_value()) << "the lock is gone once the bag is done";
  EXPECT_EQ(ReadFolderKind(in.files, run).value().kind, kFolderKindRun);
  auto status = ReadRunStatus(in.files, run);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status.value().state, "finished");
  EXPECT_EQ(status.value().done, 6u);
  EXPECT_TRUE(VerifyFolder(in.files, run, {}).value().ok());

  // A byte changed after the run: fixity and the journal both say so; --fast sees the
  // journal's account only.
  std::string results = *in.files.Contents(run / "data/results.jsonl");
  results[results.find("\"fr\"") + 1] = 'd';
  results[results.find("\"de\"") + 1] = 'f';
  in.files.AddFile(run / "data/results.jsonl", results);
  VerifyResult changed = VerifyRunFolder(in.files, run, {});
  EXPECT_FALSE(changed.ok());
  bool fixity = false, journal = false;
  for (const auto& f : changed.findings) {
    fixity = fixity || f.check == "fixity";
    journal = journal || f.what.find("differs from its record in data/journal.jsonl") != std::string::npos;
  }
  EXPECT_TRUE(fixity);
  EXPECT_TRUE(journal);
}

TEST(MemoryFileSystem, AnInterruptedRunResumesToTheSameResultsAsAStraightOne) {
  MemoryInputs in(Items());
  FakeStage straight_stage;
  FakeClock clock;
  auto straight = ExecuteRun(in.files, clock, in.Plan("straight").value(), straight_stage);
  ASSERT_TRUE(straight.ok());

  FakeStage first;
  RunControl stop;
  stop.stop_after = 3;
  auto part = ExecuteRun(in.files, clock, in.Plan("part").value(), first, stop);
  ASSERT_TRUE(part.ok()) << part.error().ToString();
  EXPECT_EQ(part.value().verdict, RunVerdict::kInterrupted);
  const fs::path run = kRoot / "runs/part";
  EXPECT_EQ(ReadRunStatus(in.files, run).value().state, "interrupted");
  EXPECT_FALSE(in.files.Contents(run / "tagmanifest-sha256.txt").has_value());

  auto setup = PrepareResume(in.files, run);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  FakeStage second;
  auto done = ResumeRun(in.files, clock, setup.value(), second);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done.value().verdict, RunVerdict::kPassed);
  EXPECT_TRUE(done.value().verify.ok());
  // The same outcome per id: the lines differ only in their latencies.
  auto outcomes = [&](const fs::path& dir) {
    std::string out;
    auto reader = LineReader::Open(in.files, dir / "data/results.jsonl", 1 << 20);
    std::string line;
    while (reader.value().Next(line).value()) {
      auto rec = ParseResultRecord(line, "r").value();
      out += rec.id + " " + (rec.accepted ? rec.category : rec.reason) + "\n";
    }
    return out;
  };
  EXPECT_EQ(outcomes(run), outcomes(kRoot / "runs/straight"));
  EXPECT_FALSE(fs::exists(kRoot));
}

TEST(MemoryFileSystem, AResumeRefusesALinkPlantedInTheFolderAndLeavesItAsItWas) {
  MemoryInputs in(Items());
  FakeStage first;
  FakeClock clock;
  RunControl stop;
  stop.stop_after = 2;
  ASSERT_TRUE(ExecuteRun(in.files, clock, in.Plan("p").value(), first, stop).ok());
  const fs::path run = kRoot / "runs/p";
  in.files.AddSymlink(run / "data/report.json", kRoot / "in/params.json");
  const auto before = in.files.Files();
  auto setup = PrepareResume(in.files, run);
  ASSERT_FALSE(setup.ok());
  EXPECT_NE(setup.error().what.find("is a symlink"), std::string::npos);
  EXPECT_EQ(setup.error().where, (run / "data/report.json").string());
  EXPECT_EQ(in.files.Files(), before) << "nothing written, the lock included";
}

}  // namespace
}  // namespace pilot
