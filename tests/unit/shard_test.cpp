// Shards (shard.h), merge (merge.h) and export (export.h) through the library, with
// FakeStage on real files.
#include "pilot/shard.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pilot/bag.h"
#include "pilot/clock.h"
#include "pilot/fleet/export.h"
#include "pilot/fleet/merge.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/verify.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

TEST(Shard, EveryIdBelongsToExactlyOneShardForEveryCountUpTo64) {
  std::vector<std::string> ids;
  for (int i = 0; i < 10000; ++i) ids.push_back("doc-" + std::to_string(i));
  for (std::uint32_t n = 1; n <= 64; ++n) {
    std::vector<std::size_t> per(n, 0);
    std::size_t counted = 0;
    for (const auto& id : ids) {
      const std::uint32_t owner = ShardOfId(id, n);
      ASSERT_LT(owner, n);
      ASSERT_TRUE(InShard(id, ShardSpec{owner, n})) << id;
      if (n > 1) {
        ASSERT_FALSE(InShard(id, ShardSpec{(owner + 1) % n, n})) << id;
      }
      ++per[owner];
    }
    for (std::size_t c : per) counted += c;
    ASSERT_EQ(counted, ids.size());
    // A hash spreads 10,000 ids evenly: every shard within 30% of its share at N = 64.
    for (std::uint32_t i = 0; i < n; ++i) {
      EXPECT_GT(per[i], 10000 / n * 7 / 10) << "shard " << i << " of " << n;
      EXPECT_LT(per[i], 10000 / n * 13 / 10 + 1) << "shard " << i << " of " << n;
    }
  }
}

TEST(Shard, AssignmentIsTheDocumentedSha256Recipe) {
  // printf %s doc-01 | sha256sum: the first 16 hex digits, as a number, mod N.
  EXPECT_EQ(ShardOfId("doc-01", 7), 5u);
  EXPECT_EQ(ShardOfId("a", 2), 0u);
  EXPECT_EQ(ShardOfId("item-123", 64), 63u);
  EXPECT_EQ(ShardOfId("anything", 1), 0u);
  EXPECT_EQ(ShardRunId({2, 4}), "shard-2-of-4");
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Shard, AnExplicitShardIgnoresTheSchedulersVariables) {
  auto c = ParseShardOption("1/3", Env({{"SLURM_ARRAY_TASK_ID", "2"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c.value().spec, (ShardSpec{1, 3}));
  EXPECT_EQ(c.value().source, "--shard 1/3");
  EXPECT_FALSE(c.value().local_rank);
}

TEST(Shard, AutoTakesTheIndexFromEachScheduler) {
  auto slurm = ParseShardOption("auto/4", Env({{"SLURM_ARRAY_TASK_ID", "2"}}));
  ASSERT_TRUE(slurm.ok()) << slurm.error().ToString();
  EXPECT_EQ(slurm.value().spec, (ShardSpec{2, 4}));
  EXPECT_NE(slurm.value().source.find("SLURM_ARRAY_TASK_ID=2"), std::string::npos);
  auto k8s = ParseShardOption("auto/5", Env({{"JOB_COMPLETION_INDEX", "4"}}));
  ASSERT_TRUE(k8s.ok());
  EXPECT_EQ(k8s.value().spec, (ShardSpec{4, 5}));
  auto torchrun = ParseShardOption("auto", Env({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}));
  ASSERT_TRUE(torchrun.ok()) << torchrun.error().ToString();
  EXPECT_EQ(torchrun.value().spec, (ShardSpec{3, 8}));
  ASSERT_TRUE(torchrun.value().local_rank);
  EXPECT_EQ(*torchrun.value().local_rank, 1u);
  auto agreeing = ParseShardOption("auto/8", Env({{"RANK", "3"}, {"WORLD_SIZE", "8"}}));
  ASSERT_TRUE(agreeing.ok());
}

TEST(Shard, MalformedOrAmbiguousShardsAreRefusedNamingTheCause) {
  struct Case {
    const char* text;
    std::map<std::string, std::string> env;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"3/3", {}, "does not exist"},
      {"1/0", {}, "not a count"},
      {"1/5000", {}, "not a count"},
      {"-1/3", {}, "not a count"},
      {"a/3", {}, "not a count"},
      {" 1/3", {}, "not a count"},
      {"1/3/4", {}, "not a count"},
      {"1", {}, "is not I/N"},
      {"", {}, "is not I/N"},
      {"auto", {}, "no scheduler"},
      {"auto/4", {}, "no scheduler"},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "1"}}, "needs N"},
      {"auto", {{"JOB_COMPLETION_INDEX", "1"}}, "needs N"},
      {"auto/4", {{"SLURM_ARRAY_TASK_ID", "4"}}, "is not a shard of 4"},
      {"auto/4", {{"SLURM_ARRAY_TASK_ID", "x1"}}, "is not a count"},
      {"auto/4", {{"SLURM_ARRAY_TASK_ID", "99999999999"}}, "is not a count"},
      {"auto/4", {{"RANK", "1"}}, "must both be set"},
      {"auto/4", {{"RANK", "1"}, {"WORLD_SIZE", "0"}}, "must both be set"},
      {"auto/4", {{"RANK", "1"}, {"WORLD_SIZE", "8"}}, "disagrees"},
      {"auto/4", {{"SLURM_ARRAY_TASK_ID", "1"}, {"JOB_COMPLETION_INDEX", "1"}}, "ambiguous"},
  };
  for (const Case& c : cases) {
    auto got = ParseShardOption(c.text, Env(c.env));
    ASSERT_FALSE(got.ok()) << "'" << c.text << "' was accepted";
    EXPECT_EQ(got.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(got.error().what.find(c.says), std::string::npos) << c.text << ": " << got.error().what;
  }
}

