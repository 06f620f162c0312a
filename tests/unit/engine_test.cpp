// The engine's stage contract: batch failures bisected and recorded, the embedding kind's
// vectors (sidecar, .npy, resume bit for bit), folder kinds and format versions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "pilot/bag.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/plan.h"
#include "pilot/run.h"
#include "pilot/vectors.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

nlohmann::json ReportOf(const fs::path& run) {
  return nlohmann::json::parse(ReadText(run / "data/report.json"));
}

std::vector<nlohmann::json> Results(const fs::path& run) {
  std::vector<nlohmann::json> out;
  std::istringstream in(ReadText(run / "data/results.jsonl"));
  for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l));
  return out;
}

Result<RunOutcome> Resume(const fs::path& dir, Stage& stage) {
  auto setup = PrepareResume(RealFileSystem(), dir);
  if (!setup.ok()) return setup.error();
  return ResumeRun(RealFileSystem(), testing::SharedClock(), setup.value(), stage);
}

// A stage with a featurisation step: Prepare gives each text's bytes as ids, and
// ProcessPrepared checks that every input arrives with its own features.
class PreparingStage : public FakeStage {
 public:
  bool Prepare(std::string_view text, PreparedInput& out) const override {
    out.ids.assign(text.begin(), text.end());
    std::lock_guard<std::mutex> hold(mu_);
    prepare_threads_.insert(std::this_thread::get_id());
    ++prepared_;
    return true;
  }
  BatchOutput ProcessPrepared(const std::vector<std::string_view>& texts,
                              const std::vector<const PreparedInput*>& prepared) override {
    ++prepared_batches;
    if (prepared.size() != texts.size()) ++mismatches;
    for (std::size_t k = 0; k < texts.size() && k < prepared.size(); ++k) {
      if (prepared[k]->ids != std::vector<std::int64_t>(texts[k].begin(), texts[k].end())) ++mismatches;
    }
    return FakeStage::Process(texts);
  }
  BatchOutput Process(const std::vector<std::string_view>& texts) override {
    ++plain_batches;
    return FakeStage::Process(texts);
  }
  std::size_t prepared() const { return prepared_; }
  std::set<std::thread::id> prepare_threads() const { return prepare_threads_; }
  int prepared_batches = 0, plain_batches = 0, mismatches = 0;

 private:
  mutable std::mutex mu_;
  mutable std::set<std::thread::id> prepare_threads_;
  mutable std::size_t prepared_ = 0;
};

// Featurisation runs on the pipeline's workers, never on the model's thread; every batch,
// bisected halves included, reaches the stage with its own features, and the results are
// those of a stage that featurises inside Process.
TEST(Engine, TheStagesPrepareStepRunsOnTheWorkersWithEachInputsOwnFeatures) {
  testing::Items items;
  for (int i = 0; i < 40; ++i) {
    items.push_back({"i" + std::to_string(i), i == 13      ? "fail here"
                                              : i % 7 == 0 ? "fr texte " + std::to_string(i)
                                                           : "en text " + std::to_string(i)});
  }
  Fixture plain_run(items);
  plain_run.plan.params.batch_size = 8;
  FakeStage plain;
  auto want = ExecuteRun(RealFileSystem(), testing::SharedClock(), plain_run.plan, plain);
  ASSERT_TRUE(want.ok()) << want.error().ToString();

  Fixture f(items);
  f.plan.params.batch_size = 8;
  f.plan.params.prepare_threads = 3;
  PreparingStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  EXPECT_EQ(stage.prepared(), 40u);
  EXPECT_EQ(stage.mismatches, 0);
  EXPECT_EQ(stage.plain_batches, 0);
  EXPECT_EQ(stage.batch_sizes,
            plain.batch_sizes);  // the same bisection: 8, 4, 4, 2, 1, 1, 2 for the poisoned batch
  EXPECT_EQ(static_cast<std::size_t>(stage.prepared_batches), stage.batch_sizes.size());
  EXPECT_EQ(stage.prepare_threads().count(std::this_thread::get_id()), 0u);
  EXPECT_GE(stage.prepare_threads().size(), 1u);
  auto a = Results(out.value().run_dir), b = Results(want.value().run_dir);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k]["status"], b[k]["status"]) << k;
    EXPECT_EQ(a[k].value("category", ""), b[k].value("category", "")) << k;
    EXPECT_EQ(a[k].value("reason", ""), b[k].value("reason", "")) << k;
  }
}

// A Prepare that throws (it must not; an out-of-memory might) never ends on a worker thread
// in std::terminate: its batch goes to Process unprepared and the run finishes.
class ThrowingPrepareStage : public PreparingStage {
 public:
  bool Prepare(std::string_view text, PreparedInput& out) const override {
    if (text.find("boom") != std::string_view::npos) throw std::bad_alloc();
    return PreparingStage::Prepare(text, out);
  }
};

TEST(Engine, AStageWhosePrepareThrowsFallsBackToProcess) {
  testing::Items items;
  for (int i = 0; i < 12; ++i) items.push_back({"i" + std::to_string(i), i == 5 ? "en boom" : "en text"});
  Fixture f(items);
  f.plan.params.batch_size = 4;
  f.plan.params.prepare_threads = 2;
  ThrowingPrepareStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  EXPECT_EQ(out.value().report.accepted, 12u);
  EXPECT_EQ(stage.plain_batches, 1);     // the batch holding i5
  EXPECT_EQ(stage.prepared_batches, 2);  // the other two
  EXPECT_EQ(stage.mismatches, 0);
}

