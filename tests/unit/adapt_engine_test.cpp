// The adaptation engine (adapt.h) with a scripted trainer: the folder, accounting, pruning,
// checkpoints that resume to the same state, refusals, and a failed write that leaves the
// folder resumable. The torch trainer itself is exercised by e2e.adapt.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pilot/adapt/adapt.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/memory_fs.h"
#include "pilot/verify.h"
#include "test_support.h"

namespace pilot::testing {
namespace {

namespace fs = std::filesystem;

// A "model" of one weight per label and a pseudo-random state that every step advances (as a
// dropout would draw from a generator): both must come back from a checkpoint for a resumed
// run to end where an uninterrupted one does. It predicts a text's first word when that is a
// label; `perfect_at` makes every prediction right at that step alone (to script the best).
class FakeTrainer : public AdaptTrainer {
 public:
  std::uint64_t perfect_at = 0;

  Result<AdaptTrainerInfo> Load(const AdaptTrainerConfig& config) override {
    rng_ = config.seed;
    AdaptTrainerInfo info;
    info.labels = labels_;
    info.trainable = {"w"};
    info.trainable_values = w_.size();
    info.libtorch = "fake";
    return info;
  }
  Result<std::vector<AdaptPrediction>> Predict(const std::vector<const std::string*>& texts) override {
    std::vector<AdaptPrediction> out;
    for (const auto* t : texts) {
      int label = 0;
      const std::string first = t->substr(0, t->find(' '));
      for (std::size_t i = 0; i < labels_.size(); ++i) {
        if (labels_[i] == first && (steps_ == perfect_at || i == 0)) label = static_cast<int>(i);
      }
      out.push_back({label, 0.5});
    }
    return out;
  }
  Result<double> Step(const std::vector<const std::string*>& texts,
                      const std::vector<std::int64_t>& labels) override {
    for (std::size_t i = 0; i < labels.size(); ++i) {
      rng_ = rng_ * 6364136223846793005ull + 1442695040888963407ull;
      w_[static_cast<std::size_t>(labels[i])] += static_cast<double>(rng_ >> 40) / 1e7 + texts[i]->size();
    }
    ++steps_;
    return 1.0 / static_cast<double>(steps_);
  }
  Result<std::string> SaveCheckpoint(const std::string& cursor) override {
    return nlohmann::json{{"w", w_}, {"rng", rng_}, {"steps", steps_}, {"cursor", cursor}}.dump();
  }
  Result<std::string> LoadCheckpoint(std::string_view bytes) override {
    auto j = nlohmann::json::parse(bytes, nullptr, false);
    if (j.is_discarded()) return BadInput("not a checkpoint", "checkpoint");
    w_ = j["w"].get<std::vector<double>>();
    rng_ = j["rng"].get<std::uint64_t>();
    steps_ = j["steps"].get<std::uint64_t>();
    return j["cursor"].get<std::string>();
  }
  std::uint64_t CheckpointBytesLimit() override { return 1 << 20; }
  Result<std::string> SaveModel() override { return "model " + ParametersDigest(); }
  std::string ParametersDigest() override {
    return Sha256Hex(nlohmann::json{{"w", w_}, {"rng", rng_}}.dump());
  }

 private:
  std::vector<std::string> labels_{"en", "fr", "de"};
  std::vector<double> w_ = std::vector<double>(3, 0.0);
  std::uint64_t rng_ = 0;
  std::uint64_t steps_ = 0;
};

struct AdaptFixture {
  TempDir dir;
  AdaptPlan plan;

