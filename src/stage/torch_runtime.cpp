// libtorch runtime facts and device resolution. One of the two files that include torch.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "pilot/build_flavour.h"
#include "pilot/torch_stage.h"
#include "torch_device.h"

namespace pilot {
namespace {

struct Backends {
  bool cuda_runtime = false;  // a GPU is usable through the CUDA device type
  bool rocm = false;          // ... and it is an AMD GPU under HIP
  int gpus = 0;
};

Backends Probe() {
  Backends b;
  try {
    b.cuda_runtime = torch::cuda::is_available();
    b.gpus = static_cast<int>(torch::cuda::device_count());
    b.rocm = at::detail::getCUDAHooks().hasROCM();
  } catch (const std::exception&) {
    // A CPU build may throw from the hooks: nothing usable.
  }
  return b;
}

std::string Found(const Backends& b) {
  return std::string("found libtorch ") + TORCH_VERSION + " (" + build::kTorchFlavour + " build), " +
         std::to_string(b.gpus) + " GPU(s)" + (b.gpus ? (b.rocm ? " under ROCm" : " under CUDA") : "");
}

}  // namespace

Result<std::string> ResolveDevice(const std::string& asked) {
  Backends b = Probe();
  // cuda:N / rocm:N: the backend as for cuda / rocm, then the index must name a device.
  std::string requested = asked;
  std::string index;
  if (const auto colon = asked.find(':'); colon != std::string::npos) {
    requested = asked.substr(0, colon);
    index = asked.substr(colon + 1);
    if ((requested != "cuda" && requested != "rocm") || index.empty() || index.size() > 3 ||
        index.find_first_not_of("0123456789") != std::string::npos) {
      return BadInput("unknown device '" + asked + "'", "--device",
                      "use auto, cpu, cuda, rocm, cuda:N or rocm:N");
    }
  }
  if (!index.empty()) {
    auto base = ResolveDevice(requested);
    if (!base.ok()) {
      Error e = base.error();
      e.what = "device '" + asked + "': " + e.what;
      return e;
    }
    if (std::stoi(index) >= b.gpus) {
      return EnvironmentError("device '" + asked + "' was asked for but this machine has " +
                                  std::to_string(b.gpus) + " GPU(s), numbered from 0",
                              "--device / params device", "use an index below " + std::to_string(b.gpus));
    }
    return base.value() + ":" + index;
  }
  if (requested == "cpu") return std::string("cpu");
  if (requested == "auto") return std::string(b.cuda_runtime && b.gpus > 0 ? "cuda" : "cpu");
  if (requested == "cuda" && b.cuda_runtime && b.gpus > 0 && !b.rocm) return std::string("cuda");
  if (requested == "rocm" && b.cuda_runtime && b.gpus > 0 && b.rocm) return std::string("cuda");
  if (requested == "cuda" || requested == "rocm") {
    return EnvironmentError(
        "device '" + requested + "' was asked for but is not present: " + Found(b),
        "--device / params device",
        "use --device cpu or auto, or run on a machine (and libtorch build) with " +
            std::string(requested == "cuda" ? "an NVIDIA GPU and CUDA" : "an AMD GPU and ROCm"));
  }
  return BadInput("unknown device '" + requested + "'", "--device", "use auto, cpu, cuda or rocm");
}

nlohmann::ordered_json TorchRuntimeInfo() {
  Backends b = Probe();
  nlohmann::ordered_json j;
  j["libtorch_version"] = TORCH_VERSION;
  j["build_flavour"] = build::kTorchFlavour;
  j["cuda_available"] = b.cuda_runtime && !b.rocm;
  j["rocm_available"] = b.cuda_runtime && b.rocm;
  j["gpu_count"] = b.gpus;
  j["intra_op_threads"] = at::get_num_threads();
  j["inter_op_threads"] = at::get_num_interop_threads();
  j["gpu_runtime"] = GpuRuntimeVersions();
  j["gpus"] = GpuInventory();
  return j;
}

Received ReceivedEnvironment(const std::string& requested, const std::filesystem::path& runs_dir) {
  Backends b = Probe();
  Received r;
  auto device = ResolveDevice(requested);
  r.backend = !device.ok() ? "none" : device.value() == "cpu" ? "cpu" : (b.rocm ? "rocm" : "cuda");
  r.device_count = b.gpus;
  auto gpus = GpuInventory();
  for (const auto& g : gpus) {
    double mb = g.value("total_memory_mb", 0.0);
    if (r.min_device_memory_mb == 0 || mb < r.min_device_memory_mb) r.min_device_memory_mb = mb;
  }
  r.libtorch_version = TORCH_VERSION;
  r.free_disk_mb = FreeDiskMegabytes(RealFileSystem(), runs_dir);
  return r;
}

}  // namespace pilot
