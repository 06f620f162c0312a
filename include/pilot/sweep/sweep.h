// Batch tuning (`pilot sweep`, docs/sweep.md): the prechecked items are split into
// length groups; each group runs at batch sizes 1, 2, 4, ... after a warm-up, one cell per
// (group, batch size); escalation in a group stops at its first limit (out of memory, a
// stage error, a kill, the latency budget or the memory cap), which is recorded as data;
// every cell's outcomes are compared item by item with the same group's batch-1 outcomes.
//
// This file is the torch-free core: grouping, running one cell on a Stage, the cell's JSON
// form, the equivalence check and the recommendation. The folder (a bag) and the child
// process per cell are sweep_run.h.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/batch_plan.h"
#include "pilot/clock.h"
#include "pilot/stage.h"
#include "pilot/status.h"
#include "pilot/sweep/sweep_records.h"

namespace pilot {

// --- length groups -----------------------------------------------------------------------
struct MeasuredItem {
  std::string id;
  std::uint64_t length = 0;
};
// Sorts by length and cuts into `groups` parts of near-equal count, only where the length
// changes, so that groups never overlap and a length names one group (fewer groups when
// there are fewer distinct lengths). Items keep manifest order inside a group.
Grouping MakeGroups(const std::vector<MeasuredItem>& items, int groups, std::string measure);
// GroupForLength (batch_plan.h) and InputLength (stage.h) place one input in a group; the run
// engine uses them too, so they live in the core.

// --- one cell ---------------------------------------------------------------------------
// Runs one cell in this process: one warm-up batch, then `repeats` passes over the group's
// items in batches of `batch_size` (a batch larger than the group is filled by cycling its
// items). A batch that fails as a whole ends the cell with its limit (out of memory or stage
// error) and its text. `inputs[k]` is the text of `ids[k]`. Latency per batch covers the
// stage's Prepare and Process of that batch.
CellMeasure RunCell(Clock& clock, Stage& stage, const std::vector<std::string>& ids,
                    const std::vector<std::string>& inputs, int group, int batch_size, int repeats);

}  // namespace pilot
