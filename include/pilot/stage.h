// The pluggable inference stage. The harness never knows the model: it hands a Stage a
// batch of inputs and gets back a batch-level status plus one outcome per input, in order.
// What an accepted outcome carries depends on the stage's output kind (a classification or
// an embedding); the engine judges outcomes, owns the retry policy (bisecting a failed
// batch) and writes the records. Stages are registered by `kind` in a StageRegistry. A
// Stage is used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/fs.h"
#include "pilot/output_kind.h"
#include "pilot/params.h"
#include "pilot/status.h"
#include "pilot/tokenizer.h"

namespace pilot {

// What a stage takes: UTF-8 text (prechecks refuse invalid encoding) or raw bytes.
enum class InputKind { kText, kBytes };
const char* InputKindName(InputKind kind);  // "text" | "bytes"

// One call's result. A batch that fails as a whole (an exception, an out-of-memory) has
// ok = false and no items: the engine then bisects it to isolate the failing items.
struct BatchOutput {
  bool ok = true;
  bool out_of_memory = false;
  std::string error;
  std::vector<ItemOutput> items;  // ok: one per input, in order
  // A tokenized batch (input_kind token_ids): the tokens its items gave the model (the
  // attention mask's ones) and the tensor's size, batch x padded length. Both 0 otherwise.
  std::uint64_t input_tokens = 0, padded_tokens = 0;

  static BatchOutput Failed(std::string error, bool out_of_memory) {
    BatchOutput b;
    b.ok = false;
    b.error = std::move(error);
    b.out_of_memory = out_of_memory;
    return b;
  }
};

// What a stage computes from one input before its model sees it (the langid models' hashed
// n-gram ids, a tokenizer's token ids): done by the engine's worker threads, off the model's
// thread.
struct PreparedInput {
  std::vector<std::int64_t> ids;
  // A tokenized input: its token type ids (beside ids), its length in tokens before any
  // truncation, and whether it was cut to max_length.
  std::vector<std::int64_t> type_ids;
  std::uint64_t tokens = 0;
  bool truncated = false;
  std::string error;  // not empty: the tokenizer could not encode the input (it fails alone)
  // The item's id, set by the caller after Prepare: what a stage keys an item's own randomness
  // by (a generator's sampling), so that it does not depend on the batch or the order.
  std::string key;
};

// What the model occupies once loaded: its parameters and buffers (weights, embedding
// tables, running statistics), as the stage holds them on its device.
struct ModelFootprint {
  std::uint64_t parameter_bytes = 0, buffer_bytes = 0;
  std::size_t parameters = 0, buffers = 0;  // tensors
};

struct StageDescription {
  std::string kind;
  // What it produces for each accepted item (pilot/output_kind.h); the stage sets it.
  const OutputKindSpec* output = nullptr;
  InputKind input = InputKind::kText;
  std::vector<std::string> labels;  // a kind with labels: declared by the model itself
  std::size_t dim = 0;              // a kind with vectors: the vector length
  std::uint64_t vocab = 0;          // a kind that generates: the model's vocabulary
  std::string model_sha256;
  std::string device;         // the device the stage actually runs on
  double min_confidence = 0;  // a kind with labels: below it an item is rejected low_confidence
  nlohmann::ordered_json details = nlohmann::ordered_json::object();  // input contract, ...
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual const StageDescription& Describe() const = 0;
  // Never throws: a whole-batch failure is BatchOutput::Failed, an item's own failure is
  // that item's outcome. Retrying is the engine's business, not the stage's.
  virtual BatchOutput Process(const std::vector<std::string_view>& inputs) = 0;
  // Featurisation, run by the pipeline's `prepare_threads` workers concurrently with each
  // other and with Process: it may only read the stage's configuration, and never throws.
  // False (the default) when the stage has no such step; the engine then calls Process.
  virtual bool Prepare(std::string_view input, PreparedInput& out) const {
    (void)input;
    (void)out;
    return false;
  }
  // Process with `prepared[k]` = what Prepare gave for `inputs[k]`, when it returned true.
  // Must give exactly what Process gives for the same inputs.
  virtual BatchOutput ProcessPrepared(const std::vector<std::string_view>& inputs,
                                      const std::vector<const PreparedInput*>& prepared) {
    (void)prepared;
    return Process(inputs);
  }
  // A stage that keeps a number of sequences in flight and refills a finished one's slot from
  // the call's queue (a generator's in-flight batching): how many inputs to give one call when
  // the batch size is `batch`. It then works on at most `batch` of them at once, as
  // SetConcurrency says. Default: `batch` (a call is a batch).
  virtual std::size_t InputsPerCall(std::size_t batch) const { return batch; }
  // How many inputs the next calls work on at once (the batch size); the caller sets it before
  // each call. A call with fewer inputs works on all of them. Default: ignored.
  virtual void SetConcurrency(std::size_t slots) { (void)slots; }
  // Peak device memory (MB) allocated since the stage was created; none on CPU.
  virtual std::optional<double> PeakDeviceMemoryMb() const { return std::nullopt; }
  // The loaded model's parameters and buffers; none when the stage kind cannot tell.
  virtual std::optional<ModelFootprint> Footprint() const { return std::nullopt; }
};

struct StageConfig {
  std::string kind;
  std::filesystem::path model;
  std::string model_sha256;  // already verified against the file by the caller
  nlohmann::json options = nlohmann::json::object();
  std::string device = "cpu";  // resolved: cpu | cuda
  int threads = 0;
  std::uint64_t seed = 0;
  // stage.tokenizer, loaded and checked against its pin (LoadStageTokenizer): shared by the
  // prepare workers, which only read it.
  std::shared_ptr<const Tokenizer> tokenizer;
  TokenizerSettings tokenizer_settings;
  nlohmann::ordered_json tokenizer_record;  // what run.json records of it
  // The parameters' `generation` (a stage that generates requires it).
  std::optional<GenerationSettings> generation;
};

// Reads stage.tokenizer's file (at most kMaxTokenizerBytes, a regular file), checks it against
// its sha256 pin and parses it into `config`. Refuses (exit 2) naming the file or key: missing,
// not pinned to these bytes, malformed, a component pilot does not implement, a pad_token the
// tokenizer lacks.
Status LoadStageTokenizer(FileSystem& fsys, const TokenizerParams& params, StageConfig& config);

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

// How `stage` measures an input's length (a batch plan's groups, a sweep's): the number of
// features its Prepare produces (and `features` true), else the input's bytes.
std::uint64_t InputLength(const Stage& stage, std::string_view input, bool& features);

// A stage must name the output kind it produces (StageDescription::output): refused
// otherwise, naming the stage kind. Every entry point that drives a stage checks it.
Status CheckStageDeclaresOutput(const StageDescription& stage);

// What the stage's output kind judges an item by: the stage's labels, dim and
// min_confidence, and the parameters' allowed categories.
OutputRules RulesFor(const StageDescription& stage, const std::vector<std::string>& allowed_categories);

}  // namespace pilot