  // train/eval: id -> (text, label); an empty label leaves `expected` out.
  using Labelled = std::vector<std::tuple<std::string, std::string, std::string>>;
  AdaptFixture(const Labelled& train, const Labelled& eval) {
    WriteManifest("train", train);
    WriteManifest("eval", eval);
    WriteText(dir / "model.bin", "base model");
    AdaptParams& p = plan.params;
    p.base_model = dir / "model.bin";
    p.base_model_sha256 = Sha256Hex("base model");
    p.train_manifest = dir / "train/manifest.json";
    p.eval_manifest = dir / "eval/manifest.json";
    p.batch_size = 2;
    p.steps = 12;
    p.checkpoint_every = 3;
    p.keep_checkpoints = 1;
    p.seed = 42;
    p.threads = 1;
    plan.params_file = dir / "adapt.json";
    plan.params_bytes = R"({"base_model": {"path": "model.bin", "sha256": ")" + p.base_model_sha256 +
                        R"("}, "train_manifest": "train/manifest.json", "eval_manifest": "eval/manifest.json",
 "train": {"batch_size": 2, "steps": 12, "checkpoint_every": 3, "keep_checkpoints": 1, "seed": 42, "threads": 1}})";
    WriteText(plan.params_file, plan.params_bytes);
    plan.runs_dir = dir / "runs";
    plan.device = "cpu";
    plan.environment = {{"test", true}};
  }

  void WriteManifest(const std::string& name, const Labelled& items) {
    fs::create_directories(dir / name);
    nlohmann::ordered_json m{{"name", name}, {"items", nlohmann::ordered_json::array()}};
    for (const auto& [id, text, label] : items) {
      WriteText(dir / name / (id + ".txt"), text);
      nlohmann::ordered_json item{{"id", id}, {"path", id + ".txt"}, {"sha256", Sha256Hex(text)}};
      if (label.rfind("!", 0) == 0) {
        item["expected_rejection"] = label.substr(1);
      } else if (!label.empty()) {
        item["expected"] = label;
      }
      m["items"].push_back(item);
    }
    WriteText(dir / name / "manifest.json", m.dump(2));
  }

  fs::path Folder(const std::string& id) const { return plan.runs_dir / id; }
};

AdaptFixture::Labelled Train() {
  return {{"t1", "en one", "en"},    {"t2", "fr deux", "fr"}, {"t3", "de drei", "de"},
          {"t4", "en four", "en"},   {"t5", "fr cinq", "fr"}, {"t6", "\xff\xfe", "!invalid_encoding"},
          {"t7", "xx unknown", "xx"}};
}
AdaptFixture::Labelled Eval() {
  return {{"e1", "fr salut", "fr"}, {"e2", "de hallo", "de"}, {"e3", "en hello", "en"}};
}

AdaptOutcome MustRun(AdaptFixture& f, const std::string& id, FakeTrainer& trainer,
                     const AdaptControl& control = {}, FileSystem& fsys = RealFileSystem()) {
  f.plan.run_id = id;
  auto out = ExecuteAdapt(fsys, testing::SharedClock(), f.plan, trainer, control);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().ToString());
  return out.ok() ? out.value() : AdaptOutcome{};
}

std::string Digest(const AdaptOutcome& out) { return out.report.value("final_params_digest", std::string()); }

TEST(AdaptEngine, FinishesVerifiedWithEveryTrainingIdAccountedFor) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer trainer;
  AdaptOutcome out = MustRun(f, "a", trainer);
  EXPECT_EQ(out.verdict, AdaptVerdict::kPassed);
  EXPECT_TRUE(out.verify.ok()) << (out.verify.findings.empty() ? "" : out.verify.findings[0].what);
  const std::string train = ReadText(f.Folder("a") / "data/train.jsonl");
  EXPECT_NE(train.find(R"({"id":"t6","status":"rejected","reason":"invalid_encoding")"), std::string::npos)
      << train;
  EXPECT_NE(train.find(R"({"id":"t7","status":"rejected","reason":"category_not_allowed")"),
            std::string::npos);
  EXPECT_NE(train.find("is not one of the model's labels"), std::string::npos);
  EXPECT_EQ(out.report["train"]["used"], 5);
  EXPECT_EQ(out.report["train"]["rejected"], 2);
  EXPECT_EQ(out.report["loss"]["steps"], 12);
  // 5 used items in batches of 2: 3 steps an epoch.
  EXPECT_EQ(out.report["training"]["steps_per_epoch"], 3);
}

TEST(AdaptEngine, KeepsTheLastKAndTheBestAndJournalsWhatItPrunes) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer trainer;
  trainer.perfect_at = 3;  // the checkpoint at step 3 is the best
  AdaptOutcome out = MustRun(f, "p", trainer);
  const fs::path ck = f.Folder("p") / "data/checkpoints";
  EXPECT_TRUE(fs::exists(ck / "step-00000003.ckpt"));
  EXPECT_FALSE(fs::exists(ck / "step-00000006.ckpt"));
  EXPECT_FALSE(fs::exists(ck / "step-00000009.ckpt"));
  EXPECT_TRUE(fs::exists(ck / "step-00000012.ckpt"));
  const std::string journal = ReadText(f.Folder("p") / "data/journal.jsonl");
  EXPECT_NE(journal.find(R"({"type":"pruned","files":["data/checkpoints/step-00000006.ckpt"])"),
            std::string::npos)
      << journal;
  EXPECT_EQ(out.report["checkpoints"]["best_step"], 3);
  EXPECT_TRUE(out.verify.ok());
}

