// `pilot run`: validate everything, check the environment, then hand over to ExecuteRun.
#include <tuple>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/plan.h"
#include "pilot/run.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  Common common;
  std::string params = std::string(kDefaultParamsPath);
  std::string manifest;
  std::string runs_dir = "runs";
  std::string run_id;
  std::string device;
  std::string batch_plan;
  std::size_t stop_after = 0;
  std::vector<std::string> argv;
  const CLI::Option* run_id_option = nullptr;
  const CLI::Option* manifest_option = nullptr;
  const CLI::Option* device_option = nullptr;
  const CLI::Option* params_option = nullptr;
  const CLI::Option* batch_plan_option = nullptr;
};

// An option given with an empty value ('') is a mistake, never a request for the default.
Status NotEmpty(const CLI::Option* option, const std::string& value, const char* name) {
  if (option && option->count() > 0 && value.empty()) {
    return BadInput(std::string(name) + " is empty", name, "give a value, or leave the option out for the default");
  }
  return {};
}

// Parses the options into a request; the plan itself is built by the library.
Result<RunPlan> BuildPlan(const RunOptions& o) {
  if (o.runs_dir.empty()) return BadInput("--runs-dir is empty", "--runs-dir", "give the folder that receives run folders");
  for (auto [option, value, name] : {std::tuple{o.run_id_option, &o.run_id, "--run-id"},
                                     std::tuple{o.manifest_option, &o.manifest, "--manifest"},
                                     std::tuple{o.device_option, &o.device, "--device"},
                                     std::tuple{o.params_option, &o.params, "--params"},
                                     std::tuple{o.batch_plan_option, &o.batch_plan, "--batch-plan"}}) {
    if (Status st = NotEmpty(option, *value, name); !st.ok()) return st.error();
  }
  RunRequest request;
  request.params_file = o.params;
  if (!o.manifest.empty()) request.manifest = fs::path(o.manifest);
  if (!o.device.empty()) request.device = o.device;
  if (!o.batch_plan.empty()) request.batch_plan = fs::path(o.batch_plan);
  request.runs_dir = o.runs_dir;
  request.run_id = o.run_id;
  request.command_line = o.argv;
  return BuildRunPlan(RealFileSystem(), request);
}

int Execute(const RunOptions& o) {
  ApplyLogLevel(o.common);
  auto plan = BuildPlan(o);
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  if (Status env = CheckEnvironment(plan.value().params, plan.value().runs_dir, "no run folder was created"); !env.ok()) {
    return ReportError(env.error(), o.common);
  }
  auto built = BuildStage(plan.value().params, plan.value().model_sha256, plan.value().runs_dir);
  if (!built.ok()) return ReportError(built.error(), o.common);
  plan.value().environment = built.value().environment;
  InstallInterruptHandlers();
  auto outcome = ExecuteRun(plan.value(), *built.value().stage, CliFileSystem(), SystemClock(),
                            MakeRunControl(o.common, o.stop_after));
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintOutcome(outcome.value(), o.common);
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run every manifest item through the stage into a new run folder, then verify it");
  o->params_option = cmd->add_option("--params", o->params, "Parameter file")->capture_default_str();
  o->manifest_option =
      cmd->add_option("--manifest", o->manifest, "Manifest to use instead of the one the parameters name");
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the run folder")->capture_default_str();
  o->run_id_option =
      cmd->add_option("--run-id", o->run_id, "Name of the run folder (default: UTC time + random suffix); never reused");
  o->device_option = cmd->add_option("--device", o->device, "auto | cpu | cuda | rocm (default: the parameters' device)");
  o->batch_plan_option = cmd->add_option(
      "--batch-plan", o->batch_plan,
      "A finished sweep folder: batch each length group at the size it recommends (instead of batch_size)");
  cmd->add_option("--stop-after", o->stop_after,
                  "Stop as if interrupted once N items are done (exit 130; for tests and rehearsals)")
      ->check(CountValidator());
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Ctrl-C (or SIGTERM) stops after the current batch with exit 130 and a resumable folder;\n"
      "a second Ctrl-C stops at once (still resumable). Finish with `pilot resume RUN_DIR`.");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
