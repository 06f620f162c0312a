// Re-verification of a run folder, possibly a copy on another machine: bag structure,
// fixity and completeness, then the accounting rules (docs/formats.md, "What `verify` checks").
// Every finding is reported, not just the first.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/status.h"

namespace pilot {

struct Finding {
  std::string check;  // bag | fixity | completeness | copies | journal | accounting | report | vectors |
                      // inputs | fingerprint
  std::string where;  // file or item id
  std::string what;
};

// What verify keeps of a manifest copy it validated, for the next folder that holds the same
// bytes: `pilot merge` verifies N shards that each hold the whole manifest, which is then
// validated once instead of N times (the copy's sha256, checked against its record, is the key).
struct ManifestCache {
  std::string sha256;  // empty until filled
  ManifestIndex index;
};

struct VerifyOptions {
  bool fast = false;    // skip payload hashing (structure, Oxum and completeness only)
  bool inputs = false;  // also re-hash the inputs the manifest names
  std::optional<std::filesystem::path> inputs_root;  // default: the root recorded in run.json
  // The copy must have this fingerprint (sha256 of tagmanifest-sha256.txt), as noted at the
  // end of the run: a bag re-hashed consistently passes every other check.
  std::optional<std::string> expect_fingerprint;
  std::shared_ptr<ManifestCache> manifest_cache;  // optional; not used with `inputs`
};

// What `verify --inputs` did with the inputs: how many it re-hashed, under which folder.
struct InputsChecked {
  std::string root;            // the inputs folder, resolved
  std::size_t items = 0;       // manifest items
  std::size_t rehashed = 0;    // inputs read and hashed
  std::size_t missing = 0;     // absent or not a regular file (a finding unless expected)
  std::size_t changed = 0;     // hashed to another sha256 than pinned (a finding unless expected)
  std::size_t not_opened = 0;  // paths outside the folder: never opened, by rule
};

struct VerifyResult {
  std::vector<Finding> findings;
  std::optional<InputsChecked> inputs;  // set when --inputs ran
  std::size_t files_checked = 0;
  std::string folder_kind = kFolderKindRun;  // a registered kind (folder_kind.h)
  std::size_t items = 0, accepted = 0, rejected = 0;
  std::string fingerprint;  // sha256 of tagmanifest-sha256.txt; empty when there is none
  bool ok() const { return findings.empty(); }
};

VerifyResult VerifyRunFolder(FileSystem& fs, const std::filesystem::path& run_dir,
                             const VerifyOptions& options);
// What `pilot verify` calls: dispatches on the folder's kind and format version through the
// registry of folder kinds (folder_kind.h). One this pilot does not know is refused (exit 2, naming it), not
// judged; one that cannot be read at all is left to the checks, which report it as findings.
Result<VerifyResult> VerifyFolder(FileSystem& fs, const std::filesystem::path& dir,
                                  const VerifyOptions& options);
// Each folder kind's own checks, after the bag's, are registered with the kind
// (folder_kind.h): a run's in verify.cpp, a sweep's in verify_sweep.cpp, an adaptation's in
// verify_adapt.cpp.

// The top-level keys at which a derived document as found (`got`) differs from the one its
// sources give (`want`), compared unordered: the first 20, then how many more. Empty when they
// differ in key order or form only.
std::string DifferingKeys(const nlohmann::json& got, const nlohmann::ordered_json& want);

nlohmann::ordered_json VerifyResultToJson(const std::filesystem::path& run_dir, const VerifyResult& result);

}  // namespace pilot