// One poisonous input in a batch of 8: the engine bisects (8, 4, 2) down to it; the other
// seven are accepted, and each failed batch is in the report.
TEST(Engine, AFailedBatchIsBisectedUntilTheFailingItemIsIsolated) {
  testing::Items items;
  for (int i = 0; i < 8; ++i) items.push_back({"i" + std::to_string(i), i == 5 ? "fail here" : "en text"});
  Fixture f(items);
  f.plan.params.batch_size = 8;
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  // 8 fails; 4 (i0-i3) passes; 4 (i4-i7) fails; 2 (i4-i5) fails; i4, i5 alone; 2 (i6-i7).
  EXPECT_EQ(stage.batch_sizes, (std::vector<std::size_t>{8, 4, 4, 2, 1, 1, 2}));
  auto results = Results(out.value().run_dir);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(results[i]["status"], i == 5 ? "rejected" : "accepted") << i;
  }
  EXPECT_EQ(results[5]["reason"], "stage_error");
  EXPECT_EQ(results[5]["detail"], "scripted failure");
  auto report = ReportOf(out.value().run_dir);
  EXPECT_EQ(report["batch_failures"]["count"], 3);
  EXPECT_EQ(report["batch_failures"]["recorded"][0]["batch_size"], 8);
  EXPECT_EQ(report["batch_failures"]["recorded"][2]["batch_size"], 2);
  EXPECT_EQ(report["batch_failures"]["out_of_memory_at_batch_sizes"].size(), 0u);
  EXPECT_NE(ReadText(out.value().run_dir / "data/report.md").find("## Batch failures"), std::string::npos);
}

// A stage that decodes `slots` at once from a window of 4 batches (a generator's in-flight
// batching), out of memory above 2 slots: the engine hands it windows of 4 x batch, and a window
// that runs out of memory is retried whole at half the slots, the failure recorded at the slots.
class WindowStage : public FakeStage {
 public:
  std::size_t InputsPerCall(std::size_t batch) const override { return 4 * batch; }
  void SetConcurrency(std::size_t slots) override { slots_ = slots; }
  BatchOutput Process(const std::vector<std::string_view>& texts) override {
    calls.emplace_back(texts.size(), slots_);
    if (slots_ > 2) return BatchOutput::Failed("out of memory: the KV cache", true);
    return FakeStage::Process(texts);
  }
  std::vector<std::pair<std::size_t, std::size_t>> calls;  // (inputs, slots)

 private:
  std::size_t slots_ = 0;
};

TEST(Engine, AWindowThatRunsOutOfMemoryIsRetriedWholeAtHalfTheSlots) {
  testing::Items items;
  for (int i = 0; i < 18; ++i) items.push_back({"i" + std::to_string(i), "en text"});
  Fixture f(items);
  f.plan.params.batch_size = 4;
  WindowStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().report.accepted, 18u);
  using Call = std::pair<std::size_t, std::size_t>;
  // 16 items at 4 slots fail, then at 2 pass; the last 2 items at 2 slots (no more than inputs).
  EXPECT_EQ(stage.calls, (std::vector<Call>{{16, 4}, {16, 2}, {2, 2}}));
  auto report = ReportOf(out.value().run_dir);
  EXPECT_EQ(report["batch_failures"]["count"], 1);
  EXPECT_EQ(report["batch_failures"]["recorded"][0]["batch_size"], 4)
      << "recorded at the slots, not the window";
  EXPECT_EQ(report["batch_failures"]["out_of_memory_at_batch_sizes"], nlohmann::json::array({4}));
}

// An out-of-memory that appears only above batch size 2: recorded at 8 and 4, visible in the
// report, and no item is lost to it.
TEST(Engine, AnOutOfMemoryAtSomeBatchSizeIsRecordedNotHidden) {
  testing::Items items;
  for (int i = 0; i < 8; ++i) items.push_back({"i" + std::to_string(i), "oombig x"});
  Fixture f(items);
  f.plan.params.batch_size = 8;
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().report.accepted, 8u);
  auto report = ReportOf(out.value().run_dir);
  EXPECT_EQ(report["batch_failures"]["count"], 3);  // 8, then both halves of 4
  EXPECT_EQ(report["batch_failures"]["out_of_memory_at_batch_sizes"], nlohmann::json::array({4, 8}));
  EXPECT_NE(report["batch_failures"]["recorded"][0]["error"].get<std::string>().find("out of memory"),
            std::string::npos);
  // The journal keeps them, so a resumed run's report would too.
  auto journal = LoadJournal(RealFileSystem(), out.value().run_dir / kJournal, false);
  ASSERT_TRUE(journal.ok());
  EXPECT_EQ(journal.value().batch_failure_count, 3u);
}

// A single item that fails out of memory on its own is rejected device_out_of_memory.
TEST(Engine, AnItemThatRunsOutOfMemoryAloneIsRejectedForIt) {
  Fixture f(testing::Items{{"a", "oom x"}, {"b", "en y"}});
  f.plan.params.batch_size = 2;
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  auto results = Results(out.value().run_dir);
  EXPECT_EQ(results[0]["reason"], "device_out_of_memory");
  EXPECT_EQ(results[1]["status"], "accepted");
}

// An item-level failure (the stage's own outcome) needs no retry.
TEST(Engine, AnItemLevelFailureIsNotABatchFailure) {
  Fixture f(testing::Items{{"a", "itemfail x"}, {"b", "en y"}});
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(stage.batch_sizes, (std::vector<std::size_t>{2}));
  EXPECT_EQ(Results(out.value().run_dir)[0]["reason"], "stage_error");
  EXPECT_EQ(out.value().report.batch_failure_count, 0u);
}

