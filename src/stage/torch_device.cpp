// GPU-only code. Compiled against CUDA or ROCm headers only when CMake found a CUDA
// (torch_cuda) or ROCm (torch_hip) libtorch; Debian's CPU libtorch has neither.
#include "torch_device.h"

// The caching allocator's statistics come from c10; the rest from the runtime API alone, not
// ATen/cuda/CUDAContext.h: that header pulls in cuBLAS, cuSPARSE and cuSOLVER, whose headers
// the nvidia-cuda-runtime wheel, which the build without a toolkit compiles against
// (cmake/PilotTorch.cmake), does not carry. A ROCm libtorch ships c10/hip (hipified) in place
// of c10/cuda; its tensors still report the CUDA device type, but the allocator is indexed by
// device number alone. (The ROCm path is compiled by no CI here: docs/known-gaps.md.)
#if defined(PILOT_WITH_ROCM)
#include <c10/hip/HIPCachingAllocator.h>
#include <hip/hip_runtime_api.h>
namespace pilot_gpu_allocator = c10::hip::HIPCachingAllocator;
#elif defined(PILOT_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
namespace pilot_gpu_allocator = c10::cuda::CUDACachingAllocator;
#endif

namespace pilot {

#if defined(PILOT_WITH_CUDA) || defined(PILOT_WITH_ROCM)

std::optional<double> DevicePeakMemoryMb(const torch::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  auto idx = static_cast<c10::DeviceIndex>(device.has_index() ? device.index() : 0);
  auto stats = pilot_gpu_allocator::getDeviceStats(idx);
  return static_cast<double>(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);
}

void ResetDevicePeakMemory(const torch::Device& device) {
  if (!device.is_cuda()) return;
  auto idx = static_cast<c10::DeviceIndex>(device.has_index() ? device.index() : 0);
  pilot_gpu_allocator::resetPeakStats(idx);
}

nlohmann::ordered_json GpuInventory() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  // Counted and selected through the runtime: a runtime that cannot count (no driver) has
  // no GPU; the device current before is current again after.
  int n = 0, current = 0;
  // A failed call leaves the runtime's last error set, where a later check would find it:
  // cleared, as c10's own device_count() does.
#if defined(PILOT_WITH_ROCM)
  if (hipGetDeviceCount(&n) != hipSuccess) {
    n = 0;
    (void)hipGetLastError();
  }
  if (n > 0 && hipGetDevice(&current) != hipSuccess) current = 0;
#else
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    n = 0;
    (void)cudaGetLastError();
  }
  if (n > 0 && cudaGetDevice(&current) != cudaSuccess) current = 0;
#endif
  for (int i = 0; i < n; ++i) {
    size_t free_b = 0, total_b = 0;
#if defined(PILOT_WITH_ROCM)
    hipDeviceProp_t props{};
    const bool have_props = hipGetDeviceProperties(&props, i) == hipSuccess;
#else
    cudaDeviceProp props{};
    const bool have_props = cudaGetDeviceProperties(&props, i) == cudaSuccess;
#endif
    // As at::cuda::getDeviceProperties did: a device that cannot be described is an error.
    TORCH_CHECK(have_props, "cannot read the properties of GPU ", i);
    const auto* p = &props;
#if defined(PILOT_WITH_ROCM)
    if (hipSetDevice(i) != hipSuccess || hipMemGetInfo(&free_b, &total_b) != hipSuccess)
      (void)hipGetLastError();
    (void)hipSetDevice(current);
#else
    if (cudaSetDevice(i) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
      (void)cudaGetLastError();
    (void)cudaSetDevice(current);
#endif
    nlohmann::ordered_json d;
    d["index"] = i;
    d["name"] = p->name;
    d["total_memory_mb"] = static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024.0);
    d["free_memory_mb"] = static_cast<double>(free_b) / (1024.0 * 1024.0);
#if defined(PILOT_WITH_ROCM)
    d["gcn_arch"] = p->gcnArchName;
#else
    d["compute_capability"] = std::to_string(p->major) + "." + std::to_string(p->minor);
#endif
    out.push_back(d);
  }
  return out;
}

nlohmann::ordered_json GpuRuntimeVersions() {
  int runtime = 0, driver = 0;
#if defined(PILOT_WITH_ROCM)
  (void)hipRuntimeGetVersion(&runtime);
  (void)hipDriverGetVersion(&driver);
  return {{"hip_runtime", runtime}, {"hip_driver", driver}};
#else
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  return {{"cuda_runtime", runtime}, {"cuda_driver", driver}};
#endif
}

#else  // a CPU build of libtorch

std::optional<double> DevicePeakMemoryMb(const torch::Device&) { return std::nullopt; }
void ResetDevicePeakMemory(const torch::Device&) {}
nlohmann::ordered_json GpuInventory() { return nlohmann::ordered_json::array(); }
nlohmann::ordered_json GpuRuntimeVersions() { return nlohmann::ordered_json::object(); }

#endif

}  // namespace pilot
