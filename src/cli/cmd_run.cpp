// `pilot run`: validate everything, check the environment, then hand over to ExecuteRun.
// With --shard, one partition of the manifest (a folder of kind shard, resumed when it
// exists); with --workers K, K shards on this host in child processes, then merged.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/torch_loader.h"
#include "pilot/fleet/merge.h"
#include "pilot/fleet/workers.h"
#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/plan.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"
#include "pilot/shard.h"

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
  std::string batch_plan;
  std::string shard;
  std::size_t workers = 0;
  std::size_t stop_after = 0;
  std::vector<std::string> argv;
  const CLI::Option* shard_option = nullptr;
  const CLI::Option* workers_option = nullptr;
};

// The options as the library's request; the plan itself is built by the library.
RunRequest RequestFrom(const RunOptions& o) {
  RunRequest request;
  request.params_file = o.params;
  if (!o.manifest.empty()) request.manifest = fs::path(o.manifest);
  if (!o.device.empty()) request.device = o.device;
  if (!o.batch_plan.empty()) request.batch_plan = fs::path(o.batch_plan);
  request.runs_dir = o.runs_dir;
  request.run_id = o.run_id;
  request.command_line = o.argv;
  return request;
}

// --workers K: K child `pilot run --shard k/K` processes on this host, then their merge into
// the run folder (fleet/workers.h). What the library leaves to the command: the options
// --workers excludes, the interrupt handlers, the progress line and the report.
Status CheckWorkersOptions(const RunOptions& o) {
  PILOT_TRY(CheckWorkersCount(o.workers));
  if (o.shard_option && o.shard_option->count() > 0) {
    return BadInput("--workers and --shard exclude each other", "--workers",
                    "--workers K runs every shard on this host; --shard I/N runs one");
  }
  if (o.stop_after > 0) return BadInput("--stop-after does not apply to --workers", "--stop-after");
  return {};
}

// This process's environment but the test hooks that kill after a write (PILOT_TEST_KILL_*),
// which stay the supervisor's, so that a test can stop the merge at each of its writes while
// the workers finish.
std::vector<std::string> WorkersEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (std::string_view(*e).rfind("PILOT_TEST_KILL_", 0) != 0) env.emplace_back(*e);
  }
  return env;
}

// The outcome of the workers, reported: the exit code when not every worker finished (or an
// interrupt stopped them), else 0 and nothing printed.
int ReportWorkers(const WorkersOutcome& out, const fs::path& shards_dir, const std::string& run_id,
                  const Common& common) {
  const auto k_workers = static_cast<std::uint32_t>(out.status.size());
  int worst = 0;
  std::string failed;
  if (InterruptRequested()) worst = Code(ExitCode::kInterrupted);  // stopped: no merge, even if all finished
  for (std::uint32_t k = 0; k < k_workers; ++k) {
    if (out.status[k] == 0) continue;
    if (worst == 0 || out.status[k] == Code(ExitCode::kInterrupted)) worst = out.status[k];
    failed += "\n  shard " + ShardText({k, k_workers}) + " exited with " + std::to_string(out.status[k]) +
              " (log: " + (shards_dir / (ShardRunId({k, k_workers}) + ".log")).string() + ")";
  }
  if (worst == 0) return 0;
  // The first failed worker's code when it is one pilot documents; anything else (a signal, an
  // exec that failed) is a failure during work. Running again helps an interrupted or failed
  // worker, never one that refused its input (exit 2: a shard folder of another job, say): its
  // log says what to change.
  const std::string hint =
      worst == Code(ExitCode::kBadInput)
          ? "a worker refused its input: read its log, fix what it names (a shard folder of another job is "
            "never resumed: move " +
                shards_dir.string() + " away or give another --run-id), then run again"
          : "run the same command again with --run-id " + run_id + ": each shard resumes its folder";
  Error e{ErrorKind::kWorkFailed, (failed.empty() ? "interrupted" : "not every worker finished:" + failed),
          shards_dir.string(), hint};
  if (IsPilotFailureCode(worst)) {
    ReportError(e, common);
    return worst;
  }
  e.what = "not every worker finished:" + failed;
  return ReportError(e, common);
}

