// `pilot verify RUN_DIR`: re-verifies a run folder (or a copy of one) and lists every finding.
#include <cstdio>

#include "cli/cli.h"
#include "pilot/escape.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/paths.h"
#include "pilot/verify.h"

namespace pilot::cli {
namespace {

struct VerifyCliOptions {
  Common common;
  std::string run_dir;
  bool fast = false;
  bool inputs = false;
  std::string inputs_root;
  std::string expect;
};

int Execute(const VerifyCliOptions& o) {
  ApplyLogLevel(o.common);
  auto dir = ResolveGivenFolder(RealFileSystem(), o.run_dir, "a run folder, e.g. runs/<run-id>");
  if (!dir.ok()) return ReportError(dir.error(), o.common);
  VerifyOptions options;
  options.fast = o.fast;
  options.inputs = o.inputs || !o.inputs_root.empty();
  if (!o.inputs_root.empty()) options.inputs_root = std::filesystem::path(o.inputs_root);
  if (!o.expect.empty()) {
    if (!IsSha256Hex(o.expect)) {
      return ReportError(BadInput("--expect takes a fingerprint: 64 lower-case hex digits", "--expect",
                                  "the one `pilot run` printed, or `sha256sum tagmanifest-sha256.txt`"),
                         o.common);
    }
    options.expect_fingerprint = o.expect;
  }
  auto verified = VerifyFolder(RealFileSystem(), dir.value(), options);
  if (!verified.ok()) return ReportError(verified.error(), o.common);
  VerifyResult result = std::move(verified).value();
  const std::string shown = ShowUntrusted(o.run_dir, 1000);
  if (!o.common.json && result.inputs) {
    const InputsChecked& in = *result.inputs;
    std::printf(
        "inputs: %zu of %zu re-hashed under %s (%zu missing, %zu changed, %zu outside the folder and never "
        "opened)\n",
        in.rehashed, in.items, ShowUntrusted(in.root, 1000).c_str(), in.missing, in.changed, in.not_opened);
  }
  if (o.common.json) {
    PrintJson(VerifyResultToJson(o.run_dir, result));
  } else if (const FolderKindSpec* kind = FolderKinds().Find(result.folder_kind);
             result.ok() && kind && !kind->checked.empty()) {
    std::printf("verify: ok %s (%s); %zu files checked%s\n", shown.c_str(), kind->checked.c_str(),
                result.files_checked, o.fast ? " (--fast: payload not re-hashed)" : "");
    std::printf("fingerprint: %s%s\n", result.fingerprint.c_str(), o.expect.empty() ? "" : " (as expected)");
  } else if (result.ok()) {
    std::printf("verify: ok %s: %zu items, %zu accepted + %zu rejected; %zu files checked%s\n", shown.c_str(),
                result.items, result.accepted, result.rejected, result.files_checked,
                o.fast ? " (--fast: payload not re-hashed)" : "");
    std::printf("fingerprint: %s%s\n", result.fingerprint.c_str(), o.expect.empty() ? "" : " (as expected)");
  } else {
    std::fprintf(stderr, "verify: FAILED %s: %zu finding(s)\n", shown.c_str(), result.findings.size());
    for (const auto& f : result.findings) {
      std::fprintf(stderr, "  [%s] %s: %s\n", f.check.c_str(), EscapeTerminal(f.where).c_str(),
                   EscapeTerminal(f.what).c_str());
    }
  }
  return Code(result.ok() ? ExitCode::kOk : ExitCode::kVerifyFailed);
}

}  // namespace

void AddVerifyCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<VerifyCliOptions>();
  CLI::App* cmd = app.add_subcommand("verify", "Re-verify a run folder, or a copy of one on another machine");
  cmd->footer(
      "Checks BagIt structure, completeness and sha256 fixity, the copies of manifest and parameters,\n"
      "then exactly-once accounting of every manifest id and the report's counts, listing every\n"
      "finding. Needs nothing outside the folder unless --inputs. A symlink, FIFO or device inside the\n"
      "folder is a finding and is never opened. Exit 0 verified, 1 findings, 2 not a folder.");
  cmd->add_option("RUN_DIR", o->run_dir, "The run folder")->required();
  cmd->add_flag("--fast", o->fast,
                "Skip re-hashing the payload (structure, Payload-Oxum and completeness only)");
  cmd->add_flag("--inputs", o->inputs,
                "Also re-hash the inputs the manifest names (from the recorded inputs root)");
  cmd->add_option("--inputs-root", o->inputs_root, "Where the inputs are now (implies --inputs)");
  cmd->add_option(
      "--expect", o->expect,
      "The fingerprint noted when the run finished (sha256 of tagmanifest-sha256.txt); a copy with "
      "another one fails (exit 1), even if it was re-hashed consistently");
  AddCommonOptions(*cmd, o->common);
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
