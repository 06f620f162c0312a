#include "test_support.h"

#include <fstream>
#include <random>
#include <sstream>

#include "pilot/hash.h"
#include "pilot/params.h"

namespace pilot::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("pilot-test-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void WriteText(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string ReadText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

FakeStage::FakeStage() {
  desc_.kind = "fake";
  desc_.labels = {"en", "fr", "de", "ru"};
  desc_.model_sha256 = std::string(64, 'a');
  desc_.device = "cpu";
  desc_.min_confidence = 0.5;
}

std::vector<StageOutput> FakeStage::Classify(const std::vector<std::string_view>& texts) {
  batch_sizes.push_back(texts.size());
  std::vector<StageOutput> out;
  for (auto t : texts) {
    StageOutput o;
    std::string word(t.substr(0, t.find_first_of(" \n")));
    if (word == "fail") {
      o.error = "scripted failure";
    } else if (word == "oom") {
      o.error = "CUDA out of memory (scripted)";
      o.out_of_memory = true;
    } else {
      o.ok = true;
      o.label = word == "low" ? "en" : word;
      o.confidence = word == "low" ? 0.1 : 0.9;
    }
    out.push_back(o);
  }
  return out;
}

Result<std::string> FaultyFileSystem::ReadFile(const stdfs::path& file) {
  reads.insert(file.filename().string());
  return RealFileSystem().ReadFile(file);
}

bool FaultyFileSystem::NextWriteFails() { return ++writes == fail_at_; }

Status FaultyFileSystem::WriteFileAtomic(const stdfs::path& file, std::string_view data) {
  if (NextWriteFails()) return BadInput("injected write failure: No space left on device", file.string());
  return RealFileSystem().WriteFileAtomic(file, data);
}

namespace {
class FaultyAppend : public AppendFile {
 public:
  FaultyAppend(std::unique_ptr<AppendFile> inner, FaultyFileSystem& fs) : inner_(std::move(inner)), fs_(fs) {}
  Status Append(std::string_view data) override {
    if (fs_.NextWriteFails()) return BadInput("injected append failure: No space left on device", "journal");
    return inner_->Append(data);
  }
  Status Sync() override { return inner_->Sync(); }

 private:
  std::unique_ptr<AppendFile> inner_;
  FaultyFileSystem& fs_;
};
}  // namespace

Result<std::unique_ptr<AppendFile>> FaultyFileSystem::OpenAppend(const stdfs::path& file) {
  auto inner = RealFileSystem().OpenAppend(file);
  if (!inner.ok()) return inner.error();
  return std::unique_ptr<AppendFile>(std::make_unique<FaultyAppend>(std::move(inner).value(), *this));
}

Fixture::Fixture(const std::vector<std::pair<std::string, std::string>>& items) {
  inputs = dir / "inputs";
  fs::create_directories(inputs);
  manifest.name = "test";
  for (const auto& [id, text] : items) {
    WriteText(inputs / (id + ".txt"), text);
    manifest.items.push_back({id, id + ".txt", Sha256Hex(text), std::nullopt, std::nullopt});
  }
  std::string params_text = R"({"manifest": "inputs/manifest.json",
    "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "batch_size": 2})";
  WriteText(dir / "params.json", params_text);
  plan.params = ParseParams(params_text, dir.path(), "params.json").value();
  plan.params_file = dir / "params.json";
  plan.params_bytes = params_text;
  plan.manifest_file = inputs / "manifest.json";
  plan.inputs_root = fs::canonical(inputs);
  plan.model_sha256 = std::string(64, 'a');
  plan.runs_dir = dir / "runs";
  plan.run_id = "test-run";
  plan.command_line = {"pilot", "run"};
  plan.environment = {{"host", "test"}};
  Refresh();
}

void Fixture::Expect(const std::string& id, const std::string& category) {
  for (auto& item : manifest.items) {
    if (item.id == id) item.expected = category;
  }
  Refresh();
}

void Fixture::ExpectRejection(const std::string& id, const std::string& reason) {
  for (auto& item : manifest.items) {
    if (item.id == id) item.expected_rejection = reason;
  }
  Refresh();
}

void Fixture::Refresh() {
  manifest_bytes = ManifestToJson(manifest);
  WriteText(inputs / "manifest.json", manifest_bytes);
  plan.manifest = manifest;
  plan.manifest_bytes = manifest_bytes;
}

}  // namespace pilot::testing