TEST(Engine, FolderKindAndFormatAreDeclaredInRunJsonAndBagInfo) {
  Fixture f(testing::Items{{"a", "en x"}});
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  const fs::path dir = out.value().run_dir;
  auto run = nlohmann::json::parse(ReadText(dir / "data/run.json"));
  EXPECT_EQ(run["folder_kind"], "run");
  EXPECT_EQ(run["format_version"], kRunFormatVersion);
  EXPECT_EQ(run["plan"]["output"], "classification");
  const std::string info = ReadText(dir / "bag-info.txt");
  EXPECT_EQ(BagInfoValue(info, "Pilot-Folder-Kind"), "run");
  EXPECT_EQ(BagInfoValue(info, "Pilot-Format-Version"), std::to_string(kRunFormatVersion));
  auto kind = ReadFolderKind(RealFileSystem(), dir);
  ASSERT_TRUE(kind.ok());
  EXPECT_TRUE(kind.value().declared);
  EXPECT_EQ(kind.value().version, kRunFormatVersion);
  EXPECT_NE(ReadText(dir / kJournal).find("\"version\":2"), std::string::npos);
}

class FolderKindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeStage stage;
    auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f_.plan, stage);
    ASSERT_TRUE(out.ok());
    dir_ = out.value().run_dir;
  }
  void EditRunJson(const std::string& from, const std::string& to) {
    std::string run = ReadText(dir_ / "data/run.json");
    auto at = run.find(from);
    ASSERT_NE(at, std::string::npos);
    run.replace(at, from.size(), to);
    WriteText(dir_ / "data/run.json", run);
  }
  Fixture f_{testing::Items{{"a", "en x"}, {"b", "fr y"}}};
  fs::path dir_;
};

TEST_F(FolderKindTest, AnUnknownKindIsRefusedByVerifyResumeAndStatusNamingIt) {
  EditRunJson("\"folder_kind\": \"run\"", "\"folder_kind\": \"archive\"");
  const std::string before = ReadText(dir_ / "data/run.json");
  // bag-info.txt still says run: the two disagree, which is a finding of a damaged folder.
  auto verified = VerifyFolder(RealFileSystem(), dir_, {});
  ASSERT_TRUE(verified.ok());
  bool disagreement = false;
  for (const auto& x : verified.value().findings) {
    disagreement |= x.what.find("bag-info.txt says kind 'run'") != std::string::npos;
  }
  EXPECT_TRUE(disagreement);
  // Both say archive: a kind this pilot does not know, refused (exit 2) rather than judged.
  WriteText(dir_ / "bag-info.txt",
            "Pilot-Folder-Kind: archive\nPilot-Format-Version: " + std::to_string(kRunFormatVersion) + "\n");
  verified = VerifyFolder(RealFileSystem(), dir_, {});
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(verified.error().what.find("kind 'archive'"), std::string::npos) << verified.error().what;
  auto status = ReadRunStatus(RealFileSystem(), dir_);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().what.find("kind 'archive'"), std::string::npos);
  FakeStage stage;
  auto resumed = Resume(dir_, stage);
  ASSERT_FALSE(resumed.ok());
  EXPECT_NE(resumed.error().what.find("kind 'archive'"), std::string::npos) << resumed.error().what;
  EXPECT_EQ(ReadText(dir_ / "data/run.json"), before);
}

TEST_F(FolderKindTest, ANewerFormatIsRefusedNamingTheVersion) {
  EditRunJson("\"format_version\": " + std::to_string(kRunFormatVersion), "\"format_version\": 9");
  WriteText(dir_ / "bag-info.txt", "Pilot-Folder-Kind: run\nPilot-Format-Version: 9\n");
  auto verified = VerifyFolder(RealFileSystem(), dir_, {});
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.error().what.find("run format 9"), std::string::npos) << verified.error().what;
}

TEST_F(FolderKindTest, BagInfoDisagreeingWithRunJsonIsAFinding) {
  std::string info = ReadText(dir_ / "bag-info.txt");
  info.replace(info.find("Pilot-Format-Version: " + std::to_string(kRunFormatVersion)), 23,
               "Pilot-Format-Version: 1");
  WriteText(dir_ / "bag-info.txt", info);
  auto r = VerifyRunFolder(RealFileSystem(), dir_, {});
  bool found = false;
  for (const auto& x : r.findings)
    found |= x.what.find("bag-info.txt says kind 'run' format '1'") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(Journal, AnUnknownVersionOrARecordTypeItsVersionLacksIsRefusedByName) {
  const std::string header =
      R"({"type":"header","version":VERSION,"run_id":"r","manifest_sha256":")" + std::string(64, 'a') +
      R"(","params_sha256":")" + std::string(64, 'a') + R"(","model_sha256":")" + std::string(64, 'a') +
      R"(","items":1,"manifest_copy":"data/manifest.json","plan":{"manifest":"/m","params":"/p","model":"/o","inputs_root":"/"}})";
  auto with = [&](const std::string& v) {
    std::string h = header;
    h.replace(h.find("VERSION"), 7, v);
    return h + "\n";
  };
  auto newer = ParseJournal(with("3"), "j");
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().what.find("format version 3"), std::string::npos) << newer.error().what;
  const std::string failure = R"({"type":"batch_failure","batch_size":8,"out_of_memory":true,"error":"x"})"
                              "\n";
  const std::string tail = R"({"type":"session","at_unix":1})"
                           "\n";
  auto v1 = ParseJournal(with("1") + failure + tail, "j");
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.error().what.find("unknown type 'batch_failure'"), std::string::npos) << v1.error().what;
  auto v2 = ParseJournal(with("2") + failure + tail, "j");
  ASSERT_TRUE(v2.ok()) << v2.error().ToString();
  EXPECT_EQ(v2.value().batch_failure_count, 1u);
  EXPECT_TRUE(v2.value().batch_failures[0].out_of_memory);
}

