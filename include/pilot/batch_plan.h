// A batch plan (`run --batch-plan SWEEP_DIR`, or `batch_plan` in the parameters): each
// input-length group's batch size, as a finished sweep of the same model recommended. A run
// copies it into its folder as data/batch-plan.json (with its sha256 in run.json) and reads
// only that copy on resume, so the folder stays self-contained.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/status.h"

namespace pilot {

// The most length groups and the largest batch size a sweep (and so a plan) may hold.
inline constexpr int kMaxGroups = 16;
inline constexpr int kMaxBatchSize = 4096;

struct BatchPlan {
  std::string measure;  // bytes | features: how an input's length is measured
  std::string model_sha256;
  std::string sweep_fingerprint;           // the sweep folder's (sha256 of its tagmanifest)
  std::vector<std::uint64_t> max_lengths;  // per group, ascending; longer inputs go to the last
  std::vector<int> batch_sizes;            // per group
  int max_batch_size() const {
    int m = 1;
    for (int b : batch_sizes) m = b > m ? b : m;
    return m;
  }
};

nlohmann::ordered_json BatchPlanToJson(const BatchPlan& plan);
// Strict and capped (limits::kBatchPlanBytes); errors name `where`.
Result<BatchPlan> ParseBatchPlan(std::string_view text, const std::string& where);

// The group a length falls in, given each group's max_length (ascending): the first whose
// max is >= length; beyond the last, the last.
std::size_t GroupForLength(const std::vector<std::uint64_t>& max_lengths, std::uint64_t length);

}  // namespace pilot
