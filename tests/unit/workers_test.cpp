// `pilot run --workers` (fleet/workers.h) against a fake process table: the checks before
// anything is created, what the supervisor starts, how it stops the workers on an interrupt or
// a failed start, how each end is decoded, the descriptors it hands down and closes, and the
// merge once every worker (run in process by the fake) has finished.
#include "pilot/fleet/workers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <deque>
#include <map>
#include <set>

#include "pilot/shard.h"
#include "test_support.h"

namespace pilot {
namespace {

// Children that end when the test says so (or when signalled, as a real one would).
class FakeProcesses : public Processes {
 public:
  Result<long> Spawn(const ChildSpec& child) override {
    if (fail_at && spawned.size() == *fail_at)
      return EnvironmentError("fork: Resource temporarily unavailable", "fork");
    spawned.push_back(child);
    return static_cast<long>(1000 + spawned.size() - 1);
  }
  std::optional<std::pair<long, ChildEnd>> Reap(double) override {
    ++reaps;
    if (ends.empty()) return std::nullopt;
    auto e = ends.front();
    ends.pop_front();
    return e;
  }
  Result<std::optional<ChildEnd>> Wait(long, const std::function<bool()>&) override {
    return std::optional<ChildEnd>(ChildEnd{});
  }
  void Signal(long pid, int signal) override {
    signals.emplace_back(pid, signal);
    if (signal == SIGTERM) ends.push_back({pid, ChildEnd{0, SIGTERM, 0}});  // it stops on TERM
  }
  Result<int> OpenFolderForChild(const std::string& dir) override {
    folders.push_back(dir);
    open.insert(kFolderFd);
    return kFolderFd;
  }
  Result<int> OpenLogForChild(int dir_fd, const std::string& name) override {
    EXPECT_EQ(dir_fd, kFolderFd);
    if (name == unopenable_log) return BadInput("not a regular file", name);
    logs.push_back(name);
    const int fd = 100 + static_cast<int>(logs.size()) - 1;
    open.insert(fd);
    return fd;
  }
  void Close(int fd) override {
    EXPECT_EQ(open.erase(fd), 1u) << "closed twice or never opened: " << fd;
    closed.push_back(fd);
  }

  static constexpr int kFolderFd = 50;
  std::string unopenable_log;
  std::vector<std::string> folders, logs;
  std::set<int> open;
  std::vector<int> closed;