TEST(Engine, AStageThatDeclaresNoOutputKindIsRefusedBeforeAnythingIsWritten) {
  Fixture f({{"a", "en hello"}, {"b", "fr salut"}});
  FakeStage stage;
  stage.ForgetOutputKind();
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().what.find("stage kind 'fake' declares no output kind"), std::string::npos);
  EXPECT_EQ(out.error().where, "stage.kind");
  EXPECT_FALSE(std::filesystem::exists(f.plan.runs_dir / f.plan.run_id)) << "no run folder";
}

TEST(Plan, AllowedCategoriesFollowTheStagesKind) {
  Params p;
  StageDescription classifier;
  classifier.kind = "torchscript-classifier";
  classifier.labels = {"en", "fr"};
  auto undeclared = CheckStageFitsParams(classifier, p);
  ASSERT_FALSE(undeclared.ok()) << "a stage that declares no output kind";
  EXPECT_NE(undeclared.error().what.find("'torchscript-classifier' declares no output kind"),
            std::string::npos);
  classifier.output = &ClassificationOutput();
  auto none = CheckStageFitsParams(classifier, p);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().what.find("'allowed_categories' is required"), std::string::npos);
  p.allowed_categories = {"en", "xx"};
  auto unknown = CheckStageFitsParams(classifier, p);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().what.find("'xx'"), std::string::npos);
  p.allowed_categories = {"en"};
  EXPECT_TRUE(CheckStageFitsParams(classifier, p).ok());
  StageDescription embedding;
  embedding.kind = "torchscript-embedding";
  embedding.output = &EmbeddingOutput();
  embedding.dim = 4;
  auto refused = CheckStageFitsParams(embedding, p);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("applies only to a stage that classifies"), std::string::npos);
  p.allowed_categories.clear();
  EXPECT_TRUE(CheckStageFitsParams(embedding, p).ok());
}

// --- the embedding kind ---

struct Npy {
  std::uint64_t rows = 0, cols = 0;
  std::vector<float> values;
};

Npy LoadNpy(const fs::path& file) {
  std::string bytes = ReadText(file);
  auto shape = ParseNpyHeader(bytes, file.string());
  EXPECT_TRUE(shape.ok()) << shape.error().ToString();
  Npy n;
  if (!shape.ok()) return n;
  n.rows = shape.value().rows;
  n.cols = shape.value().cols;
  n.values.resize(n.rows * n.cols);
  EXPECT_EQ(bytes.size(), shape.value().data_offset + n.values.size() * 4);
  std::memcpy(n.values.data(), bytes.data() + shape.value().data_offset, n.values.size() * 4);
  return n;
}

testing::Items EmbeddingItems() {
  return {{"a", "alpha text"}, {"b", ""},           {"c", "gamma text"}, {"d", "nanvec x"},
          {"e", "alpha text"}, {"f", "shortvec y"}, {"g", "eta"},        {"h", "itemfail z"}};
}

TEST(Embedding, VectorsGoToNpyInManifestOrderOfTheAcceptedItems) {
  Fixture f(EmbeddingItems());
  f.plan.params.allowed_categories.clear();
  FakeStage stage(EmbeddingOutput(), 4);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  const fs::path dir = out.value().run_dir;
  auto results = Results(dir);
  ASSERT_EQ(results.size(), 8u);
  EXPECT_EQ(results[1]["reason"], "empty_input");
  EXPECT_EQ(results[3]["reason"], "invalid_output");
  EXPECT_NE(results[3]["detail"].get<std::string>().find("not finite"), std::string::npos);
  EXPECT_EQ(results[5]["reason"], "invalid_output");
  EXPECT_NE(results[5]["detail"].get<std::string>().find("3 values, its dim is 4"), std::string::npos);
  EXPECT_EQ(results[7]["reason"], "stage_error");
  Npy npy = LoadNpy(dir / kVectorsNpy);
  ASSERT_EQ(npy.rows, 4u);
  ASSERT_EQ(npy.cols, 4u);
  std::uint64_t row = 0;
  for (const auto& r : results) {
    if (r["status"] != "accepted") continue;
    EXPECT_EQ(r["row"], row);
    EXPECT_EQ(r["dim"], 4);
    EXPECT_FALSE(r.contains("category"));
    EXPECT_FALSE(r.contains("vector_at"));
    std::string text = ReadText(f.inputs / (r["id"].get<std::string>() + ".txt"));
    std::vector<float> want = FakeStage::VectorOf(text, 4);
    EXPECT_EQ(std::memcmp(&npy.values[row * 4], want.data(), 16), 0) << r["id"];
    ++row;
  }
  // Identical texts (a and e) give identical rows.
  EXPECT_EQ(std::memcmp(&npy.values[0], &npy.values[2 * 4], 16), 0);
  auto report = ReportOf(dir);
  EXPECT_EQ(report["output_kind"], "embedding");
  EXPECT_EQ(report["embedding"]["rows"], 4);
  EXPECT_EQ(report["embedding"]["dim"], 4);
  EXPECT_TRUE(report["by_category"].empty());
  auto run = nlohmann::json::parse(ReadText(dir / "data/run.json"));
  EXPECT_EQ(run["plan"]["output"], "embedding");
  EXPECT_EQ(run["plan"]["dim"], 4);
  EXPECT_FALSE(run["plan"].contains("allowed_categories"));
}

