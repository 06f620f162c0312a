// The registry of folder kinds (folder_kind.h): what this pilot knows, and the refusal of a kind
// or format it does not, from the registry alone.
#include "pilot/folder_kind.h"

#include <gtest/gtest.h>

#include "pilot/adapt/adapt_files.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/folder_files.h"
#include "pilot/load/load_files.h"
#include "pilot/memory_fs.h"
#include "pilot/run.h"
#include "pilot/sweep/sweep_files.h"
#include "pilot/verdict/decision_files.h"

namespace pilot {
namespace {

TEST(FolderKinds, EveryKindIsRegisteredOnceWithItsFormats) {
  const auto names = FolderKinds().Names();
  EXPECT_EQ(names,
            (std::vector<std::string>{"run", "shard", "merged", "sweep", "load", "adapt", "calibration"}));
  const FolderKindSpec* run = FolderKinds().Find(kFolderKindRun);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->max_format, kRunFormatVersion);
  EXPECT_TRUE(run->undeclared_is_format_1);
  EXPECT_FALSE(run->checks);  // a run's checks are verify's own
  for (const char* own : {kFolderKindSweep, kFolderKindLoad, kFolderKindAdapt, kFolderKindCalibration}) {
    const FolderKindSpec* spec = FolderKinds().Find(own);
    ASSERT_NE(spec, nullptr) << own;
    EXPECT_TRUE(spec->checks) << own;
    EXPECT_FALSE(spec->undeclared_is_format_1) << own;
  }
  EXPECT_EQ(FolderKinds().Find("serve"), nullptr);
}

TEST(FolderKinds, AKindOrFormatNotRegisteredIsRefusedNamingIt) {
  auto refused = [](FolderKind k) {
    Status st = CheckFolderKind(k, "runs/x", "verify");
    return st.ok() ? std::string() : st.error().what;
  };
  EXPECT_EQ(refused({kFolderKindRun, 1, false}), "");  // pilot 0.1's runs declare nothing
  EXPECT_EQ(refused({kFolderKindRun, kRunFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindSweep, kSweepFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindAdapt, kAdaptFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindCalibration, kCalibrationFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindLoad, kLoadFormatVersion, true}), "");
  EXPECT_EQ(
      refused({"serve", 1, true}),
      "the folder is of kind 'serve', which this pilot cannot verify (it knows: run, shard, merged, sweep, "
      "load, adapt, calibration)");
  EXPECT_EQ(refused({kFolderKindRun, 9, true}),
            "the folder is in run format 9, which this pilot cannot verify (it knows formats 1..4)");
  EXPECT_EQ(refused({kFolderKindShard, 1, true}),
            "the folder is in shard format 1, which this pilot cannot verify (it knows formats 2..4)");
  // A shard or an adaptation folder always declares itself: undeclared, it is not one pilot wrote.
  EXPECT_NE(refused({kFolderKindAdapt, 1, false}), "");
  EXPECT_NE(refused({kFolderKindMerged, kRunFormatVersion, false}), "");
}

// What the core asks the registry instead of naming a workflow: each kind's hooks.
// What a kind's results cover is the registry's answer; the workflows never compare names.
TEST(FolderKinds, WhatAKindsResultsCoverIsAskedOfTheRegistry) {
  struct Want {
    const char* kind;
    bool results, whole, partition, joined, own_journal;
  };
  for (const Want& w :
       {Want{kFolderKindRun, true, true, false, false, true},
        Want{kFolderKindShard, true, false, true, false, true},
        Want{kFolderKindMerged, true, true, false, true, false},
        Want{kFolderKindSweep, false, false, false, false, false},
        Want{kFolderKindAdapt, false, false, false, false, false},
        Want{kFolderKindLoad, false, false, false, false, false},
        Want{"serve", false, false, false, false, false}, Want{"", false, false, false, false, false}}) {
    EXPECT_EQ(HoldsRunResults(w.kind), w.results) << w.kind;
    EXPECT_EQ(IsWholeRunKind(w.kind), w.whole) << w.kind;
    EXPECT_EQ(IsPartitionKind(w.kind), w.partition) << w.kind;
    EXPECT_EQ(IsJoinedKind(w.kind), w.joined) << w.kind;
    EXPECT_EQ(HasOwnJournalKind(w.kind), w.own_journal) << w.kind;
  }
}

TEST(FolderKinds, EachKindCarriesItsOwnHooks) {
  for (const char* core : {kFolderKindRun, kFolderKindShard, kFolderKindMerged}) {
    const FolderKindSpec* spec = FolderKinds().Find(core);
    ASSERT_NE(spec, nullptr) << core;
    EXPECT_TRUE(spec->run_record) << core;
    EXPECT_FALSE(spec->status) << core;  // a run's status is the core's own
    EXPECT_FALSE(spec->batch_plan) << core;
  }
  const FolderKindSpec* sweep = FolderKinds().Find(kFolderKindSweep);
  ASSERT_NE(sweep, nullptr);
  EXPECT_TRUE(sweep->run_record);
  EXPECT_TRUE(sweep->status);
  EXPECT_TRUE(sweep->batch_plan);
  const FolderKindSpec* adapt = FolderKinds().Find(kFolderKindAdapt);
  ASSERT_NE(adapt, nullptr);
  EXPECT_FALSE(adapt->run_record);
  EXPECT_FALSE(adapt->batch_plan);
  // A recorded decision is an extension every kind's verify runs, with its staging entry.
  ASSERT_EQ(FolderKinds().Extensions().size(), 1u);
  const FolderExtensionSpec& decision = FolderKinds().Extensions().front();
  EXPECT_EQ(decision.name, "decision");
  EXPECT_TRUE(decision.checks);
  EXPECT_EQ(decision.pending_entry, kDecidePending);
  EXPECT_NE(decision.pending_what.find("pilot decide"), std::string::npos);
}

// A kind whose record is its own is read by its kind and version only, and a folder whose kind
// holds no batch plan is refused naming its kind and the kinds that hold one.
TEST(FolderKinds, OwnRecordsAndBatchPlansDispatchThroughTheRegistry) {
  MemoryFileSystem fs;
  fs.AddFile("a/data/run.json", R"({"folder_kind": "adapt", "format_version": 1, "anything": [1]})");
  auto kind = ReadFolderKind(fs, "a");
  ASSERT_TRUE(kind.ok()) << kind.error().what;
  EXPECT_EQ(kind.value().kind, kFolderKindAdapt);
  EXPECT_EQ(kind.value().version, 1);
  EXPECT_TRUE(kind.value().declared);
  auto plan = BatchPlanFromFolder(fs, "a");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().what, "not a sweep folder (its kind is 'adapt')");
  EXPECT_EQ(plan.error().where, "a");
  // A kind this pilot does not know is read as a run record, and refused by it.
  fs.AddFile("b/data/run.json", R"({"folder_kind": "serve", "format_version": 1})");
  EXPECT_FALSE(BatchPlanFromFolder(fs, "b").ok());
}