// N shards of one fixture, each through ExecuteRun.
class ShardRuns : public ::testing::Test {
 protected:
  ShardRuns() : f_(Items()) {
    f_.Expect("d0", "en");
    f_.ExpectRejection("bad", "empty_input");
  }
  static testing::Items Items() {
    testing::Items items;
    const char* words[] = {"en", "fr", "de"};
    for (int i = 0; i < 30; ++i)
      items.push_back({"d" + std::to_string(i), std::string(words[i % 3]) + " text " + std::to_string(i)});
    items.push_back({"bad", ""});
    return items;
  }
  fs::path RunShard(std::uint32_t i, std::uint32_t n, std::size_t stop_after = 0) {
    RunPlan plan = f_.plan;
    plan.shard = ShardSpec{i, n};
    plan.run_id = ShardRunId({i, n});
    RunControl control;
    control.stop_after = stop_after;
    auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_, control);
    EXPECT_TRUE(out.ok()) << out.error().ToString();
    return f_.plan.runs_dir / plan.run_id;
  }
  std::vector<fs::path> RunAll(std::uint32_t n) {
    std::vector<fs::path> dirs;
    for (std::uint32_t i = 0; i < n; ++i) dirs.push_back(RunShard(i, n));
    return dirs;
  }
  Result<MergeOutcome> Merge(const std::vector<fs::path>& dirs, const std::string& name = "merged") {
    MergeRequest r;
    r.shards = dirs;
    r.out = f_.dir / name;
    r.command_line = {"pilot", "merge"};
    return MergeShards(RealFileSystem(), testing::SharedClock(), r);
  }
  Fixture f_;
  FakeStage stage_;
};

