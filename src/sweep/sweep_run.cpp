#include "pilot/sweep/sweep_run.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "pilot/bag.h"
#include "pilot/build_info.h"
#include "pilot/destination.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/journal.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/precheck.h"
#include "pilot/run_lock.h"
#include "pilot/sweep/sweep_report.h"
#include "pilot/utf8.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

class SweepSession {
 public:
  SweepSession(fs::path dir, const SweepPlan& plan, FileSystem& fsys, Clock& clock, const CellRunner& runner,
               const SweepControl& control)
      : dir_(std::move(dir)), plan_(plan), fs_(fsys), clock_(clock), runner_(runner), control_(control) {}

  FolderIdentity Identity() const {
    return FolderIdentity{kFolderKindSweep, kSweepFormatVersion, dir_.filename().string(),
                          "pilot sweep: batch tuning per length group"};
  }

  Status WriteRecord(const std::string& state, const std::string& started_at) {
    nlohmann::ordered_json j =
        RecordHead(Identity(), JoinArguments(plan_.run.command_line), state, started_at,
                   state == "finished" ? std::optional<std::string>(clock_.UtcNowIso()) : std::nullopt);
    j["command_args"] = plan_.run.command_line;
    j["manifest_copy"] = ManifestCopyFileName(plan_.run.manifest.file());
    j["manifest_sha256"] = plan_.run.manifest.sha256();
    j["params_sha256"] = Sha256Hex(plan_.run.params_bytes);
    j["model_sha256"] = plan_.run.model_sha256;
    j["request"] = {{"params", fs::absolute(plan_.run.params_file).lexically_normal().string()},
                    {"manifest", fs::absolute(plan_.run.manifest.file()).lexically_normal().string()},
                    {"device", plan_.run.params.device},
                    {"inputs_root", plan_.run.inputs_root.string()}};
    j["settings"] = SweepSettingsToJson(plan_.settings);
    j["stage"] = StageJson();
    j["footprint"] = FootprintJson();
    return fs_.WriteFileAtomic(dir_ / kRunRecord, PrettyJson(j));
  }