// Run format 4: the vectors are stored once. The finished folder has no sidecar, and every
// accepted result (and its journal record) carries the sha256 of its row's stored bytes.
TEST(Embedding, VectorsAreStoredOnceWithEachRowsDigest) {
  Fixture f(EmbeddingItems());
  f.plan.params.allowed_categories.clear();
  FakeStage stage(EmbeddingOutput(), 4);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  const fs::path dir = out.value().run_dir;
  EXPECT_FALSE(fs::exists(dir / kVectorsSidecar));
  const std::string npy = ReadText(dir / kVectorsNpy);
  const std::size_t at = ParseNpyHeader(npy, "x").value().data_offset;
  std::size_t accepted = 0;
  for (const auto& r : Results(dir)) {
    if (r["status"] != "accepted") {
      EXPECT_FALSE(r.contains("vector_sha256"));
      continue;
    }
    const std::string row = npy.substr(at + r["row"].get<std::size_t>() * 16, 16);
    EXPECT_EQ(r["vector_sha256"], Sha256Hex(row)) << r["id"];
    ++accepted;
  }
  EXPECT_EQ(accepted, 4u);
  // The journal held the digest before the row existed.
  const std::string journal = ReadText(dir / kJournal);
  EXPECT_NE(journal.find("\"vector_sha256\":\"" + Sha256Hex(npy.substr(at, 16)) + "\""), std::string::npos);
}

// vectors_dtype float16: '<f2' rows, each value rounded to nearest even, half the bytes; an
// item whose vector does not fit float16 is rejected, never stored as infinity.
TEST(Embedding, Float16StoresHalfTheBytesAndRejectsWhatDoesNotFit) {
  testing::Items items = EmbeddingItems();
  items.push_back({"i", "hugevec w"});
  Fixture f(items);
  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
                  "batch_size": 2, "vectors_dtype": "float16"})");
  FakeStage stage(EmbeddingOutput(), 4);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok())
      << (out.value().verify.findings.empty() ? "" : out.value().verify.findings[0].what);
  const fs::path dir = out.value().run_dir;
  const std::string npy = ReadText(dir / kVectorsNpy);
  auto shape = ParseNpyHeader(npy, "x");
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape.value().dtype, VectorDtype::kFloat16);
  EXPECT_EQ(npy.size(), shape.value().data_offset + 4 * 4 * 2);
  auto results = Results(dir);
  ASSERT_EQ(results.size(), 9u);
  EXPECT_EQ(results[8]["reason"], "invalid_output");
  EXPECT_NE(results[8]["detail"].get<std::string>().find("beyond float16's range"), std::string::npos);
  for (const auto& r : results) {
    if (r["status"] != "accepted") continue;
    const std::size_t row = r["row"].get<std::size_t>();
    const std::vector<float> want =
        FakeStage::VectorOf(ReadText(f.inputs / (r["id"].get<std::string>() + ".txt")), 4);
    const std::string stored = npy.substr(shape.value().data_offset + row * 8, 8);
    EXPECT_EQ(stored, StoredVector(want.data(), want.size(), VectorDtype::kFloat16)) << r["id"];
    EXPECT_EQ(r["vector_sha256"], Sha256Hex(stored));
  }
  auto md = ReadText(dir / kReportMarkdown);
  EXPECT_NE(md.find("vectors_dtype"), std::string::npos);
}

TEST(Embedding, Float16IsRefusedForAStageWithoutVectors) {
  Fixture f(EmbeddingItems());
  f.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
                  "allowed_categories": ["en"], "vectors_dtype": "float16"})");
  FakeStage classifier;
  auto refused = CheckStageFitsParams(classifier.Describe(), f.plan.params);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().where, "vectors_dtype");
  EXPECT_NE(refused.error().what.find("applies only to a stage with vectors"), std::string::npos);
  auto bad = ParseParams(
      R"({"manifest": "m.json", "stage": {"kind": "k", "model": "m"}, "vectors_dtype": "bfloat16"})", "/tmp",
      "params.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("vectors_dtype"), std::string::npos) << bad.error().what;
  EXPECT_NE(bad.error().what.find("float32 or float16"), std::string::npos) << bad.error().what;
}

