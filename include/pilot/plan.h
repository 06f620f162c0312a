// Turning what the user asked into what will happen. (More of the plan moves here: see
// ARCHITECTURE.md.)
#pragma once

#include <string>

#include "pilot/params.h"
#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

// The parameters against the loaded stage's kind (exit 2, naming the key): a stage that
// classifies needs allowed_categories, each one of the model's labels; a stage that does
// not (an embedding) refuses them, since there is no category to allow.
Status CheckStageFitsParams(const StageDescription& stage, const Params& params);

}  // namespace pilot
