// `pilot load` as one call (load_run.h): setup, the cold start, the steps, the folder.
#include "pilot/load/load_run.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "pilot/bag.h"
#include "pilot/destination.h"
#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"
#include "pilot/stage.h"

namespace pilot {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

double Round3(double v) { return std::round(v * 1000.0) / 1000.0; }

// Times kept to the microsecond, so that what the records say is what the figures were made from.
void RoundTimes(std::vector<RequestRecord>& records) {
  for (RequestRecord& r : records) {
    r.arrived_ms = Round3(r.arrived_ms);
    r.started_ms = Round3(r.started_ms);
    r.finished_ms = Round3(r.finished_ms);
    if (r.ttft_ms) r.ttft_ms = Round3(*r.ttft_ms);
    if (r.tpot_ms) r.tpot_ms = Round3(*r.tpot_ms);
    for (double& g : r.itl_ms) g = Round3(g);
  }
}

struct LoadItems {
  std::vector<std::string> ids, texts, rejection;
};

Result<LoadItems> ReadLoadItems(FileSystem& fsys, const RunPlan& plan, InputKind input,
                                const ServiceSpec& service) {
  LoadItems items;
  PILOT_TRY(plan.manifest.ForEach([&](const ManifestItem& item) -> Status {
    if (items.ids.size() >= kMaxLoadItems) return {};
    Precheck pre = PrecheckItem(fsys, plan.inputs_root, item, plan.params.max_bytes, input);
    items.ids.push_back(item.id);
    if (pre.rejection) {
      items.rejection.push_back(pre.rejection->reason);
      items.texts.emplace_back();
    } else if (service.max_request_bytes > 0 && pre.text.size() > service.max_request_bytes) {
      items.rejection.emplace_back(reason::kTooLarge);
      items.texts.emplace_back();
    } else {
      items.rejection.emplace_back();
      items.texts.push_back(std::move(pre.text));
    }
    return {};
  }));
  if (std::all_of(items.rejection.begin(), items.rejection.end(),
                  [](const std::string& r) { return !r.empty(); })) {
    return BadInput(
        "no item of the manifest passes the prechecks and the service's largest request: there is "
        "nothing to serve",
        plan.manifest.file().string(), "run `pilot run` on it to see each item's reason");
  }
  return items;
}

// The stage as the server: one call per batch, tokenizing included, judged as a run judges.
class StageServer {
 public:
  StageServer(Stage& stage, const RunPlan& plan, const LoadItems& items, Clock& clock)
      : stage_(stage), items_(items), clock_(clock) {
    rules_ = RulesFor(stage.Describe(), plan.params.allowed_categories);
    rules_.vectors_float16 = plan.params.vectors_dtype == "float16";
    if (plan.params.generation) rules_.max_new_tokens = plan.params.generation->max_new_tokens;
  }

  std::vector<ServedItem> Serve(const std::vector<std::size_t>& batch) {
    const double entry = clock_.MonotonicSeconds();
    std::vector<std::string_view> inputs;
    std::vector<PreparedInput> prepared(batch.size());
    bool prepares = true;
    for (std::size_t k = 0; k < batch.size(); ++k) {
      inputs.emplace_back(items_.texts[batch[k]]);
      prepares = prepares && stage_.Prepare(inputs.back(), prepared[k]);
      prepared[k].key = items_.ids[batch[k]];
    }
    stage_.SetConcurrency(batch.size());
    // A token's time counts from this call's entry: tokenizing is part of the time to first token.
    const double prepared_ms = (clock_.MonotonicSeconds() - entry) * 1000.0;
    BatchOutput out;
    if (prepares) {
      std::vector<const PreparedInput*> ptrs;
      for (const PreparedInput& p : prepared) ptrs.push_back(&p);
      out = stage_.ProcessPrepared(inputs, ptrs);
    } else {
      out = stage_.Process(inputs);
    }
    std::vector<ServedItem> served(batch.size());
    if (!out.ok || out.items.size() != batch.size()) {
      for (ServedItem& s : served) {
        s.outcome = RequestOutcome::kFailed;
        s.reason = std::string(out.out_of_memory ? reason::kDeviceOutOfMemory : reason::kStageError);
      }
      return served;
    }
    const StageDescription& desc = stage_.Describe();
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const ItemOutput& o = out.items[k];
      ServedItem& s = served[k];
      ResultRecord accepted;
      if (!o.ok) {
        // The item's own reason (too many tokens, a prompt too long) rejects it; the stage failing
        // on it (no reason, an unknown one, stage_error, out of memory) fails it.
        const bool own = !o.reason.empty() && reason::IsKnown(o.reason) && o.reason != reason::kStageError &&
                         o.reason != reason::kDeviceOutOfMemory;
        s.outcome = own ? RequestOutcome::kRejected : RequestOutcome::kFailed;
        s.reason =
            own || o.reason == reason::kDeviceOutOfMemory ? o.reason : std::string(reason::kStageError);
      } else if (auto rejected = desc.output->judge(o, rules_, accepted)) {
        s.outcome = RequestOutcome::kRejected;
        s.reason = rejected->reason;
      } else if (o.completion) {
        s.output_tokens = o.completion->ids.size();
        s.token_ms = o.completion->token_ms;
        for (double& t : s.token_ms) t += prepared_ms;
      }
    }
    return served;
  }

