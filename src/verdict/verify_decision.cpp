// The checks of `pilot decide`'s tag files (verify.h, CheckDecisionFiles).
#include <algorithm>
#include <set>

#include "pilot/escape.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/utf8.h"
#include "pilot/verdict/decide.h"
#include "pilot/verdict/decision_files.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kDecisionsBytes = 16ull << 20;

bool IsDecisionName(const std::string& d) {
  return d == "go" || d == "fix-env" || d == "revise-config" || d == "measure-first";
}

// decision-<entry>-<kind>.json, kind of [a-z]: the only names an entry may point at.
bool IsEvidenceName(const std::string& name, std::size_t entry) {
  const std::string prefix = "decision-" + std::to_string(entry) + "-";
  if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 6 || name.size() > 64) return false;
  if (name.compare(name.size() - 5, 5, ".json") != 0) return false;
  const std::string kind = name.substr(prefix.size(), name.size() - prefix.size() - 5);
  return !kind.empty() && std::all_of(kind.begin(), kind.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

}  // namespace

Result<DecisionEntry> ParseDecisionEntry(std::string_view line, const std::string& where) {
  auto parsed = ParseJson(line, where, 16);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  DecisionEntry e;
  auto entry = UnsignedAt(j, "entry");
  auto decision = StringAt(j, "decision");
  if (!entry || *entry < 1 || *entry > kMaxDecisions) {
    return BadInput("'entry' must be a number in 1.." + std::to_string(kMaxDecisions), where);
  }
  if (!decision || !IsDecisionName(*decision)) {
    return BadInput("'decision' must be go, fix-env, revise-config or measure-first", where);
  }
  e.entry = static_cast<std::size_t>(*entry);
  e.decision = *decision;
  if (!j.contains("reasons") || !j["reasons"].is_array() || j["reasons"].empty() ||
      !std::all_of(j["reasons"].begin(), j["reasons"].end(),
                   [](const nlohmann::json& r) { return r.is_string(); })) {
    return BadInput("'reasons' must be a non-empty list of text", where);
  }
  if (!j.contains("evidence") || !j["evidence"].is_array() || j["evidence"].size() > 16) {
    return BadInput("'evidence' must be a list (at most 16)", where);
  }
  for (const auto& ev : j["evidence"]) {
    auto file = StringAt(ev, "file");
    auto sha = StringAt(ev, "sha256");
    if (!file || !IsEvidenceName(*file, e.entry) || !sha || !IsSha256Hex(*sha)) {
      return BadInput("an evidence record must name its file (decision-" + std::to_string(e.entry) +
                          "-<kind>.json) and its sha256",
                      where);
    }
    e.evidence.emplace_back(*file, *sha);
  }
  return e;
}

void CheckDecisionFiles(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
  auto add = [&](const std::string& where, const std::string& what) {
    findings.push_back({"decision", EscapeTerminal(where), EscapeTerminal(what)});
  };
  auto entries = fsys.ListDirectory(dir);
  if (!entries.ok()) return;  // the bag's own checks report an unlistable folder
  std::set<std::string> evidence_on_disk;
  bool have_jsonl = false, have_md = false;
  for (const DirEntry& e : entries.value()) {
    if (e.name == kDecisionsFile) have_jsonl = true;
    if (e.name == kDecisionMarkdown) have_md = true;
    if (e.name.rfind("decision-", 0) == 0) evidence_on_disk.insert(e.name);
  }
  if (!have_jsonl && !have_md && evidence_on_disk.empty()) return;
  if (!have_jsonl) {
    add(kDecisionsFile, "missing, but decision files are present: the decision record was removed");
    return;
  }
  if (!have_md) add(kDecisionMarkdown, "missing beside decisions.jsonl");
  auto stat = fsys.LinkStat(dir / kDecisionsFile);
  if (!stat.ok() || !stat.value().regular) {
    add(kDecisionsFile, "not a regular file (never followed)");
    return;
  }
  auto lines = LineReader::Open(fsys, dir / kDecisionsFile, kDecisionsBytes, false);
  if (!lines.ok()) {
    add(kDecisionsFile, lines.error().what);
    return;
  }
  std::set<std::string> named;
  std::string line;
  std::size_t n = 0;
  for (;;) {
    bool complete = true;
    auto next = lines.value().Next(line, &complete);
    if (!next.ok()) {
      add(kDecisionsFile, next.error().what);
      return;
    }
    if (!next.value()) break;
    const std::string where = std::string(kDecisionsFile) + ":" + std::to_string(lines.value().line_number());
    if (!complete) {
      add(where, "the last entry has no newline: the file was cut short");
      return;
    }
    if (++n > kMaxDecisions) {
      add(kDecisionsFile, "more than " + std::to_string(kMaxDecisions) + " entries");
      return;
    }
    auto entry = ParseDecisionEntry(line, where);
    if (!entry.ok()) {
      add(where, entry.error().what);
      continue;
    }
    if (entry.value().entry != n) {
      add(where, "entry " + std::to_string(entry.value().entry) + " where entry " + std::to_string(n) +
                     " belongs: entries were removed, reordered or rewritten");
    }
    for (const auto& [file, sha] : entry.value().evidence) {
      named.insert(file);
      auto got = Sha256File(fsys, dir / file, /*follow_symlinks=*/false);
      if (!got.ok()) {
        add(file, "evidence named by entry " + std::to_string(n) + " is missing or unreadable");
      } else if (got.value() != sha) {
        add(file, "evidence of entry " + std::to_string(n) + " has sha256 " + got.value() +
                      ", the entry records " + sha);
      }
    }
  }
  if (n == 0) add(kDecisionsFile, "holds no entry");
  for (const std::string& f : evidence_on_disk) {
    if (!named.count(f)) add(f, "a decision-* file that no entry of decisions.jsonl names");
  }
}

void RegisterDecisionExtension(FolderKindRegistry& registry) {
  FolderExtensionSpec spec;
  spec.name = "decision";
  spec.checks = CheckDecisionFiles;
  spec.pending_entry = kDecidePending;
  spec.pending_what =
      "a decide was interrupted while it wrote: `pilot decide` (or `pilot resume`) on this folder finishes "
      "it or "
      "undoes it";
  spec.recover = RecoverInterruptedDecide;
  registry.RegisterExtension(std::move(spec));
}

}  // namespace pilot
