#include "pilot/run.h"

#include <random>

#include <spdlog/spdlog.h>

#include "pilot/build_info.h"
#include "pilot/bag.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

#define PILOT_RETURN_IF_ERROR(expr)      \
  do {                                   \
    if (Status _st = (expr); !_st.ok())  \
      return _st.error();                \
  } while (0)

ResultRecord FromStage(const ManifestItem& item, const StageOutput& out, const StageDescription& desc,
                       const std::vector<std::string>& allowed, double latency_ms) {
  ResultRecord r;
  if (!out.ok) {
    r = ResultRecord::Rejected(item.id, out.out_of_memory ? reason::kDeviceOutOfMemory : reason::kStageError,
                               out.error);
  } else if (std::find(allowed.begin(), allowed.end(), out.label) == allowed.end()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", out.confidence);
    r = ResultRecord::Rejected(item.id, reason::kCategoryNotAllowed,
                               "model says '" + out.label + "' (" + buf + "), not in allowed_categories");
  } else if (out.confidence < desc.min_confidence) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "top label '%s' at %.3f is below min_confidence %.3f", out.label.c_str(),
                  out.confidence, desc.min_confidence);
    r = ResultRecord::Rejected(item.id, reason::kLowConfidence, buf);
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

class RunWriter {
 public:
  RunWriter(const RunPlan& plan, Stage& stage, FileSystem& fs, Clock& clock)
      : plan_(plan), stage_(stage), fs_(fs), clock_(clock) {}