TEST(AdaptEngine, AStoppedAdaptationResumesToTheSameState) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer straight;
  const std::string want = Digest(MustRun(f, "straight", straight));
  for (std::uint64_t stop : {1, 3, 5, 11}) {
    FakeTrainer first;
    AdaptControl control;
    control.stop_after_steps = stop;
    const std::string id = "stop" + std::to_string(stop);
    AdaptOutcome stopped = MustRun(f, id, first, control);
    ASSERT_EQ(stopped.verdict, AdaptVerdict::kInterrupted);
    EXPECT_EQ(stopped.progress.step, stop / 3 * 3);
    FakeTrainer second;  // a new process: nothing but the folder
    auto resumed =
        ResumeAdapt(RealFileSystem(), testing::SharedClock(), f.Folder(id), "", {"pilot", "resume"}, second);
    ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
    EXPECT_EQ(Digest(resumed.value()), want) << "stopped after " << stop;
    EXPECT_TRUE(resumed.value().verify.ok());
    EXPECT_EQ(ReadText(f.Folder(id) / "data/metrics.jsonl"),
              ReadText(f.Folder("straight") / "data/metrics.jsonl"));
  }
}

TEST(AdaptEngine, AFailedWriteLeavesAResumableFolder) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer straight;
  const std::string want = Digest(MustRun(f, "straight", straight));
  // Every write from the first journal append on, one at a time: a full disk there is exit 5
  // (work failed), and the folder resumes to the same state.
  for (int n = 9; n <= 20; ++n) {
    FaultyFileSystem faulty(n);
    FakeTrainer first;
    f.plan.run_id = "fail" + std::to_string(n);
    auto out = ExecuteAdapt(faulty, testing::SharedClock(), f.plan, first);
    if (out.ok()) continue;  // past the last write
    EXPECT_EQ(out.error().kind, ErrorKind::kWorkFailed) << n << ": " << out.error().ToString();
    FakeTrainer second;
    auto resumed =
        ResumeAdapt(RealFileSystem(), testing::SharedClock(), f.Folder(f.plan.run_id), "", {}, second);
    ASSERT_TRUE(resumed.ok()) << n << ": " << resumed.error().ToString();
    EXPECT_EQ(Digest(resumed.value()), want) << "failed write " << n;
    EXPECT_TRUE(resumed.value().verify.ok()) << n;
  }
}

TEST(AdaptEngine, ResumeRefusesATamperedCheckpointAndChangesNothing) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer first;
  AdaptControl control;
  control.stop_after_steps = 7;
  MustRun(f, "t", first, control);
  const fs::path ck = f.Folder("t") / "data/checkpoints/step-00000006.ckpt";
  std::string bytes = ReadText(ck);
  bytes[bytes.size() / 2] ^= 1;
  WriteText(ck, bytes);
  const std::string journal = ReadText(f.Folder("t") / "data/journal.jsonl");
  FakeTrainer second;
  auto resumed = ResumeAdapt(RealFileSystem(), testing::SharedClock(), f.Folder("t"), "", {}, second);
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(resumed.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(resumed.error().what.find("does not match the sha256"), std::string::npos)
      << resumed.error().what;
  EXPECT_NE(resumed.error().where.find("step-00000006.ckpt"), std::string::npos);
  EXPECT_EQ(ReadText(f.Folder("t") / "data/journal.jsonl"), journal);
}

TEST(AdaptEngine, ResumeRefusesAChangedInputAndAnotherDevice) {
  AdaptFixture f(Train(), Eval());
  FakeTrainer first;
  AdaptControl control;
  control.stop_after_steps = 4;
  MustRun(f, "c", first, control);
  FakeTrainer second;
  auto device = ResumeAdapt(RealFileSystem(), testing::SharedClock(), f.Folder("c"), "cuda", {}, second);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.error().what.find("ran on 'cpu'"), std::string::npos);
  WriteText(f.dir / "train/t2.txt", "fr changed");
  FakeTrainer third;
  auto changed = ResumeAdapt(RealFileSystem(), testing::SharedClock(), f.Folder("c"), "", {}, third);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().what.find("prechecks differ"), std::string::npos) << changed.error().what;
}

