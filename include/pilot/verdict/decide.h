// `pilot decide RUN_DIR`: the pilot ends in a decision (docs/ending.md): go to full
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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verdict/decision_files.h"
#include "pilot/verify.h"

namespace pilot {

inline constexpr const char* kDecisionGo = "go";
inline constexpr const char* kDecisionFixEnv = "fix-env";
inline constexpr const char* kDecisionReviseConfig = "revise-config";
// The figures a rental rests on were not measured on the card: measure there first.
inline constexpr const char* kDecisionMeasureFirst = "measure-first";
// Caps on what decide reads and records.
inline constexpr std::uint64_t kEvidenceBytes = 16ull << 20;  // one evidence file
inline constexpr std::size_t kMaxReasons = 32;
inline constexpr std::size_t kMaxReasonBytes = 4096;

bool IsDecision(const std::string& name);

// Where a decide is, for the CLI's Ctrl-C handler to say what state the folder is in.
enum class DecidePhase {
  kReading,     // reading and verifying: nothing written, the folder as it was
  kRecovering,  // finishing or undoing an interrupted decide first (RecoverInterruptedDecide)
  kLocked,      // the folder's lock is held; nothing recorded yet
  kWriting,     // staging and applying the decision's files: finished before stopping
  kRecorded,    // the decision is recorded in full
};

struct DecideOptions {
  std::optional<std::filesystem::path> doctor;   // `pilot doctor --json` output
  std::optional<std::filesystem::path> compare;  // compare.json
  std::optional<std::filesystem::path> sweep;    // a sweep folder
  // A load folder (`pilot load`): verified in full (with expect_load); its verdict is evidence of
  // whether the service meets its SLO.
  std::optional<std::filesystem::path> load;
  std::optional<std::filesystem::path> plan;  // `pilot plan --out` JSON
  // A calibration folder (`pilot calibrate`): verified in full (with expect_calibration), its
  // record and, unless `doctor` is given, its doctor report taken as evidence.
  std::optional<std::filesystem::path> calibration;
  std::string plan_choice = "cheapest";  // cheapest | fastest: the plan decision.md names
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
  // The folder's fingerprint noted earlier (`pilot run` printed it), and the sweep folder's:
  // each must match before anything is read further (a re-hashed forgery passes every other
  // check).
  std::optional<std::string> expect;
  std::optional<std::string> expect_sweep;
  std::optional<std::string> expect_load;
  std::optional<std::string> expect_calibration;
  // Told each phase as it begins; polled while reading and before the first write (true:
  // stop, with nothing written). Once writing has begun, the decision is finished first.
  std::function<void(DecidePhase)> on_phase;
  std::function<bool()> should_stop;
};

struct DecideOutcome {
  // Set when RUN_DIR fails verification: nothing was proposed or written (exit 1).
  std::optional<VerifyResult> failed_verification;
  std::string proposal;                                            // go | fix-env | revise-config
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();  // {fact, from, points_to}
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  bool recorded = false;
  std::size_t entry = 0;    // the new entry's number (1-based) when recorded
  std::string fingerprint;  // the folder's fingerprint after recording (or as found)
  std::string previous_fingerprint;
  std::vector<std::string> written;  // tag files written, relative to the folder
  std::vector<std::string> notes;    // an interrupted decide finished or undone first
};

// What decide checks of one piece of evidence (kind doctor, compare or plan) before drawing any
// fact from it: the document pilot writes, agreeing with itself (a verdict that contradicts
// its counts, a negative cost, a plan row that fits beyond its period are refused, exit 2).
Status CheckEvidenceDocument(const std::string& kind, std::string_view bytes, const std::string& where);

// A decision staged in .decide-pending/ (verify.h, kDecidePending) and committed by its
// COMMIT.json: the files to place, in order (the tag manifest last), each with its sha256, and
// the fingerprint the folder had before.
struct DecideCommit {
  std::size_t entry = 0;
  std::string before;
  std::vector<std::pair<std::string, std::string>> files;  // name, sha256
};
// Parses a COMMIT.json (capped, from a folder that may be hostile): only names decide writes
// (decisions.jsonl, decision.md, decision-<entry>-<kind>.json, the tag manifest last).
Result<DecideCommit> ParseDecideCommit(std::string_view text, const std::string& where);

// A decide killed part-way leaves the folder in one of three states: as before it (a stale
// .lock at most), as after it, or with a staging folder (.decide-pending) that this finishes
// or undoes: without its COMMIT record the staged files are removed (nothing of that decide
// is recorded), with it the change is applied to its end. A stale lock left on a finished
// folder is removed. Takes the folder's lock; refuses (exit 2, naming it) a folder another
// process is writing, or a staging folder that is damaged or no longer fits the folder.
// Returns what was done, or nothing when the folder needed nothing. `pilot decide` and
// `pilot resume` call it first.
Result<std::optional<std::string>> RecoverInterruptedDecide(FileSystem& fs, const std::filesystem::path& dir);

// Verifies RUN_DIR (a finished run or merged folder) in full, reads the evidence, and
// proposes; with options.decision, records it under the folder's lock. Bad evidence (an
// unreadable or foreign file, a sweep folder that fails verification, a comparison of another
// manifest) is exit 2 naming it, and nothing is written.
Result<DecideOutcome> Decide(FileSystem& fs, Clock& clock, const std::filesystem::path& run_dir,
                             const DecideOptions& options);

}  // namespace pilot