// A kill after finish removed the sidecar and before the bag was sealed: every item is
// journaled and the .npy is whole, so resume finishes from the .npy, bit for bit.
TEST(Embedding, AKillAfterTheSidecarWentIsFinishedFromTheNpy) {
  Fixture f(EmbeddingItems());
  f.plan.params.allowed_categories.clear();
  FakeStage stage(EmbeddingOutput(), 4);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  const fs::path dir = out.value().run_dir;
  const std::string npy = ReadText(dir / kVectorsNpy);
  const std::string results = ReadText(dir / kResults);
  // The state such a kill leaves: the bag not sealed, the results and reports about to be
  // written again.
  for (const char* bag : {"manifest-sha256.txt", "tagmanifest-sha256.txt", "bag-info.txt"})
    fs::remove(dir / bag);
  fs::remove(dir / kResults);
  FakeStage second(EmbeddingOutput(), 4);
  auto done = Resume(dir, second);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done.value().verify.ok());
  EXPECT_EQ(ReadText(dir / kVectorsNpy), npy);
  EXPECT_EQ(ReadText(dir / kResults), results);
  EXPECT_TRUE(second.batch_sizes.empty());  // nothing processed again

  // The same state with the .npy cut short (a partial copy): refused before anything is
  // written, the journal as it was.
  for (const char* bag : {"manifest-sha256.txt", "tagmanifest-sha256.txt", "bag-info.txt"})
    fs::remove(dir / bag);
  WriteText(dir / kVectorsNpy, npy.substr(0, npy.size() - 3));
  const std::string journal = ReadText(dir / kJournal);
  auto cut = PrepareResume(RealFileSystem(), dir);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(cut.error().hint.find("the vectors sidecar is gone and the .npy is damaged"), std::string::npos)
      << cut.error().ToString();
  EXPECT_EQ(ReadText(dir / kJournal), journal);
  EXPECT_FALSE(fs::exists(dir / ".lock"));

  // The same state with a row changed: finish refuses it, naming the item and the file.
  for (const char* bag : {"manifest-sha256.txt", "tagmanifest-sha256.txt", "bag-info.txt"})
    fs::remove(dir / bag);
  std::string edited = npy;
  edited[ParseNpyHeader(npy, "x").value().data_offset] ^= 1;
  WriteText(dir / kVectorsNpy, edited);
  FakeStage third(EmbeddingOutput(), 4);
  auto refused = Resume(dir, third);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("item 'a''s vector is not the one its journal record digested"),
            std::string::npos)
      << refused.error().what;
  EXPECT_NE(refused.error().where.find("vectors.npy"), std::string::npos);
  EXPECT_EQ(ReadText(dir / kVectorsNpy), edited);  // nothing overwritten
}

// Killed after 3 items, resumed in a fresh stage: vectors.npy is bit for bit the one of an
// uninterrupted run, even when the sidecar holds vectors whose journal record never made it.
TEST(Embedding, VectorsSurviveStopAndResumeBitForBit) {
  Fixture f(EmbeddingItems());
  f.plan.params.allowed_categories.clear();
  f.plan.run_id = "straight";
  FakeStage straight_stage(EmbeddingOutput(), 4);
  auto straight = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, straight_stage);
  ASSERT_TRUE(straight.ok());
  const std::string want = ReadText(straight.value().run_dir / kVectorsNpy);

  f.plan.run_id = "part";
  RunControl control;
  control.stop_after = 3;
  FakeStage first(EmbeddingOutput(), 4);
  auto part = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, first, control);
  ASSERT_TRUE(part.ok());
  ASSERT_TRUE(part.value().interrupted);
  const fs::path dir = part.value().run_dir;
  // A kill between the sidecar's fsync and the journal's: an entry nothing points at.
  const std::string orphan = SidecarEntry("g", FakeStage::VectorOf("garbage", 4));
  { std::ofstream(dir / kVectorsSidecar, std::ios::app | std::ios::binary) << orphan; }
  FakeStage second(EmbeddingOutput(), 4);
  auto done = Resume(dir, second);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done.value().verify.ok());
  EXPECT_EQ(ReadText(dir / kVectorsNpy), want);
}

// An embedding run stopped after 3 items: an interrupted folder to resume.
fs::path StoppedEmbeddingRun(Fixture& f) {
  f.plan.params.allowed_categories.clear();
  RunControl control;
  control.stop_after = 3;
  FakeStage first(EmbeddingOutput(), 4);
  auto part = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, first, control);
  EXPECT_TRUE(part.ok() && part.value().interrupted);
  return part.ok() ? part.value().run_dir : fs::path();
}

// Re-hashes a tampered bag consistently, so that only pilot's own checks can tell.
void Rebag(const fs::path& dir) {
  fs::remove(dir / "manifest-sha256.txt");
  fs::remove(dir / "tagmanifest-sha256.txt");
  ASSERT_TRUE(
      FinalizeBag(RealFileSystem(), dir, "2026-11-30",
                  {{"Pilot-Folder-Kind", "run"}, {"Pilot-Format-Version", std::to_string(kRunFormatVersion)}})
          .ok());
}

TEST(Embedding, ASidecarShorterThanTheJournalSaysIsRefusedOnResume) {
  Fixture f(EmbeddingItems());
  const fs::path dir = StoppedEmbeddingRun(f);
  ASSERT_FALSE(dir.empty());
  const fs::path sidecar = dir / kVectorsSidecar;
  fs::resize_file(sidecar, fs::file_size(sidecar) - 1);
  const std::string journal = ReadText(dir / kJournal);
  FakeStage second(EmbeddingOutput(), 4);
  auto done = Resume(dir, second);
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.error().what.find("the journal refers to"), std::string::npos) << done.error().what;
  EXPECT_NE(done.error().where.find("vectors.sidecar"), std::string::npos);
  EXPECT_EQ(ReadText(dir / kJournal).substr(0, journal.size()), journal);
}

class EmbeddingVerify : public ::testing::Test {
 protected:
  void SetUp() override {
    f_.plan.params.allowed_categories.clear();
    FakeStage stage(EmbeddingOutput(), 4);
    auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f_.plan, stage);
    ASSERT_TRUE(out.ok());
    dir_ = out.value().run_dir;
  }
  void Rebag() { pilot::Rebag(dir_); }
  bool Has(const VerifyResult& r, const std::string& what) {
    for (const auto& x : r.findings) {
      if (x.check == "vectors" && x.what.find(what) != std::string::npos) return true;
    }
    return false;
  }
  Fixture f_{EmbeddingItems()};
  fs::path dir_;
};