  Result<RunOutcome> Execute() {
    outcome_.run_id = plan_.run_id.empty() ? NewRunId(clock_) : plan_.run_id;
    if (!IsValidRunId(outcome_.run_id)) {
      return BadInput("invalid run id '" + outcome_.run_id + "'", "--run-id",
                      "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
    }
    PILOT_RETURN_IF_ERROR(fs_.CreateDirectories(plan_.runs_dir));
    dir_ = plan_.runs_dir / outcome_.run_id;
    outcome_.run_dir = dir_;
    PILOT_RETURN_IF_ERROR(fs_.CreateDirectoryExclusive(dir_));
    spdlog::info("run {}: {} items, stage {} on {}", outcome_.run_id, plan_.manifest.items.size(),
                 stage_.Describe().kind, stage_.Describe().device);
    PILOT_RETURN_IF_ERROR(fs_.CreateDirectoryExclusive(dir_ / "data"));
    PILOT_RETURN_IF_ERROR(WriteBagDeclaration(fs_, dir_));
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / ManifestCopy(), plan_.manifest_bytes));
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/params.json", plan_.params_bytes));
    started_at_ = clock_.UtcNowIso();
    PILOT_RETURN_IF_ERROR(WriteRunRecord("running"));
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/environment.json", PrettyJson(plan_.environment)));
    PILOT_RETURN_IF_ERROR(OpenJournal());
    PILOT_RETURN_IF_ERROR(ProcessAll());
    PILOT_RETURN_IF_ERROR(WriteResultsAndReport());
    PILOT_RETURN_IF_ERROR(WriteRunRecord("finished"));
    PILOT_RETURN_IF_ERROR(FinalizeBag(fs_, dir_,
                                      {{"Bag-Software-Agent", std::string("pilot ") + build::kVersion},
                                       {"External-Identifier", outcome_.run_id}}));
    outcome_.verify = VerifyRunFolder(dir_, VerifyOptions{});
    if (!outcome_.verify.ok()) {
      outcome_.exit_code = ExitCode::kVerifyFailed;
    } else if (!outcome_.report.acceptance_met) {
      outcome_.exit_code = ExitCode::kAcceptanceFailed;
    }
    return std::move(outcome_);
  }

 private:
  std::string ManifestCopy() const {
    return plan_.manifest_file.extension() == ".jsonl" ? "data/manifest.jsonl" : "data/manifest.json";
  }

  Status WriteRunRecord(const std::string& state) {
    nlohmann::ordered_json j;
    j["run_id"] = outcome_.run_id;
    j["pilot_version"] = build::kVersion;
    j["source_revision"] = build::kSourceRevision;
    j["command_line"] = JoinCommandLine(plan_.command_line);
    j["state"] = state;
    j["started_at"] = started_at_;
    j["finished_at"] = state == "finished" ? nlohmann::ordered_json(clock_.UtcNowIso()) : nlohmann::ordered_json();
    j["manifest_copy"] = ManifestCopy();
    j["manifest_sha256"] = Sha256Hex(plan_.manifest_bytes);
    j["params_sha256"] = Sha256Hex(plan_.params_bytes);
    j["model_sha256"] = plan_.model_sha256;
    const StageDescription& d = stage_.Describe();
    j["plan"] = {{"manifest", fs::absolute(plan_.manifest_file).string()},
                 {"inputs_root", plan_.inputs_root.string()},
                 {"params", fs::absolute(plan_.params_file).string()},
                 {"model", fs::absolute(plan_.params.stage.model).string()},
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

  Status OpenJournal() {
    auto file = fs_.OpenAppend(dir_ / "data/journal.jsonl");
    if (!file.ok()) return file.error();
    journal_ = std::move(file).value();
    nlohmann::ordered_json header;
    header["type"] = "header";
    header["run_id"] = outcome_.run_id;
    header["manifest_sha256"] = Sha256Hex(plan_.manifest_bytes);
    header["params_sha256"] = Sha256Hex(plan_.params_bytes);
    header["model_sha256"] = plan_.model_sha256;
    header["items"] = plan_.manifest.items.size();
    header["started_at"] = started_at_;
    if (Status st = journal_->Append(header.dump() + "\n"); !st.ok()) return st;
    return journal_->Sync();
  }

  Status ProcessAll() {
    const auto& items = plan_.manifest.items;
    const std::size_t batch = static_cast<std::size_t>(plan_.params.batch_size);
    records_.reserve(items.size());
    double start = clock_.MonotonicSeconds();
    double last_log = start;
    for (std::size_t begin = 0; begin < items.size(); begin += batch) {
      std::size_t end = std::min(items.size(), begin + batch);
      std::vector<std::optional<ResultRecord>> slot(end - begin);
      std::vector<std::string> texts;
      std::vector<std::size_t> staged;  // indexes into slot
      for (std::size_t i = begin; i < end; ++i) {
        Precheck pre = PrecheckItem(fs_, plan_.inputs_root, items[i], plan_.params.max_bytes);
        if (pre.rejection) {
          slot[i - begin] = std::move(pre.rejection);
        } else {
          texts.push_back(std::move(pre.text));
          staged.push_back(i - begin);
        }
      }
      if (!texts.empty()) {
        std::vector<std::string_view> views(texts.begin(), texts.end());
        double t0 = clock_.MonotonicSeconds();
        std::vector<StageOutput> outs = stage_.Classify(views);
        double latency_ms = (clock_.MonotonicSeconds() - t0) * 1000.0;
        for (std::size_t k = 0; k < staged.size(); ++k) {
          StageOutput out = k < outs.size() ? outs[k] : StageOutput{false, "", 0, "the stage returned too few outputs", false};
          slot[staged[k]] = FromStage(items[begin + staged[k]], out, stage_.Describe(),
                                      plan_.params.allowed_categories, latency_ms);
        }
      }
      std::string lines;
      for (auto& rec : slot) {
        lines += ToJson(*rec, {{"type", "result"}}).dump() + "\n";
        records_.push_back(std::move(*rec));
      }
      // Journaled and synced before anything derived from these results is written.
      if (Status st = journal_->Append(lines); !st.ok()) return st;
      if (Status st = journal_->Sync(); !st.ok()) return st;
      double now = clock_.MonotonicSeconds();
      if (now - last_log >= 5.0) {
        last_log = now;
        double rate = records_.size() / std::max(1e-9, now - start);
        spdlog::info("progress: {}/{} items, {:.1f} items/s, ETA {:.0f} s", records_.size(), items.size(), rate,
                     (items.size() - records_.size()) / std::max(1e-9, rate));
      }
    }
    wall_seconds_ = clock_.MonotonicSeconds() - start;
    return {};
  }

  Status WriteResultsAndReport() {
    std::string results;
    for (const auto& r : records_) results += ToJsonLine(r) + "\n";
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/results.jsonl", results));
    outcome_.report = BuildReport(plan_.manifest, records_, plan_.params.acceptance,
                                  RunMetrics{wall_seconds_, PeakRssMegabytes()});
    PILOT_RETURN_IF_ERROR(fs_.WriteFileAtomic(dir_ / "data/report.json", PrettyJson(ReportToJson(outcome_.report))));
    return fs_.WriteFileAtomic(dir_ / "data/report.md", ReportToMarkdown(outcome_.report, outcome_.run_id, records_));
  }

  const RunPlan& plan_;
  Stage& stage_;
  FileSystem& fs_;
  Clock& clock_;
  fs::path dir_;
  RunOutcome outcome_;
  std::string started_at_;
  std::unique_ptr<AppendFile> journal_;
  std::vector<ResultRecord> records_;
  double wall_seconds_ = 0;
};

}  // namespace

std::string NewRunId(Clock& clock) {
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", rd() & 0xffffff);
  return clock.UtcNowCompact() + "-" + suffix;
}

bool IsValidRunId(const std::string& id) { return IsValidItemId(id) && id[0] != '.'; }

Result<RunOutcome> ExecuteRun(const RunPlan& plan, Stage& stage, FileSystem& fs, Clock& clock) {
  return RunWriter(plan, stage, fs, clock).Execute();
}

}  // namespace pilot