  std::optional<std::size_t> fail_at;
  std::vector<ChildSpec> spawned;
  std::deque<std::pair<long, ChildEnd>> ends;
  std::vector<std::pair<long, int>> signals;
  int reaps = 0;
};

std::vector<WorkerChild> Workers(int n) {
  std::vector<WorkerChild> w(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    w[static_cast<std::size_t>(k)].shard = std::to_string(k) + "/" + std::to_string(n);
    w[static_cast<std::size_t>(k)].child.args = {"pilot", "run", "--shard",
                                                 w[static_cast<std::size_t>(k)].shard};
  }
  return w;
}

TEST(Workers, EachIsStartedOnceAndEachEndIsRecordedInShardOrder) {
  FakeProcesses p;
  // They end out of order: one finishes, one fails as pilot does (exit 5), one is killed.
  p.ends = {{1002, ChildEnd{0, SIGKILL, 0}}, {1000, ChildEnd{0, 0, 0}}, {1001, ChildEnd{5, 0, 0}}};
  bool started = false;
  WorkersControl control;
  control.started = [&] { started = p.spawned.size() == 3; };
  auto out = SuperviseWorkers(p, Workers(3), control);
  ASSERT_TRUE(out.ok()) << out.error().what;
  EXPECT_TRUE(started);  // called once all three had started
  ASSERT_EQ(p.spawned.size(), 3u);
  EXPECT_EQ(p.spawned[1].args[3], "1/3");
  EXPECT_EQ(out.value().status, (std::vector<int>{0, 5, 128 + SIGKILL}));
  EXPECT_FALSE(out.value().stopped);
  EXPECT_TRUE(p.signals.empty());
}

TEST(Workers, AnInterruptStopsEachRunningWorkerOnce) {
  FakeProcesses p;
  p.ends = {{1001, ChildEnd{0, 0, 0}}};  // shard 1 finishes; 0 and 2 run until stopped
  int asked = 0;
  std::size_t last_running = 0;
  WorkersControl control;
  control.interrupted = [&] { return ++asked >= 3; };
  control.progress = [&](std::size_t running) { last_running = running; };
  auto out = SuperviseWorkers(p, Workers(3), control);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out.value().stopped);
  // SIGTERM to the two still running, once each, never to the one that had finished.
  EXPECT_EQ(p.signals, (std::vector<std::pair<long, int>>{{1000, SIGTERM}, {1002, SIGTERM}}));
  EXPECT_EQ(out.value().status, (std::vector<int>{128 + SIGTERM, 0, 128 + SIGTERM}));
  EXPECT_EQ(last_running, 2u);
}

TEST(Workers, AWorkerThatCannotStartStopsTheOthersAndNamesItsShard) {
  FakeProcesses p;
  p.fail_at = 2;
  bool started = false;
  WorkersControl control;
  control.started = [&] { started = true; };
  auto out = SuperviseWorkers(p, Workers(4), control);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::kEnvironment);
  EXPECT_EQ(out.error().where, "--workers");
  EXPECT_NE(out.error().what.find("shard 2/4"), std::string::npos) << out.error().what;
  EXPECT_NE(out.error().what.find("Resource temporarily unavailable"), std::string::npos);
  EXPECT_NE(out.error().hint.find("resume"), std::string::npos);
  EXPECT_FALSE(started);
  EXPECT_EQ(p.spawned.size(), 2u);  // the fourth was never tried
  EXPECT_EQ(p.signals, (std::vector<std::pair<long, int>>{{1000, SIGTERM}, {1001, SIGTERM}}));
  EXPECT_EQ(p.reaps, 0);
}

// The whole of --workers in one process: a fake whose each worker runs its shard at once
// through the library (OpenRunSession, RunToEnd) into the shards' folder, as the child
// `pilot run --shard k/K` would, and ends with the run's status.
class InProcessWorkers : public FakeProcesses {
 public:
  InProcessWorkers(const std::filesystem::path& params, const std::filesystem::path& shards_dir)
      : params_(params), shards_dir_(shards_dir) {}
  Result<long> Spawn(const ChildSpec& child) override {
    auto pid = FakeProcesses::Spawn(child);
    if (!pid.ok()) return pid;
    auto shard = ParseShardOption(child.args.at(3), [](const char*) { return std::optional<std::string>(); });
    EXPECT_TRUE(shard.ok());
    SessionRequest request;
    request.run.params_file = params_;
    request.run.runs_dir = shards_dir_;
    request.run.run_id = child.args.at(5);
    request.run.device = child.args.at(12);
    request.run.shard = shard.value().spec;
    request.run.command_line = child.args;
    testing::FakeRuntime runtime;
    auto session = OpenRunSession(RealFileSystem(), runtime, request);
    int status = 2;
    if (session.ok()) {
      auto run = RunToEnd(RealFileSystem(), testing::SharedClock(), session.value(), {});
      status = run.ok() && run.value().verdict == RunVerdict::kPassed ? 0 : 4;
    }
    ends.push_back({pid.value(), ChildEnd{status, 0, 0}});
    return pid;
  }

 private:
  std::filesystem::path params_, shards_dir_;
};

const testing::Items kItems = {{"a", "en one"},  {"b", "fr deux"}, {"c", "de drei"},
                               {"d", "en four"}, {"e", "fr cinq"}, {"f", "de sechs"}};

WorkersRequest NewWorkers(const testing::Fixture& f, std::size_t workers) {
  WorkersRequest request;
  request.run.params_file = f.dir / "params.json";
  request.run.runs_dir = f.dir / "runs";
  request.run.run_id = "w1";
  request.run.command_line = {"pilot", "run", "--workers", std::to_string(workers)};
  request.workers = workers;
  request.environment = {"PATH=/usr/bin"};
  return request;
}

