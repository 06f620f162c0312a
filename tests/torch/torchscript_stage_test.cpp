// The torchscript-classifier stage on real TorchScript files: the bundled model, and small
// modules built here from C++ to exercise each part of the model contract.
#include <ftw.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "pilot/doctor.h"
#include "pilot/hash.h"
#include "pilot/params.h"
#include "pilot/torch_stage.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;

// Not std::filesystem::remove_all: PyTorch 2.x's libtorch.so exports its own copy of the
// std::filesystem functions, which this binary (linked to libtorch directly) would bind to,
// and that copy of remove_all crashes (seen with the 2.11 wheel).
void RemoveTree(const fs::path& dir) {
  ::nftw(
      dir.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

const fs::path kBundled = fs::path(PILOT_SOURCE_DIR) / "data/models/langid/langid.pt";

class StageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterTorchStages(registry_);
    dir_ = fs::temp_directory_path() / ("pilot-torch-test-" + std::to_string(std::random_device()()));
    fs::create_directories(dir_);
  }
  void TearDown() override { RemoveTree(dir_); }

  Result<std::unique_ptr<Stage>> Create(const fs::path& model,
                                        nlohmann::json options = nlohmann::json::object(),
                                        const char* kind = kTorchScriptClassifier) {
    StageConfig c;
    c.kind = kind;
    c.model = model;
    c.model_sha256 =
        Sha256File(RealFileSystem(), model).ok() ? Sha256File(RealFileSystem(), model).value() : "";
    c.options = std::move(options);
    c.threads = 1;
    return registry_.Create(c);
  }

  // A "text" model: labels [short, long] by length; an op fails on texts containing "boom".
  fs::path SaveTextModel(const std::string& body, bool with_labels = true) {
    torch::jit::Module m("TextModel");
    if (with_labels) {
      c10::List<std::string> labels({"short", "long"});
      m.register_attribute("labels", c10::ListType::ofStrings(), labels);
    }
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    m.define(body);
    fs::path p = dir_ / ("m" + std::to_string(counter_++) + ".pt");
    m.save(p.string());
    return p;
  }

  static constexpr const char* kLengthModel = R"(
def forward(self, texts: List[str]) -> Tensor:
    out = torch.zeros([len(texts), 2])
    for i in range(len(texts)):
        if "boom" in texts[i]:
            out = out.view([-1, 7])
        if len(texts[i]) > 5:
            out[i, 1] = 0.8
            out[i, 0] = 0.2
        else:
            out[i, 0] = 0.7
            out[i, 1] = 0.3
    return out
)";

  StageRegistry registry_;
  fs::path dir_;
  int counter_ = 0;
};

TEST_F(StageTest, BundledModelDeclaresItsLabelsAndContract) {
  auto stage = Create(kBundled);
  ASSERT_TRUE(stage.ok()) << stage.error().ToString();
  const auto& d = stage.value()->Describe();
  EXPECT_GE(d.labels.size(), 12u);
  for (const char* l : {"en", "fr", "de", "es", "it", "pt", "nl", "ja"}) {
    EXPECT_NE(std::find(d.labels.begin(), d.labels.end(), l), d.labels.end()) << l;
  }
  EXPECT_EQ(d.details["input_kind"], "hashed_char_ngrams");
  EXPECT_EQ(d.device, "cpu");
}

TEST_F(StageTest, BundledModelIdentifiesLanguagesAndBatchingDoesNotChangeResults) {
  auto stage = Create(kBundled);
  ASSERT_TRUE(stage.ok());
  std::vector<std::pair<std::string, std::string>> cases = {
      {"Le comité a décidé de reporter la réunion à la semaine prochaine.", "fr"},
      {"Die Bauarbeiten an der Brücke beginnen im Frühjahr.", "de"},
      {"The meeting has been moved to next week because several members are away.", "en"},
      {"設定ファイルを読み込んでからデータを処理します。", "ja"},
      {"De gemeente heeft besloten om het park opnieuw in te richten.", "nl"}};
  std::vector<std::string_view> texts;
  for (const auto& c : cases) texts.push_back(c.first);
  auto out = stage.value()->Process(texts);
  ASSERT_TRUE(out.ok) << out.error;
  const auto& batch = out.items;
  ASSERT_EQ(batch.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(batch[i].ok) << batch[i].error;
    EXPECT_EQ(batch[i].label, cases[i].second) << cases[i].first;
    auto single = stage.value()->Process({texts[i]}).items;
    ASSERT_EQ(single.size(), 1u);
    EXPECT_EQ(single[0].label, batch[i].label);
    EXPECT_NEAR(single[0].confidence, batch[i].confidence, 1e-6);
  }
}

