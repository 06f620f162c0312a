#include "pilot/run.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <unistd.h>

#include <unordered_map>

#include <spdlog/spdlog.h>

#include "pilot/bag.h"
#include "pilot/build_info.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"
#include "pilot/utf8.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

#define PILOT_RETURN_IF_ERROR(expr)     \
  do {                                  \
    if (Status _st = (expr); !_st.ok()) \
      return _st.error();               \
  } while (0)

std::string Score(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// What the engine demands of any stage's output, whatever the stage: a label the model
// declared and a probability in [0, 1]. Anything else is the model's fault, not the item's
// data, and gets its own reason so that it is never mistaken for a verdict.
std::optional<std::string> InvalidOutput(const StageOutput& out, const StageDescription& desc) {
  if (!std::isfinite(out.confidence) || out.confidence < 0 || out.confidence > 1) {
    return "the model's score is " + (std::isfinite(out.confidence) ? Score(out.confidence) : std::string("not finite")) +
           ", not a probability in [0, 1]";
  }
  if (std::find(desc.labels.begin(), desc.labels.end(), out.label) == desc.labels.end()) {
    return "the model's label is not one of its declared labels";
  }
  for (float p : out.scores) {
    if (!std::isfinite(p) || p < 0 || p > 1.0f + 1e-5f) return "a score of the model is not a probability in [0, 1]";
  }
  return std::nullopt;
}

ResultRecord FromStage(const ManifestItem& item, const StageOutput& out, const StageDescription& desc,
                       const std::vector<std::string>& allowed, double latency_ms) {
  ResultRecord r;
  std::optional<std::string> invalid = out.ok ? InvalidOutput(out, desc) : std::nullopt;
  if (!out.ok) {
    r = ResultRecord::Rejected(item.id, out.out_of_memory ? reason::kDeviceOutOfMemory : reason::kStageError,
                               TruncateUtf8(out.error.empty() ? "the stage failed without a message" : out.error, 2000));
  } else if (invalid) {
    r = ResultRecord::Rejected(item.id, reason::kInvalidOutput, *invalid);
  } else if (std::find(allowed.begin(), allowed.end(), out.label) == allowed.end()) {
    r = ResultRecord::Rejected(item.id, reason::kCategoryNotAllowed,
                               "model says '" + out.label + "' (" + Score(out.confidence) + "), not in allowed_categories");
  } else if (out.confidence < desc.min_confidence) {
    r = ResultRecord::Rejected(item.id, reason::kLowConfidence,
                               "top label '" + out.label + "' at " + Score(out.confidence) + " is below min_confidence " +
                                   Score(desc.min_confidence));
  } else {
    r.id = item.id;
    r.accepted = true;
    r.category = out.label;
    r.confidence = out.confidence;
  }
  r.model = "sha256:" + desc.model_sha256;
  r.latency_ms = latency_ms;
  return r;
}

std::string JoinCommandLine(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

Error Interrupted() { return Error{ExitCode::kInterrupted, "interrupted", "", ""}; }

// Drives one process's session on a run folder: processes the items without a result,
// then finishes the folder. Shared by a fresh run and a resumed one.
class Driver {
 public:
  Driver(const fs::path& dir, const RunPlan& plan, const JournalHeader& header, Stage& stage, FileSystem& fs,
         Clock& clock, const RunControl& control)
      : dir_(dir), plan_(plan), manifest_(plan.manifest), header_(header), stage_(stage), fs_(fs), clock_(clock),
        control_(control) {
    std::error_code ec;
    inputs_root_ = fs::canonical(plan.inputs_root, ec);
    if (ec) inputs_root_ = plan.inputs_root;  // gone: every item will be missing_file
  }

  // `previous`: the journal's state when resuming, null for a fresh run.
  Result<RunOutcome> Drive(JournalWriter& journal, RunLock& lock, const JournalState* previous,
                           std::vector<std::string> notes) {
    outcome_.run_dir = dir_;
    outcome_.run_id = header_.run_id;
    outcome_.notes = std::move(notes);
    journal_ = &journal;
    if (previous) {
      done_ = &previous->done;
      progress_.accepted = previous->accepted;
      progress_.rejected = previous->rejected;
    }
    progress_.total = plan_.manifest.size();
    progress_.done = progress_.accepted + progress_.rejected;
    sessions_ = (previous ? previous->sessions : 0) + 1;
    Status st = Work(previous != nullptr);
    if (!st.ok() && st.error().code == ExitCode::kInterrupted) {
      lock.RemoveFile();  // a clean stop: everything done is journaled
      outcome_.interrupted = true;
      outcome_.exit_code = ExitCode::kInterrupted;
      outcome_.progress = progress_;
      return std::move(outcome_);
    }
    if (st.ok()) st = Finish(lock);
    if (!st.ok()) {
      // The folder exists: whatever failed, it failed during work (exit 5), and the folder
      // keeps everything journaled so far.
      Error e = st.error();
      e.code = ExitCode::kWorkFailed;
      e.hint += std::string(e.hint.empty() ? "" : "; ") + "the run folder is unfinished but resumable: pilot resume " +
                dir_.string();
      return e;
    }
    outcome_.progress = progress_;
    return std::move(outcome_);
  }

 private:
  Status Work(bool resumed) {
    const StageDescription& d = stage_.Describe();
    PILOT_RETURN_IF_ERROR(journal_->AppendSession({{"pid", static_cast<long>(::getpid())},
                                                   {"resumed", resumed},
                                                   {"device", d.device},
                                                   {"pilot_version", build::kVersion}}));
    session_start_ = clock_.MonotonicSeconds();
    last_log_ = session_start_;
    PILOT_RETURN_IF_ERROR(EnsureFolderFiles());
    PILOT_RETURN_IF_ERROR(WriteRunRecord("running"));
    std::vector<ManifestItem> pending;
    const auto batch = static_cast<std::size_t>(plan_.params.batch_size);
    auto is_done = [&](std::string_view id) { return done_ && done_->count(std::string(id)) > 0; };
    PILOT_RETURN_IF_ERROR(manifest_.ForEach(
        [&](const ManifestItem& item) -> Status {
          pending.push_back(item);
          if (pending.size() < batch) return {};
          return Flush(pending);
        },
        is_done));
    if (!pending.empty()) PILOT_RETURN_IF_ERROR(Flush(pending));
    return {};
  }

  // Copies, declaration and environment: written at the start of a fresh run; a resumed
  // run writes whichever a kill prevented.
  Status EnsureFolderFiles() {
    auto missing = [&](const char* rel) {
      auto st = fs_.LinkStat(dir_ / rel);
      return st.ok() && !st.value().exists;
    };
    fs::path manifest_copy = dir_ / header_.manifest_copy;
    if (missing(header_.manifest_copy.c_str())) {
      PILOT_RETURN_IF_ERROR(fs_.CopyFileAtomic(plan_.manifest.file(), manifest_copy));
      auto copied = Sha256File(manifest_copy, false);
      if (!copied.ok()) return copied.error();
      if (copied.value() != header_.manifest_sha256) {
        return BadInput("the manifest changed while pilot was copying it (its copy's sha256 is " + copied.value() +
                            ", the run is bound to " + header_.manifest_sha256 + ")",
                        plan_.manifest.file().string(), "leave the manifest alone while a run starts");
      }
    }
    manifest_.Rebind(manifest_copy);
    if (missing("data/params.json")) {
      PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/params.json", plan_.params_bytes));
    }
    if (missing("bagit.txt")) PILOT_RETURN_IF_ERROR(WriteBagDeclaration(fs_, dir_));
    if (missing("data/environment.json")) {
      PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/environment.json", PrettyJson(plan_.environment)));
    }
    return {};
  }

  Status WriteRunRecord(const std::string& state) {
    const StageDescription& d = stage_.Describe();
    nlohmann::ordered_json j;
    j["run_id"] = header_.run_id;
    j["pilot_version"] = build::kVersion;
    j["source_revision"] = build::kSourceRevision;
    j["command_line"] = JoinCommandLine(plan_.command_line);
    j["state"] = state;
    j["started_at"] = header_.started_at;
    j["finished_at"] = state == "finished" ? nlohmann::ordered_json(clock_.UtcNowIso()) : nlohmann::ordered_json();
    j["sessions"] = sessions_;
    j["manifest_copy"] = header_.manifest_copy;
    j["manifest_sha256"] = header_.manifest_sha256;
    j["params_sha256"] = header_.params_sha256;
    j["model_sha256"] = header_.model_sha256;
    j["plan"] = {{"manifest", header_.manifest_path},
                 {"inputs_root", header_.inputs_root},
                 {"params", header_.params_path},
                 {"model", header_.model_path},
                 {"items", header_.items},
                 {"stage_kind", d.kind},
                 {"device_requested", plan_.params.device},
                 {"device", d.device},
                 {"batch_size", plan_.params.batch_size},
                 {"threads", plan_.params.threads},
                 {"seed", plan_.params.seed},
                 {"max_bytes", plan_.params.max_bytes},
                 {"min_confidence", d.min_confidence},
                 {"labels", d.labels},
                 {"allowed_categories", plan_.params.allowed_categories},
                 {"model_contract", d.details}};
    return fs_.WriteFileAtomic(dir_ / "data/run.json", PrettyJson(j));
  }

  Status Flush(std::vector<ManifestItem>& items) {
    std::vector<std::optional<ResultRecord>> slot(items.size());
    std::vector<std::string> texts;
    std::vector<std::size_t> staged;
    for (std::size_t i = 0; i < items.size(); ++i) {
      Precheck pre = PrecheckItem(fs_, inputs_root_, items[i], plan_.params.max_bytes);
      if (pre.rejection) {
        slot[i] = std::move(pre.rejection);
      } else {
        texts.push_back(std::move(pre.text));
        staged.push_back(i);
      }
    }
    if (!texts.empty()) {
      std::vector<std::string_view> views(texts.begin(), texts.end());
      double t0 = clock_.MonotonicSeconds();
      std::vector<StageOutput> outs = stage_.Classify(views);
      double latency_ms = (clock_.MonotonicSeconds() - t0) * 1000.0;
      for (std::size_t k = 0; k < staged.size(); ++k) {
        StageOutput out;
        if (k < outs.size()) {
          out = outs[k];
        } else {
          out.error = "the stage returned too few outputs";
        }
        slot[staged[k]] = FromStage(items[staged[k]], out, stage_.Describe(), plan_.params.allowed_categories, latency_ms);
      }
    }
    std::vector<ResultRecord> records;
    records.reserve(slot.size());
    for (auto& r : slot) {
      (r->accepted ? progress_.accepted : progress_.rejected)++;
      records.push_back(std::move(*r));
    }
    // Journaled and synced before anything derived from these results is written.
    PILOT_RETURN_IF_ERROR(
        journal_->AppendResults(records, UnixSeconds(), PeakRssMegabytes(), stage_.PeakDeviceMemoryMb()));
    processed_ += records.size();
    progress_.done += records.size();
    items.clear();
    Report();
    if ((control_.should_stop && control_.should_stop()) ||
        (control_.stop_after > 0 && processed_ >= control_.stop_after)) {
      return Interrupted();
    }
    return {};
  }

  void Report() {
    double now = clock_.MonotonicSeconds();
    double elapsed = std::max(1e-9, now - session_start_);
    progress_.items_per_second = processed_ / elapsed;
    std::size_t left = progress_.total - std::min(progress_.total, progress_.done);
    progress_.eta_seconds = progress_.items_per_second > 0 ? left / progress_.items_per_second : 0;
    if (control_.on_progress) control_.on_progress(progress_);
    if (now - last_log_ >= 10.0) {
      last_log_ = now;
      spdlog::info("progress: {}/{} items ({} rejected), {:.1f} items/s, ETA {:.0f} s", progress_.done,
                   progress_.total, progress_.rejected, progress_.items_per_second, progress_.eta_seconds);
    }
  }

  Status Finish(RunLock& lock) {
    const fs::path journal_file = dir_ / kJournal;
    auto journal = LoadJournal(fs_, journal_file, false);
    if (!journal.ok()) return journal.error();
    const JournalState& js = journal.value();
    JournalReader reader(journal_file);
    ReportBuilder builder;
    std::string results;
    std::vector<ResultRecord> rows;
    std::size_t n = 0;
    PILOT_RETURN_IF_ERROR(manifest_.ForEach([&](const ManifestItem& item) -> Status {
      auto at = js.done.find(item.id);
      if (at == js.done.end()) return BadInput("no result was journaled for this item", item.id);
      auto rec = reader.Read(at->second);
      if (!rec.ok()) return rec.error();
      results += ToJsonLine(rec.value());
      results += '\n';
      builder.Add(item, rec.value());
      if (rows.size() < kMarkdownItemRows) rows.push_back(std::move(rec).value());
      ++n;
      return {};
    }));
    if (js.done.size() != n) {
      return BadInput("the journal holds results for ids that are not in the manifest", journal_file.string());
    }
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/results.jsonl", results));
    outcome_.report = builder.Finish(plan_.params.acceptance,
                                     RunMetrics{js.processing_seconds, std::max(js.peak_rss_mb, PeakRssMegabytes()),
                                                js.device_peak_mb});
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/report.json", PrettyJson(ReportToJson(outcome_.report))));
    PILOT_RETURN_IF_ERROR(
        fs_.WriteFileAtomic(dir_ / "data/report.md", ReportToMarkdown(outcome_.report, header_.run_id, rows)));
    PILOT_RETURN_IF_ERROR(WriteRunRecord("finished"));
    PILOT_RETURN_IF_ERROR(FinalizeBag(fs_, dir_,
                                      {{"Bag-Software-Agent", std::string("pilot ") + build::kVersion},
                                       {"External-Identifier", header_.run_id}}));
    lock.RemoveFile();
    auto fingerprint = Sha256File(dir_ / "tagmanifest-sha256.txt", false);
    if (fingerprint.ok()) outcome_.fingerprint = fingerprint.value();
    outcome_.verify = VerifyRunFolder(dir_, VerifyOptions{});
    if (!outcome_.verify.ok()) {
      outcome_.exit_code = ExitCode::kVerifyFailed;
    } else if (!outcome_.report.acceptance_met) {
      outcome_.exit_code = ExitCode::kAcceptanceFailed;
    }
    return {};
  }

  const fs::path dir_;
  fs::path inputs_root_;
  const RunPlan& plan_;
  ManifestSource manifest_;  // iterates the run folder's copy once it exists
  const JournalHeader& header_;
  Stage& stage_;
  FileSystem& fs_;
  Clock& clock_;
  const RunControl& control_;
  JournalWriter* journal_ = nullptr;
  const std::unordered_map<std::string, std::uint64_t>* done_ = nullptr;
  RunOutcome outcome_;
  Progress progress_;
  std::size_t processed_ = 0;
  std::size_t sessions_ = 1;
  double session_start_ = 0, last_log_ = 0;
};

std::string ManifestCopyName(const fs::path& manifest) {
  return manifest.extension() == ".jsonl" ? "data/manifest.jsonl" : "data/manifest.json";
}

}  // namespace

std::string NewRunId(Clock& clock) {
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", rd() & 0xffffff);
  return clock.UtcNowCompact() + "-" + suffix;
}

bool IsValidRunId(const std::string& id) { return IsValidItemId(id) && id[0] != '.'; }

Result<RunOutcome> ExecuteRun(const RunPlan& plan, Stage& stage, FileSystem& fs, Clock& clock,
                              const RunControl& control) {
  std::string run_id = plan.run_id.empty() ? NewRunId(clock) : plan.run_id;
  if (!IsValidRunId(run_id)) {
    return BadInput("invalid run id '" + run_id + "'", "--run-id",
                    "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (Status st = fs.CreateDirectories(plan.runs_dir); !st.ok()) {
    Error e = st.error();
    e.code = ExitCode::kBadInput;  // nothing was created: a bad --runs-dir, not a failure during work
    return e;
  }
  const fs::path dir = plan.runs_dir / run_id;
  if (Status st = fs.CreateDirectoryExclusive(dir); !st.ok()) {
    Error e = st.error();
    e.code = ExitCode::kBadInput;
    return e;
  }
  auto lock = RunLock::Acquire(dir);
  if (!lock.ok()) return lock.error();
  spdlog::info("run {}: {} items, stage {} on {}", run_id, plan.manifest.size(), stage.Describe().kind,
               stage.Describe().device);
  PILOT_RETURN_IF_ERROR(fs.CreateDirectoryExclusive(dir / "data"));

  JournalHeader header;
  header.run_id = run_id;
  header.manifest_sha256 = plan.manifest.sha256();
  header.params_sha256 = Sha256Hex(plan.params_bytes);
  header.model_sha256 = plan.model_sha256;
  header.items = plan.manifest.size();
  header.manifest_copy = ManifestCopyName(plan.manifest.file());
  header.manifest_path = fs::absolute(plan.manifest.file()).lexically_normal().string();
  header.params_path = fs::absolute(plan.params_file).lexically_normal().string();
  header.model_path = fs::absolute(plan.params.stage.model).lexically_normal().string();
  header.inputs_root = plan.inputs_root.string();
  header.started_at = clock.UtcNowIso();
  auto journal = JournalWriter::Open(fs, dir / kJournal);
  if (!journal.ok()) return journal.error();
  if (Status st = journal.value().AppendHeader(header); !st.ok()) {
    Error e = st.error();
    e.hint = "nothing was processed; remove " + dir.string() + " and start a new run";
    return e;
  }
  return Driver(dir, plan, header, stage, fs, clock, control).Drive(journal.value(), lock.value(), nullptr, {});
}

Result<RunOutcome> ResumeRun(ResumeSetup& setup, Stage& stage, FileSystem& fs, Clock& clock,
                             const RunControl& control) {
  auto journal = JournalWriter::Open(fs, setup.run_dir / kJournal);
  if (!journal.ok()) return journal.error();
  spdlog::info("resume {}: {} of {} items already done", setup.journal.header.run_id, setup.journal.done.size(),
               setup.journal.header.items);
  return Driver(setup.run_dir, setup.plan, setup.journal.header, stage, fs, clock, control)
      .Drive(journal.value(), *setup.lock, &setup.journal, setup.notes);
}

}  // namespace pilot