TEST(Workers, EveryCheckComesBeforeAnythingIsCreated) {
  testing::Fixture f(kItems);
  testing::FakeRuntime runtime;
  auto refused = [&](WorkersRequest request, const std::string& says, const std::string& where) {
    auto setup = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, request);
    ASSERT_FALSE(setup.ok()) << says;
    EXPECT_NE(setup.error().ToString().find(says), std::string::npos) << setup.error().ToString();
    EXPECT_EQ(setup.error().where, where);
    EXPECT_FALSE(std::filesystem::exists(f.dir / "runs" / "w1.shards"));
  };
  refused(NewWorkers(f, 0), "--workers must be 1..64", "--workers");
  refused(NewWorkers(f, 65), "--workers must be 1..64", "--workers");
  WorkersRequest fixed = NewWorkers(f, 2);
  fixed.run.device = "cuda:0";
  runtime.backend = "cuda";
  refused(fixed, "the device is fixed to 'cuda:0'", "--device");
  WorkersRequest three = NewWorkers(f, 3);
  three.run.device = "cuda";
  refused(three, "--workers 3 needs one device each; this machine has 2", "--workers");
  runtime.backend = "cpu";
  std::filesystem::create_directories(f.dir / "runs" / "w1");
  refused(NewWorkers(f, 2), "run folder already exists", (f.dir / "runs" / "w1").string());
  std::filesystem::remove(f.dir / "runs" / "w1");

  auto setup = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, NewWorkers(f, 2));
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  EXPECT_EQ(setup.value().run_id, "w1");
  EXPECT_EQ(setup.value().device, "cpu");
  EXPECT_EQ(setup.value().merged, f.dir / "runs" / "w1");
  EXPECT_EQ(setup.value().shards_dir, f.dir / "runs" / "w1.shards");
  EXPECT_FALSE(std::filesystem::exists(setup.value().shards_dir)) << "preparing creates nothing";
}

TEST(Workers, EachWorkerRunsItsShardOfTheSameRunThenTheShardsAreMerged) {
  testing::Fixture f(kItems);
  testing::FakeRuntime runtime;
  WorkersRequest request = NewWorkers(f, 2);
  request.run.manifest = f.inputs / "manifest.json";
  auto setup = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, request);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  InProcessWorkers p(request.run.params_file, setup.value().shards_dir);
  std::size_t open_at_start = 0;
  WorkersControl control;
  control.started = [&] { open_at_start = p.open.size(); };
  auto run = RunWorkers(RealFileSystem(), testing::SharedClock(), p, request, setup.value(), control);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run.value().workers.status, (std::vector<int>{0, 0}));
  ASSERT_TRUE(run.value().merged);
  EXPECT_EQ(run.value().merged->verdict, RunVerdict::kPassed);
  EXPECT_EQ(run.value().merged->report.total, kItems.size());
  EXPECT_EQ(run.value().merged->dir, setup.value().merged);
  EXPECT_TRUE(std::filesystem::exists(setup.value().merged / "tagmanifest-sha256.txt"));

  // The children: their shard of the same run, into the folder handed down, with its own log.
  ASSERT_EQ(p.spawned.size(), 2u);
  const ChildSpec& second = p.spawned[1];
  EXPECT_EQ(second.args, (std::vector<std::string>{
                             "pilot", "run", "--shard", "1/2", "--run-id", "shard-1-of-2", "--runs-dir",
                             "/proc/self/fd/50", "--params", request.run.params_file.string(), "--quiet",
                             "--device", "cpu", "--manifest", request.run.manifest->string()}));
  EXPECT_EQ(second.pass_fd, FakeProcesses::kFolderFd);
  EXPECT_EQ(second.out_fd, 101);
  EXPECT_EQ(second.err_fd, 101);
  EXPECT_EQ(*second.env, request.environment);
  EXPECT_EQ(p.folders, (std::vector<std::string>{setup.value().shards_dir.string()}));
  EXPECT_EQ(p.logs, (std::vector<std::string>{"shard-0-of-2.log", "shard-1-of-2.log"}));
  EXPECT_EQ(open_at_start, 1u) << "the logs are closed here once the workers hold them";
  EXPECT_TRUE(p.open.empty()) << "every descriptor closed at the end";
}