  Status Create() {
    started_at_ = clock_.UtcNowIso();
    PILOT_TRY(fs_.CreateDirectoryExclusive(dir_ / "data"));
    PILOT_TRY(fs_.CreateDirectoryExclusive(dir_ / kSweepCellsFolder));
    PILOT_TRY(WriteBagDeclaration(fs_, dir_));
    PILOT_TRY(CopyManifestPinned(fs_, plan_.run.manifest.file(),
                                 dir_ / ManifestCopyFileName(plan_.run.manifest.file()),
                                 plan_.run.manifest.sha256()));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kParamsCopy, plan_.run.params_bytes));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kEnvironmentFile, PrettyJson(plan_.run.environment)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kSweepGroups, PrettyJson(GroupingToJson(plan_.grouping))));
    // The record last: a folder with a record has everything a resume needs.
    return WriteRecord("running", started_at_);
  }

  void Adopt(std::vector<JournaledCell> cells, std::string started_at) {
    for (auto& c : cells) cells_.push_back(std::move(c.measure));
    started_at_ = std::move(started_at);
  }

  Result<SweepOutcome> Drive(RunLock& lock) {
    SweepOutcome out;
    out.dir = dir_;
    auto journal = fs_.OpenAppend(dir_ / kSweepCells);
    if (!journal.ok()) return journal.error();
    const auto& groups = plan_.grouping.groups;
    const std::size_t total = groups.size() * plan_.settings.batch_sizes.size();
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const int g = static_cast<int>(gi + 1);
      for (int b : plan_.settings.batch_sizes) {
        if (Stopped(g)) break;
        if (Find(g, b)) continue;
        if (control_.should_stop && control_.should_stop()) {
          lock.RemoveFile();  // a clean stop: every measured cell is journaled
          out.interrupted = true;
          return out;
        }
        auto measured = runner_(dir_, g, b, plan_.settings.repeats);
        if (!measured.ok()) {
          if (measured.error().kind == ErrorKind::kInterrupted) {
            lock.RemoveFile();
            out.interrupted = true;
            return out;
          }
          return measured.error();
        }
        CellMeasure m = std::move(measured).value();
        if (m.group != g || m.batch_size != b) {
          return WorkFailed("the cell process measured another cell than it was asked", SweepCellFile(g, b));
        }
        if (m.group_items == 0) {  // a process killed before it said: the group's own count
          m.group_items = groups[gi].ids.size();
          m.cycled = static_cast<std::size_t>(b) > m.group_items;
        }
        if (m.limit.empty()) {
          std::string why;
          m.limit = SettingsLimit(m, plan_.settings, why);
          if (!m.limit.empty()) m.error = why;
        }
        const std::string file = SweepCellFile(g, b);
        const std::string text = PrettyJson(CellToJson(m));
        PILOT_TRY(fs_.WriteFileAtomic(dir_ / file, text));
        nlohmann::ordered_json line{
            {"group", g},
            {"batch_size", b},
            {"file", file},
            {"sha256", Sha256Hex(text)},
            {"limit", m.limit.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(m.limit)}};
        PILOT_TRY(journal.value()->Append(JsonLine(line) + "\n"));
        PILOT_TRY(journal.value()->Sync());
        if (control_.on_progress) control_.on_progress(ProgressLine(m, total));
        cells_.push_back(std::move(m));
      }
    }
    journal.value().reset();
    return Finish(lock, std::move(out));
  }

 private:
  const CellMeasure* Find(int g, int b) const {
    for (const auto& c : cells_) {
      if (c.group == g && c.batch_size == b) return &c;
    }
    return nullptr;
  }
  bool Stopped(int g) const {
    for (const auto& c : cells_) {
      if (c.group == g && !c.limit.empty()) return true;
    }
    return false;
  }

  std::string ProgressLine(const CellMeasure& m, std::size_t total) const {
    char tokens[96] = "";
    if (m.padded_tokens > 0) {
      std::snprintf(tokens, sizeof tokens, " (%.0f tokens/s, padding %.1f%%)", m.tokens_per_second,
                    100.0 * m.padding_waste());
    }
    char buf[384];
    std::snprintf(
        buf, sizeof buf,
        "sweep: cell %zu/%zu (at most): group %d, batch %d: %.0f items/s%s, p95 %.2f ms, peak %.0f MB%s%s",
        cells_.size() + 1, total, m.group, m.batch_size, m.items_per_second, tokens, m.p95_ms,
        m.peak_memory_mb(), m.limit.empty() ? "" : ", LIMIT ", m.limit.c_str());
    return buf;
  }

  nlohmann::ordered_json StageJson() const {
    const StageDescription& d = plan_.stage;
    nlohmann::ordered_json j{{"kind", d.kind},
                             {"output", d.output->name},
                             {"device", d.device},
                             {"model_sha256", plan_.run.model_sha256}};
    if (d.output->vectors) j["dim"] = d.dim;
    // A generator: what its KV cache takes, for the headroom table.
    if (d.output->generates) {
      for (const char* key : {"layers", "context", "kv_bytes_per_token"}) {
        if (d.details.contains(key)) j[key] = d.details[key];
      }
      if (d.details.contains(kGenerationParamsKey) && d.details[kGenerationParamsKey].contains("batching"))
        j["batching"] = d.details[kGenerationParamsKey]["batching"];
      if (d.details.contains(kGenerationParamsKey) &&
          d.details[kGenerationParamsKey].contains("max_new_tokens"))
        j["max_new_tokens"] = d.details[kGenerationParamsKey]["max_new_tokens"];
    }
    return j;
  }
  nlohmann::ordered_json FootprintJson() const {
    nlohmann::ordered_json j;
    if (plan_.footprint) {
      const ModelFootprint& f = *plan_.footprint;
      j["parameters"] = f.parameters;
      j["parameter_bytes"] = f.parameter_bytes;
      j["buffers"] = f.buffers;
      j["buffer_bytes"] = f.buffer_bytes;
      j["weights_mb"] = static_cast<double>(f.parameter_bytes + f.buffer_bytes) / (1024.0 * 1024.0);
    } else {
      j["weights_mb"] = nullptr;
      j["note"] = "this stage kind does not report its parameters and buffers";
    }
    j["rss_after_load_mb"] = plan_.rss_after_load_mb;
    return j;
  }

  nlohmann::ordered_json Summary(std::size_t& finding_count) const {
    const SweepAnalysis analysis =
        AnalyseSweep(plan_.grouping, plan_.settings, cells_, plan_.stage.output->vectors);
    finding_count = analysis.findings;
    return SweepSummary({dir_.filename().string(), StageJson(), FootprintJson(), plan_.grouping,
                         plan_.settings, cells_, analysis});
  }

  Result<SweepOutcome> Finish(RunLock& lock, SweepOutcome out) {
    std::size_t findings = 0;
    nlohmann::ordered_json summary = Summary(findings);
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kSweepSummary, PrettyJson(summary)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kSweepCsv, SweepCsv(summary)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kSweepMarkdown, SweepMarkdown(summary)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kReportHtml, SweepHtml(summary)));
    PILOT_TRY(WriteRecord("finished", started_at_));
    lock.RemoveFile();
    std::string date = clock_.UtcNowIso().substr(0, 10);
    PILOT_TRY(FinalizeFolder(fs_, dir_, date, Identity()));
    auto verified = VerifyFolder(fs_, dir_, VerifyOptions{});
    if (!verified.ok()) return verified.error();
    out.verify = std::move(verified).value();
    out.fingerprint = out.verify.fingerprint;
    out.findings = findings;
    out.summary = std::move(summary);
    return out;
  }

  fs::path dir_;
  const SweepPlan& plan_;
  FileSystem& fs_;
  Clock& clock_;
  const CellRunner& runner_;
  const SweepControl& control_;
  std::vector<CellMeasure> cells_;
  std::string started_at_;
};

}  // namespace

