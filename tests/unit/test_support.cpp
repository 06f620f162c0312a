#include "test_support.h"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "pilot/hash.h"
#include "pilot/params.h"

namespace pilot::testing {

Clock& SharedClock() {
  static FakeClock clock;
  return clock;
}

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("pilot-test-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(path_);
  path_ = fs::canonical(path_);
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

FakeStage::FakeStage(const OutputKindSpec& output, std::size_t dim) {
  desc_.kind = output.vectors ? "fake-embedding" : "fake";
  desc_.output = &output;
  if (output.labels) desc_.labels = {"en", "fr", "de", "ru"};
  desc_.dim = output.vectors ? dim : 0;
  desc_.model_sha256 = std::string(64, 'a');
  desc_.device = "cpu";
  desc_.min_confidence = 0.5;
}

std::vector<float> FakeStage::VectorOf(std::string_view text, std::size_t dim) {
  std::vector<float> v(dim);
  std::uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  for (std::size_t k = 0; k < dim; ++k) {
    v[k] = static_cast<float>(static_cast<std::int32_t>(h)) / 3.0e9f + static_cast<float>(k) / 7.0f;
    h = h * 1664525u + 1013904223u;
  }
  return v;
}

BatchOutput FakeStage::Process(const std::vector<std::string_view>& texts) {
  batch_sizes.push_back(texts.size());
  BatchOutput out;
  for (auto t : texts) {
    std::string word(t.substr(0, t.find_first_of(" \n")));
    // Like a real model, one poisonous input fails the whole batch; the engine bisects.
    if (word == "fail") return BatchOutput::Failed("scripted failure", false);
    if (word == "oom") return BatchOutput::Failed("CUDA out of memory (scripted)", true);
    if (word == "oombig" && texts.size() > 2)
      return BatchOutput::Failed("CUDA out of memory at batch size " + std::to_string(texts.size()), true);
  }
  for (auto t : texts) {
    ItemOutput o;
    std::string word(t.substr(0, t.find_first_of(" \n")));
    if (word == "itemfail") {
      o.error = "scripted item failure";
    } else if (desc_.output->vectors) {
      o.ok = true;
      o.vector = VectorOf(t, desc_.dim);
      if (word == "nanvec") o.vector[0] = std::nanf("");
      if (word == "shortvec") o.vector.pop_back();
      if (word == "hugevec") o.vector[1] = 1e6f;  // finite, beyond float16's range
    } else if (word == "score5" || word == "nan") {
      o.ok = true;
      o.label = "en";
      o.confidence = word == "nan" ? std::nan("") : 5.0;
    } else {
      o.ok = true;
      o.label = word == "low" || word == "oombig" ? "en" : word;
      o.confidence = word == "low" ? 0.1 : 0.9;
    }
    out.items.push_back(std::move(o));
  }
  return out;
}

void FaultyFileSystem::RecordRead(const stdfs::path& file) {
  std::lock_guard<std::mutex> hold(reads_mu);
  reads.insert(file.filename().string());
}

Result<std::string> FaultyFileSystem::ReadFile(const stdfs::path& file, std::uint64_t max_bytes) {
  RecordRead(file);
  return RealFileSystem().ReadFile(file, max_bytes);
}

namespace {

class RecordingReader : public ReadableFile {
 public:
  RecordingReader(std::unique_ptr<ReadableFile> inner, FaultyFileSystem& fs)
      : inner_(std::move(inner)), fs_(fs) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) override {
    fs_.RecordRead(inner_->path());
    return inner_->ReadAt(offset, buf, n);
  }
  std::uint64_t size() const override { return inner_->size(); }
  const stdfs::path& path() const override { return inner_->path(); }

 private:
  std::unique_ptr<ReadableFile> inner_;
  FaultyFileSystem& fs_;
};

}  // namespace

BeneathOpen FaultyFileSystem::OpenBeneath(const stdfs::path& root, const std::string& relative) {
  BeneathOpen out = RealFileSystem().OpenBeneath(root, relative);
  if (out.file) out.file = std::make_unique<RecordingReader>(std::move(out.file), *this);
  return out;
}

bool FaultyFileSystem::NextWriteFails() { return ++writes == fail_at_; }

Status FaultyFileSystem::WriteFileAtomic(const stdfs::path& file, std::string_view data) {
  if (NextWriteFails()) return WorkFailed("injected write failure: No space left on device", file.string());
  return RealFileSystem().WriteFileAtomic(file, data);
}

Status FaultyFileSystem::CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                                        bool follow_symlinks) {
  if (NextWriteFails()) return WorkFailed("injected write failure: No space left on device", to.string());
  return RealFileSystem().CopyFileAtomic(from, to, follow_symlinks);
}

