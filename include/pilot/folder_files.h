// The names of what a pilot folder is and holds (as leveldb's filename.h): the run core's
// folder kinds and their format versions (folder_kind.h reads and checks them), and every file
// and folder of a run, shard or merged folder, relative to the folder. Each workflow names its
// own folder's files the same way, in include/pilot/<workflow>/*_files.h.
// Constants only, below every layer that names a file, so that the code that writes a
// document and the verify that checks it use the same words. docs/formats.md is the contract.
#pragma once

namespace pilot {

// --- kinds and formats --------------------------------------------------------------------
inline constexpr const char* kFolderKindRun = "run";
// `pilot run --shard I/N` (shard.h): a run folder over one partition, in run format.
inline constexpr const char* kFolderKindShard = "shard";
// `pilot merge` (merge.h): the shards joined, in run format, with data/shards/.
inline constexpr const char* kFolderKindMerged = "merged";
// Format 1: pilot 0.1 (classifier records only). Format 2: kinds and versions declared,
// journal version 2, stage output kinds (classification, embedding). Format 3: a labelled
// item's result carries its `expected` label, and report.json's quality gives precision and
// recall per label, the labels never predicted and the confusion matrix. Format 4: an
// embedding's vectors are stored once (no sidecar in a finished folder), in the parameters'
// vectors_dtype (float32 or float16), each accepted result with its row's vector_sha256.
inline constexpr int kRunFormatVersion = 4;

// --- the bag (RFC 8493), every kind ---------------------------------------------------------
inline constexpr const char* kBagDeclaration = "bagit.txt";
inline constexpr const char* kBagInfo = "bag-info.txt";
inline constexpr const char* kPayloadManifest = "manifest-sha256.txt";
inline constexpr const char* kTagManifest = "tagmanifest-sha256.txt";  // its sha256: the fingerprint
inline constexpr const char* kPayloadFolder = "data";
// Present while a command writes the folder (run_lock.h).
inline constexpr const char* kLockFile = ".lock";

// --- a run (also a shard's and a merged folder's) ---------------------------------------------
inline constexpr const char* kRunRecord = "data/run.json";
inline constexpr const char* kParamsCopy = "data/params.json";
inline constexpr const char* kEnvironmentFile = "data/environment.json";
inline constexpr const char* kManifestCopyJson = "data/manifest.json";    // the manifest's byte copy,
inline constexpr const char* kManifestCopyJsonl = "data/manifest.jsonl";  // by the given file's form
inline constexpr const char* kJournal = "data/journal.jsonl";
inline constexpr const char* kResults = "data/results.jsonl";
inline constexpr const char* kReportJson = "data/report.json";
inline constexpr const char* kReportMarkdown = "data/report.md";
inline constexpr const char* kReportHtml =
    "data/report.html";  // a run's has none; a sweep's, an adaptation's
inline constexpr const char* kVectorsNpy = "data/vectors.npy";  // embedding runs
inline constexpr const char* kVectorsSidecar = "data/vectors.sidecar";
inline constexpr const char* kBatchPlanFile = "data/batch-plan.json";  // a run with a batch plan
inline constexpr const char* kModelFolder = "data/model";  // a pinned package's copy; an adaptation's model
// A merged folder: data/shards/shard-I-of-N/ (MergedShardFolder, run_record.h) holds each
// shard's record, journal and environment under these names.
inline constexpr const char* kShardsFolder = "data/shards";
inline constexpr const char* kMergedShardRecord = "run.json";
inline constexpr const char* kMergedShardJournal = "journal.jsonl";
inline constexpr const char* kMergedShardEnvironment = "environment.json";

}  // namespace pilot
