// The libtorch side of pilot, behind a torch-free interface: the TorchScript and .pt2
// stage kinds, device resolution and what the libtorch runtime reports. Only
// src/stage/*.cpp include torch headers.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "pilot/adapt/adapt.h"
#include "pilot/doctor.h"
#include "pilot/requirements.h"
#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr const char* kTorchScriptClassifier = "torchscript-classifier";
inline constexpr const char* kTorchScriptEmbedding = "torchscript-embedding";
// AOTInductor packages (.pt2): built where libtorch >= 2.6; elsewhere they refuse with exit 3.
inline constexpr const char* kAotiClassifier = "aoti-classifier";
inline constexpr const char* kAotiEmbedding = "aoti-embedding";
// Generators (docs/generation.md): pilot owns the decode loop over the model's step function.
inline constexpr const char* kTorchScriptGenerator = "torchscript-generator";
inline constexpr const char* kAotiGenerator = "aoti-generator";

// Registers the torch-backed stage kinds.
void RegisterTorchStages(StageRegistry& registry);
// The generator kinds' factory (src/stage/generator_stage.cpp).
Result<std::unique_ptr<Stage>> CreateGeneratorStage(const StageConfig& config);

// auto | cpu | cuda | rocm -> the torch device to use ("cpu" or "cuda"). Fails with exit 3
// when the requested backend is not present, saying what was found.
Result<std::string> ResolveDevice(const std::string& requested);

// libtorch version and flavour, backends and devices, thread settings, GPU runtime
// versions and the visible GPUs (name, memory, capability or arch).
nlohmann::ordered_json TorchRuntimeInfo();

// The environment in the terms of `requires`, for the device `requested` would resolve to
// ("none" if it cannot) and the runs directory.
Received ReceivedEnvironment(const std::string& requested, const std::filesystem::path& runs_dir);

struct ComputeCheckResult {
  double matmul_rel_error = 0;
  double sum_rel_error = 0;
  std::string error;  // set if the device failed to compute at all
};
// A float32 matrix product and a sum on `device` ("cpu", "cuda:0"), synchronised, against
// a float64 CPU reference. `corrupt_reference` perturbs the reference (a test seam).
ComputeCheckResult CheckCompute(const std::string& device, bool corrupt_reference = false);

// Every check of `pilot doctor`.
DoctorReport RunDoctor(const DoctorOptions& options);

// The adaptation trainer on libtorch (src/adapt/adapt_torch.cpp).
std::unique_ptr<AdaptTrainer> MakeTorchAdaptTrainer();

// The torch module's entry points. The `pilot` binary does not link libtorch: it loads
// libpilot-torch.so, built beside it from src/stage/, only for the commands that need a
// model or a device (run, resume, doctor, adapt). verify, status and manifest never pay libtorch's
// start-up. Both sides are built from the same sources in one build: `size`, `version` and
// `revision` let the loader refuse a module from another build.
struct TorchApi {
  std::size_t size;      // sizeof(TorchApi) as the module was built
  const char* version;   // build::kVersion
  const char* revision;  // build::kSourceRevision
  void (*register_stages)(StageRegistry& registry);
  Result<std::string> (*resolve_device)(const std::string& requested);
  nlohmann::ordered_json (*runtime_info)();
  Received (*received_environment)(const std::string& requested, const std::filesystem::path& runs_dir);
  DoctorReport (*run_doctor)(const DoctorOptions& options);
  std::unique_ptr<AdaptTrainer> (*make_adapt_trainer)();
};

inline constexpr const char* kTorchModuleFile = "libpilot-torch.so";
inline constexpr const char* kTorchModuleEntry = "pilot_torch_api_v1";

}  // namespace pilot

// The module's one exported symbol (kTorchModuleEntry).
extern "C" const pilot::TorchApi* pilot_torch_api_v1();
