// The adaptation folder's kind, format and files (as folder_files.h for a run), relative to
// the folder. docs/formats.md is the contract.
#pragma once

#include "pilot/folder_files.h"

namespace pilot {

// `pilot adapt` (adapt.h): the adaptation pilot's folder, in its own format (adapt_records.h).
inline constexpr const char* kFolderKindAdapt = "adapt";
inline constexpr int kAdaptFormatVersion = 1;

// --- an adaptation (adapt_records.h) ----------------------------------------------------------
inline constexpr const char* kAdaptJournal = kJournal;
inline constexpr const char* kAdaptTrainManifest = "data/train-manifest";  // + .json or .jsonl
inline constexpr const char* kAdaptEvalManifest = "data/eval-manifest";
inline constexpr const char* kAdaptTrainAccounting = "data/train.jsonl";
inline constexpr const char* kAdaptEvalAccounting = "data/eval.jsonl";
inline constexpr const char* kAdaptMetrics = "data/metrics.jsonl";
inline constexpr const char* kAdaptCheckpointDir = "data/checkpoints";
inline constexpr const char* kAdaptModel = "data/model/adapted.pt";
inline constexpr const char* kAdaptModelCard = "data/model/MODEL_CARD.md";
inline constexpr const char* kAdaptReportJson = kReportJson;
inline constexpr const char* kAdaptReportMarkdown = kReportMarkdown;
inline constexpr const char* kAdaptReportHtml = kReportHtml;

}  // namespace pilot