TEST_F(ShardRuns, EachShardProcessesOnlyItsPartitionAndVerifiesAsAShard) {
  std::size_t total = 0;
  for (std::uint32_t i = 0; i < 3; ++i) {
    const fs::path dir = RunShard(i, 3);
    auto v = VerifyFolder(RealFileSystem(), dir, {});
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v.value().ok()) << (v.value().findings.empty() ? "" : v.value().findings[0].what);
    EXPECT_EQ(v.value().folder_kind, "shard");
    std::istringstream results(ReadText(dir / "data/results.jsonl"));
    std::size_t lines = 0;
    for (std::string l; std::getline(results, l); ++lines) {
      const std::string id = nlohmann::json::parse(l)["id"];
      EXPECT_EQ(ShardOfId(id, 3), i) << id;
    }
    EXPECT_EQ(lines, v.value().items);
    auto record = nlohmann::json::parse(ReadText(dir / "data/run.json"));
    EXPECT_EQ(record["folder_kind"], "shard");
    EXPECT_EQ(record["shard"]["index"], i);
    EXPECT_EQ(record["shard"]["items"], lines);
    total += lines;
  }
  EXPECT_EQ(total, 31u);
}

TEST_F(ShardRuns, AnInterruptedShardResumesOnlyItsPartition) {
  const fs::path dir = RunShard(1, 2, /*stop_after=*/2);
  auto setup = PrepareResume(RealFileSystem(), dir);
  ASSERT_TRUE(setup.ok()) << setup.error().ToString();
  ASSERT_TRUE(setup.value().plan.shard);
  auto out = ResumeRun(RealFileSystem(), testing::SharedClock(), setup.value(), stage_);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().verdict, RunVerdict::kPassed);
  auto v = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v.value().ok());
  std::size_t want = 0;
  for (const auto& item : f_.manifest.items) want += ShardOfId(item.id, 2) == 1 ? 1 : 0;
  EXPECT_EQ(v.value().items, want);
}

TEST_F(ShardRuns, MergedShardsAccountForEveryIdOnceInManifestOrder) {
  auto merged = Merge(RunAll(4));
  ASSERT_TRUE(merged.ok()) << merged.error().ToString();
  EXPECT_EQ(merged.value().verdict, RunVerdict::kPassed);
  const fs::path dir = f_.dir / "merged";
  EXPECT_EQ(merged.value().dir, dir);
  EXPECT_FALSE(fs::exists(f_.dir / "merged.partial"));
  EXPECT_FALSE(fs::exists(f_.dir / "merged.partial.lock"));
  std::istringstream results(ReadText(dir / "data/results.jsonl"));
  std::size_t k = 0;
  for (std::string l; std::getline(results, l); ++k) {
    ASSERT_LT(k, f_.manifest.items.size());
    EXPECT_EQ(nlohmann::json::parse(l)["id"], f_.manifest.items[k].id);
  }
  EXPECT_EQ(k, f_.manifest.items.size());
  auto v = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v.value().ok()) << (v.value().findings.empty() ? "" : v.value().findings[0].what);
  EXPECT_EQ(v.value().folder_kind, "merged");
  EXPECT_EQ(v.value().accepted + v.value().rejected, f_.manifest.items.size());
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (const char* file : {"run.json", "journal.jsonl", "environment.json"}) {
      EXPECT_TRUE(fs::exists(dir / "data/shards" / ShardRunId({i, 4}) / file)) << file;
    }
  }
  auto report = nlohmann::json::parse(ReadText(dir / "data/report.json"));
  EXPECT_EQ(report["counts"]["total"], f_.manifest.items.size());
  EXPECT_EQ(report["shards"]["count"], 4);
  EXPECT_GT(report["shards"]["throughput_sum_of_shards_items_per_s"].get<double>(), 0);
}

// Re-hashes the merged folder's bag as a forger would, after an edit.
void RehashMerged(const fs::path& dir) {
  fs::remove(dir / "manifest-sha256.txt");
  fs::remove(dir / "tagmanifest-sha256.txt");
  ASSERT_TRUE(FinalizeBag(RealFileSystem(), dir, "2026-11-30",
                          {{"External-Identifier", "merged"},
                           {"Pilot-Folder-Kind", "merged"},
                           {"Pilot-Format-Version", std::to_string(kRunFormatVersion)}})
                  .ok());
}