// What compare, decide and export open: a folder pilot wrote, of a kind and format this pilot
// can act on, each refusal naming the folder.
TEST(FolderKinds, OpenPilotFolderRefusesWhatIsNotOneNamingIt) {
  MemoryFileSystem fs;
  fs.AddFile("file", "x");
  fs.AddFile("plain/notes.txt", "x");
  fs.AddFile("later/data/run.json", R"({"folder_kind": "adapt", "format_version": 9})");
  fs.AddFile("a/data/run.json", R"({"folder_kind": "adapt", "format_version": 1})");
  auto missing = OpenPilotFolder(fs, "gone", "compare", "run folder", "give two run folders");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().what, "no such folder");
  EXPECT_EQ(missing.error().where, "gone");
  EXPECT_EQ(missing.error().hint, "give two run folders");
  auto file = OpenPilotFolder(fs, "file", "compare", "run folder", "give two run folders");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().what, "not a folder");
  auto plain = OpenPilotFolder(fs, "plain", "export", "folder", "h");
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().what.rfind("not a pilot folder: ", 0), 0u) << plain.error().what;
  EXPECT_EQ(plain.error().kind, ErrorKind::kBadInput);
  auto later = OpenPilotFolder(fs, "later", "decide", "run folder", "h");
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().what.find("adapt format 9, which this pilot cannot decide"), std::string::npos)
      << later.error().what;
  auto ok = OpenPilotFolder(fs, "a", "export", "folder", "h");
  ASSERT_TRUE(ok.ok()) << ok.error().what;
  EXPECT_EQ(ok.value().kind, kFolderKindAdapt);
}

}  // namespace
}  // namespace pilot
