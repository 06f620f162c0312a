// A load folder's kind, format and files (docs/load.md, "The load folder"): the one place they
// are spelled.
#pragma once

namespace pilot {

inline constexpr const char* kFolderKindLoad = "load";
inline constexpr int kLoadFormatVersion = 1;
inline constexpr const char* kLoadSummary = "data/load.json";
inline constexpr const char* kLoadRequests = "data/requests.jsonl";
inline constexpr const char* kLoadRequestsCsv = "data/requests.csv";

}  // namespace pilot
