#include "cli/torch_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "pilot/build_info.h"

namespace pilot::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHint =
    "the module is built beside the pilot binary with it (cmake --build ...); "
    "check that libtorch is installed (scripts/deps.sh) and that the two come from one build";

Result<const TorchApi*> Load() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return EnvironmentError("cannot find the pilot binary's folder: " + ec.message(), "/proc/self/exe",
                            kHint);
  const fs::path module = self.parent_path() / kTorchModuleFile;
  // RTLD_LOCAL: libtorch's symbols stay the module's own.
  void* handle = ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return EnvironmentError(
        std::string("cannot load pilot's libtorch stage module: ") + (why ? why : "unknown error"),
        module.string(), kHint);
  }
  void* entry = ::dlsym(handle, kTorchModuleEntry);
  if (!entry) {
    return EnvironmentError(std::string("not a pilot torch module: no ") + kTorchModuleEntry, module.string(),
                            kHint);
  }
  const auto* api = reinterpret_cast<const TorchApi* (*)()>(entry)();
  if (!api || api->size != sizeof(TorchApi) || std::strcmp(api->version, build::kVersion) != 0 ||
      std::strcmp(api->revision, build::kSourceRevision) != 0) {
    return EnvironmentError(std::string("the torch module comes from another build (pilot ") +
                                (api ? std::string(api->version) + " " + api->revision : std::string("?")) +
                                ", this binary is " + build::kVersion + " " + build::kSourceRevision + ")",
                            module.string(), kHint);
  }
  return api;  // the handle stays open for the process's life
}

}  // namespace

Result<const TorchApi*> Torch() {
  static const Result<const TorchApi*> loaded = Load();
  return loaded;
}

namespace {

class ModuleRuntime : public Runtime {
 public:
  Result<std::string> ResolveDevice(const std::string& requested) override {
    auto torch = Torch();
    if (!torch.ok()) return torch.error();
    return torch.value()->resolve_device(requested);
  }
  Result<Received> ReceivedEnvironment(const std::string& requested, const fs::path& runs_dir) override {
    auto torch = Torch();
    if (!torch.ok()) return torch.error();
    return torch.value()->received_environment(requested, runs_dir);
  }
  Result<nlohmann::ordered_json> Info() override {
    auto torch = Torch();
    if (!torch.ok()) return torch.error();
    return torch.value()->runtime_info();
  }
  Status RegisterStages(StageRegistry& registry) override {
    auto torch = Torch();
    if (!torch.ok()) return torch.error();
    torch.value()->register_stages(registry);
    return {};
  }
};

}  // namespace

Runtime& TorchRuntime() {
  static ModuleRuntime runtime;
  return runtime;
}

}  // namespace pilot::cli
