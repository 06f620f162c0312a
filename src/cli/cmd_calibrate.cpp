// `pilot calibrate --params F --device D --out DIR`: the first rented hour (doctor, pilot,
// sweep on the card) as one folder of kind calibration (fleet/calibrate.h).
#include <cstdio>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/destination.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/json_util.h"
#include "pilot/params.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  Common common;
  std::string params = std::string(kDefaultParamsPath);
  std::string device = "cuda";
  std::string out, batch_sizes, repeats, groups;
  std::vector<std::string> argv;
};

int Execute(const CalibrateOptions& o) {
  ApplyLogLevel(o.common);
  FileSystem& fsys = CliFileSystem();
  if (Status st = CheckDefaultParams(o.params); !st.ok()) return ReportError(st.error(), o.common);
  auto out = ResolveDestination(fsys, o.out, "--out", Destination::kNew);
  if (!out.ok()) return ReportError(out.error(), o.common);
  CalibrationRequest q;
  q.params = o.params;
  q.device = o.device;
  q.out = out.value();
  q.batch_sizes = o.batch_sizes;
  q.repeats = o.repeats;
  q.groups = o.groups;
  q.command_line = o.argv;
  q.should_stop = [] { return InterruptRequested(); };
  q.on_progress = [&o](const std::string& line) {
    if (!o.common.quiet && !o.common.json) std::fprintf(stderr, "%s\n", line.c_str());
  };
  InstallInterruptHandlers();
  auto outcome = Calibrate(fsys, RealProcesses(), SystemClock(), q);
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  const CalibrationOutcome& c = outcome.value();
  const std::string staging = q.out.string() + ".calibrating";
  if (o.common.json) {
    nlohmann::ordered_json j;
    j["ok"] = c.exit_code == 0;
    j["exit_code"] = c.exit_code;
    j["calibration_dir"] = c.record ? nlohmann::ordered_json(c.dir.string()) : nlohmann::ordered_json();
    j["stopped_at"] = c.stopped_at.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.stopped_at);
    auto steps = nlohmann::ordered_json::array();
    for (const auto& s : c.steps)
      steps.push_back({{"step", s.name}, {"exit_code", s.exit_code}, {"seconds", s.seconds}});
    j["steps"] = steps;
    if (c.record) {
      j["device"] = c.record->device;
      j["device_class"] = c.record->device_class;
      j["device_name"] = c.record->device_name;
      j["fingerprint"] = c.fingerprint;
    }
    PrintJson(j);
    return c.exit_code;
  }
  for (const auto& s : c.steps)
    std::printf("%-7s exit %-3d %7.1f s\n", s.name.c_str(), s.exit_code, s.seconds);
  if (!c.stopped_at.empty()) {
    std::printf(
        "calibrate: stopped at the %s step (exit %d): nothing is at %s; its logs are in %s/data/logs%s\n",
        c.stopped_at.c_str(), c.exit_code, q.out.c_str(), staging.c_str(),
        c.stopped_at == "doctor" ? " and its report in data/doctor.json" : "");
    return c.exit_code;
  }
  const CalibrationRecord& r = *c.record;
  std::printf("calibration folder: %s\n", c.dir.c_str());
  std::printf("  measured on %s (%s): %s\n", r.device.c_str(), r.device_class.c_str(),
              r.device_name.empty() ? "(the doctor names no device)" : r.device_name.c_str());
  std::printf("  doctor %s; pilot exit %d; sweep exit %d\n", r.doctor_ok ? "ok" : "NOT ok", r.pilot_exit,
              r.sweep_exit);
  std::printf("fingerprint: %s\n", c.fingerprint.c_str());
  std::printf(
      "next: copy it off the machine (pilot export %s DEST), then pilot plan --from DEST --expect %s ...\n",
      c.dir.c_str(), c.fingerprint.c_str());
  return c.exit_code;
}

}  // namespace

void AddCalibrateCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "The first rented hour: doctor, the pilot and a sweep on the card, in one calibration folder");
  cmd->add_option("--params", o->params, "Parameter file")->capture_default_str();
  cmd->add_option("--device", o->device, "The card: cuda | rocm | cuda:N | cpu (a stand-in)")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "The calibration folder to create (never reused)")->required();
  cmd->add_option("--batch-sizes", o->batch_sizes, "The sweep's batch sizes (default: sweep's)");
  cmd->add_option("--repeats", o->repeats, "The sweep's timed passes per cell (default: sweep's, 2)");
  cmd->add_option("--groups", o->groups, "The sweep's length groups (default: sweep's)");
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Runs `pilot doctor --json`, `pilot run` and `pilot sweep` on the device, each as a child process,\n"
      "into OUT.calibrating, then writes the calibration's record, finishes its bag and renames it to OUT.\n"
      "`pilot verify OUT` verifies the pilot and sweep folders inside it too. `pilot plan --from OUT`\n"
      "projects from the card's own measurement. Exit 0; 3 the doctor failed (nothing assembled; the\n"
      "report and logs are in OUT.calibrating); 4 the pilot's acceptance is unmet, 1 the sweep found\n"
      "batching changing results (both assembled); 2 bad input; a step that ends otherwise: its own code,\n"
      "nothing assembled (logs in OUT.calibrating); 5 a failure while assembling; 130 interrupted.");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
