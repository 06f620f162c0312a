// The sweep folder's kind, format and files (as folder_files.h for a run), relative to the
// folder. docs/formats.md is the contract.
#pragma once

#include "pilot/folder_files.h"

namespace pilot {

inline constexpr const char* kFolderKindSweep = "sweep";  // `pilot sweep` (sweep_run.h)
// Format 2: each cell records its repeats' seconds, each group's fastest batch size names the
// sizes within its repeats' noise, and the headroom table of a CPU measurement says "unknown on
// a GPU" instead of fits. verify reads formats 1 and 2, each rebuilt as it was written.
inline constexpr int kSweepFormatVersion = 2;
inline constexpr int kMinSweepFormatVersion = 1;

// --- a sweep ----------------------------------------------------------------------------------
inline constexpr const char* kSweepSummary = "data/sweep.json";
inline constexpr const char* kSweepCsv = "data/sweep.csv";
inline constexpr const char* kSweepMarkdown = "data/sweep.md";
inline constexpr const char* kSweepCells = "data/cells.jsonl";  // the cell journal
inline constexpr const char* kSweepCellsFolder = "data/cells";  // data/cells/gG-bB.json
inline constexpr const char* kSweepGroups = "data/groups.json";

}  // namespace pilot
