// `pilot doctor`: what the environment received can do, checked before any work.
#include <cstdio>

#include "cli/cli.h"
#include "cli/torch_loader.h"
#include "pilot/destination.h"
#include "pilot/doctor.h"
#include "pilot/escape.h"
#include "pilot/params.h"
#include "pilot/paths.h"

namespace pilot::cli {
namespace {

struct DoctorCliOptions {
  Common common;
  std::string params;
  std::string device;
  std::string runs_dir = "runs";
};

int Execute(const DoctorCliOptions& o) {
  ApplyLogLevel(o.common);
  DoctorOptions options;
  std::string params_file = o.params;
  std::error_code ec;
  if (params_file.empty() && std::filesystem::exists(kDefaultParamsPath, ec))
    params_file = std::string(kDefaultParamsPath);
  if (!params_file.empty()) {
    auto params = LoadParams(RealFileSystem(), params_file);
    if (!params.ok()) return ReportError(params.error(), o.common);
    options.params = std::move(params).value();
    options.device = options.params->device;
  }
  if (!o.device.empty()) {
    if (!IsKnownDevice(o.device)) {
      return ReportError(
          BadInput("unknown device '" + o.device + "'", "--device", "use auto, cpu, cuda or rocm"), o.common);
    }
    options.device = o.device;
  }
  // The runs folder as `run` would resolve and check it: doctor reports what run will use.
  if (auto runs = ResolveDestination(RealFileSystem(), o.runs_dir, "--runs-dir", Destination::kFolder);
      runs.ok()) {
    options.runs_dir = runs.value();
  } else {
    options.runs_dir = o.runs_dir;
    options.runs_dir_refused = runs.error().ToString();
  }
  auto torch = Torch();
  if (!torch.ok()) return ReportError(torch.error(), o.common);
  DoctorReport report = torch.value()->run_doctor(options);
  if (o.common.json) {
    nlohmann::ordered_json j = report.ToJson();
    // The exit code is the CLI's to state: placed after "ok", as before.
    nlohmann::ordered_json out;
    out["ok"] = j["ok"];
    out["exit_code"] = Code(report.ok() ? ExitCode::kOk : ExitCode::kEnvironment);
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "ok") out[it.key()] = it.value();
    }
    PrintJson(out);
  } else {
    std::printf("pilot doctor (device %s%s)\n", options.device.c_str(),
                params_file.empty() ? "" : (", parameters " + params_file).c_str());
    for (const auto& c : report.checks) {
      std::printf("  %-14s %-22s %s%s\n", c.status.c_str(), EscapeTerminal(c.name).c_str(),
                  EscapeTerminal(c.detail).c_str(), c.required || c.status == kPass ? "" : " (not required)");
    }
    std::printf("%s\n", report.ok() ? "doctor: everything asked for passes"
                                    : "doctor: NOT ready: a required check did not pass (exit 3)");
  }
  return report.ok() ? 0 : Code(ExitCode::kEnvironment);
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DoctorCliOptions>();
  CLI::App* cmd = app.add_subcommand("doctor", "Check the environment received before any work");
  cmd->add_option("--params", o->params, "Parameter file (default config/pilot.json when present)");
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the parameters' device)");
  cmd->add_option("--runs-dir", o->runs_dir, "Where runs will be written (disk check)")
      ->capture_default_str();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Each check is pass, fail or could-not-run (with its reason): libtorch build and threads, the host,\n"
      "the GPUs, a matrix product and a sum on each requested device against a float64 CPU reference,\n"
      "the configured model on the device against its CPU result on real pilot inputs, disk space and\n"
      "writability under the runs directory, and the parameters' `requires`. Exit 0 when every\n"
      "required check passes, 3 otherwise.");
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
