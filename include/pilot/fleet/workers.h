// `pilot run --workers K` (docs/running.md): K child `pilot run --shard k/K` processes on this
// host, one device each. The CLI builds each child (its arguments, its log) and merges the
// shards once all have finished; this is the supervision between, through the process seam
// (process.h), so that it is tested with a fake.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "pilot/process.h"
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

}  // namespace pilot
