// `pilot run`: validate everything, check the environment, then hand over to ExecuteRun.
// With --shard, one partition of the manifest (a folder of kind shard, resumed when it
// exists); with --workers K, K shards on this host in child processes, then merged.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/torch_loader.h"
#include "pilot/destination.h"
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

// At most this many --workers on one host (one process and one device each).
constexpr std::size_t kMaxWorkers = 64;

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

// --workers K: K child `pilot run --shard k/K` processes on this host, one device each, then
// `pilot merge` of their folders into the run folder. The single-host case of sharding: the
// same shard folders, resumed the same way (run the same command, same --run-id, again).
// The steps below each return an error to report, or go on; SuperviseWorkers
// (fleet/workers.h) starts and watches the workers through the process seam.

// The options --workers excludes, and its count.
Status CheckWorkersOptions(const RunOptions& o) {
  if (o.workers == 0 || o.workers > kMaxWorkers) {
    return BadInput("--workers must be 1.." + std::to_string(kMaxWorkers), "--workers");
  }
  if (o.shard_option && o.shard_option->count() > 0) {
    return BadInput("--workers and --shard exclude each other", "--workers",
                    "--workers K runs every shard on this host; --shard I/N runs one");
  }
  if (o.stop_after > 0) return BadInput("--stop-after does not apply to --workers", "--stop-after");
  return {};
}

// The workers' device family (cpu, cuda, rocm): each gets its own device of it, and there must
// be one per worker.
Result<std::string> WorkersDevice(const RunOptions& o, const RunPlan& p) {
  if (p.params.device.find(':') != std::string::npos) {
    return BadInput(
        "--workers gives each worker its own device; the device is fixed to '" + p.params.device + "'",
        "--device", "use --device cuda (or rocm, auto, cpu) with --workers");
  }
  auto backend = DeviceBackend(TorchRuntime(), p.params.device, p.runs_dir);
  if (!backend.ok()) return backend.error();
  const std::string base = backend.value();
  PILOT_TRY(CheckEnvironment(TorchRuntime(), p.params, p.runs_dir, "no run folder was created"));
  if (base == "cuda" || base == "rocm") {
    auto received = TorchRuntime().ReceivedEnvironment(base, p.runs_dir);
    if (!received.ok()) return received.error();
    const int gpus = received.value().device_count;
    if (static_cast<std::size_t>(gpus) < o.workers) {
      return EnvironmentError(
          "--workers " + std::to_string(o.workers) + " needs one device each; this machine has " +
              std::to_string(gpus),
          "--workers", "use --workers " + std::to_string(gpus) + " or fewer; no run folder was created");
    }
  }
  return base;
}

// RUN_ID.shards, made and pinned, and opened as a descriptor the workers inherit.
Result<int> PrepareShardsFolder(const fs::path& shards_dir) {
  // RUN_ID.shards is a name pilot derives: a link (or anything but a folder) there is never
  // followed, nor written through.
  auto st = RealFileSystem().LinkStat(shards_dir);
  if (!st.ok()) return st.error();
  if (st.value().exists && !st.value().directory) {
    return BadInput(std::string(st.value().symlink ? "is a symlink" : "is not a folder") +
                        "; the workers' shard folders are never written through a link",
                    shards_dir.string(), "move it away, or give another --run-id");
  }
  // Nor is it a pilot folder (a bag copied there): the logs would land inside its bag.
  PILOT_TRY(RefuseInsidePilotFolder(RealFileSystem(), shards_dir, "--run-id"));
  PILOT_TRY(RealFileSystem().CreateDirectories(shards_dir));
  // Pinned, reads included: the merge reads the shards from this very folder, never through a
  // link put in its place (or in place of a shard) while the workers ran.
  PILOT_TRY(RealFileSystem().Anchor(shards_dir, FileSystem::Reads::kStayBeneath));
  // The workers are handed the shards' folder itself (a descriptor reached from the pinned
  // --runs-dir), never its path to look up again: a parent swapped for a link meanwhile
  // cannot send a shard elsewhere.
  return OpenFolderForChild(shards_dir);
}

