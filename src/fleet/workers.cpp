#include "pilot/fleet/workers.h"

#include <signal.h>

namespace pilot {

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