// Rewrites `file` of the merged folder by `edit`, then re-hashes it.
void EditAndRehash(const fs::path& dir, const std::string& file,
                   const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto doc = nlohmann::ordered_json::parse(ReadText(dir / file));
  edit(doc);
  WriteText(dir / file, PrettyJson(doc));
  RehashMerged(dir);
}

TEST_F(ShardRuns, AMergedFolderWhoseResultWasChangedAndRehashedFailsAgainstTheShardsJournals) {
  ASSERT_TRUE(Merge(RunAll(2)).ok());
  const fs::path dir = f_.dir / "merged";
  std::string results = ReadText(dir / "data/results.jsonl");
  const auto at = results.find("\"category\":\"fr\"");
  ASSERT_NE(at, std::string::npos);
  results.replace(at, 15, "\"category\":\"de\"");
  WriteText(dir / "data/results.jsonl", results);
  RehashMerged(dir);
  auto v = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(v.ok());
  bool caught = false;
  for (const auto& x : v.value().findings)
    caught |= x.what.find("differs from its record") != std::string::npos;
  EXPECT_TRUE(caught);
}

std::string FindingsText(const VerifyResult& v) {
  std::string all;
  for (const auto& x : v.findings) all += "[" + x.check + "] " + x.where + ": " + x.what + "\n";
  return all;
}

// A merged folder's report and record figures are rebuilt from its results and its shards'
// journals and records: a forged figure, re-hashed, is a finding naming it.
TEST_F(ShardRuns, AMergedFoldersReportIsRebuiltFromItsShardsAndAForgedFigureIsAFinding) {
  ASSERT_TRUE(Merge(RunAll(3)).ok());
  const fs::path dir = f_.dir / "merged";
  auto good = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(good.ok() && good.value().ok()) << FindingsText(good.value());
  const std::string pristine = f_.dir.path().string() + "/pristine";
  fs::copy(dir, pristine, fs::copy_options::recursive);

  struct Case {
    const char* file;
    std::function<void(nlohmann::ordered_json&)> edit;
    const char* finding;
  };
  const std::vector<Case> cases = {
      {"data/report.json",
       [](nlohmann::ordered_json& j) {
         j["shards"]["throughput_sum_of_shards_items_per_s"] =
             j["shards"]["throughput_sum_of_shards_items_per_s"].get<double>() * 2;
       },
       "differing keys: shards"},
      {"data/report.json", [](nlohmann::ordered_json& j) { j["latency_ms"]["p95"] = 0.001; },
       "differing keys: latency_ms"},
      {"data/report.json",
       [](nlohmann::ordered_json& j) {
         j["throughput_items_per_s"] = j["throughput_items_per_s"].get<double>() * 10;
       },
       "differing keys: throughput_items_per_s"},
      {"data/report.json", [](nlohmann::ordered_json& j) { j["peak_rss_mb"] = 0.0; },
       "at or above the shards' journals' highest peak"},
      {"data/run.json",
       [](nlohmann::ordered_json& j) { j["merge"]["throughput_sum_of_shards_items_per_s"] = 1e9; },
       "merge.throughput_sum_of_shards_items_per_s is"},
      {"data/run.json", [](nlohmann::ordered_json& j) { j["merge"]["shards"][1]["items_per_second"] = 7.0; },
       "merge.shards[1].items_per_second is"},
      {"data/run.json", [](nlohmann::ordered_json& j) { j["merge"]["wall_clock_seconds"] = 0.5; },
       "merge.wall_clock_seconds is"},
  };
  // The control: the same rewrite and re-hash with nothing changed still verifies.
  EditAndRehash(dir, "data/report.json", [](nlohmann::ordered_json&) {});
  auto control = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(control.ok() && control.value().ok()) << FindingsText(control.value());
  for (const Case& c : cases) {
    fs::remove_all(dir);
    fs::copy(pristine, dir, fs::copy_options::recursive);
    EditAndRehash(dir, c.file, c.edit);
    auto v = VerifyFolder(RealFileSystem(), dir, {});
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v.value().ok()) << c.finding;
    EXPECT_NE(FindingsText(v.value()).find(c.finding), std::string::npos) << FindingsText(v.value());
  }

  // report.md rendered again from the rebuilt report.
  fs::remove_all(dir);
  fs::copy(pristine, dir, fs::copy_options::recursive);
  std::string md = ReadText(dir / "data/report.md");
  md.replace(md.find("Verdict: "), 9, "Verdict (forged): ");
  WriteText(dir / "data/report.md", md);
  EditAndRehash(dir, "data/run.json", [](nlohmann::ordered_json&) {});
  auto v = VerifyFolder(RealFileSystem(), dir, {});
  ASSERT_TRUE(v.ok());
  EXPECT_NE(FindingsText(v.value()).find("rendered again"), std::string::npos) << FindingsText(v.value());
}

