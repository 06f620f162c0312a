// Device-only facts behind the project's own macros (PILOT_WITH_CUDA / PILOT_WITH_ROCM):
// on a CPU build of libtorch these return nothing and include no GPU header.
// Internal to src/stage/.
#pragma once

#include <torch/script.h>

#include <nlohmann/json.hpp>
#include <optional>

namespace pilot {

// Caching-allocator peak of allocated bytes on `device`, in MB; none on CPU.
std::optional<double> DevicePeakMemoryMb(const torch::Device& device);
void ResetDevicePeakMemory(const torch::Device& device);

// One object per visible GPU: index, name, total and free memory (MB), compute capability
// (CUDA) or GCN arch (ROCm). Empty on CPU builds.
nlohmann::ordered_json GpuInventory();

// CUDA/HIP runtime and driver versions, where present.
nlohmann::ordered_json GpuRuntimeVersions();

}  // namespace pilot