// The n-gram models featurise in Prepare (on the engine's workers): ProcessPrepared gives
// bit for bit what Process gives, classifier and embedding alike. A text-input model has
// no such step.
TEST_F(StageTest, PreparedFeaturesGiveExactlyWhatProcessGives) {
  std::vector<std::string_view> texts = {"Le comité a décidé de reporter la réunion.", "",
                                         "The meeting moved.", "設定ファイルを読み込んでから"};
  for (auto [model, kind] :
       {std::pair{kBundled, kTorchScriptClassifier},
        std::pair{fs::path(PILOT_SOURCE_DIR) / "data/models/langid-embed/langid-embed.pt",
                  kTorchScriptEmbedding}}) {
    auto stage = Create(model, nlohmann::json::object(), kind);
    ASSERT_TRUE(stage.ok()) << stage.error().ToString();
    std::vector<PreparedInput> features(texts.size());
    std::vector<const PreparedInput*> prepared;
    for (std::size_t k = 0; k < texts.size(); ++k) {
      ASSERT_TRUE(stage.value()->Prepare(texts[k], features[k])) << model;
      EXPECT_FALSE(features[k].ids.empty());
      prepared.push_back(&features[k]);
    }
    auto plain = stage.value()->Process(texts);
    auto fed = stage.value()->ProcessPrepared(texts, prepared);
    ASSERT_TRUE(plain.ok && fed.ok) << plain.error << fed.error;
    ASSERT_EQ(plain.items.size(), fed.items.size());
    for (std::size_t k = 0; k < texts.size(); ++k) {
      EXPECT_EQ(plain.items[k].label, fed.items[k].label) << k;
      EXPECT_EQ(plain.items[k].scores, fed.items[k].scores) << k;
      EXPECT_EQ(plain.items[k].vector, fed.items[k].vector) << k;
    }
  }
  auto text_model = Create(SaveTextModel(kLengthModel));
  ASSERT_TRUE(text_model.ok());
  PreparedInput none;
  EXPECT_FALSE(text_model.value()->Prepare("hi", none));
}

// A forward pass that throws fails the whole batch, with the error's text and no C++
// backtrace; retrying (bisecting) is the engine's business, not the stage's.
TEST_F(StageTest, TextInputModelAndAFailingForwardFailsTheBatch) {
  auto stage = Create(SaveTextModel(kLengthModel), {{"min_confidence", 0.6}});
  ASSERT_TRUE(stage.ok()) << stage.error().ToString();
  EXPECT_DOUBLE_EQ(stage.value()->Describe().min_confidence, 0.6);
  EXPECT_EQ(stage.value()->Describe().output, &ClassificationOutput());
  auto out = stage.value()->Process({"hi", "a longer text"});
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.items.size(), 2u);
  EXPECT_EQ(out.items[0].label, "short");
  EXPECT_NEAR(out.items[0].confidence, 0.7, 1e-6);
  EXPECT_EQ(out.items[1].label, "long");
  auto failed = stage.value()->Process({"hi", "a boom here", "a longer text"});
  EXPECT_FALSE(failed.ok);
  EXPECT_TRUE(failed.items.empty());
  EXPECT_FALSE(failed.out_of_memory);
  EXPECT_NE(failed.error.find("is invalid for input of size"), std::string::npos) << failed.error;
  EXPECT_EQ(failed.error.find("Traceback of C++"), std::string::npos);
}

