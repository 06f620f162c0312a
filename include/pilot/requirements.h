// `requires` against the environment received: every unmet requirement, at once.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pilot/params.h"

namespace pilot {

// The environment in the terms `requires` uses; recorded as "received" in environment.json.
struct Received {
  std::string backend;  // cpu | cuda | rocm: the device the run would use
  int device_count = 0;
  double min_device_memory_mb = 0;  // smallest visible GPU; 0 without GPUs
  std::string libtorch_version;
  double free_disk_mb = 0;
  nlohmann::ordered_json ToJson() const;
};

// One line per unmet requirement: "backend: cuda required, cpu received".
std::vector<std::string> UnmetRequirements(const Requires& req, const Received& got);

// Free space (MB) of the file system holding `dir` (or its nearest existing parent);
// negative if it cannot be determined.
double FreeDiskMegabytes(FileSystem& fs, const std::filesystem::path& dir);

}  // namespace pilot