// Every log is opened before any worker starts, never through a link or onto a FIFO, and
// never shared through a hard link: a worker's output goes to its own log or nowhere, and a
// log that cannot be opened leaves no worker running. On success `logs` holds one descriptor
// per worker; on failure none stays open.
Status OpenWorkerLogs(int shards_fd, const fs::path& shards_dir, std::uint32_t k_workers,
                      std::vector<int>& logs) {
  for (std::uint32_t k = 0; k < k_workers; ++k) {
    const std::string log_name = ShardRunId({k, k_workers}) + ".log";
    int log = ::openat(shards_fd, log_name.c_str(),
                       O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat log_stat {};
    if (log >= 0 && ::fstat(log, &log_stat) == 0 && S_ISREG(log_stat.st_mode) && log_stat.st_nlink > 1) {
      // A hard link shares the file with a name elsewhere: the log starts afresh under its own
      // name instead, and the other name keeps what it held.
      ::close(log);
      ::unlinkat(shards_fd, log_name.c_str(), 0);
      log = ::openat(shards_fd, log_name.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    }
    if (log < 0 || ::fstat(log, &log_stat) != 0 || !S_ISREG(log_stat.st_mode)) {
      if (log >= 0) ::close(log);
      for (int fd : logs) ::close(fd);
      logs.clear();
      return BadInput("cannot open the worker's log as a regular file (a link or a FIFO in its place?)",
                      (shards_dir / log_name).string(), "move it away; no worker was started");
    }
    logs.push_back(log);
  }
  return {};
}

// Each worker's command line: its shard of the same run, into the inherited shards' folder.
std::vector<WorkerChild> WorkerChildren(const RunOptions& o, const std::string& base, int shards_fd,
                                        const std::vector<int>& logs) {
  const auto k_workers = static_cast<std::uint32_t>(logs.size());
  // This process's environment but the test hooks that kill after a write (PILOT_TEST_KILL_*),
  // which stay the supervisor's, so that a test can stop the merge at each of its writes while
  // the workers finish.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (std::string_view(*e).rfind("PILOT_TEST_KILL_", 0) != 0) env.emplace_back(*e);
  }
  std::vector<WorkerChild> children;
  for (std::uint32_t k = 0; k < k_workers; ++k) {
    const ShardSpec spec{k, k_workers};
    WorkerChild w;
    w.shard = ShardText(spec);
    w.child.args = {"pilot",
                    "run",
                    "--shard",
                    ShardText(spec),
                    "--run-id",
                    ShardRunId(spec),
                    "--runs-dir",
                    "/proc/self/fd/" + std::to_string(shards_fd),
                    "--params",
                    o.params,
                    "--quiet",
                    "--device",
                    base == "cpu" || base == "none" ? std::string("cpu") : base + ":" + std::to_string(k)};
    if (!o.manifest.empty()) w.child.args.insert(w.child.args.end(), {"--manifest", o.manifest});
    if (!o.batch_plan.empty()) w.child.args.insert(w.child.args.end(), {"--batch-plan", o.batch_plan});
    w.child.env = env;
    w.child.out_fd = w.child.err_fd = logs[k];
    w.child.pass_fd = shards_fd;  // handed down: --runs-dir /proc/self/fd/N
    w.child.death_signal = SIGTERM;
    children.push_back(std::move(w));
  }
  return children;
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
  auto plan = BuildRunPlan(RealFileSystem(), RequestFrom(o));
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  RunPlan& p = plan.value();
  const std::string run_id = p.run_id.empty() ? NewRunId(SystemClock()) : p.run_id;
  const fs::path merged = p.runs_dir / run_id;
  const fs::path shards_dir = p.runs_dir / (run_id + ".shards");
  if (auto st = RealFileSystem().LinkStat(merged); st.ok() && st.value().exists) {
    return ReportError(BadInput("run folder already exists; pilot never reuses or overwrites one",
                                merged.string(), "choose another --run-id or leave it out"),
                       o.common);
  }
  auto base = WorkersDevice(o, p);
  if (!base.ok()) return ReportError(base.error(), o.common);
  auto shards_fd = PrepareShardsFolder(shards_dir);
  if (!shards_fd.ok()) return ReportError(shards_fd.error(), o.common);
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_shards_fd{shards_fd.value()};
  InstallInterruptHandlers();
  ::signal(SIGCHLD, SIG_DFL);
  const auto k_workers = static_cast<std::uint32_t>(o.workers);
  std::vector<int> logs;
  if (Status st = OpenWorkerLogs(shards_fd.value(), shards_dir, k_workers, logs); !st.ok()) {
    return ReportError(st.error(), o.common);
  }
  const auto children = WorkerChildren(o, base.value(), shards_fd.value(), logs);
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
      auto st = ReadRunStatus(RealFileSystem(), shards_dir / ShardRunId({k, k_workers}));
      if (st.ok()) {
        done += st.value().done;
        total += st.value().total;
      }
    }
    std::fprintf(stderr, "\r\033[Kpilot: %zu workers running, %zu/%zu items", running, done, total);
    std::fflush(stderr);
  };
  control.started = [&] {
    // Each worker has its own copy of its log: this process keeps none open.
    for (int& fd : logs) ::close(std::exchange(fd, -1));
    if (!o.common.quiet && !o.common.json) {
      std::fprintf(stderr, "pilot: %u workers started; shard folders and logs in %s\n", k_workers,
                   shards_dir.c_str());
    }
  };
  struct CloseLogs {  // a worker that could not start: the logs are closed here
    std::vector<int>& fds;
    ~CloseLogs() {
      for (int fd : fds) {
        if (fd >= 0) ::close(fd);
      }
    }
  } close_logs{logs};
  auto supervised = SuperviseWorkers(RealProcesses(), children, control);
  if (!supervised.ok()) return ReportError(supervised.error(), o.common);
  if (show) std::fputc('\n', stderr);
  if (int code = ReportWorkers(supervised.value(), shards_dir, run_id, o.common); code != 0) return code;
  MergeRequest merge;
  for (std::uint32_t k = 0; k < k_workers; ++k)
    merge.shards.push_back(shards_dir / ShardRunId({k, k_workers}));
  merge.out = merged;
  merge.out_resolved = true;  // beside the shards, in the --runs-dir pinned when the plan was made
  merge.command_line = o.argv;
  // Through the kill hook too, like every writer (tests stop the merge at each of its writes).
  auto outcome = MergeShards(CliFileSystem(), SystemClock(), merge, MakeRunControl(o.common, 0));
  if (!outcome.ok()) {
    Error e = outcome.error();
    if (e.kind == ErrorKind::kInterrupted) {
      e.hint = "run the same command again with --run-id " + run_id + ": each shard resumes its folder";
    }
    return ReportError(e, o.common);
  }
  return PrintMergeOutcome(outcome.value(), o.common);
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
