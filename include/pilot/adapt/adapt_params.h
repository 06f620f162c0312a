// The parameter file of the adaptation pilot, `pilot adapt` (config/adapt.json is the
// example): the base model and its pin, the labelled training and evaluation manifests,
// what trains and how, and the acceptance criteria. Strict like the run's parameters:
// unknown keys and anything that looks like a credential are refused (exit 2); paths are
// resolved against the file's own folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

struct AdaptAcceptance {
  std::optional<double> min_eval_accuracy;  // 0..1, on the evaluation items, after adaptation
  std::optional<double> min_gain;           // -1..1, adapted minus base evaluation accuracy
  bool empty() const { return !min_eval_accuracy && !min_gain; }
};

inline constexpr int kMaxAdaptThreads = 256;
inline constexpr std::uint64_t kMaxAdaptSteps = 10'000'000;
inline constexpr int kMaxAdaptBatch = 65536;
inline constexpr int kMaxKeepCheckpoints = 100;

struct AdaptParams {
  std::filesystem::path base_model;                     // resolved
  std::string base_model_sha256;                        // required: the base model is pinned
  std::filesystem::path train_manifest, eval_manifest;  // resolved
  // The parameters that train, by their names in the model (e.g. "fc_w", "fc_b"); empty:
  // all of them ("train": {"parameters": "all"}).
  std::vector<std::string> trainable;
  std::string optimiser = "adam";  // adam | sgd
  double learning_rate = 1e-3;     // (0, 10]
  double momentum = 0;             // sgd only, [0, 1)
  double weight_decay = 0;         // [0, 1]
  int batch_size = 16;             // 1..kMaxAdaptBatch
  // Exactly one of the two: a number of optimiser steps, or whole passes over the
  // training items (steps = epochs x ceil(used items / batch_size)).
  std::optional<std::uint64_t> steps;
  std::optional<int> epochs;
  std::uint64_t seed = 0;
  int threads = 1;                      // required, >= 1: recorded, and what a resume runs with
  std::uint64_t checkpoint_every = 50;  // steps; the last step always checkpoints
  int keep_checkpoints = 2;             // the last K kept, plus the best by evaluation
  std::string dtype = "float32";        // float32 | bfloat16 | float16
  std::string device = "auto";          // auto | cpu | cuda | rocm
  std::uint64_t max_bytes = 1 << 16;    // per item, as the run's limits.max_bytes
  AdaptAcceptance acceptance;
};

inline constexpr std::string_view kDefaultAdaptParamsPath = "config/adapt.json";

// Parses adaptation parameter text; relative paths are resolved against `base_dir`;
// `source` names the file in messages.
Result<AdaptParams> ParseAdaptParams(std::string_view text, const std::filesystem::path& base_dir,
                                     const std::string& source);

}  // namespace pilot