TEST(AdaptEngine, RefusesBeforeAnyFolder) {
  {
    AdaptFixture f({{"t1", "en one", ""}}, Eval());  // an unlabelled training item
    FakeTrainer trainer;
    f.plan.run_id = "x";
    auto out = ExecuteAdapt(RealFileSystem(), testing::SharedClock(), f.plan, trainer);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().what.find("'t1' has no `expected` label"), std::string::npos) << out.error().what;
    EXPECT_FALSE(fs::exists(f.Folder("x")));
  }
  {
    AdaptFixture f(Train(), {{"t1", "en one", "en"}});  // an id in both manifests
    FakeTrainer trainer;
    f.plan.run_id = "y";
    auto out = ExecuteAdapt(RealFileSystem(), testing::SharedClock(), f.plan, trainer);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().what.find("in both the training and the evaluation manifest"), std::string::npos);
    EXPECT_FALSE(fs::exists(f.Folder("y")));
  }
  {
    AdaptFixture f(Train(), Eval());
    f.plan.params.base_model_sha256 = std::string(64, 'a');
    FakeTrainer trainer;
    f.plan.run_id = "z";
    auto out = ExecuteAdapt(RealFileSystem(), testing::SharedClock(), f.plan, trainer);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().what.find("not the pinned"), std::string::npos);
    EXPECT_FALSE(fs::exists(f.Folder("z")));
  }
}

// The adaptation's setup as one call, on a file system in memory: every check before anything
// is created, the device the runtime resolves, and what the environment records.
TEST(AdaptEngine, PlanAdaptReadsTheParametersAndResolvesTheDeviceWritingNothing) {
  MemoryFileSystem mem;
  const std::string params = R"({"base_model": {"path": "m.pt", "sha256": ")" + std::string(64, 'c') +
                             R"("}, "train_manifest": "train.json", "eval_manifest": "eval.json",
                             "train": {"epochs": 3, "threads": 1}, "device": "auto"})";
  mem.AddFile("/proj/config/adapt.json", params);
  mem.AddFile("/proj/config/bad.json", R"({"train_manifest": "t"})");
  const auto before = mem.Files();
  testing::FakeRuntime runtime;
  AdaptRequest request;
  request.params_file = "/proj/config/adapt.json";
  request.runs_dir = "/proj/runs";
  request.run_id = "a1";
  request.command_line = {"pilot", "adapt"};
  auto plan = PlanAdapt(mem, runtime, request);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  EXPECT_EQ(plan.value().device, "cpu");  // auto, on a machine of the CPU alone
  EXPECT_EQ(plan.value().params_file, fs::path("/proj/config/adapt.json"));
  EXPECT_EQ(plan.value().params_bytes, params);
  EXPECT_EQ(plan.value().params.train_manifest, fs::path("/proj/config/train.json"));
  EXPECT_EQ(plan.value().environment["libtorch"]["version"], "fake");
  EXPECT_EQ(plan.value().environment["device"], "cpu");
  EXPECT_TRUE(plan.value().environment.contains("host"));
  EXPECT_EQ(plan.value().run_id, "a1");
  EXPECT_EQ(mem.Files(), before) << "planning writes nothing";

  auto refused = [&](AdaptRequest r, const std::string& says, const std::string& where) {
    auto p = PlanAdapt(mem, runtime, r);
    ASSERT_FALSE(p.ok()) << says;
    EXPECT_NE(p.error().what.find(says), std::string::npos) << p.error().ToString();
    EXPECT_EQ(p.error().where, where);
    EXPECT_EQ(mem.Files(), before);
  };
  auto with = [&](const std::string& device, const std::string& params_file) {
    AdaptRequest r = request;
    r.device = device;
    if (!params_file.empty()) r.params_file = params_file;
    return r;
  };
  refused(with("tpu", ""), "unknown device 'tpu'", "--device");
  refused(with("cuda", ""), "cuda requested; this machine has cpu", "--device");
  refused(with("", "/proj/config/nowhere.json"), "cannot read the adaptation parameter file",
          "/proj/config/nowhere.json");
  refused(with("", "/proj/config/bad.json"), "'base_model' is required", "/proj/config/bad.json");
  runtime.fails = EnvironmentError("cannot load the module", "libpilot-torch.so");
  refused(request, "cannot load the module", "libpilot-torch.so");
}

}  // namespace
}  // namespace pilot::testing
