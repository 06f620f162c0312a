// The `--workers` supervisor (fleet/workers.h) against a fake process table: what it starts,
// how it stops the workers on an interrupt or a failed start, and how each end is decoded.
#include "pilot/fleet/workers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <deque>
#include <map>

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

TEST(ChildEnd, StatusIsTheExitCodeOrOneHundredTwentyEightPlusTheSignal) {
  EXPECT_EQ((ChildEnd{0, 0, 0}).Status(), 0);
  EXPECT_EQ((ChildEnd{kExecFailedStatus, 0, 0}).Status(), 127);
  EXPECT_EQ((ChildEnd{0, SIGSEGV, 0}).Status(), 128 + SIGSEGV);
}

}  // namespace
}  // namespace pilot
