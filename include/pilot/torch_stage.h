// The libtorch side of pilot, behind a torch-free interface: the TorchScript classifier
// stage kind, device resolution and what the libtorch runtime reports. Only
// src/stage/*.cpp include torch headers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr const char* kTorchScriptClassifier = "torchscript-classifier";

// Registers the torch-backed stage kinds.
void RegisterTorchStages(StageRegistry& registry);

// auto | cpu | cuda | rocm -> the torch device to use ("cpu" or "cuda"). Fails with exit 3
// when the requested backend is not present, saying what was found.
Result<std::string> ResolveDevice(const std::string& requested);

// libtorch version and flavour, backends and devices, thread settings.
nlohmann::ordered_json TorchRuntimeInfo();

}  // namespace pilot