TEST_F(EmbeddingVerify, ANonFiniteValueIsAFinding) {
  std::string npy = ReadText(dir_ / kVectorsNpy);
  const float nan = std::nanf("");
  std::memcpy(&npy[npy.size() - 4], &nan, 4);
  WriteText(dir_ / kVectorsNpy, npy);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), dir_, {});
  EXPECT_TRUE(Has(r, "row 3 holds a value that is not finite"));
}

TEST_F(EmbeddingVerify, AMissingRowOrAWrongDtypeIsAFinding) {
  std::string npy = ReadText(dir_ / kVectorsNpy);
  auto shape = ParseNpyHeader(npy, "x").value();
  WriteText(dir_ / kVectorsNpy, NpyHeader(3, 4) + npy.substr(shape.data_offset, 3 * 16));
  Rebag();
  EXPECT_TRUE(Has(VerifyRunFolder(RealFileSystem(), dir_, {}), "has 3 rows for 4 accepted items"));
  std::string f8 = npy;
  f8.replace(f8.find("<f4"), 3, "<f8");
  WriteText(dir_ / kVectorsNpy, f8);
  Rebag();
  EXPECT_TRUE(Has(VerifyRunFolder(RealFileSystem(), dir_, {}), "dtype '<f8'"));
  WriteText(dir_ / kVectorsNpy, npy.substr(0, npy.size() - 1));
  Rebag();
  EXPECT_TRUE(Has(VerifyRunFolder(RealFileSystem(), dir_, {}), "not what its header's shape"));
}

// Format 4's own findings: a result without its digest, a sidecar left in the folder, a
// dtype other than the parameters ask for.
TEST_F(EmbeddingVerify, AMissingDigestALeftSidecarOrAnotherDtypeIsAFinding) {
  const std::string results = ReadText(dir_ / kResults);
  std::string stripped = results;
  const auto at = stripped.find(",\"vector_sha256\":\"");
  ASSERT_NE(at, std::string::npos);
  stripped.erase(at, 18 + 64 + 1);
  WriteText(dir_ / kResults, stripped);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), dir_, {});
  EXPECT_TRUE(Has(r, "accepted without the vector_sha256 that run format 4 requires"));
  WriteText(dir_ / kResults, results);
  WriteText(dir_ / kVectorsSidecar, SidecarHeader(4));
  Rebag();
  EXPECT_TRUE(Has(VerifyRunFolder(RealFileSystem(), dir_, {}), "keeps its vectors once"));
  fs::remove(dir_ / kVectorsSidecar);
  const std::string npy = ReadText(dir_ / kVectorsNpy);
  const auto shape = ParseNpyHeader(npy, "x").value();
  std::string halves = NpyHeader(shape.rows, 4, VectorDtype::kFloat16);
  halves += StoredFromRaw(npy.substr(shape.data_offset), VectorDtype::kFloat16);
  WriteText(dir_ / kVectorsNpy, halves);
  Rebag();
  EXPECT_TRUE(Has(VerifyRunFolder(RealFileSystem(), dir_, {}),
                  "stores float16 ('<f2'); the parameters' vectors_dtype is float32"));
}

TEST_F(EmbeddingVerify, RowsOutOfManifestOrderAreAFinding) {
  std::string results = ReadText(dir_ / "data/results.jsonl");
  auto at = results.find("\"row\":0");
  ASSERT_NE(at, std::string::npos);
  results.replace(at, 7, "\"row\":1");
  WriteText(dir_ / "data/results.jsonl", results);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), dir_, {});
  bool found = false;
  for (const auto& x : r.findings) found |= x.what.find("it must have row 0") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(Npy, HostileHeadersAreRefusedNotTrusted) {
  for (std::string bad :
       {std::string("\x93NUMPY"), std::string("not npy at all"), NpyHeader(1, 2).replace(6, 1, "\x02"),
        std::string("\x93NUMPY\x01\x00\xff\xff", 10)}) {
    EXPECT_FALSE(ParseNpyHeader(bad, "x").ok()) << bad;
  }
  std::string huge = NpyHeader(1, 2);
  huge.replace(huge.find("(1, 2)"), 6, "(1, 2, 3)");
  EXPECT_FALSE(ParseNpyHeader(huge, "x").ok());
  auto ok = ParseNpyHeader(NpyHeader(5, 7), "x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value().rows, 5u);
  EXPECT_EQ(ok.value().cols, 7u);
  EXPECT_EQ(ok.value().data_offset % 64, 0u);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

// The plan is built in the library: what was asked is kept beside what will be done.
TEST(Plan, BuildRunPlanRecordsWhatWasAskedBesideTheEffectivePlan) {
  Fixture f(testing::Items{{"a", "en x"}});
  RunRequest request;
  request.params_file = f.dir / "params.json";
  request.device = "cpu";
  request.runs_dir = f.dir / "runs";
  request.command_line = {"pilot", "run"};
  auto plan = BuildRunPlan(RealFileSystem(), request);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  EXPECT_EQ(plan.value().params.device, "cpu");
  EXPECT_EQ(plan.value().requested["device"], "cpu");
  EXPECT_EQ(plan.value().requested["device_in_params"], "auto");
  EXPECT_EQ(plan.value().requested["batch_size"], 2);
  EXPECT_EQ(plan.value().manifest.size(), 1u);
  EXPECT_EQ(plan.value().model_sha256, Sha256Hex("fake model"));

  request.device = "tpu";
  auto bad = BuildRunPlan(RealFileSystem(), request);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "--device");
  request.device.reset();
  WriteText(f.dir / "model.bin", "another model");
  WriteText(f.dir / "params.json", R"({"manifest": "inputs/manifest.json",
    "stage": {"kind": "fake", "model": "model.bin", "model_sha256": ")" +
                                       Sha256Hex("fake model") + R"("},
    "allowed_categories": ["en"]})");
  auto changed = BuildRunPlan(RealFileSystem(), request);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().what.find("but the parameters pin"), std::string::npos);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

