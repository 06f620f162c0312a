// Test doubles for the core: a scripted fake stage, a fault-injecting file system and a
// temporary folder that removes itself.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/run.h"
#include "pilot/run_session.h"
#include "pilot/stage.h"

namespace pilot::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

void WriteText(const std::filesystem::path& file, const std::string& text);
std::string ReadText(const std::filesystem::path& file);

// Labels a text by its first word ("fr bonjour" -> fr at 0.9), or (embedding) maps it to a
// vector that depends only on its bytes. Scripted by text: a batch holding a text that
// starts with "fail" (or "oom": out of memory) fails as a whole, as a real model does;
// "oombig" fails any batch of more than 2 with an out-of-memory; "itemfail" fails that item
// alone; "low" gives confidence 0.1; "score5" claims a probability of 5.0 and "nan" a NaN;
// "nanvec" puts a NaN in the vector, "hugevec" 1e6 (beyond float16) and "shortvec" drops its
// last value.
class FakeStage : public Stage {
 public:
  explicit FakeStage(const OutputKindSpec& output = ClassificationOutput(), std::size_t dim = 4);
  const StageDescription& Describe() const override { return desc_; }
  BatchOutput Process(const std::vector<std::string_view>& texts) override;
  static std::vector<float> VectorOf(std::string_view text, std::size_t dim);
  std::vector<std::size_t> batch_sizes;  // what the harness handed over
  // Declares one more label (the model's own list); a text whose first word is it gets it.
  void AddLabel(const std::string& label) { desc_.labels.push_back(label); }
  void ForgetOutputKind() { desc_.output = nullptr; }  // a stage that declares none
  // A detail of the model contract, as a torch stage records it (e.g. "held_dtype").
  void SetDetail(const std::string& key, const nlohmann::json& value) { desc_.details[key] = value; }

 private:
  StageDescription desc_;
};

// The one fake clock of the unit tests: stopped at 2031-01-02T03:04:05Z, its seconds (monotonic
// and since the epoch) advancing by a millisecond per call, callable from several threads.
class FakeClock : public Clock {
 public:
  std::string UtcNowIso() override { return "2031-01-02T03:04:05Z"; }
  std::string UtcNowCompact() override { return "20310102T030405Z"; }
  double MonotonicSeconds() override { return Tick(); }
  double UnixSeconds() override { return 1925089445.0 + Tick(); }

 private:
  double Tick() { return 0.001 * static_cast<double>(++ticks_); }
  std::atomic<long> ticks_{0};
};

// The fake clock the workflows' unit tests share (a run, a merge, a decide, an adaptation): no
// test reads the machine's time.
Clock& SharedClock();

// A runtime with no library behind it (run_session.h): the stage kind "fake", one backend
// (`backend`; a device of another is refused as absent), and a count of the stages built.
class FakeRuntime : public Runtime {
 public:
  std::string backend = "cpu";
  std::optional<Error> fails;  // every call fails with it (a module that does not load)
  int stages_built = 0;
  std::function<std::unique_ptr<Stage>()> make_stage;  // null: a FakeStage

  Result<std::string> ResolveDevice(const std::string& requested) override {
    if (fails) return *fails;
    if (requested == "auto") return backend == "cpu" ? std::string("cpu") : backend + ":0";
    if (requested.rfind("cpu", 0) != 0 && requested.rfind(backend, 0) != 0) {
      return EnvironmentError(requested + " requested; this machine has " + backend, "--device");
    }
    return requested;
  }
  Result<Received> ReceivedEnvironment(const std::string&, const std::filesystem::path&) override {
    if (fails) return *fails;
    Received got;
    got.backend = backend;
    got.device_count = backend == "cpu" ? 0 : 2;
    return got;
  }
  Result<nlohmann::ordered_json> Info() override {
    if (fails) return *fails;
    return nlohmann::ordered_json{{"version", "fake"}};
  }
  Status RegisterStages(StageRegistry& registry) override {
    if (fails) return *fails;
    registry.Register("fake", [this](const StageConfig&) -> Result<std::unique_ptr<Stage>> {
      ++stages_built;
      return make_stage ? make_stage() : std::unique_ptr<Stage>(std::make_unique<FakeStage>());
    });
    return {};
  }
};

// Wraps the real file system; fails the Nth write (WriteFileAtomic, CopyFileAtomic, an
// AtomicFile's Commit, Append, Truncate; 1-based), records which files were read, and can drop whatever was
// appended but not fsynced, as a power cut would.
class FaultyFileSystem : public FileSystemWrapper {
 public:
  explicit FaultyFileSystem(int fail_write_number = 0)
      : FileSystemWrapper(RealFileSystem()), fail_at_(fail_write_number) {}
  Result<std::string> ReadFile(const stdfs::path& file, std::uint64_t max_bytes) override;
  // Records a file as read when its first bytes are read (an open alone reads nothing).
  BeneathOpen OpenBeneath(const stdfs::path& root, const std::string& relative) override;
  Status WriteFileAtomic(const stdfs::path& file, std::string_view data) override;
  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to, bool follow_symlinks = true) override;
  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& file) override;
  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& file) override;
  Status Truncate(const stdfs::path& file, std::uint64_t size) override;

  bool NextWriteFails();
  // Truncates every appended file to its size at its last successful Sync().
  void DropUnsynced();
  void RecordRead(const stdfs::path& file);
  std::set<std::string> reads;  // guarded by reads_mu
  std::mutex reads_mu;
  std::map<std::string, std::uint64_t> synced_size;
  int writes = 0;

 private:
  int fail_at_;
};

// A folder of inputs with a manifest, and a plan to run it with FakeStage.
using Items = std::vector<std::pair<std::string, std::string>>;

struct Fixture {
  TempDir dir;
  std::filesystem::path inputs;
  Manifest manifest;
  RunPlan plan;

  // items: id -> contents; writes files and a pinned manifest.
  explicit Fixture(const std::vector<std::pair<std::string, std::string>>& items);
  // Replaces the parameters, file and plan alike (the run copies the file into its folder).
  void SetParams(const std::string& text);
  void Expect(const std::string& id, const std::string& category);
  void ExpectRejection(const std::string& id, const std::string& reason);
  void Refresh();  // re-serialise the manifest into the plan after edits
};

}  // namespace pilot::testing
