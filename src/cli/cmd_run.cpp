// `pilot run`: validate everything, check the environment, then hand over to ExecuteRun.
#include <cstdio>
#include <iostream>

#include "cli/cli.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/torch_stage.h"

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
  std::vector<std::string> argv;
};

Result<RunPlan> BuildPlan(const RunOptions& o) {
  RunPlan plan;
  plan.params_file = o.params;
  auto params_bytes = RealFileSystem().ReadFile(o.params);
  if (!params_bytes.ok()) {
    return BadInput("cannot read the parameter file", o.params, "give an existing file with --params");
  }
  plan.params_bytes = params_bytes.value();
  fs::path base = fs::absolute(plan.params_file).parent_path();
  auto params = ParseParams(plan.params_bytes, base, o.params);
  if (!params.ok()) return params.error();
  plan.params = std::move(params).value();
  if (!o.device.empty()) {
    if (!IsKnownDevice(o.device)) return BadInput("unknown device '" + o.device + "'", "--device", "use auto, cpu, cuda or rocm");
    plan.params.device = o.device;
  }
  if (!o.manifest.empty()) plan.params.manifest = fs::absolute(o.manifest);

  plan.manifest_file = plan.params.manifest;
  auto manifest_bytes = RealFileSystem().ReadFile(plan.manifest_file);
  if (!manifest_bytes.ok()) {
    return BadInput("cannot read the manifest", plan.manifest_file.string(),
                    "check 'manifest' in the parameters or --manifest");
  }
  plan.manifest_bytes = manifest_bytes.value();
  auto manifest = ParseManifest(plan.manifest_bytes, plan.manifest_file.extension() == ".jsonl",
                                plan.manifest_file.string());
  if (!manifest.ok()) return manifest.error();
  plan.manifest = std::move(manifest).value();
  std::error_code ec;
  plan.inputs_root = fs::canonical(fs::absolute(plan.manifest_file).parent_path(), ec);

  const fs::path& model = plan.params.stage.model;
  if (!fs::is_regular_file(model, ec)) {
    return BadInput("model file not found", model.string(), "check 'stage.model' in the parameters");
  }
  auto digest = Sha256File(model);
  if (!digest.ok()) return digest.error();
  plan.model_sha256 = digest.value();
  if (plan.params.stage.model_sha256 && *plan.params.stage.model_sha256 != plan.model_sha256) {
    return BadInput("model sha256 is " + plan.model_sha256 + " but the parameters pin " +
                        *plan.params.stage.model_sha256,
                    model.string(),
                    "restore the pinned model, or update stage.model_sha256 if the change is intended");
  }
  plan.runs_dir = o.runs_dir;
  plan.run_id = o.run_id;
  plan.command_line = o.argv;
  return plan;
}

void PrintSummary(const RunOutcome& out) {
  const Report& r = out.report;
  std::printf("run %s: %zu items, %zu accepted, %zu rejected\n", out.run_id.c_str(), r.total, r.accepted,
              r.rejected);
  for (const auto& [reason, n] : r.by_reason) std::printf("  rejected %-22s %zu\n", reason.c_str(), n);
  if (r.labelled) {
    std::printf("accuracy on labelled items: %zu/%zu (%.1f%%); expected rejections met: %zu/%zu\n", r.correct,
                r.labelled, 100.0 * r.accuracy(), r.expected_rejections_met, r.expected_rejections);
  }
  std::printf("latency p50 %.2f ms, p95 %.2f ms; %.1f items/s; peak RSS %.0f MB\n", r.p50_ms, r.p95_ms,
              r.items_per_second, r.peak_rss_mb);
  if (!out.verify.ok()) {
    std::printf("verify: FAILED with %zu finding(s):\n", out.verify.findings.size());
    for (const auto& f : out.verify.findings) std::printf("  [%s] %s: %s\n", f.check.c_str(), f.where.c_str(), f.what.c_str());
  } else {
    std::printf("verify: ok (every manifest id accounted for exactly once)\n");
  }
  for (const auto& c : r.criteria) {
    if (!c.measured) {
      std::printf("acceptance: %s not met: nothing to measure it on (e.g. no item has an `expected` label)\n",
                  c.name.c_str());
    } else if (!c.met) {
      std::printf("acceptance: %s not met (limit %g, value %g)\n", c.name.c_str(), c.limit, c.value);
    }
  }
  std::printf("run folder: %s\n", std::filesystem::absolute(out.run_dir).lexically_normal().c_str());
}

int Execute(const RunOptions& o) {
  ApplyLogLevel(o.common);
  auto plan = BuildPlan(o);
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  auto device = ResolveDevice(plan.value().params.device);
  if (!device.ok()) return ReportError(device.error(), o.common);

  StageRegistry registry;
  RegisterTorchStages(registry);
  StageConfig config;
  config.kind = plan.value().params.stage.kind;
  config.model = plan.value().params.stage.model;
  config.model_sha256 = plan.value().model_sha256;
  config.options = plan.value().params.stage.options;
  config.device = device.value();
  config.threads = plan.value().params.threads;
  config.seed = plan.value().params.seed;
  auto stage = registry.Create(config);
  if (!stage.ok()) return ReportError(stage.error(), o.common);
  const auto& labels = stage.value()->Describe().labels;
  for (const auto& c : plan.value().params.allowed_categories) {
    if (std::find(labels.begin(), labels.end(), c) == labels.end()) {
      std::string all;
      for (const auto& l : labels) all += (all.empty() ? "" : " ") + l;
      return ReportError(BadInput("allowed category '" + c + "' is not a label of the model",
                                  "allowed_categories", "the model's labels are: " + all),
                         o.common);
    }
  }
  nlohmann::ordered_json env;
  env["host"] = HostInfo();
  env["libtorch"] = TorchRuntimeInfo();
  env["device_requested"] = plan.value().params.device;
  env["device_used"] = device.value();
  plan.value().environment = env;

  auto outcome = ExecuteRun(plan.value(), *stage.value(), RealFileSystem(), SystemClock());
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  const RunOutcome& out = outcome.value();
  if (o.common.json) {
    nlohmann::ordered_json j;
    j["ok"] = out.exit_code == ExitCode::kOk;
    j["exit_code"] = static_cast<int>(out.exit_code);
    j["run_id"] = out.run_id;
    j["run_dir"] = std::filesystem::absolute(out.run_dir).lexically_normal().string();
    j["report"] = ReportToJson(out.report);
    j["verify"] = VerifyResultToJson(out.run_dir, out.verify);
    PrintJson(j);
  } else {
    PrintSummary(out);
  }
  return static_cast<int>(out.exit_code);
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run every manifest item through the stage into a new run folder, then verify it");
  cmd->add_option("--params", o->params, "Parameter file")->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "Manifest to use instead of the one the parameters name");
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the run folder")->capture_default_str();
  cmd->add_option("--run-id", o->run_id, "Name of the run folder (default: UTC time + random suffix); never reused");
  cmd->add_option("--device", o->device, "auto | cpu | cuda | rocm (default: the parameters' device)");
  AddCommonOptions(*cmd, o->common);
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
