// Re-verification of a run folder, possibly a copy on another machine: bag structure,
// fixity and completeness, then the accounting rules (DESIGN.md, "What verify checks").
// Every finding is reported, not just the first.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pilot {

struct Finding {
  std::string check;  // bag | fixity | completeness | copies | accounting | report | inputs
  std::string where;  // file or item id
  std::string what;
};

struct VerifyOptions {
  bool fast = false;    // skip payload hashing (structure, Oxum and completeness only)
  bool inputs = false;  // also re-hash the inputs the manifest names
  std::optional<std::filesystem::path> inputs_root;  // default: the root recorded in run.json
};

struct VerifyResult {
  std::vector<Finding> findings;
  std::size_t files_checked = 0;
  std::size_t items = 0, accepted = 0, rejected = 0;
  bool ok() const { return findings.empty(); }
};

VerifyResult VerifyRunFolder(const std::filesystem::path& run_dir, const VerifyOptions& options);
nlohmann::ordered_json VerifyResultToJson(const std::filesystem::path& run_dir,
                                          const VerifyResult& result);

}  // namespace pilot
