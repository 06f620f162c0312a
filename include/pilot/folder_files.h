// The names of what a pilot folder is and holds, in one place (as leveldb's filename.h):
// the folder kinds and their format versions (folder_kind.h reads and checks them). A
// header of constants only, below every layer that names a kind, so that the records
// that write a kind's documents and the verify that checks them use the same words.
#pragma once

namespace pilot {

inline constexpr const char* kFolderKindRun = "run";
inline constexpr const char* kFolderKindSweep = "sweep";  // `pilot sweep` (sweep_run.h)
// `pilot run --shard I/N` (shard.h): a run folder over one partition, in run format.
inline constexpr const char* kFolderKindShard = "shard";
// `pilot merge` (merge.h): the shards joined, in run format, with data/shards/.
inline constexpr const char* kFolderKindMerged = "merged";
// `pilot adapt` (adapt.h): the adaptation pilot's folder, in its own format (adapt_records.h).
inline constexpr const char* kFolderKindAdapt = "adapt";
inline constexpr int kSweepFormatVersion = 1;
// Format 1: pilot 0.1 (classifier records only). Format 2: kinds and versions declared,
// journal version 2, stage output kinds (classification, embedding).
inline constexpr int kRunFormatVersion = 2;

}  // namespace pilot