 private:
  Stage& stage_;
  const LoadItems& items_;
  Clock& clock_;
  OutputRules rules_;
};

std::string StepLine(const LoadStepRecord& s, std::size_t index) {
  const LoadFigures& f = s.figures;
  std::string what = s.step.mode == LoadMode::kRate ? "rate " + FixedDecimals(s.step.arrivals.rate, 1) + "/s"
                                                    : "concurrency " + std::to_string(s.step.concurrency);
  std::string line = "step " + std::to_string(index) + " (" + what + "): " + std::to_string(f.issued) +
                     " issued, " + std::to_string(f.completed) + " completed";
  if (f.over_capacity) line += ", " + std::to_string(f.over_capacity) + " over capacity";
  if (f.rejected) line += ", " + std::to_string(f.rejected) + " rejected";
  if (f.timed_out) line += ", " + std::to_string(f.timed_out) + " timed out";
  if (f.failed) line += ", " + std::to_string(f.failed) + " failed";
  std::size_t resent = 0;
  for (const RequestRecord& r : s.result.records) resent += r.resent > 0;
  if (resent) line += " (" + std::to_string(resent) + " sent again after a reused connection died)";
  if (s.result.client_cpu_ms && !s.result.records.empty()) {
    line +=
        "; client CPU " +
        FixedDecimals(*s.result.client_cpu_ms * 1000.0 / static_cast<double>(s.result.records.size()), 1) +
        " us a request";
  }
  line += "; achieved " + FixedDecimals(f.achieved_per_s, 1) + "/s";
  if (f.completed) line += ", e2e p99 " + FixedDecimals(f.end_to_end[3].ms, 2) + " ms";
  if (!f.ttft.empty()) line += ", TTFT p99 " + FixedDecimals(f.ttft[3].ms, 2) + " ms";
  line += s.result.interrupted ? "; interrupted" : f.slo_met ? "; SLO met" : "; SLO missed";
  return line;
}

class LoadSession {
 public:
  // `stage` is null for a target over HTTP.
  LoadSession(FileSystem& fsys, Clock& clock, const LoadRequest& request, const LoadControl& control,
              RunPlan plan, ServiceSpec service, Stage* stage, LoadItems items, fs::path dir)
      : fs_(fsys),
        clock_(clock),
        request_(request),
        control_(control),
        plan_(std::move(plan)),
        service_(std::move(service)),
        stage_(stage),
        items_(std::move(items)),
        dir_(std::move(dir)) {
    if (stage_) server_.emplace(*stage_, plan_, items_, clock);
    target_.service = service_.batcher;
    target_.rejection = items_.rejection;
    target_.serve = [this](const std::vector<std::size_t>& batch) { return server_->Serve(batch); };
  }

  FolderIdentity Identity() const {
    return FolderIdentity{kFolderKindLoad, kLoadFormatVersion, dir_.filename().string(),
                          "pilot load: the service at a rate, with its SLO verdict"};
  }

