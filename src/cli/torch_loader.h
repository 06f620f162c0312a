// Loads the torch module (libpilot-torch.so) beside the running `pilot` binary, once per
// process, for the commands that run a model or probe the device.
#pragma once

#include "pilot/run_session.h"
#include "pilot/status.h"
#include "pilot/torch_stage.h"

namespace pilot::cli {

// The module's entry points, or an environment error (exit 3) naming the module file and
// why it did not load (missing, libtorch absent, built by another pilot build). Only the
// directory of /proc/self/exe is searched: never the working directory or LD_LIBRARY_PATH.
Result<const TorchApi*> Torch();

// The run core's Runtime (run_session.h) over the torch module: each call loads it first (once
// per process), so that a command that never needs a model never loads libtorch.
Runtime& TorchRuntime();

}  // namespace pilot::cli
