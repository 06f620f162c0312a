// The list of workflows built into this pilot: the one place in the library that names them
// all (ARCHITECTURE.md, "Workflows"). The run core calls RegisterWorkflowFolderKinds when it
// first builds the registry of folder kinds (folder_kind.h); a new workflow adds one line.
#include "pilot/adapt/adapt.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/folder_kind.h"
#include "pilot/load/load_run.h"
#include "pilot/sweep/sweep_run.h"
#include "pilot/verdict/decision_files.h"

namespace pilot {

void RegisterWorkflowFolderKinds(FolderKindRegistry& registry) {
  RegisterSweepFolderKind(registry);
  RegisterLoadFolderKind(registry);
  RegisterAdaptFolderKind(registry);
  RegisterCalibrationFolderKind(registry);
  RegisterDecisionExtension(registry);
}

}  // namespace pilot
