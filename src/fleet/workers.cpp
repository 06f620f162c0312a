#include "pilot/fleet/workers.h"

#include <signal.h>

#include <utility>

#include "pilot/destination.h"
#include "pilot/shard.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// The workers' device family (cpu, cuda, rocm): each gets its own device of it, and there must
// be one per worker.
Result<std::string> WorkersDevice(Runtime& runtime, const RunPlan& p, std::size_t workers) {
  if (p.params.device.find(':') != std::string::npos) {
    return BadInput(
        "--workers gives each worker its own device; the device is fixed to '" + p.params.device + "'",
        "--device", "use --device cuda (or rocm, auto, cpu) with --workers");
  }
  auto backend = DeviceBackend(runtime, p.params.device, p.runs_dir);
  if (!backend.ok()) return backend.error();
  const std::string base = backend.value();
  PILOT_TRY(CheckEnvironment(runtime, p.params, p.runs_dir, "no run folder was created"));
  if (base == "cuda" || base == "rocm") {
    auto received = runtime.ReceivedEnvironment(base, p.runs_dir);
    if (!received.ok()) return received.error();
    const int gpus = received.value().device_count;
    if (static_cast<std::size_t>(gpus) < workers) {
      return EnvironmentError(
          "--workers " + std::to_string(workers) + " needs one device each; this machine has " +
              std::to_string(gpus),
          "--workers", "use --workers " + std::to_string(gpus) + " or fewer; no run folder was created");
    }
  }
  return base;
}

// RUN_ID.shards, made and pinned, and opened as a descriptor the workers inherit.
Result<int> PrepareShardsFolder(FileSystem& fsys, Processes& processes, const fs::path& shards_dir) {
  // RUN_ID.shards is a name pilot derives: a link (or anything but a folder) there is never
  // followed, nor written through.
  auto st = fsys.LinkStat(shards_dir);
  if (!st.ok()) return st.error();
  if (st.value().exists && !st.value().directory) {
    return BadInput(std::string(st.value().symlink ? "is a symlink" : "is not a folder") +
                        "; the workers' shard folders are never written through a link",
                    shards_dir.string(), "move it away, or give another --run-id");
  }
  // Nor is it a pilot folder (a bag copied there): the logs would land inside its bag.
  PILOT_TRY(RefuseInsidePilotFolder(fsys, shards_dir, "--run-id"));
  PILOT_TRY(fsys.CreateDirectories(shards_dir));
  // Pinned, reads included: the merge reads the shards from this very folder, never through a
  // link put in its place (or in place of a shard) while the workers ran.
  PILOT_TRY(fsys.Anchor(shards_dir, FileSystem::Reads::kStayBeneath));
  // The workers are handed the shards' folder itself (a descriptor reached from the pinned
  // --runs-dir), never its path to look up again: a parent swapped for a link meanwhile
  // cannot send a shard elsewhere.
  return processes.OpenFolderForChild(shards_dir.string());
}

// Every log is opened before any worker starts: a worker's output goes to its own log or
// nowhere, and a log that cannot be opened leaves no worker running. On success `logs` holds
// one descriptor per worker; on failure none stays open.
Status OpenWorkerLogs(Processes& processes, int shards_fd, const fs::path& shards_dir,
                      std::uint32_t k_workers, std::vector<int>& logs) {
  for (std::uint32_t k = 0; k < k_workers; ++k) {
    const std::string log_name = ShardRunId({k, k_workers}) + ".log";
    auto log = processes.OpenLogForChild(shards_fd, log_name);
    if (!log.ok()) {
      for (int fd : logs) processes.Close(fd);
      logs.clear();
      return BadInput("cannot open the worker's log as a regular file (a link or a FIFO in its place?)",
                      (shards_dir / log_name).string(), "move it away; no worker was started");
    }
    logs.push_back(log.value());
  }
  return {};
}

}  // namespace

Status CheckWorkersCount(std::size_t workers) {
  if (workers == 0 || workers > kMaxWorkers) {
    return BadInput("--workers must be 1.." + std::to_string(kMaxWorkers), "--workers");
  }
  return {};
}

Result<WorkersSetup> PrepareWorkers(FileSystem& fsys, Clock& clock, Runtime& runtime,
                                    const WorkersRequest& request) {
  PILOT_TRY(CheckWorkersCount(request.workers));
  auto plan = BuildRunPlan(fsys, request.run);
  if (!plan.ok()) return plan.error();
  const RunPlan& p = plan.value();
  WorkersSetup setup;
  setup.run_id = p.run_id.empty() ? NewRunId(clock) : p.run_id;
  setup.merged = p.runs_dir / setup.run_id;
  setup.shards_dir = p.runs_dir / (setup.run_id + ".shards");
  if (auto st = fsys.LinkStat(setup.merged); st.ok() && st.value().exists) {
    return BadInput("run folder already exists; pilot never reuses or overwrites one", setup.merged.string(),
                    "choose another --run-id or leave it out");
  }
  auto device = WorkersDevice(runtime, p, request.workers);
  if (!device.ok()) return device.error();
  setup.device = device.value();
  return setup;
}

