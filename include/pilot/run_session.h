// A run's setup as one call, shared by `pilot run`, `pilot run --shard` and `pilot resume`:
// the plan (or the folder's own, when resuming), the environment received against the
// parameters' `requires`, the stage built on the resolved device and checked against the
// parameters, and a shard's folder continued when it already exists. The command then makes
// one more call, RunToEnd, and prints. Nothing here prints: what the setup has to tell goes
// to SessionRequest::on_note.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/params.h"
#include "pilot/plan.h"
#include "pilot/requirements.h"
#include "pilot/run.h"
#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

// What runs models: the torch module (which the CLI loads on first use, so that a command
// that needs none never loads it) or a fake in tests. Each call may fail with the runtime's
// own error, such as a module that does not load (exit 3).
class Runtime {
 public:
  virtual ~Runtime() = default;
  // auto | cpu | cuda | rocm | cuda:N -> the device to run on; exit 3 when it is absent.
  virtual Result<std::string> ResolveDevice(const std::string& requested) = 0;
  // The environment in the terms of `requires`, for the device `requested` would resolve to.
  virtual Result<Received> ReceivedEnvironment(const std::string& requested,
                                               const std::filesystem::path& runs_dir) = 0;
  // What the runtime reports of itself (library version, devices), for environment.json.
  virtual Result<nlohmann::ordered_json> Info() = 0;
  // Registers the stage kinds the runtime provides.
  virtual Status RegisterStages(StageRegistry& registry) = 0;
};

// The parameters' `requires` and the device asked for against what this machine has: exit 3
// listing every unmet requirement at once. Nothing is created; `untouched` tells the user
// what became of their folder ("no run folder was created", "the run folder stays resumable").
Status CheckEnvironment(Runtime& runtime, const Params& params, const std::filesystem::path& runs_dir,
                        const char* untouched);

// `device` with "auto" resolved by the runtime to the backend it would use (cpu, cuda, rocm);
// any other device as given ("cuda", "cuda:1").
Result<std::string> DeviceBackend(Runtime& runtime, const std::string& device,
                                  const std::filesystem::path& runs_dir);

struct BuiltStage {
  std::unique_ptr<Stage> stage;
  nlohmann::ordered_json environment;  // host, runtime, device asked and used, received
};

// Resolves the device (exit 3 when absent), loads the model through the runtime's stage
// registry (exit 2), and checks the stage against the parameters (CheckStageFitsParams).
Result<BuiltStage> BuildStage(FileSystem& fs, Runtime& runtime, const Params& params,
                              const std::string& model_sha256, const std::filesystem::path& runs_dir);

// What a session starts from: a new run (or shard) from `run`, or the folder `resume`.
struct SessionRequest {
  RunRequest run;
  // torchrun's LOCAL_RANK (a shard): the device is cuda:LOCAL_RANK (or rocm:).
  std::optional<std::uint32_t> local_rank;
  // An existing run or shard folder to finish; `device` overrides the one it was begun with.
  std::optional<std::filesystem::path> resume;
  std::optional<std::string> device;
  // What the setup has to tell on the way ("shard 0/2 resumes its folder ..."), as it happens.
  std::function<void(const std::string&)> on_note;
};

// A session ready to run: a new folder (`plan`), or an existing one (`resume`), its stage
// built. `finished`: the folder was already a finished bag (a stale lock removed, or a
// shard run again after it finished); `resume->finished_verify` is its verification and
// nothing is to be run.
struct RunSession {
  std::optional<RunPlan> plan;
  std::optional<ResumeSetup> resume;
  std::unique_ptr<Stage> stage;
  bool finished = false;
};

// The setup: every check of the request, in the order the user would fix them, before any
// folder is created or changed. A shard whose folder exists continues it when it is the same
// shard of the same manifest, parameters and model (exit 2 naming the difference otherwise).
Result<RunSession> OpenRunSession(FileSystem& fs, Runtime& runtime, const SessionRequest& request);

// Runs the session's items to the end (or to an interrupt), then finishes and verifies the
// folder: ExecuteRun for a new one, ResumeRun for an existing one.
Result<RunOutcome> RunToEnd(FileSystem& fs, Clock& clock, RunSession& session, const RunControl& control);

}  // namespace pilot
