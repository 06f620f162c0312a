// Caps on everything pilot reads from files it does not trust (docs/security.md, "What pilot
// trusts"): every JSON document has a size and a nesting cap, every line-oriented file a
// line cap. Past a cap, an input of `run`/`resume` is refused (exit 2) and a file inside a
// bag being verified is a finding (exit 1). The numbers are far above anything pilot
// writes itself, so only a damaged or hostile file meets them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pilot::limits {

inline constexpr std::size_t kJsonDepth = 64;                      // nested objects/arrays
inline constexpr std::uint64_t kParamsBytes = 1ull << 20;          // params.json
inline constexpr std::uint64_t kManifestJsonBytes = 256ull << 20;  // a .json manifest (parsed whole)
inline constexpr std::uint64_t kManifestLineBytes = 64ull << 10;   // one .jsonl manifest line
inline constexpr std::uint64_t kJournalLineBytes = 1ull << 20;     // one journal record
inline constexpr std::uint64_t kResultLineBytes = 1ull << 20;      // one results.jsonl line
inline constexpr std::uint64_t kRunRecordBytes = 16ull << 20;      // run.json, environment.json
inline constexpr std::uint64_t kReportBytes = 64ull << 20;         // report.json
inline constexpr std::uint64_t kTagFileBytes = 64ull << 20;  // bagit.txt, bag-info.txt, *manifest-sha256.txt
inline constexpr std::uint64_t kLockFileBytes = 64;          // .lock (a pid)
inline constexpr std::uint64_t kEmbeddingDim = 1u << 16;     // an embedding's length
inline constexpr std::uint64_t kNpyHeaderBytes = 1u << 16;   // vectors.npy's header
inline constexpr std::uint64_t kSweepCellBytes = 256ull << 20;    // a sweep cell's file (its outcomes)
inline constexpr std::uint64_t kSweepGroupsBytes = 256ull << 20;  // a sweep's groups.json (its ids)
inline constexpr std::uint64_t kBatchPlanBytes = 1ull << 20;      // a batch plan
inline constexpr std::size_t kExpectedLabelBytes = 256;           // a manifest item's `expected`

}  // namespace pilot::limits
