// `pilot status RUN_DIR`: progress of a running or stopped run, from its journal.
#include <cstdio>

#include "cli/cli.h"
#include "pilot/escape.h"
#include "pilot/folder_kind.h"
#include "pilot/paths.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"
#include "pilot/verify.h"

namespace pilot::cli {
namespace {

struct StatusOptions {
  Common common;
  std::string run_dir;
};

int Execute(const StatusOptions& o) {
  ApplyLogLevel(o.common);
  auto resolved = ResolveGivenFolder(RealFileSystem(), o.run_dir, "a run folder");
  if (!resolved.ok()) return ReportError(resolved.error(), o.common);
  const std::string run_dir = resolved.value().string();
  if (auto kind = ReadFolderKind(RealFileSystem(), run_dir); kind.ok()) {
    const FolderCommands* commands = FindFolderCommands(kind.value().kind);
    if (commands && commands->status) return commands->status(run_dir, o.common);
  }
  auto st = ReadRunStatus(RealFileSystem(), run_dir);
  if (!st.ok()) return ReportError(st.error(), o.common);
  const RunStatus& s = st.value();
  if (o.common.json) {
    PrintJson(RunStatusToJson(s));
    return 0;
  }
  std::printf("%s %s: %s%s\n", s.folder_kind.c_str(), ShowUntrusted(s.run_id).c_str(), s.state.c_str(),
              s.writer_pid ? (" (" + LockHolderText(*s.writer_pid) + ")").c_str() : "");
  // A workflow's write into the folder left unfinished (a decide's), as verify says it.
  for (const FolderExtensionSpec& extension : FolderKinds().Extensions()) {
    if (extension.pending_entry.empty()) continue;
    if (auto pending = RealFileSystem().LinkStat(resolved.value() / extension.pending_entry);
        pending.ok() && pending.value().exists) {
      std::printf("  %s\n", extension.pending_what.c_str());
    }
  }
  if (s.counts_cells) {
    std::printf("  %zu cell(s) measured of at most %zu (a group stops at its first limit)\n", s.done,
                s.total);
  } else {
    std::printf("  %zu/%zu items done: %zu accepted, %zu rejected\n", s.done, s.total, s.accepted,
                s.rejected);
  }
  if (s.items_per_second > 0) std::printf("  rate %.1f items/s (latest session)\n", s.items_per_second);
  if (s.eta_seconds) std::printf("  ETA %.0f s\n", *s.eta_seconds);
  if (s.state == "interrupted" && s.format_version < kJournalVersion) {
    std::printf("  written in run format %d (pilot 0.1): this pilot verifies it but does not resume it\n",
                s.format_version);
  } else if (s.state == "interrupted") {
    std::error_code ec;
    std::printf("  resume with: pilot resume %s\n",
                std::filesystem::absolute(run_dir, ec).lexically_normal().string().c_str());
  }
  return 0;
}

}  // namespace

void AddStatusCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* cmd = app.add_subcommand("status", "Progress of a running or stopped run, from any terminal");
  cmd->add_option("RUN_DIR", o->run_dir, "The run folder")->required();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Reads the journal only (and whether a live process holds the folder's lock); works on a copy too.");
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