std::size_t SweepSampleSize(const SweepSettings& settings) {
  const int largest = settings.batch_sizes.empty() ? 1 : settings.batch_sizes.back();
  return std::max<std::size_t>(256, 2 * static_cast<std::size_t>(largest));
}

Result<Grouping> GroupManifest(FileSystem& fsys, const RunPlan& plan, const Stage& stage, int groups,
                               std::size_t max_sample) {
  std::vector<MeasuredItem> items;
  std::size_t excluded = 0;
  bool any_features = false, any_bytes = false;
  const InputKind input = stage.Describe().input;
  PILOT_TRY(plan.manifest.ForEach([&](const ManifestItem& item) -> Status {
    Precheck pre = PrecheckItem(fsys, plan.inputs_root, item, plan.params.max_bytes, input);
    if (pre.rejection) {
      ++excluded;
      return {};
    }
    bool features = false;
    items.push_back({item.id, InputLength(stage, pre.text, features)});
    (features ? any_features : any_bytes) = true;
    return {};
  }));
  if (items.empty()) {
    return BadInput("no item of the manifest passes the prechecks: there is nothing to sweep",
                    plan.manifest.file().string(), "run `pilot run` on it to see each item's reason");
  }
  if (any_features && any_bytes) {
    return BadInput("the stage measured some inputs in features and others in bytes",
                    plan.params.stage.model.string());
  }
  Grouping g = MakeGroups(items, groups, any_features ? "features" : "bytes");
  g.excluded = excluded;
  for (auto& lg : g.groups) {
    if (max_sample == 0 || lg.ids.size() <= max_sample) continue;
    std::vector<std::string> sample;
    for (std::size_t k = 0; k < max_sample; ++k)
      sample.push_back(std::move(lg.ids[k * lg.ids.size() / max_sample]));
    lg.ids = std::move(sample);
  }
  return g;
}