TEST(Workers, NothingIsMergedUnlessEveryWorkerFinishedUninterrupted) {
  testing::Fixture f(kItems);
  testing::FakeRuntime runtime;
  const WorkersRequest request = NewWorkers(f, 2);
  auto setup = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, request);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  {
    FakeProcesses p;
    p.ends = {{1000, ChildEnd{0, 0, 0}}, {1001, ChildEnd{4, 0, 0}}};
    auto run = RunWorkers(RealFileSystem(), testing::SharedClock(), p, request, setup.value(), {});
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    EXPECT_EQ(run.value().workers.status, (std::vector<int>{0, 4}));
    EXPECT_FALSE(run.value().merged);
    EXPECT_TRUE(p.open.empty());
  }
  {
    FakeProcesses p;  // both finish, but an interrupt came meanwhile
    p.ends = {{1000, ChildEnd{0, 0, 0}}, {1001, ChildEnd{0, 0, 0}}};
    WorkersControl control;
    control.interrupted = [] { return true; };
    bool ended = false;
    control.ended = [&] { ended = true; };
    auto run = RunWorkers(RealFileSystem(), testing::SharedClock(), p, request, setup.value(), control);
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    EXPECT_FALSE(run.value().merged);
    EXPECT_TRUE(ended);
    EXPECT_TRUE(p.open.empty());
  }
  {
    FakeProcesses p;  // the second worker cannot start: the first is stopped, nothing merged
    p.fail_at = 1;
    WorkersControl control;
    bool ended = false;
    control.ended = [&] { ended = true; };
    auto run = RunWorkers(RealFileSystem(), testing::SharedClock(), p, request, setup.value(), control);
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.error().what.find("shard 1/2"), std::string::npos) << run.error().what;
    EXPECT_EQ(p.signals, (std::vector<std::pair<long, int>>{{1000, SIGTERM}}));
    EXPECT_FALSE(ended);
    EXPECT_TRUE(p.open.empty()) << "the logs and the folder are closed when a worker cannot start";
  }
  EXPECT_FALSE(std::filesystem::exists(setup.value().merged));
}

TEST(Workers, ALogThatCannotBeOpenedOrALinkForTheShardsFolderStartsNoWorker) {
  testing::Fixture f(kItems);
  testing::FakeRuntime runtime;
  const WorkersRequest request = NewWorkers(f, 3);
  auto setup = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, request);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  FakeProcesses p;
  p.unopenable_log = "shard-2-of-3.log";
  auto run = RunWorkers(RealFileSystem(), testing::SharedClock(), p, request, setup.value(), {});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().where, (setup.value().shards_dir / "shard-2-of-3.log").string());
  EXPECT_NE(run.error().hint.find("no worker was started"), std::string::npos);
  EXPECT_TRUE(p.spawned.empty());
  EXPECT_TRUE(p.open.empty()) << "the logs opened before it are closed";

  testing::TempDir elsewhere;
  const WorkersRequest other = [&] {
    WorkersRequest r = NewWorkers(f, 2);
    r.run.run_id = "w2";
    return r;
  }();
  auto second = PrepareWorkers(RealFileSystem(), testing::SharedClock(), runtime, other);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  std::filesystem::create_directory_symlink(elsewhere.path(), second.value().shards_dir);
  FakeProcesses q;
  auto linked = RunWorkers(RealFileSystem(), testing::SharedClock(), q, other, second.value(), {});
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().what.find("is a symlink"), std::string::npos) << linked.error().what;
  EXPECT_TRUE(q.spawned.empty());
  EXPECT_TRUE(q.folders.empty());
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path()));
}

TEST(ChildEnd, StatusIsTheExitCodeOrOneHundredTwentyEightPlusTheSignal) {
  EXPECT_EQ((ChildEnd{0, 0, 0}).Status(), 0);
  EXPECT_EQ((ChildEnd{kExecFailedStatus, 0, 0}).Status(), 127);
  EXPECT_EQ((ChildEnd{0, SIGSEGV, 0}).Status(), 128 + SIGSEGV);
}

}  // namespace
}  // namespace pilot