Status FaultyFileSystem::Truncate(const stdfs::path& file, std::uint64_t size) {
  if (NextWriteFails()) return WorkFailed("injected truncate failure", file.string());
  return RealFileSystem().Truncate(file, size);
}

namespace {
class FaultyAppend : public AppendFile {
 public:
  FaultyAppend(std::unique_ptr<AppendFile> inner, FaultyFileSystem& fs, stdfs::path file)
      : inner_(std::move(inner)), fs_(fs), file_(std::move(file)) {}
  Status Append(std::string_view data) override {
    if (fs_.NextWriteFails()) {
      // A full disk: part of the data made it.
      (void)inner_->Append(data.substr(0, data.size() / 2));
      return WorkFailed("injected append failure: No space left on device", file_.string());
    }
    return inner_->Append(data);
  }
  Status Sync() override {
    Status st = inner_->Sync();
    if (st.ok()) fs_.synced_size[file_.string()] = stdfs::file_size(file_);
    return st;
  }

 private:
  std::unique_ptr<AppendFile> inner_;
  FaultyFileSystem& fs_;
  stdfs::path file_;
};
}  // namespace

namespace {
// One write, failing (if it is the Nth) at Commit: the file keeps its previous contents.
class FaultyAtomic : public AtomicFile {
 public:
  FaultyAtomic(std::unique_ptr<AtomicFile> inner, FaultyFileSystem& fs, stdfs::path file)
      : inner_(std::move(inner)), fs_(fs), file_(std::move(file)) {}
  Status Append(std::string_view data) override { return inner_->Append(data); }
  Status Commit() override {
    if (fs_.NextWriteFails())
      return WorkFailed("injected write failure: No space left on device", file_.string());
    return inner_->Commit();
  }

 private:
  std::unique_ptr<AtomicFile> inner_;
  FaultyFileSystem& fs_;
  stdfs::path file_;
};
}  // namespace

Result<std::unique_ptr<AtomicFile>> FaultyFileSystem::CreateAtomic(const stdfs::path& file) {
  auto inner = RealFileSystem().CreateAtomic(file);
  if (!inner.ok()) return inner.error();
  return std::unique_ptr<AtomicFile>(std::make_unique<FaultyAtomic>(std::move(inner).value(), *this, file));
}

Result<std::unique_ptr<AppendFile>> FaultyFileSystem::OpenAppend(const stdfs::path& file) {
  auto inner = RealFileSystem().OpenAppend(file);
  if (!inner.ok()) return inner.error();
  if (!synced_size.count(file.string())) synced_size[file.string()] = stdfs::file_size(file);
  return std::unique_ptr<AppendFile>(std::make_unique<FaultyAppend>(std::move(inner).value(), *this, file));
}

void FaultyFileSystem::DropUnsynced() {
  for (const auto& [file, size] : synced_size) {
    if (stdfs::exists(file) && stdfs::file_size(file) > size) stdfs::resize_file(file, size);
  }
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
  WriteText(dir / "model.bin", "fake model");
  plan.params = ParseParams(params_text, dir.path(), "params.json").value();
  plan.params_file = dir / "params.json";
  plan.params_bytes = params_text;
  plan.inputs_root = fs::canonical(inputs);
  plan.model_sha256 = Sha256Hex("fake model");
  plan.runs_dir = dir / "runs";
  plan.run_id = "test-run";
  plan.command_line = {"pilot", "run"};
  plan.environment = {{"host", "test"}};
  Refresh();
}

void Fixture::SetParams(const std::string& text) {
  WriteText(dir / "params.json", text);
  plan.params = ParseParams(text, dir.path(), "params.json").value();
  plan.params_bytes = text;
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
  std::string text = ManifestToJson(manifest);
  WriteText(inputs / "manifest.json", text);
  plan.manifest = ManifestSource::Open(RealFileSystem(), inputs / "manifest.json").value();
}

}  // namespace pilot::testing