int ExecuteWorkers(const RunOptions& o) {
  if (Status st = CheckWorkersOptions(o); !st.ok()) return ReportError(st.error(), o.common);
  WorkersRequest request;
  request.run = RequestFrom(o);
  request.workers = o.workers;
  request.environment = WorkersEnvironment();
  auto setup = PrepareWorkers(RealFileSystem(), SystemClock(), TorchRuntime(), request);
  if (!setup.ok()) return ReportError(setup.error(), o.common);
  const WorkersSetup& s = setup.value();
  InstallInterruptHandlers();
  ::signal(SIGCHLD, SIG_DFL);
  const auto k_workers = static_cast<std::uint32_t>(o.workers);
  const bool show = !o.common.quiet && !o.common.json && ::isatty(STDERR_FILENO);
  double last = 0;
  WorkersControl control;
  control.interrupted = [] { return InterruptRequested(); };
  control.progress = [&](std::size_t running) {
    const double now = SystemClock().MonotonicSeconds();
    // Each shard's journal is read again for the line: every 2 s, not to compete with the workers.
    if (!show || now - last < 2.0) return;
    last = now;
    std::size_t done = 0, total = 0;
    for (std::uint32_t k = 0; k < k_workers; ++k) {
      auto st = ReadRunStatus(RealFileSystem(), s.shards_dir / ShardRunId({k, k_workers}));
      if (st.ok()) {
        done += st.value().done;
        total += st.value().total;
      }
    }
    std::fprintf(stderr, "\r\033[Kpilot: %zu workers running, %zu/%zu items", running, done, total);
    std::fflush(stderr);
  };
  control.ended = [&] {
    if (show) std::fputc('\n', stderr);  // ends the progress line before the merge's
  };
  control.started = [&] {
    if (!o.common.quiet && !o.common.json) {
      std::fprintf(stderr, "pilot: %u workers started; shard folders and logs in %s\n", k_workers,
                   s.shards_dir.c_str());
    }
  };
  // The merge goes through the kill hook too, like every writer (tests stop it at each write).
  auto run = RunWorkers(CliFileSystem(), SystemClock(), RealProcesses(), request, s, control,
                        MakeRunControl(o.common, 0));
  if (!run.ok()) return ReportError(run.error(), o.common);
  if (!run.value().merged) return ReportWorkers(run.value().workers, s.shards_dir, s.run_id, o.common);
  return PrintMergeOutcome(*run.value().merged, o.common);
}

int Execute(const RunOptions& o) {
  ApplyLogLevel(o.common);
  if (Status st = CheckDefaultParams(o.params); !st.ok()) return ReportError(st.error(), o.common);
  if (o.workers_option && o.workers_option->count() > 0) return ExecuteWorkers(o);
  SessionRequest request;
  request.run = RequestFrom(o);
  if (o.shard_option && o.shard_option->count() > 0) {
    auto choice = ParseShardOption(o.shard, ProcessEnvironment());
    if (!choice.ok()) return ReportError(choice.error(), o.common);
    request.run.shard = choice.value().spec;
    request.local_rank = choice.value().local_rank;
    if (!o.common.quiet && !o.common.json) {
      std::fprintf(stderr, "pilot: shard %s, from %s\n", ShardText(choice.value().spec).c_str(),
                   choice.value().source.c_str());
    }
  }
  return RunSessionToEnd(request, o.common, o.stop_after);
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run every manifest item through the stage into a new run folder, then verify it");
  cmd->add_option("--params", o->params, "Parameter file")->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "Manifest to use instead of the one the parameters name");
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the run folder")->capture_default_str();
  cmd->add_option("--run-id", o->run_id,
                  "Name of the run folder (default: UTC time + random suffix); never reused");
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the parameters' device)");
  o->shard_option = cmd->add_option("--shard", o->shard,
                                    "Process one partition: I/N (0-based), auto/N (I from "
                                    "SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX), or auto "
                                    "(torchrun: RANK/WORLD_SIZE, device cuda:LOCAL_RANK). Run id default "
                                    "shard-I-of-N; an existing one resumes");
  o->workers_option =
      cmd->add_option("--workers", o->workers,
                      "Run K shards on this host, one per device (cpu: K CPU processes), then merge "
                      "them into the run folder; shards go to RUNS_DIR/RUN_ID.shards")
          ->check(CountValidator());
  cmd->add_option(
      "--batch-plan", o->batch_plan,
      "A finished sweep folder: batch each length group at the size it recommends (instead of batch_size)");
  cmd->add_option("--stop-after", o->stop_after,
                  "Stop as if interrupted once N items are done (exit 130; for tests and rehearsals)")
      ->check(CountValidator());
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Ctrl-C (or SIGTERM) stops after the current batch with exit 130 and a resumable folder;\n"
      "a second Ctrl-C stops at once (still resumable). Finish with `pilot resume RUN_DIR`.\n"
      "Shards: an id belongs to shard (first 8 bytes of sha256(id)) mod N. Scheduler variables are read\n"
      "only with --shard auto. Join the shard folders with `pilot merge SHARD_DIR... --out DIR`.");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
