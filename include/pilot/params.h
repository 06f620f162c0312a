// The parameter file: what a run is asked to do (docs/formats.md, "Parameters"). Paths are
// resolved against the file's own folder; unknown keys and anything that looks like a
// credential are refused (exit 2).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

// stage.tokenizer: the tokenizer pilot runs before a model that takes token ids
// (docs/tokenizers.md, "In a pilot").
struct TokenizerParams {
  std::filesystem::path file;            // resolved against the parameter file's folder
  std::string sha256;                    // required: the file is pinned
  std::string format;                    // "tokenizer.json" or "sentencepiece" (default: by the file's name)
  std::uint64_t max_length = 0;          // required, 1..kMaxTokenizerMaxLength
  std::string truncation = "reject";     // reject (too_many_tokens) | truncate
  std::uint64_t pad_to_multiple_of = 0;  // 0: to the batch's longest
  bool add_special_tokens = true;
  std::optional<std::string> pad_token;   // default: [PAD] or <pad> when the tokenizer has one, else id 0
  bool add_bos = false, add_eos = false;  // sentencepiece: the model's <s> and </s>
  std::string ids = "sentencepiece";      // sentencepiece: the .model's own | fairseq: XLM-R's
};
inline constexpr std::uint64_t kMaxTokenizerMaxLength = 1u << 20;

struct StageParams {
  std::string kind;
  std::filesystem::path model;  // resolved against the parameter file's folder
  std::optional<std::string> model_sha256;
  nlohmann::json options = nlohmann::json::object();  // validated by the stage kind
  std::optional<TokenizerParams> tokenizer;
};

// `generation`: how a generator stage decodes (docs/generation.md, "Settings"). Greedy decoding
// alone is implemented: a temperature above 0 (sampling) is refused when the parameters are read.
struct GenerationSettings {
  std::uint64_t max_new_tokens = 0;          // required, 1..kMaxNewTokens
  double temperature = 0;                    // 0: greedy
  std::uint64_t top_k = 0;                   // 0: no cut (applies only to sampling)
  double top_p = 1;                          // 1: no cut (applies only to sampling)
  std::vector<std::string> stop;             // stop strings: the completion ends before the first one
  std::vector<std::int64_t> stop_token_ids;  // besides the model's own eos_token_ids
  std::uint64_t seed = 0;                    // default: the parameters' seed
  // "in-flight": a finished sequence's slot is refilled from the queue at once; "static": a
  // batch's prompts start together and the batch ends when its last sequence does.
  std::string batching = "in-flight";
  bool ignore_eos = false;  // a benchmark's setting: the model's end-of-sequence ids do not end a completion
};
inline constexpr std::uint64_t kMaxNewTokens = 1u << 15;
// The parameters' key of those settings (the same word as the output kind's name: this one
// declaration is the layering lint's exemption).
inline constexpr const char* kGenerationParamsKey = "generation";
inline constexpr std::size_t kMaxStopStrings = 16, kMaxStopStringBytes = 256, kMaxStopTokenIds = 64;
// What run.json records of them, in this order.
nlohmann::ordered_json GenerationToJson(const GenerationSettings& g);

struct Acceptance {
  std::optional<double> min_accuracy;  // on items with `expected`, 0..1
  // The lowest recall of any label the labelled items expect, 0..1: a class never predicted
  // fails it however high the accuracy.
  std::optional<double> min_recall_per_label;
  std::optional<double> max_p95_latency_ms;
  std::optional<double> max_peak_rss_mb;
  std::optional<double> min_accepted_fraction;  // accepted / manifest count, 0..1
  bool empty() const {
    return !min_accuracy && !min_recall_per_label && !max_p95_latency_ms && !max_peak_rss_mb &&
           !min_accepted_fraction;
  }
};

// What the environment must provide before any item is processed (exit 3 otherwise).
struct Requires {
  std::optional<std::string> backend;               // cpu | cuda | rocm: the device the run uses
  std::optional<int> min_device_count;              // GPUs visible
  std::optional<double> min_device_memory_mb;       // total memory of the smallest GPU used
  std::optional<std::string> min_libtorch_version;  // e.g. "1.13" or "2.4.1"
  std::optional<double> min_free_disk_mb;           // under the runs directory
  bool empty() const {
    return !backend && !min_device_count && !min_device_memory_mb && !min_libtorch_version &&
           !min_free_disk_mb;
  }
};

struct Params {
  std::filesystem::path manifest;  // resolved
  StageParams stage;
  std::vector<std::string> allowed_categories;  // empty when absent (a stage that does not classify)
  std::string device = "auto";                  // auto | cpu | cuda | rocm
  int batch_size = 8;
  int threads = 0;  // the model's threads; 0: libtorch's default
  // The pipeline's workers that read, hash and precheck inputs ahead of the model (the model
  // runs on its own thread, the journal is written on another).
  int prepare_threads = 1;
  std::uint64_t seed = 0;
  std::uint64_t max_bytes = 1 << 20;
  // An embedding stage's data/vectors.npy: float32 ('<f4') or float16 ('<f2', half the bytes;
  // an item with a value beyond float16's range is rejected as invalid_output).
  std::string vectors_dtype = "float32";
  // A generator stage's settings: required for one, refused for any other stage.
  std::optional<GenerationSettings> generation;
  // `service`: the interactive service `pilot load` drives (docs/load.md, "The service"). Only
  // its shape (an object) is checked here; `pilot load` reads it, every other command ignores it.
  std::optional<nlohmann::json> service;
  Acceptance acceptance;
  Requires requires_;
  // A finished sweep folder whose recommended batch size per length group the run uses
  // instead of batch_size (resolved; `run --batch-plan` overrides it).
  std::optional<std::filesystem::path> batch_plan;
};

inline constexpr std::string_view kDefaultParamsPath = "config/pilot.json";

// Parses parameter text; relative paths are resolved against `base_dir`; `source` names
// the file in messages.
Result<Params> ParseParams(std::string_view text, const std::filesystem::path& base_dir,
                           const std::string& source);
Result<Params> LoadParams(FileSystem& fs, const std::filesystem::path& file);

// auto | cpu | cuda | rocm | cuda:N | rocm:N (one device by index).
bool IsKnownDevice(std::string_view device);

// "2.4.1+cu121" -> {2, 4, 1}; nullopt if it is not a version.
std::optional<std::vector<int>> ParseVersion(std::string_view version);

}  // namespace pilot
