// `pilot run --workers K` (docs/running.md): K child `pilot run --shard k/K` processes on this
// host, one device each, then the merge of their shard folders into the run folder. The
// single-host case of sharding: the same shard folders, resumed the same way (the same
// command, the same --run-id, again). PrepareWorkers checks everything first; RunWorkers makes
// the shards' folder, starts and watches the workers through the process seam (process.h),
// so that it is tested with a fake, and merges.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/fleet/merge.h"
#include "pilot/fs.h"
#include "pilot/plan.h"
#include "pilot/process.h"
#include "pilot/run.h"
#include "pilot/run_session.h"
#include "pilot/status.h"

namespace pilot {

struct WorkerChild {
  ChildSpec child;
  std::string shard;  // "k/K", for messages
};

struct WorkersControl {
  // Asked while the workers run: when it says yes, each worker still running is sent SIGTERM,
  // once (each stops as an interrupted run does, resumable).
  std::function<bool()> interrupted;
  // Called once every worker has started.
  std::function<void()> started;
  // Called about every 50 ms while workers run, with how many still do.
  std::function<void(std::size_t running)> progress;
  // Called once every worker has ended, before anything else is done (RunWorkers: the merge).
  std::function<void()> ended;
};

struct WorkersOutcome {
  std::vector<int> status;  // per worker, in order: ChildEnd::Status() (0: it finished)
  bool stopped = false;     // `interrupted` said yes
};

// Starts every worker in order, then waits until all have ended. When one cannot be started,
// those already started are sent SIGTERM and the error is returned (exit 3, naming
// --workers): they resume when the command runs again.
Result<WorkersOutcome> SuperviseWorkers(Processes& processes, const std::vector<WorkerChild>& workers,
                                        const WorkersControl& control);

// At most this many workers on one host (one process and one device each).
inline constexpr std::size_t kMaxWorkers = 64;

struct WorkersRequest {
  // The run each worker runs a shard of: the parameter file, --manifest and --batch-plan as
  // given (each worker is handed them and resolves them itself), the device family, the runs
  // folder and the run id (empty: generated).
  RunRequest run;
  std::size_t workers = 0;
  std::vector<std::string> environment;  // the workers' own (NAME=value each)
};

// What PrepareWorkers settled: the run folder RUN_ID, the shards' folder RUN_ID.shards beside
// it, and the device family each worker takes one device of (cpu, cuda or rocm).
struct WorkersSetup {
  std::string run_id;
  std::filesystem::path merged, shards_dir;
  std::string device;
};

// The count of workers: 1..kMaxWorkers (exit 2, naming --workers).
Status CheckWorkersCount(std::size_t workers);

// Everything checked before anything is created: the count (1..kMaxWorkers), the plan, a run
// folder that exists already (never reused), a device fixed to one index (each worker needs its
// own), the environment against `requires`, and one GPU per worker. Errors exit 2 or 3 and name
// the option or file at fault.
Result<WorkersSetup> PrepareWorkers(FileSystem& fs, Clock& clock, Runtime& runtime,
                                    const WorkersRequest& request);

// Each worker's child: `pilot run --shard k/K` of the same run, into the shards' folder handed
// down as `shards_fd`, its output to logs[k], on device k of the family (the CPU for cpu).
std::vector<WorkerChild> WorkerChildren(const WorkersRequest& request, const WorkersSetup& setup,
                                        int shards_fd, const std::vector<int>& logs);

struct WorkersRun {
  WorkersOutcome workers;
  // When every worker finished and none was interrupted: the merge's outcome.
  std::optional<MergeOutcome> merged;
};

// Makes RUN_ID.shards (never through a link, nor inside another pilot folder) and pins it,
// opens every worker's log before any worker starts (RUN_ID.shards/shard-k-of-K.log), starts
// and watches the workers (SuperviseWorkers), and when each finished and `control.interrupted`
// does not say yes, merges their folders into RUN_ID through `fs` (so the kill-after-write hook
// reaches the merge too). Workers that did not all finish are an outcome, not an error: their
// statuses say which, and nothing is merged.
Result<WorkersRun> RunWorkers(FileSystem& fs, Clock& clock, Processes& processes,
                              const WorkersRequest& request, const WorkersSetup& setup,
                              const WorkersControl& control, const RunControl& merge_control = {});

}  // namespace pilot