  ojson StageJson() const {
    if (!stage_) {
      const HttpTargetSpec& t = *request_.target;
      return {{"kind", "http"},
              {"output", OpenAiApiName(t.api)},
              {"generates", t.api != OpenAiApi::kEmbeddings},
              {"device", "remote"},
              {"model_sha256", plan_.model_sha256},
              {"url", t.url},
              {"model", t.model}};
    }
    const StageDescription& d = stage_->Describe();
    return {{"kind", d.kind},
            {"output", d.output->name},
            {"generates", d.output->generates},
            {"device", d.device},
            {"model_sha256", d.model_sha256}};
  }

  Status WriteRecord(const std::string& state) {
    ojson j = RecordHead(Identity(), JoinArguments(plan_.command_line), state, started_at_,
                         state == "running" ? std::nullopt : std::optional<std::string>(clock_.UtcNowIso()));
    j["command_args"] = plan_.command_line;
    j["manifest_copy"] = ManifestCopyFileName(plan_.manifest.file());
    j["manifest_sha256"] = plan_.manifest.sha256();
    j["params_sha256"] = Sha256Hex(plan_.params_bytes);
    j["model_sha256"] = plan_.model_sha256;
    j["request"] = {{"params", fs::absolute(plan_.params_file).lexically_normal().string()},
                    {"manifest", fs::absolute(plan_.manifest.file()).lexically_normal().string()},
                    {"device", plan_.params.device},
                    {"search", LoadSearchName(request_.search)},
                    {"load", LoadRequestToJson(request_)}};
    j["service"] = ServiceToJson(service_);
    j["stage"] = StageJson();
    return fs_.WriteFileAtomic(dir_ / kRunRecord, PrettyJson(j));
  }

