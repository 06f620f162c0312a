// `pilot merge SHARD_DIR... --out DIR`: the shards of one job joined into one verified bag.
#include <sys/resource.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/fleet/merge.h"
#include "pilot/json_util.h"
#include "pilot/paths.h"

namespace pilot::cli {

namespace fs = std::filesystem;

int PrintMergeOutcome(const MergeOutcome& out, const Common& common) {
  const int code = Code(ExitCodeFor(out.verdict));
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = out.verdict == RunVerdict::kPassed;
    j["exit_code"] = code;
    if (!out.failed_shards.empty()) {
      auto failed = nlohmann::ordered_json::array();
      for (const auto& [dir, v] : out.failed_shards) failed.push_back(VerifyResultToJson(dir, v));
      j["failed_shards"] = failed;
      PrintJson(j);
      return code;
    }
    j["run_dir"] = out.dir.string();
    j["shards"] = out.shards.size();
    j["report"] = ReportToJson(out.report);
    j["verify"] = VerifyResultToJson(out.dir, out.verify);
    if (!out.fingerprint.empty()) j["fingerprint"] = out.fingerprint;
    PrintJson(j);
    return code;
  }
  if (!out.failed_shards.empty()) {
    std::printf("merge: refused: %zu shard(s) failed verification; nothing was written\n",
                out.failed_shards.size());
    for (const auto& [dir, v] : out.failed_shards)
      PrintFindings(v.findings, "shard " + dir.string() + ":", 20);
    return code;
  }
  const Report& r = out.report;
  std::printf("merged %zu shards: %zu items, %zu accepted, %zu rejected\n", out.shards.size(), r.total,
              r.accepted, r.rejected);
  for (const auto& s : out.shards) {
    std::printf("  shard %-9s %8zu items  %8.1f items/s  %s\n", ShardText(s.spec).c_str(), s.items,
                s.items_per_second, s.dir.c_str());
  }
  for (const auto& [reason, n] : r.by_reason) std::printf("  rejected %-22s %zu\n", reason.c_str(), n);
  PrintQuality(r);
  std::printf(
      "throughput: %.1f items/s summed over the shards; %.1f items/s wall-clock (%.1f s from the first "
      "shard's start to the last one's end)\n",
      r.shard_rate_sum, r.items_per_second, r.wall_seconds);
  if (!out.verify.ok()) {
    PrintFindings(out.verify.findings);
  } else {
    std::printf("verify: ok (every manifest id accounted for exactly once over all %zu shards)\n",
                out.shards.size());
  }
  PrintUnmetCriteria(r);
  std::printf("merged folder: %s\n", out.dir.c_str());
  if (!out.fingerprint.empty()) {
    std::printf("fingerprint: %s  (check a copy with: pilot verify COPY --expect %s)\n",
                out.fingerprint.c_str(), out.fingerprint.c_str());
  }
  return code;
}

namespace {

struct MergeOptions {
  Common common;
  std::vector<std::string> shards;
  std::string out;
  std::vector<std::string> argv;
};

int Execute(const MergeOptions& o) {
  ApplyLogLevel(o.common);
  // One open file per shard (two for embeddings) while streaming, and as many journals when
  // the merged bag verifies itself: refused up front when the limit cannot hold them.
  struct rlimit files {};
  const rlim_t need = 2 * static_cast<rlim_t>(o.shards.size()) + 64;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < need) {
    return ReportError(
        EnvironmentError("merging " + std::to_string(o.shards.size()) + " shards needs about " +
                             std::to_string(need) + " open files; this process may open " +
                             std::to_string(files.rlim_cur),
                         "ulimit -n", "raise the limit (ulimit -Hn and -n), then merge again"),
        o.common);
  }
  MergeRequest request;
  for (const auto& s : o.shards) {
    auto shard = ResolveGivenFolder(RealFileSystem(), s, "a shard folder");
    if (!shard.ok()) return ReportError(shard.error(), o.common);
    request.shards.push_back(shard.value());
  }
  request.out = o.out;
  request.command_line = o.argv;
  InstallInterruptHandlers();
  auto outcome = MergeShards(CliFileSystem(), SystemClock(), request, MakeRunControl(o.common, 0));
  if (!outcome.ok()) {
    Error e = outcome.error();
    if (e.kind == ErrorKind::kInterrupted) {
      e.where = o.out + ".partial";
      e.hint = "nothing was merged; run the same merge again (it replaces the partial folder)";
    }
    return ReportError(e, o.common);
  }
  return PrintMergeOutcome(outcome.value(), o.common);
}

}  // namespace

void AddMergeCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "Join the shard folders of one job into one verified bag with global exactly-once");
  cmd->add_option("SHARD_DIR", o->shards, "Every shard folder of the job (pilot run --shard I/N), any order")
      ->required();
  cmd->add_option("--out", o->out, "The merged folder to create (must not exist)")->required();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Verifies every shard in full first, and refuses (exit 2, naming it) a missing or duplicate shard,\n"
      "shards of other manifests, parameters or models, and an unfinished shard (with its resume command).\n"
      "A shard that fails verification: exit 1, nothing written. The merged folder holds every result in\n"
      "manifest order, the report over the whole manifest (exit 4 when the acceptance criteria are not\n"
      "met), and each shard's run.json, journal and environment under data/shards/. It is written as\n"
      "OUT.partial and renamed when verified: an interrupted merge (exit 130) leaves no OUT.");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
