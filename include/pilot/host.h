// Facts about the host received: OS, CPU, memory, and this process's peak RSS.
#pragma once

#include <nlohmann/json.hpp>

#include "pilot/fs.h"

namespace pilot {

// Reads /etc/os-release and /proc/cpuinfo through `fs`.
nlohmann::ordered_json HostInfo(FileSystem& fs);
double PeakRssMegabytes();
// The CPU time (user + system) the calling thread has used, in seconds.
double ThreadCpuSeconds();
// This process's resident memory now (from /proc/self/statm, through `fs`), 0 when it cannot tell.
double CurrentRssMegabytes(FileSystem& fs);
// The memory the kernel says a new allocation can take without swapping (/proc/meminfo's
// MemAvailable, through `fs`), in bytes; 0 when it cannot tell.
std::uint64_t AvailableMemoryBytes(FileSystem& fs);

}  // namespace pilot