  Status Create() {
    started_at_ = clock_.UtcNowIso();
    PILOT_TRY(fs_.CreateDirectoryExclusive(dir_ / "data"));
    PILOT_TRY(WriteBagDeclaration(fs_, dir_));
    PILOT_TRY(CopyManifestPinned(fs_, plan_.manifest.file(),
                                 dir_ / ManifestCopyFileName(plan_.manifest.file()),
                                 plan_.manifest.sha256()));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kParamsCopy, plan_.params_bytes));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kEnvironmentFile, PrettyJson(plan_.environment)));
    return WriteRecord("running");
  }

  bool Stopped() const { return control_.should_stop && control_.should_stop(); }

  // One step at `step`, recorded; its figures.
  const LoadStepRecord& Run(const LoadStep& step) {
    RealLoadClock clock(clock_);
    LoadStepRecord s;
    s.step = step;
    LoadTick tick;
    if (control_.on_progress) {
      const std::size_t index = steps_.size();
      tick = [this, index](double now_ms, std::size_t issued, std::size_t done) {
        control_.on_progress("step " + std::to_string(index) + ": " + FixedDecimals(now_ms / 1000.0, 0) +
                             " s, " + std::to_string(issued) + " issued, " + std::to_string(done) +
                             " answered");
      };
    }
    s.result = request_.target
                   ? RunHttpStep(step, *request_.target, request_.api_key, items_.texts, items_.rejection,
                                 service_.batcher.deadline_ms, clock, control_.should_stop, tick)
                   : RunLoadStep(step, target_, clock, control_.should_stop, tick);
    RoundTimes(s.result.records);
    s.result.issue_ms = Round3(s.result.issue_ms);
    s.result.duration_ms = Round3(s.result.duration_ms);
    s.figures = SummarizeLoad(s.result.records, s.result.issue_ms, s.result.duration_ms, service_.slo);
    // A stop asked for ends the load (no further step), whether or not it cut this step short.
    interrupted_ = interrupted_ || s.result.interrupted || Stopped();
    for (const RequestRecord& r : s.result.records)
      jsonl_ += JsonLine(RequestToJson(r, steps_.size(), items_.ids[r.item])) + "\n";
    steps_.push_back(std::move(s));
    if (control_.on_progress) control_.on_progress(StepLine(steps_.back(), steps_.size() - 1));
    return steps_.back();
  }

  void ColdStart(double model_load_ms) {
    if (request_.target) {
      // The service's model was loaded by the service: the first request, served alone, is it.
      cold_["model_load_ms"] = nullptr;
      for (std::size_t i = 0; i < items_.rejection.size(); ++i) {
        if (!items_.rejection[i].empty()) continue;
        RealLoadClock clock(clock_);
        LoadStep one;
        one.mode = LoadMode::kConcurrency;
        one.requests = 1;
        const std::vector<std::string> texts{items_.texts[i]}, rejection{""};
        const LoadStepResult r = RunHttpStep(one, *request_.target, request_.api_key, texts, rejection,
                                             service_.batcher.deadline_ms, clock, control_.should_stop);
        if (r.records.empty()) return;
        cold_["first_request_ms"] = Round3(r.records[0].end_to_end_ms());
        cold_["first_request_item"] = items_.ids[i];
        cold_["first_request_outcome"] = RequestOutcomeName(r.records[0].outcome);
        if (!r.records[0].reason.empty()) cold_["first_request_reason"] = r.records[0].reason;
        return;
      }
      return;
    }
    cold_["model_load_ms"] = Round3(model_load_ms);
    for (std::size_t i = 0; i < items_.rejection.size(); ++i) {
      if (!items_.rejection[i].empty()) continue;
      const double t0 = clock_.MonotonicSeconds();
      const std::vector<ServedItem> served = server_->Serve({i});
      const double ms = (clock_.MonotonicSeconds() - t0) * 1000.0;
      cold_["first_request_ms"] = Round3(ms);
      cold_["first_request_item"] = items_.ids[i];
      cold_["first_request_outcome"] =
          RequestOutcomeName(served.empty() ? RequestOutcome::kFailed : served[0].outcome);
      return;
    }
  }

  // One replica's memory, as pilot plan reads it: this process's peak resident memory, and the
  // device allocator's peak on a GPU. A service over HTTP is not measured here.
  ojson MemoryJson() const {
    if (!stage_) return nullptr;
    const std::optional<double> device = stage_->PeakDeviceMemoryMb();
    return {{"peak_rss_mb", Round3(PeakRssMegabytes())},
            {"peak_device_mb", device ? ojson(Round3(*device)) : ojson(nullptr)}};
  }

  // Whether a ladder or a search may run another step: not after a stop, nor once its records
  // pass half of what verify reads.
  bool MayGoOn() {
    if (interrupted_) return false;
    if (jsonl_.size() > kMaxLoadRequestsBytes / 2) {
      capped_ = true;
      return false;
    }
    return true;
  }

  void Drive() {
    LoadStep first = request_.step;
    if (request_.search == LoadSearch::kNone) {
      Run(first);
      return;
    }
    // Synchronous: one client, its rate the ladder's and the search's start.
    LoadStep sync = first;
    sync.mode = LoadMode::kConcurrency;
    sync.concurrency = 1;
    const double r0 = Run(sync).figures.achieved_per_s;
    if (!MayGoOn() || !(r0 > 0)) return;
    LoadStep at = first;
    at.mode = LoadMode::kRate;
    if (request_.search == LoadSearch::kLadder) {
      for (double rate = r0; static_cast<int>(steps_.size()) < request_.max_steps && MayGoOn(); rate *= 2) {
        at.arrivals.rate = rate;
        if (BeyondCapacity(Run(at).figures)) break;
      }
      return;
    }
    const double start = first.arrivals.rate > 0 && first.mode == LoadMode::kRate ? first.arrivals.rate : r0;
    std::vector<RateTrial> trials;
    (void)FindPeakRate(
        start, request_.peak_precision, request_.max_steps - 1,
        [&](double rate) {
          if (!MayGoOn()) return false;
          at.arrivals.rate = rate;
          return Run(at).figures.slo_met;
        },
        trials);
  }

  Result<LoadOutcome> Finish(RunLock& lock) {
    ojson steps = ojson::array();
    bool any_met = false;
    std::optional<double> peak;
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      steps.push_back(LoadStepToJson(steps_[k], k));
      if (steps_[k].figures.slo_met) {
        any_met = true;
        if (steps_[k].step.mode == LoadMode::kRate)
          peak = std::max(peak.value_or(0.0), steps_[k].step.arrivals.rate);
      }
    }
    const bool single = request_.search == LoadSearch::kNone;
    const bool met = single ? !steps_.empty() && steps_[0].figures.slo_met : any_met;
    ojson verdict = {{"slo_met", met}};
    if (!single) verdict["peak_rate"] = peak ? ojson(*peak) : ojson(nullptr);
    ojson summary = {{"load", dir_.filename().string()},
                     {"search", LoadSearchName(request_.search)},
                     {"interrupted", interrupted_},
                     {"stopped_early", capped_ ? ojson("the request records passed half of what verify reads")
                                               : ojson(nullptr)},
                     {"request", LoadRequestToJson(request_)},
                     {"stage", StageJson()},
                     {"service", ServiceToJson(service_)},
                     {"items", items_.ids.size()},
                     {"cold_start", cold_},
                     {"memory", MemoryJson()},
                     {"steps", steps},
                     {"verdict", verdict}};
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kLoadRequests, jsonl_));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kLoadRequestsCsv, RequestsCsv(steps_, items_.ids)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kLoadSummary, PrettyJson(summary)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kReportHtml, LoadHtml(summary, steps_)));
    PILOT_TRY(WriteRecord(interrupted_ ? "interrupted" : "finished"));
    lock.RemoveFile();
    PILOT_TRY(FinalizeFolder(fs_, dir_, clock_.UtcNowIso().substr(0, 10), Identity()));
    auto verified = VerifyFolder(fs_, dir_, VerifyOptions{});
    if (!verified.ok()) return verified.error();
    LoadOutcome out;
    out.dir = dir_;
    out.interrupted = interrupted_;
    out.slo_met = met;
    out.summary = std::move(summary);
    out.verify = std::move(verified).value();
    out.fingerprint = out.verify.fingerprint;
    return out;
  }

 private:
  FileSystem& fs_;
  Clock& clock_;
  const LoadRequest& request_;
  const LoadControl& control_;
  RunPlan plan_;
  ServiceSpec service_;
  Stage* stage_;
  LoadItems items_;
  fs::path dir_;
  std::optional<StageServer> server_;
  LoadTarget target_;
  std::vector<LoadStepRecord> steps_;
  ojson cold_ = ojson::object();
  std::string jsonl_;  // every step's request records, as requests.jsonl holds them
  bool interrupted_ = false;
  bool capped_ = false;  // a ladder or search stopped by the records' size
  std::string started_at_;
};

}  // namespace