std::vector<WorkerChild> WorkerChildren(const WorkersRequest& request, const WorkersSetup& setup,
                                        int shards_fd, const std::vector<int>& logs) {
  const auto k_workers = static_cast<std::uint32_t>(logs.size());
  const std::string& base = setup.device;
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
                    request.run.params_file.string(),
                    "--quiet",
                    "--device",
                    base == "cpu" || base == "none" ? std::string("cpu") : base + ":" + std::to_string(k)};
    if (request.run.manifest)
      w.child.args.insert(w.child.args.end(), {"--manifest", request.run.manifest->string()});
    if (request.run.batch_plan)
      w.child.args.insert(w.child.args.end(), {"--batch-plan", request.run.batch_plan->string()});
    w.child.env = request.environment;
    w.child.out_fd = w.child.err_fd = logs[k];
    w.child.pass_fd = shards_fd;  // handed down: --runs-dir /proc/self/fd/N
    w.child.death_signal = SIGTERM;
    children.push_back(std::move(w));
  }
  return children;
}

Result<WorkersRun> RunWorkers(FileSystem& fsys, Clock& clock, Processes& processes,
                              const WorkersRequest& request, const WorkersSetup& setup,
                              const WorkersControl& control, const RunControl& merge_control) {
  auto shards_fd = PrepareShardsFolder(fsys, processes, setup.shards_dir);
  if (!shards_fd.ok()) return shards_fd.error();
  struct CloseFds {  // the shards' folder always; the logs when no worker took them
    Processes& processes;
    int shards_fd;
    std::vector<int> logs;
    ~CloseFds() {
      for (int fd : logs) processes.Close(fd);
      processes.Close(shards_fd);
    }
  } fds{processes, shards_fd.value(), {}};
  const auto k_workers = static_cast<std::uint32_t>(request.workers);
  PILOT_TRY(OpenWorkerLogs(processes, fds.shards_fd, setup.shards_dir, k_workers, fds.logs));
  const auto children = WorkerChildren(request, setup, fds.shards_fd, fds.logs);
  WorkersControl watch = control;
  watch.started = [&] {
    // Each worker has its own copy of its log: this process keeps none open.
    for (int fd : std::exchange(fds.logs, {})) processes.Close(fd);
    if (control.started) control.started();
  };
  auto supervised = SuperviseWorkers(processes, children, watch);
  if (!supervised.ok()) return supervised.error();
  if (control.ended) control.ended();
  WorkersRun run;
  run.workers = std::move(supervised).value();
  bool all = !run.workers.stopped && !(control.interrupted && control.interrupted());
  for (int status : run.workers.status) all = all && status == 0;
  if (!all) return run;
  MergeRequest merge;
  for (std::uint32_t k = 0; k < k_workers; ++k)
    merge.shards.push_back(setup.shards_dir / ShardRunId({k, k_workers}));
  merge.out = setup.merged;
  merge.out_resolved = true;  // beside the shards, in the --runs-dir pinned when the plan was made
  merge.command_line = request.run.command_line;
  auto outcome = MergeShards(fsys, clock, merge, merge_control);
  if (!outcome.ok()) {
    Error e = outcome.error();
    if (e.kind == ErrorKind::kInterrupted) {
      e.hint = "run the same command again with --run-id " + setup.run_id + ": each shard resumes its folder";
    }
    return e;
  }
  run.merged = std::move(outcome).value();
  return run;
}

Result<WorkersOutcome> SuperviseWorkers(Processes& processes, const std::vector<WorkerChild>& workers,
                                        const WorkersControl& control) {
  std::vector<long> pids(workers.size(), -1);
  WorkersOutcome out;
  out.status.assign(workers.size(), -1);
  for (std::size_t k = 0; k < workers.size(); ++k) {
    auto pid = processes.Spawn(workers[k].child);
    if (!pid.ok()) {
      for (long started : pids) {
        if (started > 0) processes.Signal(started, SIGTERM);
      }
      return EnvironmentError(
          "cannot start the worker for shard " + workers[k].shard + ": " + pid.error().what, "--workers",
          "the shards started so far resume when the command is run again");
    }
    pids[k] = pid.value();
  }
  if (control.started) control.started();
  std::size_t running = workers.size();
  while (running > 0) {
    if (auto ended = processes.Reap(0.05)) {
      for (std::size_t k = 0; k < pids.size(); ++k) {
        if (pids[k] != ended->first) continue;
        out.status[k] = ended->second.Status();
        pids[k] = -1;
        --running;
      }
      continue;
    }
    if (!out.stopped && control.interrupted && control.interrupted()) {
      out.stopped = true;
      for (long pid : pids) {
        if (pid > 0) processes.Signal(pid, SIGTERM);
      }
    }
    if (control.progress) control.progress(running);
  }
  return out;
}

}  // namespace pilot
