// `pilot resume RUN_DIR`: finishes an interrupted run in a new process.
#include <map>
#include <optional>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/adapt/adapt_files.h"
#include "pilot/folder_kind.h"
#include "pilot/json_util.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/run.h"
#include "pilot/sweep/sweep.h"
#include "pilot/verdict/decide.h"
#include "pilot/verify.h"

namespace pilot::cli {
namespace {

struct ResumeOptions {
  Common common;
  std::string run_dir;
  std::string device;
  std::size_t stop_after = 0;
  std::vector<std::string> argv;
};

// A run, a shard or a merged folder: a decide killed part-way (or a stale lock on a finished
// folder) is finished or undone first. Returns the exit code when that settled the command.
std::optional<int> RecoverDecide(const ResumeOptions& o, const std::string& run_dir) {
  auto recovered = RecoverInterruptedDecide(CliFileSystem(), run_dir);
  if (!recovered.ok()) return ReportError(recovered.error(), o.common);
  if (!recovered.value()) return std::nullopt;
  ResumeSetup done;
  done.run_dir = run_dir;
  done.notes.push_back(*recovered.value());
  done.finished_verify = VerifyRunFolder(RealFileSystem(), run_dir, VerifyOptions{});
  return PrintAlreadyFinished(done, o.common);
}

// A run or a shard: only the items without a result are processed. Also the path of a folder
// whose kind cannot be read: PrepareResume refuses it, naming the fault.
int ResumeRunFolder(const ResumeOptions& o, const std::string& run_dir) {
  auto setup = PrepareResume(run_dir, CliFileSystem());
  if (!setup.ok()) return ReportError(setup.error(), o.common);
  ResumeSetup& s = setup.value();
  if (s.already_finished) return PrintAlreadyFinished(s, o.common);
  if (!o.device.empty()) s.plan.params.device = o.device;
  if (Status env = CheckEnvironment(s.plan.params, s.plan.runs_dir, "the run folder stays resumable");
      !env.ok())
    return ReportError(env.error(), o.common);
  auto built = BuildStage(s.plan.params, s.plan.model_sha256, s.plan.runs_dir);
  if (!built.ok()) return ReportError(built.error(), o.common);
  s.plan.environment = built.value().environment;
  s.plan.command_line = o.argv;
  InstallInterruptHandlers();
  auto outcome = ResumeRun(s, *built.value().stage, CliFileSystem(), SystemClock(),
                           MakeRunControl(o.common, o.stop_after));
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintOutcome(outcome.value(), o.common);
}

int ResumeRunOrShard(const ResumeOptions& o, const std::string& run_dir) {
  if (auto code = RecoverDecide(o, run_dir)) return *code;
  return ResumeRunFolder(o, run_dir);
}

// How each folder kind resumes: the one table of them. A kind the registry knows but this
// table does not is refused by PrepareResume, naming it.
using ResumeHandler = int (*)(const ResumeOptions&, const std::string& run_dir);
const std::map<std::string, ResumeHandler>& ResumeHandlers() {
  static const std::map<std::string, ResumeHandler> handlers = {
      {kFolderKindRun, ResumeRunOrShard},
      {kFolderKindShard, ResumeRunOrShard},
      {kFolderKindMerged,
       [](const ResumeOptions& o, const std::string& dir) {
         if (auto code = RecoverDecide(o, dir)) return *code;
         return ReportError(
             BadInput("a merged folder is finished once it exists and never resumes", dir,
                      "check it with `pilot verify`; to redo it, resume its shards and merge them again"),
             o.common);
       }},
      // A sweep resumes as a sweep (its cells, not a run's items), on the device it measured.
      {kFolderKindSweep,
       [](const ResumeOptions& o, const std::string& dir) {
         if (!o.device.empty() || o.stop_after > 0) {
           return ReportError(BadInput("--device and --stop-after do not apply to a sweep folder", dir,
                                       "a sweep resumes on the device it was measured on"),
                              o.common);
         }
         return ResumeSweepFolder(dir, o.common, o.argv);
       }},
      // An adaptation resumes from its last checkpoint.
      {kFolderKindAdapt,
       [](const ResumeOptions& o, const std::string& dir) {
         return ResumeAdaptFolder(dir, o.device, o.stop_after, o.common, o.argv);
       }},
  };
  return handlers;
}

int Execute(const ResumeOptions& o) {
  ApplyLogLevel(o.common);
  if (!o.device.empty() && !IsKnownDevice(o.device)) {
    return ReportError(BadInput("unknown device '" + ValueForMessage(o.device) + "'", "--device",
                                "use auto, cpu, cuda or rocm; the run folder was not touched"),
                       o.common);
  }
  auto resolved = ResolveGivenFolder(RealFileSystem(), o.run_dir, "a run folder");
  if (!resolved.ok()) return ReportError(resolved.error(), o.common);
  const std::string run_dir = resolved.value().string();
  auto kind = ReadFolderKind(RealFileSystem(), run_dir);
  if (!kind.ok()) return ResumeRunFolder(o, run_dir);
  const auto handler = ResumeHandlers().find(kind.value().kind);
  if (handler == ResumeHandlers().end()) return ResumeRunFolder(o, run_dir);
  // A format this pilot cannot resume is refused before anything is touched.
  if (Status st = CheckFolderKind(kind.value(), run_dir, "resume"); !st.ok())
    return ReportError(st.error(), o.common);
  return handler->second(o, run_dir);
}

}  // namespace

void AddResumeCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<ResumeOptions>();
  CLI::App* cmd =
      app.add_subcommand("resume", "Finish an interrupted run: only items without a result are processed");
  cmd->add_option("RUN_DIR", o->run_dir, "The run folder")->required();
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the run's parameters)");
  cmd->add_option("--stop-after", o->stop_after,
                  "Stop as if interrupted once N more items (adapt: steps) are done")
      ->check(CountValidator());
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Works from the folder alone: the copies of manifest and parameters (checked against the\n"
      "journal's header), the journal, and the model file the parameters name (re-hashed). Refuses\n"
      "(exit 2) a finished run, a changed manifest, parameters or model, and a folder another\n"
      "process is writing. An adaptation folder (`pilot adapt`) continues from its last journaled\n"
      "checkpoint, each kept checkpoint checked against its sha256 first.");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