// The embedding kind: [batch, dim] float32 vectors, bit for bit what the model computed.
TEST_F(StageTest, EmbeddingKindReturnsTheModelsVectors) {
  torch::jit::Module m("Emb");
  m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
  m.register_attribute("dim", c10::IntType::get(), std::int64_t{3});
  m.define(R"(
def forward(self, texts: List[str]) -> Tensor:
    out = torch.zeros([len(texts), 3])
    for i in range(len(texts)):
        out[i, 0] = float(len(texts[i]))
        out[i, 1] = 0.1
        out[i, 2] = -2.5
    return out
)");
  fs::path p = dir_ / "emb.pt";
  m.save(p.string());
  auto stage = Create(p, nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_TRUE(stage.ok()) << stage.error().ToString();
  EXPECT_EQ(stage.value()->Describe().output, &EmbeddingOutput());
  EXPECT_EQ(stage.value()->Describe().dim, 3u);
  EXPECT_TRUE(stage.value()->Describe().labels.empty());
  auto out = stage.value()->Process({"abc", "hello"});
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.items.size(), 2u);
  EXPECT_EQ(out.items[0].vector, (std::vector<float>{3.0f, 0.1f, -2.5f}));
  EXPECT_EQ(out.items[1].vector, (std::vector<float>{5.0f, 0.1f, -2.5f}));
  // min_confidence means nothing to an embedding: refused, not ignored.
  auto with_option = Create(p, {{"min_confidence", 0.5}}, kTorchScriptEmbedding);
  ASSERT_FALSE(with_option.ok());
  EXPECT_NE(with_option.error().what.find("min_confidence"), std::string::npos);
}

