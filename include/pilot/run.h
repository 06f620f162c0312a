// A run: a fresh run folder, every manifest item through the stage, the report, the bag,
// then a self-verification. The caller has validated parameters and manifest, resolved the
// device and built the stage (the effective plan).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/report.h"
#include "pilot/stage.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct RunPlan {
  Params params;
  std::filesystem::path params_file;    // the file read (copied byte for byte)
  std::string params_bytes;
  std::filesystem::path manifest_file;  // resolved
  std::string manifest_bytes;
  Manifest manifest;
  std::filesystem::path inputs_root;    // the manifest's folder, canonical
  std::string model_sha256;
  std::filesystem::path runs_dir;
  std::string run_id;                   // empty: generated
  std::vector<std::string> command_line;
  nlohmann::ordered_json environment;   // what was received (host + runtime + device)
};

struct RunOutcome {
  std::filesystem::path run_dir;
  std::string run_id;
  Report report;
  VerifyResult verify;
  ExitCode exit_code = ExitCode::kOk;
};

// A run id: UTC time plus a short random suffix, e.g. 20261129T191036Z-3f9a1c.
std::string NewRunId(Clock& clock);
bool IsValidRunId(const std::string& id);

// Fails before creating anything if the run folder exists (exit 2) or cannot be created.
// Once the folder exists, a failure leaves it without bag manifests: never a finished run.
Result<RunOutcome> ExecuteRun(const RunPlan& plan, Stage& stage, FileSystem& fs, Clock& clock);

}  // namespace pilot
