// `pilot decide RUN_DIR`: the pilot ends in a decision (DESIGN.md, practice 7): go to full
// scale, fix the environment, or revise the configuration. pilot proposes one from the
// evidence (the folder itself, plus a doctor report, a comparison, a sweep and a rental plan
// passed explicitly), listing each fact with the file it came from; the person confirms it
// with reasons. A recorded decision is an entry appended to decisions.jsonl and a regenerated
// decision.md, tag files beside the payload, with each piece of evidence copied beside them
// (decision-N-<kind>.json) and covered by tagmanifest-sha256.txt. The payload is untouched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

inline constexpr const char* kDecisionGo = "go";
inline constexpr const char* kDecisionFixEnv = "fix-env";
inline constexpr const char* kDecisionReviseConfig = "revise-config";
// Caps on what decide reads and records.
inline constexpr std::uint64_t kEvidenceBytes = 16ull << 20;  // one evidence file
inline constexpr std::size_t kMaxReasons = 32;
inline constexpr std::size_t kMaxReasonBytes = 4096;

bool IsDecision(const std::string& name);

struct DecideOptions {
  std::optional<std::filesystem::path> doctor;   // `pilot doctor --json` output
  std::optional<std::filesystem::path> compare;  // compare.json
  std::optional<std::filesystem::path> sweep;    // a sweep folder
  std::optional<std::filesystem::path> plan;     // `pilot plan --out` JSON
  std::string plan_choice = "cheapest";          // cheapest | fastest: the plan decision.md names
  // Spot check: a seeded sample of accepted items per category and every rejected item, each
  // with an excerpt of its input (read from inputs_root, or the root the run recorded).
  bool excerpts = true;
  std::optional<std::filesystem::path> inputs_root;
  std::size_t per_category = 2;
  std::optional<std::uint64_t> seed;  // default: the run's seed
  // Record: the person's decision and reasons. Without a decision nothing is written.
  std::optional<std::string> decision;
  std::vector<std::string> reasons;
  std::string command_line;
  // Called just before the first write; what it returns is held until the writes are done (the
  // CLI holds SIGINT and SIGTERM with it, so an interrupt lands after the folder is whole).
  std::function<std::shared_ptr<void>()> hold_signals;
};

struct DecideOutcome {
  // Set when RUN_DIR fails verification: nothing was proposed or written (exit 1).
  std::optional<VerifyResult> failed_verification;
  std::string proposal;  // go | fix-env | revise-config
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();  // {fact, from, points_to}
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  bool recorded = false;
  std::size_t entry = 0;        // the new entry's number (1-based) when recorded
  std::string fingerprint;      // the folder's fingerprint after recording (or as found)
  std::string previous_fingerprint;
  std::vector<std::string> written;  // tag files written, relative to the folder
};

// Verifies RUN_DIR (a finished run or merged folder) in full, reads the evidence, and
// proposes; with options.decision, records it under the folder's lock. Bad evidence (an
// unreadable or foreign file, a sweep folder that fails verification, a comparison of another
// manifest) is exit 2 naming it, and nothing is written.
Result<DecideOutcome> Decide(FileSystem& fs, Clock& clock, const std::filesystem::path& run_dir,
                             const DecideOptions& options);

}  // namespace pilot
