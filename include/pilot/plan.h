// Turning what the user asked (a RunRequest) into what will happen (a RunPlan, run.h): the
// one place a run's plan is built. The CLI only parses options into a request, calls this,
// and prints.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

struct RunRequest {
  std::filesystem::path params_file;              // as given
  std::optional<std::filesystem::path> manifest;  // --manifest: instead of the parameters' one
  std::optional<std::string> device;              // --device: instead of the parameters' one
  std::filesystem::path runs_dir = "runs";
  std::string run_id;  // empty: generated
  std::vector<std::string> command_line;
  std::optional<std::filesystem::path> batch_plan;  // --batch-plan: a sweep folder
  bool use_batch_plan = true;                       // false: a sweep, which measures batch sizes itself
  std::optional<ShardSpec> shard;                   // --shard: one partition (run id default shard-I-of-N)
};

// Reads and validates the parameters and the manifest (hashing the bytes validated), checks
// the model file against its pin, and records what was asked beside what will be done.
// Touches nothing; every refusal is exit 2 naming the file, key or option at fault.
Result<RunPlan> BuildRunPlan(FileSystem& fs, const RunRequest& request);

// The parameters against the loaded stage's kind (exit 2, naming the key): a stage that
// classifies needs allowed_categories, each one of the model's labels; a stage that does
// not (an embedding) refuses them, since there is no category to allow.
Status CheckStageFitsParams(const StageDescription& stage, const Params& params);

}  // namespace pilot
