// A load folder's kind, format and files (docs/load.md, "The load folder"): the one place they
// are spelled.
#pragma once

namespace pilot {

inline constexpr const char* kFolderKindLoad = "load";
inline constexpr int kLoadFormatVersion = 1;
inline constexpr const char* kLoadSummary = "data/load.json";
inline constexpr const char* kLoadRequests = "data/requests.jsonl";
inline constexpr const char* kLoadRequestsCsv = "data/requests.csv";
// The most bytes of request records verify reads; a ladder or a search stops before a step once
// its records pass half of it.
inline constexpr unsigned long long kMaxLoadRequestsBytes = 1ull << 30;
// The most bytes of data/run.json or data/load.json a reader takes.
inline constexpr unsigned long long kMaxLoadSummaryBytes = 64ull << 20;

}  // namespace pilot