TEST_F(ShardRuns, MergeRefusesEachBadSetNamingTheShard) {
  auto dirs = RunAll(3);
  struct Case {
    std::vector<fs::path> given;
    std::string says;
  };
  const fs::path unfinished = [&] {
    RunPlan plan = f_.plan;
    plan.shard = ShardSpec{0, 3};
    plan.run_id = "half";
    RunControl control;
    control.stop_after = 1;
    (void)ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_, control);
    return f_.plan.runs_dir / "half";
  }();
  const fs::path other_split = RunShard(0, 2);
  const fs::path plain = [&] {
    RunPlan plan = f_.plan;
    plan.run_id = "plain";
    (void)ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_);
    return f_.plan.runs_dir / "plain";
  }();
  const std::vector<Case> cases = {
      {{dirs[0], dirs[1]}, "1 of 3 shards missing: 2"},
      {{dirs[0], dirs[1], dirs[2], dirs[1]}, "given twice"},
      {{dirs[0], dirs[1], unfinished}, "unfinished"},
      {{dirs[1], dirs[2], other_split}, "different splits"},
      {{dirs[0], dirs[1], plain}, "not a shard"},
      {{dirs[0], dirs[1], f_.dir / "nowhere"}, "no such folder (" + (f_.dir / "nowhere").string()},
  };
  for (const Case& c : cases) {
    auto got = Merge(c.given, "out");
    ASSERT_FALSE(got.ok()) << c.says;
    EXPECT_EQ(got.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(got.error().ToString().find(c.says), std::string::npos) << got.error().ToString();
    EXPECT_FALSE(fs::exists(f_.dir / "out"));
    EXPECT_FALSE(fs::exists(f_.dir / "out.partial"));
  }
  MergeRequest inside;
  inside.shards = dirs;
  inside.out = dirs[1] / "data/merged";
  auto into_shard = MergeShards(RealFileSystem(), testing::SharedClock(), inside);
  ASSERT_FALSE(into_shard.ok());
  EXPECT_NE(into_shard.error().what.find("inside the shard folder"), std::string::npos)
      << into_shard.error().what;
  EXPECT_FALSE(fs::exists(dirs[1] / "data/merged.partial"));
  auto refused = Merge({dirs[0], dirs[1], unfinished}, "out");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().hint.find("pilot resume " + unfinished.string()), std::string::npos);
}

TEST_F(ShardRuns, MergeRefusesShardsOfAnotherManifestOrParameters) {
  auto dirs = RunAll(2);
  // Shard 1 again over an edited manifest (one more item), in a folder of its own.
  Fixture other(Items());
  other.plan.runs_dir = f_.plan.runs_dir / "other";
  RunPlan plan = other.plan;
  plan.shard = ShardSpec{1, 2};
  plan.run_id = ShardRunId({1, 2});
  ASSERT_TRUE(ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_).ok());
  auto got = Merge({dirs[0], other.plan.runs_dir / plan.run_id}, "out");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().what.find("another manifest"), std::string::npos) << got.error().what;
  EXPECT_EQ(got.error().where, (other.plan.runs_dir / plan.run_id).string());
}

