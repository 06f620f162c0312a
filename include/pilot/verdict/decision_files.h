// A decision recorded in any finished folder (`pilot decide`, decide.h): its tag files'
// names, the entry as parsed back, and verify's checks of them, which the verdict workflow
// registers as a folder extension (folder_kind.h) so that every kind's verify runs them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

inline constexpr const char* kDecisionsFile = "decisions.jsonl";  // one entry per recorded decision
inline constexpr const char* kDecisionMarkdown = "decision.md";
// Where `pilot decide` stages a decision's files before it applies them: present only while a
// decide is writing, or after one was interrupted (a verify finding then).
inline constexpr const char* kDecidePending = ".decide-pending";
inline constexpr const char* kDecideCommit = "COMMIT.json";

// `pilot decide`'s tag files (decide.h; their names above): decisions.jsonl (one
// entry per recorded decision), decision.md, and each entry's evidence as
// decision-N-<kind>.json.
inline constexpr std::size_t kMaxDecisions = 1000;  // entries in decisions.jsonl
// A decision entry parsed back: what verify checks and decide builds on.
struct DecisionEntry {
  std::size_t entry = 0;
  std::string decision;
  std::vector<std::pair<std::string, std::string>> evidence;  // file (relative), sha256
};
Result<DecisionEntry> ParseDecisionEntry(std::string_view line, const std::string& where);
// The checks of a folder's decision files, when either is present (src/verdict/verify_decision.cpp):
// both present, every entry parses, entries numbered 1..N, each entry's evidence file present
// with its sha256, and no decision-*.json that no entry names. Findings: check "decision".
void CheckDecisionFiles(FileSystem& fs, const std::filesystem::path& dir, std::vector<Finding>& findings);

void RegisterDecisionExtension(FolderKindRegistry& registry);

}  // namespace pilot