// stage.options.dtype converts floating-point parameters and buffers only, as Python's
// nn.Module.to(dtype) does: an int64 buffer used as indices (a Hugging Face model's
// position_ids) keeps its type. What the model holds is recorded; without the option a model
// runs as saved.
TEST_F(StageTest, DtypeConvertsFloatingPointTensorsOnlyAndRecordsWhatTheModelHolds) {
  auto save = [&](torch::Dtype weight_dtype) {
    torch::jit::Module m("Positions");
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    m.register_attribute("dim", c10::IntType::get(), std::int64_t{2});
    m.register_parameter("w", torch::tensor({0.5, 1.5, 2.5, 3.5}).to(weight_dtype), false);
    m.register_buffer("position_ids", torch::tensor({std::int64_t{3}, std::int64_t{1}}));
    m.define(R"(
def forward(self, texts: List[str]) -> Tensor:
    picked = torch.index_select(self.w, 0, self.position_ids)
    return picked.unsqueeze(0).repeat([len(texts), 1]).float()
)");
    fs::path p = dir_ / ("positions" + std::to_string(counter_++) + ".pt");
    m.save(p.string());
    return p;
  };
  const fs::path f32 = save(torch::kFloat32);
  auto bf16 = Create(f32, {{"dtype", "bfloat16"}}, kTorchScriptEmbedding);
  ASSERT_TRUE(bf16.ok()) << bf16.error().ToString();
  EXPECT_EQ(bf16.value()->Describe().details["dtype"], "bfloat16");
  EXPECT_EQ(bf16.value()->Describe().details["held_dtype"], "bfloat16");
  auto out = bf16.value()->Process({"x"});
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(out.items[0].vector, (std::vector<float>{3.5f, 1.5f}));

  // Saved in bfloat16, run as saved: recorded as what it holds, not as float32.
  const fs::path saved_bf16 = save(torch::kBFloat16);
  auto as_saved = Create(saved_bf16, nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_TRUE(as_saved.ok()) << as_saved.error().ToString();
  EXPECT_EQ(as_saved.value()->Describe().details["dtype"], "as saved");
  EXPECT_EQ(as_saved.value()->Describe().details["held_dtype"], "bfloat16");
  // Asked for float32, it is converted.
  auto to_f32 = Create(saved_bf16, {{"dtype", "float32"}}, kTorchScriptEmbedding);
  ASSERT_TRUE(to_f32.ok()) << to_f32.error().ToString();
  EXPECT_EQ(to_f32.value()->Describe().details["held_dtype"], "float32");
}

// A model that does not load is named with the archive's format version, the torch that saved
// it (recorded as the extra file torch_version, as docs/models.md exports it) and the libtorch
// in use: the facts that tell a newer torch's export from a damaged file.
TEST_F(StageTest, AModelThatDoesNotLoadNamesItsArchiveAndTheLibtorchInUse) {
  torch::jit::Module m("Saved");
  m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
  m.register_attribute("dim", c10::IntType::get(), std::int64_t{1});
  m.define(R"(
def forward(self, texts: List[str]) -> Tensor:
    return torch.zeros([len(texts), 1])
)");
  const fs::path p = dir_ / "newer.pt";
  m.save(p.string(), {{"torch_version", "9.9.0"}});
  // The model's code damaged inside the archive: libtorch refuses it.
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The first byte of data.pkl (a stored entry, after its local header's name and extra field):
  // its CRC no longer matches.
  const auto name = bytes.find("/data.pkl");
  ASSERT_NE(name, std::string::npos);
  const std::size_t header = bytes.rfind("PK\x03\x04", name);
  ASSERT_NE(header, std::string::npos);
  const std::size_t name_len = static_cast<unsigned char>(bytes[header + 26]) |
                               static_cast<std::size_t>(static_cast<unsigned char>(bytes[header + 27])) << 8;
  const std::size_t extra_len = static_cast<unsigned char>(bytes[header + 28]) |
                                static_cast<std::size_t>(static_cast<unsigned char>(bytes[header + 29])) << 8;
  bytes[header + 30 + name_len + extra_len] ^= 0x55;
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  auto stage = Create(p, nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_FALSE(stage.ok());
  const std::string what = stage.error().what;
  EXPECT_NE(what.find("cannot load the TorchScript model: "), std::string::npos) << what;
  EXPECT_NE(what.find("archive format version "), std::string::npos) << what;
  EXPECT_NE(what.find("saved by torch 9.9.0 (extra/torch_version)"), std::string::npos) << what;
  EXPECT_NE(what.find(std::string("this pilot runs libtorch ") + TORCH_VERSION), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
  EXPECT_NE(stage.error().hint.find("a newer torch"), std::string::npos);
}

TEST_F(StageTest, EmbeddingContractViolationsAreRefusedAtLoad) {
  auto save = [&](std::optional<std::int64_t> dim, const std::string& body) {
    torch::jit::Module m("Emb");
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    if (dim) m.register_attribute("dim", c10::IntType::get(), *dim);
    m.define(body);
    fs::path p = dir_ / ("e" + std::to_string(counter_++) + ".pt");
    m.save(p.string());
    return p;
  };
  const std::string two =
      "def forward(self, texts: List[str]) -> Tensor:\n    return torch.zeros([len(texts), 2])\n";
  auto no_dim = Create(save(std::nullopt, two), nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_FALSE(no_dim.ok());
  EXPECT_NE(no_dim.error().what.find("'dim'"), std::string::npos) << no_dim.error().what;
  auto zero = Create(save(0, two), nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().what.find("dim 0"), std::string::npos) << zero.error().what;
  auto huge = Create(save(std::int64_t{1} << 40, two), nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_FALSE(huge.ok());
  // A model declaring dim 3 but returning 2 columns is found at load (warm-up).
  auto wrong = Create(save(3, two), nlohmann::json::object(), kTorchScriptEmbedding);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().what.find("warm-up"), std::string::npos) << wrong.error().what;
}

// A model that cannot produce [batch, labels] is found at load (warm-up), before any run
// folder exists, not item by item mid-run.
TEST_F(StageTest, WrongOutputShapeIsRefusedAtLoad) {
  auto stage = Create(SaveTextModel(R"(
def forward(self, texts: List[str]) -> Tensor:
    return torch.zeros([len(texts), 3])
)"));
  ASSERT_FALSE(stage.ok());
  EXPECT_EQ(stage.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(stage.error().what.find("warm-up"), std::string::npos) << stage.error().what;
  EXPECT_NE(stage.error().what.find("expected [1, 2]"), std::string::npos) << stage.error().what;
}

TEST_F(StageTest, ContractViolationsAreRefusedAtLoad) {
  auto no_labels = Create(SaveTextModel(kLengthModel, false));
  ASSERT_FALSE(no_labels.ok());
  EXPECT_EQ(no_labels.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(no_labels.error().what.find("'labels'"), std::string::npos);

  auto bad_option = Create(SaveTextModel(kLengthModel), {{"min_confidance", 0.5}});
  ASSERT_FALSE(bad_option.ok());
  EXPECT_NE(bad_option.error().what.find("min_confidance"), std::string::npos);

  fs::path junk = dir_ / "junk.pt";
  std::ofstream(junk) << "not a model";
  auto not_model = Create(junk);
  ASSERT_FALSE(not_model.ok());
  EXPECT_EQ(not_model.error().where, junk.string());

  StageConfig unknown;
  unknown.kind = "onnx";
  auto r = registry_.Create(unknown);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().hint.find(kTorchScriptClassifier), std::string::npos);
}

// Hostile model attributes are refused at load, before any folder exists: an n-gram
// contract that would divide by zero (buckets = 2^32 narrows to 0), labels that are not
// text.
TEST_F(StageTest, HostileContractsAreRefusedAtLoad) {
  auto ngram_model = [&](std::int64_t buckets, std::int64_t ngram_max) {
    torch::jit::Module m("NgramModel");
    m.register_attribute("labels", c10::ListType::ofStrings(), c10::List<std::string>({"a", "b"}));
    m.register_attribute("input_kind", c10::StringType::get(), std::string("hashed_char_ngrams"));
    m.register_attribute("ngram_min", c10::IntType::get(), std::int64_t{1});
    m.register_attribute("ngram_max", c10::IntType::get(), ngram_max);
    m.register_attribute("buckets", c10::IntType::get(), buckets);
    m.register_attribute("max_chars", c10::IntType::get(), std::int64_t{100});
    m.define(R"(
def forward(self, ids: Tensor, offsets: Tensor) -> Tensor:
    return torch.ones([offsets.size(0), 2]) * 0.5
)");
    fs::path p = dir_ / ("ngram" + std::to_string(counter_++) + ".pt");
    m.save(p.string());
    return p;
  };
  for (auto [buckets, ngram_max] :
       {std::pair<std::int64_t, std::int64_t>{std::int64_t{1} << 32, 4}, {0, 4}, {-5, 4}, {1000, 1000}}) {
    auto stage = Create(ngram_model(buckets, ngram_max));
    ASSERT_FALSE(stage.ok()) << buckets;
    EXPECT_NE(stage.error().what.find("out of range"), std::string::npos) << stage.error().what;
  }
  EXPECT_TRUE(Create(ngram_model(1000, 4)).ok());

  {  // An attribute of another type than the contract's: refused as malformed, not as unloadable.
    torch::jit::Module m("WrongTypes");
    m.register_attribute("labels", c10::IntType::get(), std::int64_t{3});
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    m.define(kLengthModel);
    fs::path p = dir_ / "wrong-types.pt";
    m.save(p.string());
    auto stage = Create(p);
    ASSERT_FALSE(stage.ok());
    EXPECT_NE(stage.error().what.find("the model's attributes are malformed"), std::string::npos)
        << stage.error().what;
  }

  auto labelled = [&](c10::List<std::string> labels) {
    torch::jit::Module m("TextModel");
    m.register_attribute("labels", c10::ListType::ofStrings(), labels);
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    m.define(kLengthModel);
    fs::path p = dir_ / ("labels" + std::to_string(counter_++) + ".pt");
    m.save(p.string());
    return p;
  };
  auto bad_utf8 = Create(labelled(c10::List<std::string>({"short", "lo\xffng"})));
  ASSERT_FALSE(bad_utf8.ok());
  EXPECT_NE(bad_utf8.error().what.find("label 1"), std::string::npos) << bad_utf8.error().what;
  auto twice = Create(labelled(c10::List<std::string>({"same", "same"})));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().what.find("twice"), std::string::npos);
}

// A model that claims probabilities above 1: the stage reports what it said, and the
// engine rejects those items as invalid_output (tested with the core's fake stage).
TEST_F(StageTest, OutOfRangeScoresAreReportedAsTheModelGaveThem) {
  auto stage = Create(SaveTextModel(R"(
def forward(self, texts: List[str]) -> Tensor:
    return torch.ones([len(texts), 2]) * 5.0
)"));
  ASSERT_TRUE(stage.ok()) << stage.error().ToString();
  auto out = stage.value()->Process({"some text"});
  ASSERT_TRUE(out.ok);
  ASSERT_EQ(out.items.size(), 1u);
  EXPECT_TRUE(out.items[0].ok);
  EXPECT_DOUBLE_EQ(out.items[0].confidence, 5.0);
}

TEST(Device, ResolutionAndAbsentBackends) {
  EXPECT_EQ(ResolveDevice("cpu").value(), "cpu");
  if (torch::cuda::is_available())
    GTEST_SKIP() << "a GPU is present; the absent-backend path cannot be shown";
  EXPECT_EQ(ResolveDevice("auto").value(), "cpu");
  for (const char* asked : {"cuda", "rocm"}) {
    auto r = ResolveDevice(asked);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kEnvironment);
    EXPECT_NE(r.error().what.find("0 GPU(s)"), std::string::npos) << r.error().what;
  }
  auto info = TorchRuntimeInfo();
  EXPECT_FALSE(info["libtorch_version"].get<std::string>().empty());
  EXPECT_EQ(info["gpu_count"], 0);
}

}  // namespace
}  // namespace pilot

namespace pilot {
namespace {

TEST(Doctor, ComputeCheckAgainstFloat64Reference) {
  ComputeCheckResult ok = CheckCompute("cpu");
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_LT(ok.matmul_rel_error, kComputeTolerance);
  EXPECT_LT(ok.sum_rel_error, kComputeTolerance);
  // The seam: a wrong reference must make the check fail.
  ComputeCheckResult bad = CheckCompute("cpu", true);
  EXPECT_GT(bad.matmul_rel_error, kComputeTolerance);
  EXPECT_GT(bad.sum_rel_error, kComputeTolerance);
}

const DoctorCheck* Find(const DoctorReport& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(Doctor, CpuChecksPassAndTheModelRunsCpuAgainstCpu) {
  auto params = LoadParams(RealFileSystem(), std::string(PILOT_SOURCE_DIR) + "/config/pilot.json");
  ASSERT_TRUE(params.ok()) << params.error().ToString();
  DoctorOptions o;
  o.params = params.value();
  o.device = "cpu";
  o.runs_dir = fs::temp_directory_path();
  DoctorReport r = RunDoctor(o);
  EXPECT_TRUE(r.ok()) << r.ToJson().dump(1);
  const DoctorCheck* model = Find(r, "model on cpu");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->status, kPass);
  EXPECT_GE(model->data["inputs"].get<int>(), 1);
  EXPECT_EQ(model->data["max_abs_difference"].get<double>(), 0.0);
  EXPECT_EQ(Find(r, "compute on cpu")->status, kPass);
  EXPECT_EQ(Find(r, "disk")->status, kPass);

  o.corrupt_reference = true;
  DoctorReport bad = RunDoctor(o);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(Find(bad, "compute on cpu")->status, kFail);
  EXPECT_EQ(bad.ToJson()["ok"], false);  // exit 3 is the CLI's to state
}

// A model exported in bfloat16 that does not run converted to float32 (as a traced model may
// not): doctor checks it against itself as saved on the CPU, with bfloat16's tolerance,
// rather than failing the reference.
TEST(Doctor, AModelThatRunsOnlyAsSavedIsCheckedAgainstItselfAsSaved) {
  const fs::path dir =
      fs::temp_directory_path() / ("pilot-doctor-bf16-" + std::to_string(std::random_device()()));
  fs::create_directories(dir);
  torch::jit::Module m("Bf16Only");
  m.register_attribute("labels", c10::ListType::ofStrings(), c10::List<std::string>({"en", "fr"}));
  m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
  m.register_parameter("w", torch::tensor({0.75, 0.25}).to(torch::kBFloat16), false);
  m.define(R"(
def forward(self, texts: List[str]) -> Tensor:
    out = torch.zeros([len(texts), 2])
    if self.w.element_size() != 2:
        out = out.view([-1, 7])
    return out + self.w.float()
)");
  m.save((dir / "bf16.pt").string());
  std::ofstream(dir / "params.json")
      << R"({"manifest": ")" << PILOT_SOURCE_DIR
      << R"(/data/pilot/manifest.json", "stage": {"kind": "torchscript-classifier",
                 "model": "bf16.pt"}, "allowed_categories": ["en", "fr"], "device": "cpu"})";
  auto params = LoadParams(RealFileSystem(), dir / "params.json");
  ASSERT_TRUE(params.ok()) << params.error().ToString();
  DoctorOptions o;
  o.params = params.value();
  o.device = "cpu";
  o.runs_dir = dir;
  DoctorReport r = RunDoctor(o);
  const DoctorCheck* model = Find(r, "model on cpu (bfloat16)");
  ASSERT_NE(model, nullptr) << r.ToJson().dump(1);
  EXPECT_EQ(model->status, kPass) << model->detail;
  EXPECT_EQ(model->data["reference"], "the model as saved on cpu (it does not run converted to float32)");
  EXPECT_NE(model->detail.find("bfloat16 against the model as saved on cpu"), std::string::npos)
      << model->detail;
  RemoveTree(dir);
}

TEST(Doctor, AbsentGpuIsCouldNotRunNotFail) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  DoctorOptions o;
  o.device = "cuda";
  DoctorReport r = RunDoctor(o);
  EXPECT_FALSE(r.ok());
  const DoctorCheck* c = Find(r, "compute on cuda");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, kCouldNotRun);
  EXPECT_NE(c->detail.find("not present"), std::string::npos);
  EXPECT_EQ(Find(r, "gpus")->status, kCouldNotRun);
  for (const auto& check : r.checks) EXPECT_NE(check.status, kFail) << check.name;
}

}  // namespace
}  // namespace pilot
