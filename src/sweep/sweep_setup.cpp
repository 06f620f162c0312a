// A sweep's setup as one call (sweep_run.h): the plan, the environment, the stage on the CPU to
// cut the groups; then the sweep or its resume.
#include <utility>

#include "pilot/host.h"
#include "pilot/sweep/sweep_run.h"

namespace pilot {

namespace fs = std::filesystem;

Result<SweepPlan> PrepareSweep(FileSystem& fsys, Runtime& runtime, const RunRequest& request,
                               const SweepSettings& settings, bool group) {
  auto plan = BuildRunPlan(fsys, request);
  if (!plan.ok()) return plan.error();
  PILOT_TRY(CheckEnvironment(runtime, plan.value().params, plan.value().runs_dir,
                             "no sweep folder was created or changed"));
  // This process only measures the inputs (the stage's featuriser): it loads the model on the
  // CPU, so that nothing of it stays on the device the cells measure.
  auto device = runtime.ResolveDevice(plan.value().params.device);
  if (!device.ok()) return device.error();
  Params on_cpu = plan.value().params;
  on_cpu.device = "cpu";
  auto built = BuildStage(fsys, runtime, on_cpu, plan.value().model_sha256, plan.value().runs_dir);
  if (!built.ok()) return built.error();
  auto received = runtime.ReceivedEnvironment(plan.value().params.device, plan.value().runs_dir);
  if (!received.ok()) return received.error();
  SweepPlan sp;
  sp.run = std::move(plan).value();
  sp.run.environment = built.value().environment;
  sp.run.environment["device_requested"] = sp.run.params.device;
  sp.run.environment["device_used"] = device.value();
  sp.run.environment["received"] = received.value().ToJson();
  sp.settings = settings;
  sp.rss_after_load_mb = CurrentRssMegabytes(fsys);
  const Stage& stage = *built.value().stage;
  sp.stage = stage.Describe();
  sp.stage.device = device.value();  // where the cells run
  sp.footprint = stage.Footprint();
  if ((settings.max_ttft_ms || settings.max_tpot_ms) && !sp.stage.output->generates) {
    const char* option = settings.max_ttft_ms ? "--max-ttft-ms" : "--max-tpot-ms";
    return BadInput(std::string(option) + " applies to a stage that generates; stage kind '" + sp.stage.kind +
                        "' does not",
                    option, "remove it (--latency-budget-ms bounds a batch's latency)");
  }
  if (group) {
    auto grouping = GroupManifest(fsys, sp.run, stage, settings.groups, SweepSampleSize(settings));
    if (!grouping.ok()) return grouping.error();
    sp.grouping = std::move(grouping).value();
  }
  return sp;  // the stage is unloaded here: the cells load their own
}

Result<SweepOutcome> RunSweep(FileSystem& fsys, Clock& clock, Runtime& runtime, const SweepRequest& request,
                              const CellRunner& runner, const SweepControl& control) {
  RunRequest run = request.run;
  run.use_batch_plan = false;
  auto plan = PrepareSweep(fsys, runtime, run, request.settings, /*group=*/true);
  if (!plan.ok()) return plan.error();
  SweepPlan& sp = plan.value();
  sp.dir = request.out.empty() ? run.runs_dir / (NewRunId(clock) + "-sweep") : request.out;
  if (control.on_ready) control.on_ready();
  return ExecuteSweep(fsys, clock, sp, runner, control);
}

RunRequest RequestFromSweepRecord(const SweepRecord& r, const fs::path& dir) {
  RunRequest request;
  request.params_file = r.params_path;
  request.manifest = fs::path(r.manifest_path);
  request.device = r.device;
  request.runs_dir = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  request.use_batch_plan = false;  // a sweep measures batch sizes itself
  return request;
}

Result<SweepOutcome> ResumeSweepFolder(FileSystem& fsys, Clock& clock, Runtime& runtime, const fs::path& dir,
                                       const std::vector<std::string>& command_line, const CellRunner& runner,
                                       const SweepControl& control) {
  auto record = ReadSweepRecord(fsys, dir);
  if (!record.ok()) return record.error();
  const SweepRecord& r = record.value();
  RunRequest request = RequestFromSweepRecord(r, dir);
  request.command_line = r.command_line.empty() ? command_line : r.command_line;
  auto plan = PrepareSweep(fsys, runtime, request, r.settings, /*group=*/false);
  if (!plan.ok()) return plan.error();
  if (control.on_ready) control.on_ready();
  return ResumeSweep(fsys, clock, dir, std::move(plan).value(), runner, control);
}

}  // namespace pilot