// Two rows swapped and the bag re-hashed: every check of the file itself holds, but the rows
// are no longer the vectors the run journaled (and digested) for those ids.
TEST(EmbeddingVerifyRows, SwappedRowsDifferFromTheJournaledVectors) {
  Fixture f(EmbeddingItems());
  f.plan.params.allowed_categories.clear();
  FakeStage stage(EmbeddingOutput(), 4);
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  ASSERT_TRUE(out.ok());
  const fs::path dir = out.value().run_dir;
  std::string npy = ReadText(dir / kVectorsNpy);
  const std::size_t at = ParseNpyHeader(npy, "x").value().data_offset;
  std::string row0 = npy.substr(at, 16);
  npy.replace(at, 16, npy.substr(at + 16, 16));
  npy.replace(at + 16, 16, row0);
  WriteText(dir / kVectorsNpy, npy);
  Rebag(dir);
  auto r = VerifyRunFolder(RealFileSystem(), dir, {});
  bool row0_found = false, row1_found = false;
  for (const auto& x : r.findings) {
    row0_found |= x.what.find("row 0 is not the vector item 'a''s vector_sha256") != std::string::npos;
    row1_found |= x.what.find("row 1 is not the vector item 'c''s vector_sha256") != std::string::npos;
  }
  EXPECT_TRUE(row0_found && row1_found);
}

// A damaged sidecar is refused before resume writes anything (no session record, no run.json).
TEST(EmbeddingResume, ADamagedSidecarIsRefusedBeforeAnythingIsWritten) {
  Fixture f(EmbeddingItems());
  const fs::path dir = StoppedEmbeddingRun(f);
  ASSERT_FALSE(dir.empty());
  // Swap the ids of two journaled vectors: each offset now holds the other item's entry.
  std::string sidecar = ReadText(dir / kVectorsSidecar);
  const std::size_t first_entry = kSidecarHeaderBytes + 4;
  ASSERT_EQ(sidecar.substr(first_entry, 1), "a");
  sidecar[first_entry] = 'z';
  WriteText(dir / kVectorsSidecar, sidecar);
  const std::string journal = ReadText(dir / kJournal);
  const std::string run_json = ReadText(dir / "data/run.json");
  auto setup = PrepareResume(RealFileSystem(), dir);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(setup.error().what.find("is not item 'a'"), std::string::npos) << setup.error().what;
  EXPECT_EQ(ReadText(dir / kJournal), journal);
  EXPECT_EQ(ReadText(dir / "data/run.json"), run_json);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

// The fast scanner reads exactly what ToJson writes, and gives up (nullopt) on anything else.
TEST(ScanResultRecord, ReadsWhatPilotWritesAndGivesUpOnAnythingElse) {
  ResultRecord accepted;
  accepted.id = "doc-01";
  accepted.accepted = true;
  accepted.category = "fr";
  accepted.confidence = 0.9999999403953552;
  accepted.model = "sha256:" + std::string(64, 'a');
  accepted.latency_ms = 1.25e-05;
  ResultRecord rejected = ResultRecord::Rejected("doc-12", "invalid_encoding", "byte 0xfc at offset 33");
  ResultRecord embedded;
  embedded.id = "e";
  embedded.accepted = true;
  embedded.dim = 16;
  embedded.row = 3;
  ResultRecord journaled = embedded;
  journaled.row.reset();
  journaled.vector_at = 4096;
  for (const ResultRecord& r : {accepted, rejected, embedded, journaled}) {
    for (bool journal : {false, true}) {
      std::string line = journal ? JsonLine(ToJson(r, {{"type", "result"}})) : ToJsonLine(r);
      auto fast = ScanResultRecord(line, journal);
      ASSERT_TRUE(fast.has_value()) << line;
      EXPECT_EQ(ToJsonLine(*fast), ToJsonLine(r)) << line;
      EXPECT_FALSE(ScanResultRecord(line, !journal).has_value()) << line;
    }
  }
  // Escapes, whitespace, another key order, a bad id or status: the general parser's job.
  for (std::string line : std::vector<std::string>{
           R"({"id":"a","status":"rejected","reason":"x","detail":"say \"hi\""})",
           R"({"id": "a","status":"accepted","category":"fr","confidence":0.9})",
           R"({"status":"accepted","id":"a","category":"fr","confidence":0.9})",
           R"({"id":"../a","status":"accepted","category":"fr","confidence":0.9})",
           R"({"id":"a","status":"maybe"})",
           R"({"id":"a","status":"accepted","category":"fr","confidence":09})",
           R"({"id":"a","status":"accepted","category":"fr","confidence":1e999})",
           R"({"id":"a","status":"accepted","row":1,"dim":0})",
           R"({"id":"a","status":"accepted","category":"fr","confidence":0.9} )",
           std::string("{\"id\":\"a\",\"status\":\"rejected\",\"reason\":\"x\",\"detail\":\"\xff\"}")}) {
    EXPECT_FALSE(ScanResultRecord(line, false).has_value()) << line;
  }
}

}  // namespace
}  // namespace pilot