Result<SweepOutcome> ExecuteSweep(FileSystem& fsys, Clock& clock, const SweepPlan& given,
                                  const CellRunner& runner, const SweepControl& control) {
  PILOT_TRY(CheckStageDeclaresOutput(given.stage));
  PILOT_TRY(CheckSweepSettings(given.settings));
  // The sweep folder: a new folder, resolved once (paths.h), outside every pilot folder.
  auto resolved = ResolveDestination(fsys, given.dir, "--out", Destination::kNew);
  if (!resolved.ok()) return resolved.error();
  SweepPlan plan = given;
  plan.dir = resolved.value();
  // The folder's name is the sweep's id (in its record and its cells' runs): checked before
  // anything is made, never found invalid by the first cell of a folder that then cannot resume.
  if (const std::string name = plan.dir.filename().string(); !IsValidRunId(name)) {
    return BadInput("the sweep folder's name '" + ValueForMessage(name, 130) + "' is not a valid run id",
                    "--out", "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (plan.grouping.groups.empty())
    return BadInput("there are no groups to sweep", plan.run.manifest.file().string());
  if (!plan.dir.parent_path().empty()) {
    if (Status st = fsys.CreateDirectories(plan.dir.parent_path()); !st.ok()) {
      Error e = st.error();
      e.kind = ErrorKind::kBadInput;
      return e;
    }
  }
  if (Status st = fsys.CreateDirectoryExclusive(plan.dir); !st.ok()) {
    Error e = st.error();
    e.kind = ErrorKind::kBadInput;
    e.hint = "a sweep never reuses a folder: give another --out, or `pilot resume` an interrupted one";
    return e;
  }
  auto lock = RunLock::Acquire(fsys, plan.dir);
  if (!lock.ok()) return lock.error();
  SweepSession session(plan.dir, plan, fsys, clock, runner, control);
  if (Status st = session.Create(); !st.ok()) {
    Error e = st.error();
    e.hint += std::string(e.hint.empty() ? "" : "; ") + "nothing was measured; remove " + plan.dir.string() +
              " and start again";
    return e;
  }
  return session.Drive(lock.value());
}

Result<SweepOutcome> ResumeSweep(FileSystem& fsys, Clock& clock, const fs::path& dir, SweepPlan plan,
                                 const CellRunner& runner, const SweepControl& control) {
  PILOT_TRY(CheckStageDeclaresOutput(plan.stage));
  auto lock = RunLock::Acquire(fsys, dir);
  if (!lock.ok()) return lock.error();
  auto record = ReadSweepRecord(fsys, dir);
  if (!record.ok()) return record.error();
  const SweepRecord& r = record.value();
  // Entries are never followed: data/ and data/cells/ must be folders, not links elsewhere.
  for (const char* rel : {"data", kSweepCellsFolder}) {
    auto st = fsys.LinkStat(dir / rel);
    if (!st.ok() || !st.value().exists || st.value().symlink || !st.value().directory) {
      return BadInput("is not a folder (a symlink?); pilot never follows one inside a sweep folder",
                      (dir / rel).string(), "the folder is damaged or hostile; start a new sweep");
    }
  }
  auto finished = fsys.LinkStat(dir / kTagManifest);
  if (r.state != "running" && finished.ok() && finished.value().exists) {
    return BadInput("the sweep has already finished", dir.string(),
                    "verify it with `pilot verify`, or start a new sweep");
  }
  // (state finished without the bag's manifests: killed while finishing; finished again below.)
  // Temporary files of writes a kill interrupted.
  for (const char* rel : {"", "data", kSweepCellsFolder}) {
    auto entries = fsys.ListDirectory(dir / rel);
    if (!entries.ok()) continue;
    for (const DirEntry& e : entries.value()) {
      const bool stale = e.name.find(".tmp-") != std::string::npos || e.name.rfind(".cell-g", 0) == 0;
      if (stale && !e.stat.symlink && e.stat.regular) (void)fsys.RemoveFile(dir / rel / e.name);
    }
  }
  const std::string params_sha = Sha256Hex(plan.run.params_bytes);
  for (auto [what, was, now] : {std::tuple{"manifest", r.manifest_sha256, plan.run.manifest.sha256()},
                                std::tuple{"parameter file", r.params_sha256, params_sha},
                                std::tuple{"model", r.model_sha256, plan.run.model_sha256}}) {
    if (was != now) {
      return BadInput(std::string("the ") + what + " changed since the sweep started (sha256 " + was +
                          ", now " + now + ")",
                      dir.string(), "restore it, or start a new sweep");
    }
  }
  auto grouping = ReadSweepGroups(fsys, dir);
  if (!grouping.ok()) return grouping.error();
  plan.grouping = std::move(grouping).value();
  plan.settings = r.settings;
  plan.dir = dir;
  auto cells = LoadSweepCells(fsys, dir, /*repair=*/true);
  if (!cells.ok()) return cells.error();
  // A cell file written but not journaled (killed between the two) is written again.
  spdlog::info("resume sweep {}: {} cell(s) already measured", r.run_id, cells.value().size());
  SweepSession session(dir, plan, fsys, clock, runner, control);
  session.Adopt(std::move(cells).value(), r.started_at);
  return session.Drive(lock.value());
}

Result<CellInputs> LoadCellInputs(FileSystem& fsys, const fs::path& dir, const RunPlan& plan,
                                  const Stage& stage, int group) {
  auto grouping = ReadSweepGroups(fsys, dir);
  if (!grouping.ok()) return grouping.error();
  if (group < 1 || static_cast<std::size_t>(group) > grouping.value().groups.size()) {
    return BadInput("the sweep has no group " + std::to_string(group), "--group");
  }
  const auto& ids = grouping.value().groups[static_cast<std::size_t>(group - 1)].ids;
  std::unordered_map<std::string, std::size_t> wanted;
  for (std::size_t k = 0; k < ids.size(); ++k) wanted.emplace(ids[k], k);
  std::vector<std::optional<ManifestItem>> items(ids.size());
  PILOT_TRY(plan.manifest.ForEach([&](const ManifestItem& item) -> Status {
    auto it = wanted.find(item.id);
    if (it != wanted.end()) items[it->second] = item;
    return {};
  }));
  CellInputs in;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (!items[k]) return BadInput("the group's item is not in the manifest", ids[k]);
    Precheck pre =
        PrecheckItem(fsys, plan.inputs_root, *items[k], plan.params.max_bytes, stage.Describe().input);
    if (pre.rejection) {
      return BadInput("the item no longer passes the prechecks (" + pre.rejection->reason + ")", ids[k],
                      "an input changed during the sweep; restore it and `pilot resume` the sweep");
    }
    in.ids.push_back(ids[k]);
    in.texts.push_back(std::move(pre.text));
  }
  return in;
}

Result<RunStatus> ReadSweepStatus(FileSystem& fsys, const fs::path& dir) {
  auto record = ReadSweepRecord(fsys, dir);
  if (!record.ok()) return record.error();
  auto cells = LoadSweepCells(fsys, dir, /*repair=*/false);
  RunStatus st;
  st.counts_cells = true;
  st.folder_kind = kFolderKindSweep;
  st.run_id = record.value().run_id;
  st.format_version = kJournalVersion;  // resumable by this pilot
  st.writer_pid = LockHolder(fsys, dir);
  st.state = st.writer_pid ? "running" : record.value().state == "finished" ? "finished" : "interrupted";
  // A torn last line (a kill while appending) is only counted here; resume cuts it off.
  std::size_t done = 0;
  if (cells.ok()) {
    done = cells.value().size();
  } else {
    auto text = ReadInsideFolder(fsys, dir, kSweepCells, 64ull << 20);
    if (text.ok())
      done = static_cast<std::size_t>(std::count(text.value().begin(), text.value().end(), '\n'));
  }
  st.done = done;
  st.total =
      static_cast<std::size_t>(record.value().settings.groups) * record.value().settings.batch_sizes.size();
  return st;
}

Result<BatchPlan> BatchPlanFromSweep(FileSystem& fsys, const fs::path& sweep_dir) {
  const std::string where = sweep_dir.string();
  auto kind = ReadFolderKind(fsys, sweep_dir);
  if (!kind.ok()) return kind.error();
  if (kind.value().kind != kFolderKindSweep) {
    return BadInput("not a sweep folder (its kind is '" + KeyForMessage(kind.value().kind) + "')", where,
                    "give the folder `pilot sweep` wrote");
  }
  auto verified = VerifyFolder(fsys, sweep_dir, VerifyOptions{});
  if (!verified.ok()) return verified.error();
  if (!verified.value().ok()) {
    const Finding& f = verified.value().findings.front();
    return BadInput("the sweep folder does not verify (" + std::to_string(verified.value().findings.size()) +
                        " finding(s); first: [" + f.check + "] " + f.where + ": " + f.what + ")",
                    where, "run `pilot verify` on it");
  }
  // The plan comes from what verify just re-derived from the groups and the journaled cells
  // (each checked against its sha256), never from sweep.json's own words.
  auto state = LoadSweepState(fsys, sweep_dir);
  if (!state.ok()) return state.error();
  const SweepAnalysis& analysis = state.value().analysis;
  const Grouping& grouping = state.value().grouping;
  if (analysis.findings > 0) {
    return BadInput("the sweep found that batching changes results (" + std::to_string(analysis.findings) +
                        " equivalence finding(s)); its sizes are not a plan",
                    where, "see its sweep.md");
  }
  BatchPlan p;
  p.measure = grouping.measure;
  p.model_sha256 = state.value().record.model_sha256;
  p.sweep_fingerprint = verified.value().fingerprint;
  for (const auto& r : analysis.recommendations) {
    if (!r.batch_size) {
      return BadInput("group " + std::to_string(r.group) + " has no recommended batch size (" + r.why + ")",
                      where, "sweep again with smaller sizes, or run with one batch size");
    }
    p.max_lengths.push_back(grouping.groups[static_cast<std::size_t>(r.group - 1)].max_length);
    p.batch_sizes.push_back(*r.batch_size);
  }
  // Round-trip through the strict parser: what a run copies is what a resume will accept.
  return ParseBatchPlan(PrettyJson(BatchPlanToJson(p)), (sweep_dir / kSweepSummary).string());
}

}  // namespace pilot
