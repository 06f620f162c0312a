// `pilot export RUN_DIR DEST`: a finished pilot folder copied to a new place and verified
// there in full.
#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/fleet/export.h"
#include "pilot/folder_kind.h"
#include "pilot/json_util.h"
#include "pilot/paths.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct ExportOptions {
  Common common;
  std::string source, dest;
};

int Execute(const ExportOptions& o) {
  ApplyLogLevel(o.common);
  auto source =
      ResolveGivenFolder(RealFileSystem(), o.source, "a finished run, shard, merged or sweep folder");
  if (!source.ok()) return ReportError(source.error(), o.common);
  InstallInterruptHandlers();
  auto outcome = ExportFolder(CliFileSystem(), source.value(), o.dest, MakeRunControl(o.common, 0));
  if (!outcome.ok()) {
    Error e = outcome.error();
    if (e.kind == ErrorKind::kInterrupted) {
      e.where = o.dest + ".partial";
      e.hint = "nothing is at " + o.dest + "; run the same export again (it replaces the partial copy)";
    }
    return ReportError(e, o.common);
  }
  const ExportOutcome& out = outcome.value();
  const int code = Code(out.ok() ? ExitCode::kOk : ExitCode::kVerifyFailed);
  if (o.common.json) {
    nlohmann::ordered_json j;
    j["ok"] = out.ok();
    j["exit_code"] = code;
    j["source"] = out.source.string();
    j["dest"] = out.dest.string();
    j["folder_kind"] = out.folder_kind;
    j["files"] = out.files;
    j["bytes"] = out.bytes;
    j["source_fingerprint"] = out.source_fingerprint;
    j["fingerprint"] = out.fingerprint;
    j["verify"] = VerifyResultToJson(out.dest, out.verify);
    PrintJson(j);
    return code;
  }
  std::printf("copied %s folder %s: %zu files, %zu folders, %llu bytes, each fsynced\n",
              out.folder_kind.c_str(), out.source.c_str(), out.files, out.folders,
              static_cast<unsigned long long>(out.bytes));
  if (!out.ok()) {
    PrintFindings(out.verify.findings, "verify of the copy: FAILED (the copy is left at " +
                                           out.dest.string() + ", not at " + o.dest + ")");
    return code;
  }
  const FolderKindSpec* kind = FolderKinds().Find(out.folder_kind);
  const std::string what = kind && !kind->checked.empty()
                               ? kind->checked
                               : "accounting (" + std::to_string(out.verify.items) +
                                     " items: " + std::to_string(out.verify.accepted) + " accepted + " +
                                     std::to_string(out.verify.rejected) + " rejected)";
  std::printf("verified the copy in full at %s: bag fixity (%zu files re-hashed), completeness, %s\n",
              out.dest.c_str(), out.verify.files_checked, what.c_str());
  std::printf("fingerprint: %s (the source's and the copy's)\n", out.fingerprint.c_str());
  return code;
}

}  // namespace

void AddExportCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Copy a finished pilot folder to a new place, fsync it, and verify the copy there in full");
  cmd->add_option("RUN_DIR", o->source, "A finished run, shard, merged or sweep folder")->required();
  cmd->add_option("DEST", o->dest, "The copy to create (must not exist)")->required();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Each file is written to a temp name, fsynced and renamed, each folder fsynced; the copy is made as\n"
      "DEST.partial, verified in full (fixity, accounting, fingerprint equal to the source's), then\n"
      "renamed to DEST. An interrupted export (exit 130) leaves no DEST; run it again. A copy that fails\n"
      "verification: exit 1, left at DEST.partial. For a remote destination: rsync -a RUN_DIR host:DEST,\n"
      "then `pilot verify DEST --expect FINGERPRINT` on that host.");
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