TEST_F(ShardRuns, AShardThatFailsVerificationStopsTheMergeBeforeAnythingIsWritten) {
  auto dirs = RunAll(2);
  WriteText(dirs[1] / "data/report.md", "edited\n");
  auto got = Merge(dirs, "out");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got.value().verdict, RunVerdict::kVerifyFailed);
  ASSERT_EQ(got.value().failed_shards.size(), 1u);
  EXPECT_EQ(got.value().failed_shards[0].first, dirs[1]);
  EXPECT_FALSE(fs::exists(f_.dir / "out"));
  EXPECT_FALSE(fs::exists(f_.dir / "out.partial"));
}

TEST_F(ShardRuns, AcceptanceIsJudgedByMergeOverTheWholeManifest) {
  // "bad" is rejected: 30 of 31 accepted is below 0.99.
  const std::string text = R"({"manifest": "inputs/manifest.json",
    "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "batch_size": 2,
    "acceptance": {"min_accepted_fraction": 0.99}})";
  f_.plan.params_bytes = text;
  f_.plan.params = ParseParams(text, f_.dir.path(), "params.json").value();
  auto dirs = RunAll(2);
  for (const auto& d : dirs) {
    auto report = nlohmann::json::parse(ReadText(d / "data/report.json"));
    EXPECT_TRUE(report["acceptance"]["met"].get<bool>()) << "a shard does not judge acceptance";
    EXPECT_TRUE(report["acceptance"]["criteria"].empty());
  }
  auto merged = Merge(dirs);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged.value().verdict, RunVerdict::kAcceptanceFailed);
  EXPECT_EQ(merged.value().report.total, 31u);
  EXPECT_FALSE(merged.value().report.acceptance_met);
  auto v = VerifyFolder(RealFileSystem(), f_.dir / "merged", {});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v.value().ok()) << "an unmet criterion is not a damaged folder";
}

TEST_F(ShardRuns, AnInterruptedMergeLeavesNoFolderAndTheNextMergeReplacesThePartialOne) {
  auto dirs = RunAll(2);
  MergeRequest r;
  r.shards = dirs;
  r.out = f_.dir / "merged";
  // What a merge killed mid-write leaves: a partial folder and its lock file.
  fs::create_directories(f_.dir / "merged.partial/data");
  WriteText(f_.dir / "merged.partial/data/results.jsonl", "{\"id\":\"half\"}\n");
  WriteText(f_.dir / "merged.partial.lock", "12345\n");
  auto merged = MergeShards(RealFileSystem(), testing::SharedClock(), r);
  ASSERT_TRUE(merged.ok()) << merged.error().ToString();
  EXPECT_EQ(merged.value().verdict, RunVerdict::kPassed);
  EXPECT_TRUE(fs::exists(f_.dir / "merged/tagmanifest-sha256.txt"));
  EXPECT_FALSE(fs::exists(f_.dir / "merged.partial"));
  // A folder named like a partial one that pilot did not leave is never removed.
  fs::create_directories(f_.dir / "mine.partial");
  WriteText(f_.dir / "mine.partial/keep.txt", "user data\n");
  r.out = f_.dir / "mine";
  auto refused = MergeShards(RealFileSystem(), testing::SharedClock(), r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("not a folder pilot left"), std::string::npos) << refused.error().what;
  EXPECT_EQ(ReadText(f_.dir / "mine.partial/keep.txt"), "user data\n");
}

