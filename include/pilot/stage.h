// The pluggable inference stage. The harness never knows the model: it hands a Stage a
// batch of texts and gets one output per text back, in order. Stages are registered by
// `kind` in a StageRegistry. A Stage is used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/status.h"

namespace pilot {

struct StageOutput {
  bool ok = false;
  std::string label;      // ok: the model's top label
  double confidence = 0;  // ok: its probability
  std::string error;      // !ok: what failed for this item
  bool out_of_memory = false;
  std::vector<float> scores;  // ok: the probability of every label (for device comparisons)
};

struct StageDescription {
  std::string kind;
  std::vector<std::string> labels;  // declared by the model itself
  std::string model_sha256;
  std::string device;  // the device the stage actually runs on
  double min_confidence = 0;  // below it an item is rejected low_confidence
  nlohmann::ordered_json details = nlohmann::ordered_json::object();  // input contract, ...
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual const StageDescription& Describe() const = 0;
  // One output per text, same order. Never throws: a failure is reported per item.
  virtual std::vector<StageOutput> Classify(const std::vector<std::string_view>& texts) = 0;
  // Peak device memory (MB) allocated since the stage was created; none on CPU.
  virtual std::optional<double> PeakDeviceMemoryMb() const { return std::nullopt; }
};

struct StageConfig {
  std::string kind;
  std::filesystem::path model;
  std::string model_sha256;  // already verified against the file by the caller
  nlohmann::json options = nlohmann::json::object();
  std::string device = "cpu";  // resolved: cpu | cuda
  int threads = 0;
  std::uint64_t seed = 0;
};

class StageRegistry {
 public:
  using Factory = std::function<Result<std::unique_ptr<Stage>>(const StageConfig&)>;
  void Register(const std::string& kind, Factory factory);
  // Fails (exit 2) naming the unknown kind and the registered ones.
  Result<std::unique_ptr<Stage>> Create(const StageConfig& config) const;
  std::vector<std::string> Kinds() const;

 private:
  std::map<std::string, Factory> factories_;
};

}  // namespace pilot
