// The sweep folder's kind, format and files (as folder_files.h for a run), relative to the
// folder. docs/formats.md is the contract.
#pragma once

#include "pilot/folder_files.h"

namespace pilot {

inline constexpr const char* kFolderKindSweep = "sweep";  // `pilot sweep` (sweep_run.h)
inline constexpr int kSweepFormatVersion = 1;

// --- a sweep ----------------------------------------------------------------------------------
inline constexpr const char* kSweepSummary = "data/sweep.json";
inline constexpr const char* kSweepCsv = "data/sweep.csv";
inline constexpr const char* kSweepMarkdown = "data/sweep.md";
inline constexpr const char* kSweepCells = "data/cells.jsonl";  // the cell journal
inline constexpr const char* kSweepCellsFolder = "data/cells";  // data/cells/gG-bB.json
inline constexpr const char* kSweepGroups = "data/groups.json";

}  // namespace pilot
