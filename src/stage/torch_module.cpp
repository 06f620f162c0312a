// The entry point of libpilot-torch.so, the module `pilot` loads for the commands that run a
// model (src/cli/torch_loader.cpp). Its only exported symbol; everything else in the module
// is hidden.
#include "pilot/build_info.h"
#include "pilot/torch_stage.h"

extern "C" __attribute__((visibility("default"))) const pilot::TorchApi* pilot_torch_api_v1() {
  static const pilot::TorchApi api{
      sizeof(pilot::TorchApi),     pilot::build::kVersion, pilot::build::kSourceRevision,
      &pilot::RegisterTorchStages, &pilot::ResolveDevice,  &pilot::TorchRuntimeInfo,
      &pilot::ReceivedEnvironment, &pilot::RunDoctor,      &pilot::MakeTorchAdaptTrainer};
  return &api;
}