TEST_F(ShardRuns, ExportCopiesEachKindAndVerifiesTheCopyAgainstTheSourceFingerprint) {
  auto dirs = RunAll(2);
  ASSERT_TRUE(Merge(dirs).ok());
  RunPlan plan = f_.plan;
  plan.run_id = "plain";
  ASSERT_TRUE(ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_).ok());
  for (const fs::path& src : {f_.plan.runs_dir / "plain", dirs[0], f_.dir / "merged"}) {
    const fs::path dest = f_.dir / "exported" / src.filename();
    auto out = ExportFolder(RealFileSystem(), src, dest);
    ASSERT_TRUE(out.ok()) << out.error().ToString();
    EXPECT_TRUE(out.value().ok());
    EXPECT_EQ(out.value().dest, dest);
    EXPECT_EQ(out.value().fingerprint, Sha256Hex(ReadText(src / "tagmanifest-sha256.txt")));
    EXPECT_EQ(ReadText(dest / "data/results.jsonl"), ReadText(src / "data/results.jsonl"));
    EXPECT_FALSE(fs::exists(dest.string() + ".partial"));
    // Never into an existing folder.
    auto again = ExportFolder(RealFileSystem(), src, dest);
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.error().what.find("already exists"), std::string::npos);
  }
}

TEST_F(ShardRuns, ExportRefusesAnUnfinishedFolderALinkInsideAndADestinationInsideTheSource) {
  RunPlan plan = f_.plan;
  plan.run_id = "half";
  RunControl control;
  control.stop_after = 1;
  ASSERT_TRUE(ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_, control).ok());
  auto unfinished = ExportFolder(RealFileSystem(), f_.plan.runs_dir / "half", f_.dir / "copy");
  ASSERT_FALSE(unfinished.ok());
  EXPECT_NE(unfinished.error().what.find("unfinished"), std::string::npos);
  plan.run_id = "whole";
  ASSERT_TRUE(ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_).ok());
  const fs::path whole = f_.plan.runs_dir / "whole";
  auto inside = ExportFolder(RealFileSystem(), whole, whole / "data/copy");
  ASSERT_FALSE(inside.ok());
  EXPECT_NE(inside.error().what.find("inside the folder it would copy"), std::string::npos)
      << inside.error().what;
  WriteText(f_.dir / "secret.txt", "secret\n");
  fs::create_symlink(f_.dir / "secret.txt", whole / "data/link.txt");
  auto linked = ExportFolder(RealFileSystem(), whole, f_.dir / "copy");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().what.find("symlink"), std::string::npos);
  EXPECT_FALSE(fs::exists(f_.dir / "copy"));
  EXPECT_FALSE(fs::exists(f_.dir / "copy.partial"));
  auto not_pilot = ExportFolder(RealFileSystem(), f_.inputs, f_.dir / "copy");
  ASSERT_FALSE(not_pilot.ok());
  EXPECT_NE(not_pilot.error().what.find("not a pilot folder"), std::string::npos);
}

TEST_F(ShardRuns, AnExportStoppedMidCopyLeavesNoDestinationAndARetryFinishes) {
  RunPlan plan = f_.plan;
  plan.run_id = "whole";
  ASSERT_TRUE(ExecuteRun(RealFileSystem(), testing::SharedClock(), plan, stage_).ok());
  const fs::path src = f_.plan.runs_dir / "whole";
  RunControl stop;
  int files = 0;
  stop.should_stop = [&] { return ++files > 3; };
  auto stopped = ExportFolder(RealFileSystem(), src, f_.dir / "copy", stop);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().kind, ErrorKind::kInterrupted);
  EXPECT_FALSE(fs::exists(f_.dir / "copy"));
  EXPECT_TRUE(fs::exists(f_.dir / "copy.partial"));
  auto retried = ExportFolder(RealFileSystem(), src, f_.dir / "copy");
  ASSERT_TRUE(retried.ok()) << retried.error().ToString();
  EXPECT_TRUE(retried.value().ok());
  EXPECT_FALSE(fs::exists(f_.dir / "copy.partial"));
}

}  // namespace
}  // namespace pilot