Result<LoadOutcome> RunLoad(FileSystem& fsys, Clock& clock, Runtime& runtime, const LoadRequest& asked,
                            const LoadControl& control) {
  LoadRequest request = asked;  // a target's served model and max_tokens resolved below
  RunRequest run = request.run;
  run.use_batch_plan = false;
  auto plan_or = BuildRunPlan(fsys, run);
  if (!plan_or.ok()) return plan_or.error();
  RunPlan plan = std::move(plan_or).value();
  const std::string params_where = plan.params_file.string();
  if (!plan.params.service) {
    return BadInput("the parameters have no `service`: pilot load needs the service it drives", params_where,
                    "add a `service` object with its batcher, queue and SLO (docs/load.md, 'The service')");
  }
  std::unique_ptr<Stage> stage;
  double model_load_ms = 0;
  bool generates = false;
  InputKind input = InputKind::kText;
  if (request.target) {
    // The service is the target's: only that it answers is checked here.
    HttpTargetSpec& target = *request.target;
    auto probe = ProbeTarget(target, request.api_key);
    if (!probe.ok()) return probe.error();
    const std::vector<std::string>& models = probe.value().models;
    if (target.model.empty()) {
      if (probe.value().status != 200) {
        return BadInput("the target answered GET /v1/models with HTTP " +
                            std::to_string(probe.value().status) + ", not a list of its models",
                        "--served-model", "name the served model with --served-model");
      }
      if (models.size() != 1) {
        std::string listed;
        for (std::size_t k = 0; k < models.size() && k < 8; ++k)
          listed += (k ? ", " : "") + ValueForMessage(models[k], 64);
        return BadInput("the target lists " + std::to_string(models.size()) + " model(s)" +
                            (listed.empty() ? std::string() : " (" + listed + ")") +
                            ": pilot cannot tell which one to ask for",
                        "--served-model", "name the served model with --served-model");
      }
      target.model = models[0];
    }
    if (target.max_tokens == 0)
      target.max_tokens = plan.params.generation ? plan.params.generation->max_new_tokens : 16;
    plan.environment = {{"client", "pilot load --target"},
                        {"libcurl", LibcurlVersion()},
                        {"target", request.target->url},
                        {"target_models", models}};
    generates = request.target->api != OpenAiApi::kEmbeddings;
  } else {
    PILOT_TRY(CheckEnvironment(runtime, plan.params, plan.runs_dir, "no load folder was created"));
    const double t0 = clock.MonotonicSeconds();
    auto built = BuildStage(fsys, runtime, plan.params, plan.model_sha256, plan.runs_dir);
    if (!built.ok()) return built.error();
    model_load_ms = (clock.MonotonicSeconds() - t0) * 1000.0;
    stage = std::move(built.value().stage);
    plan.environment = built.value().environment;
    PILOT_TRY(CheckStageDeclaresOutput(stage->Describe()));
    generates = stage->Describe().output->generates;
    input = stage->Describe().input;
  }
  auto service = ParseService(*plan.params.service, params_where, generates);
  if (!service.ok()) return service.error();
  if (request.target && !request.target->stream && generates &&
      (service.value().slo.ttft_ms > 0 || service.value().slo.tpot_ms > 0)) {
    return BadInput(
        "the service's SLO bounds ttft_ms or tpot_ms, and --no-stream gives no token times to judge them by",
        params_where, "stream (leave out --no-stream), or judge whole answers by slo.e2e_ms alone");
  }
  const ServiceSettings& b = service.value().batcher;
  const std::size_t room = b.grow_at_capacity ? std::max(b.queue_bound, b.grow_bound) : b.queue_bound;
  if (!request.target && request.step.mode == LoadMode::kConcurrency && request.step.concurrency > room) {
    return BadInput("--concurrency " + std::to_string(request.step.concurrency) +
                        " exceeds the queue's room of " + std::to_string(room) + " (service.queue_bound" +
                        (b.grow_at_capacity ? std::string(", grow_bound") : std::string()) + ")",
                    "--concurrency",
                    "a client waits for its answer: more clients than the queue holds are refused at once");
  }
  auto items = ReadLoadItems(fsys, plan, input, service.value());
  if (!items.ok()) return items.error();
  // The folder: new, resolved once, outside every pilot folder, named by a valid run id.
  fs::path dir = request.out.empty() ? plan.runs_dir / (NewRunId(clock) + "-load") : request.out;
  auto resolved = ResolveDestination(fsys, dir, "--out", Destination::kNew);
  if (!resolved.ok()) return resolved.error();
  dir = resolved.value();
  if (const std::string name = dir.filename().string(); !IsValidRunId(name)) {
    return BadInput("the load folder's name '" + ValueForMessage(name, 130) + "' is not a valid run id",
                    "--out", "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (!dir.parent_path().empty()) {
    if (Status st = fsys.CreateDirectories(dir.parent_path()); !st.ok()) {
      Error e = st.error();
      e.kind = ErrorKind::kBadInput;
      return e;
    }
  }
  if (control.on_ready) control.on_ready();
  if (Status st = fsys.CreateDirectoryExclusive(dir); !st.ok()) {
    Error e = st.error();
    e.kind = ErrorKind::kBadInput;
    e.hint = "a load test never reuses a folder: give another --out";
    return e;
  }
  auto lock = RunLock::Acquire(fsys, dir);
  if (!lock.ok()) return lock.error();
  LoadSession session(fsys, clock, request, control, std::move(plan), std::move(service).value(), stage.get(),
                      std::move(items).value(), dir);
  if (Status st = session.Create(); !st.ok()) {
    Error e = st.error();
    e.hint += std::string(e.hint.empty() ? "" : "; ") + "nothing was measured; remove " + dir.string();
    return e;
  }
  session.ColdStart(model_load_ms);
  session.Drive();
  return session.Finish(lock.value());
}

}  // namespace pilot
