// `pilot compare RUN_A RUN_B`: two finished runs over the same manifest, item by item (same
// status, same category or reason, the confidence's or the vector's difference), their
// quality against `expected`, their speed and memory, and what changed between them. The
// guide's rule is one change at a time (a precision, a batch size, a device, an engine), each
// with an equivalent quality check: several changes at once are a warning.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct CompareOptions {
  // Largest |confidence_A - confidence_B| (classifiers) or |element_A - element_B| over a
  // vector (embeddings) that still agrees. A different status, category or reason never does.
  double tolerance = 1e-3;
  std::size_t max_listed = 1000;  // differing items listed in the document (all are counted)
};

struct CompareOutcome {
  // The compare.json document (kind "pilot-compare", format 1); compare.md renders it.
  nlohmann::ordered_json document;
  bool within_tolerance = false;
  // Set when a folder failed verification: nothing was compared (exit 1).
  std::vector<std::pair<std::string, VerifyResult>> failed_verification;
};

// Refuses (exit 2) a folder that is not a finished run or merged folder, and two runs over
// different manifests (naming both sha256s). Both folders are verified in full first.
Result<CompareOutcome> CompareRuns(FileSystem& fs, const std::filesystem::path& a,
                                   const std::filesystem::path& b, const CompareOptions& options);

// compare.md: the same facts for a person.
std::string CompareMarkdown(const nlohmann::ordered_json& document);

// Writes compare.json and compare.md into `dir` (resolved once as a destination, paths.h;
// created if missing; refused inside a pilot folder; an existing compare.json or compare.md
// there is refused, never overwritten).
Status WriteCompare(FileSystem& fs, const std::filesystem::path& dir, const nlohmann::ordered_json& document);

}  // namespace pilot
