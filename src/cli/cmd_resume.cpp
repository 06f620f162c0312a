// `pilot resume RUN_DIR`: finishes an interrupted run in a new process.
#include <optional>
#include <utility>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/folder_kind.h"
#include "pilot/json_util.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/run.h"
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

// A run, a shard or a merged folder: a write of a workflow's killed part-way there (a decide's)
// is finished or undone first, by the extension that made it (folder_kind.h). Returns the exit
// code when that settled the command.
std::optional<int> RecoverExtensions(const ResumeOptions& o, const std::string& run_dir) {
  ResumeSetup done;
  for (const FolderExtensionSpec& extension : FolderKinds().Extensions()) {
    if (!extension.recover) continue;
    auto recovered = extension.recover(CliFileSystem(), run_dir);
    if (!recovered.ok()) return ReportError(recovered.error(), o.common);
    if (recovered.value()) done.notes.push_back(*recovered.value());
  }
  if (done.notes.empty()) return std::nullopt;
  done.run_dir = run_dir;
  done.finished_verify = VerifyRunFolder(RealFileSystem(), run_dir, VerifyOptions{});
  return PrintAlreadyFinished(done, o.common);
}

// A run or a shard: only the items without a result are processed, through the run session.
// Also the path of a folder whose kind cannot be read: PrepareResume refuses it, naming the
// fault.
int ResumeRunFolder(const ResumeOptions& o, const std::string& run_dir) {
  SessionRequest request;
  request.resume = run_dir;
  if (!o.device.empty()) request.device = o.device;
  request.run.command_line = o.argv;
  return RunSessionToEnd(std::move(request), o.common, o.stop_after);
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
  const std::string& name = kind.value().kind;
  const FolderCommands* commands = FindFolderCommands(name);
  // A kind this pilot does not know: PrepareResume refuses it, naming it.
  if (!HoldsRunResults(name) && !(commands && commands->resume)) return ResumeRunFolder(o, run_dir);
  // A format this pilot cannot resume is refused before anything is touched.
  if (Status st = CheckFolderKind(kind.value(), run_dir, "resume"); !st.ok())
    return ReportError(st.error(), o.common);
  if (commands && commands->resume) {
    return commands->resume(ResumeArgs{run_dir, o.device, o.stop_after, o.common, o.argv});
  }
  if (auto code = RecoverExtensions(o, run_dir)) return *code;
  if (IsJoinedKind(name)) {
    return ReportError(
        BadInput("a merged folder is finished once it exists and never resumes", run_dir,
                 "check it with `pilot verify`; to redo it, resume its shards and merge them again"),
        o.common);
  }
  return ResumeRunFolder(o, run_dir);
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
