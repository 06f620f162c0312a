#include "pilot/adapt/adapt.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "pilot/adapt/adapt_files.h"
#include "pilot/bag.h"
#include "pilot/build_info.h"
#include "pilot/destination.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"
#include "pilot/run.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// All the training text an adaptation holds in memory at once.
constexpr std::uint64_t kMaxTrainTextBytes = 512ull << 20;
constexpr std::uint64_t kMaxAdaptJournalBytes = 512ull << 20;
constexpr std::size_t kPredictChunk = 256;
constexpr std::size_t kCheckpointChunk = 1 << 20;

std::string CopyName(const std::string& base, const fs::path& manifest) {
  return base + (manifest.extension() == ".jsonl" ? ".jsonl" : ".json");
}

// SplitMix64: the data order's random stream (fixed here, unlike std::shuffle's algorithm).
std::uint64_t SplitMix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The order of epoch `epoch`: a Fisher-Yates permutation drawn from (seed, epoch) alone.
std::vector<std::size_t> EpochOrder(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (epoch + 1));
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[SplitMix(state) % i]);
  return order;
}

struct Item {
  std::string id;
  std::string text;
  std::int64_t label = 0;
};

// The prechecked items of both manifests and their accounting.
struct Prepared {
  std::vector<Item> train, eval;
  std::string train_accounting;                // data/train.jsonl
  std::vector<EvalAccountingLine> eval_lines;  // every eval id; evaluated ones filled at the end
  std::vector<std::size_t> eval_line_of;       // eval item -> its line
  std::size_t train_items = 0, eval_items = 0;
  std::map<std::string, std::size_t> train_reasons, eval_reasons;
};

struct ManifestPair {
  std::optional<ManifestSource> train, eval;
  fs::path train_root, eval_root;
};

Result<fs::path> ManifestRoot(FileSystem& fsys, const fs::path& manifest) {
  std::error_code ec;
  auto root = fsys.Resolve(fs::absolute(manifest, ec).parent_path());
  if (!root.ok())
    return BadInput("cannot resolve the manifest's folder: " + root.error().what, manifest.string());
  // Pinned: every input is opened beneath this folder as it is now (FileSystem::OpenBeneath).
  if (Status st = fsys.Anchor(root.value()); !st.ok()) {
    return BadInput("cannot open the manifest's folder: " + st.error().what, manifest.string());
  }
  return root.value();
}

// Prechecks one labelled manifest. `labels` are the model's.
Status PrecheckManifest(
    FileSystem& fsys, const ManifestSource& manifest, const fs::path& root,
    const std::map<std::string, std::int64_t>& labels, std::uint64_t max_bytes, bool training,
    std::vector<Item>& used, std::map<std::string, std::size_t>& reasons,
    const std::function<void(const ManifestItem&, const Precheck*, const Item*)>& account) {
  std::uint64_t text_bytes = 0;
  const char* which = training ? "training" : "evaluation";
  return manifest.ForEach([&](const ManifestItem& item) -> Status {
    if (!item.expected && !item.expected_rejection) {
      return BadInput(std::string("the ") + which + " item '" + item.id + "' has no `expected` label",
                      manifest.file().string(),
                      "every item of an adaptation manifest is labelled (`expected`), or expects a rejection "
                      "(`expected_rejection`)");
    }
    Precheck pre = PrecheckItem(fsys, root, item, max_bytes, InputKind::kText);
    if (!pre.rejection) {
      std::string why;
      if (!item.expected) {
        why = "it has no `expected` label to learn from";
      } else if (!labels.count(*item.expected)) {
        why = "its label '" + KeyForMessage(*item.expected) + "' is not one of the model's labels";
      }
      if (!why.empty()) {
        ResultRecord r;
        r.id = item.id;
        r.reason = std::string(reason::kCategoryNotAllowed);
        r.detail = why;
        pre.rejection = r;
      }
    }
    if (pre.rejection) {
      ++reasons[pre.rejection->reason];
      account(item, &pre, nullptr);
      return {};
    }
    text_bytes += pre.text.size();
    if (text_bytes > kMaxTrainTextBytes) {
      return BadInput(std::string("the ") + which + " texts exceed " +
                          std::to_string(kMaxTrainTextBytes >> 20) + " MiB in all",
                      manifest.file().string(), "an adaptation pilot is a small sample; use fewer items");
    }
    if (!training && used.size() >= kMaxAdaptEvalItems) {
      return BadInput(
          "more than " + std::to_string(kMaxAdaptEvalItems) + " evaluation items pass the prechecks",
          manifest.file().string(), "an adaptation pilot evaluates a sample; use fewer items");
    }
    used.push_back({item.id, std::move(pre.text), labels.at(*item.expected)});
    account(item, nullptr, &used.back());
    return {};
  });
}

Result<Prepared> PrepareItems(FileSystem& fsys, const ManifestPair& m,
                              const std::vector<std::string>& model_labels, std::uint64_t max_bytes) {
  std::map<std::string, std::int64_t> labels;
  for (std::size_t i = 0; i < model_labels.size(); ++i)
    labels.emplace(model_labels[i], static_cast<std::int64_t>(i));
  Prepared p;
  PILOT_TRY(PrecheckManifest(fsys, *m.train, m.train_root, labels, max_bytes, true, p.train, p.train_reasons,
                             [&](const ManifestItem& item, const Precheck* pre, const Item*) {
                               TrainAccountingLine line;
                               line.id = item.id;
                               if (pre) {
                                 line.status = "rejected";
                                 line.reason = pre->rejection->reason;
                                 line.detail = pre->rejection->detail;
                               } else {
                                 line.status = "used";
                                 line.label = *item.expected;
                               }
                               p.train_accounting += JsonLine(line.ToJson()) + "\n";
                               ++p.train_items;
                             }));
  PILOT_TRY(PrecheckManifest(fsys, *m.eval, m.eval_root, labels, max_bytes, false, p.eval, p.eval_reasons,
                             [&](const ManifestItem& item, const Precheck* pre, const Item*) {
                               EvalAccountingLine line;
                               line.id = item.id;
                               if (pre) {
                                 line.status = "rejected";
                                 line.reason = pre->rejection->reason;
                                 line.detail = pre->rejection->detail;
                               } else {
                                 line.status = "evaluated";
                                 line.expected = *item.expected;
                                 p.eval_line_of.push_back(p.eval_lines.size());
                               }
                               p.eval_lines.push_back(std::move(line));
                               ++p.eval_items;
                             }));
  if (p.train.empty()) {
    return BadInput("no training item passes the prechecks: there is nothing to learn from",
                    m.train->file().string(), "run `pilot run` on the manifest to see each item's reason");
  }
  if (p.eval.empty()) {
    return BadInput("no evaluation item passes the prechecks: nothing would measure the adaptation",
                    m.eval->file().string(), "run `pilot run` on the manifest to see each item's reason");
  }
  return p;
}

Result<ManifestPair> OpenManifests(FileSystem& fsys, const fs::path& train, const fs::path& eval) {
  ManifestPair m;
  auto t = ManifestSource::Open(fsys, train);
  if (!t.ok()) return t.error();
  m.train.emplace(std::move(t).value());
  auto e = ManifestSource::Open(fsys, eval);
  if (!e.ok()) return e.error();
  m.eval.emplace(std::move(e).value());
  auto tr = ManifestRoot(fsys, train);
  if (!tr.ok()) return tr.error();
  m.train_root = tr.value();
  auto er = ManifestRoot(fsys, eval);
  if (!er.ok()) return er.error();
  m.eval_root = er.value();
  // One id in both: an item evaluated on what it was trained on says nothing.
  std::set<std::string> ids;
  PILOT_TRY(m.train->ForEach([&](const ManifestItem& item) {
    ids.insert(item.id);
    return Status();
  }));
  std::string both;
  PILOT_TRY(m.eval->ForEach([&](const ManifestItem& item) {
    if (both.empty() && ids.count(item.id)) both = item.id;
    return Status();
  }));
  if (!both.empty()) {
    return BadInput("the id '" + both + "' is in both the training and the evaluation manifest",
                    eval.string(), "held-out evaluation needs disjoint manifests");
  }
  return m;
}

// Inference on the evaluation items: the summary, and each item's prediction.
struct Evaluation {
  EvalSummary summary;
  std::vector<AdaptPrediction> predictions;
};

Result<Evaluation> Evaluate(AdaptTrainer& trainer, const std::vector<Item>& eval,
                            const std::vector<std::string>& labels) {
  Evaluation out;
  for (std::size_t b = 0; b < eval.size(); b += kPredictChunk) {
    std::vector<const std::string*> texts;
    for (std::size_t i = b; i < std::min(eval.size(), b + kPredictChunk); ++i) texts.push_back(&eval[i].text);
    auto got = trainer.Predict(texts);
    if (!got.ok()) return got.error();
    if (got.value().size() != texts.size())
      return WorkFailed("the model gave another number of predictions", "adapt");
    for (const auto& p : got.value()) {
      if (p.label < 0 || static_cast<std::size_t>(p.label) >= labels.size() || !std::isfinite(p.confidence)) {
        return WorkFailed("the model's prediction names no label or is not finite", "adapt",
                          "check the model's output against its declared labels");
      }
      out.predictions.push_back(p);
    }
  }
  for (std::size_t i = 0; i < eval.size(); ++i) {
    const std::string& want = labels[static_cast<std::size_t>(eval[i].label)];
    auto& cell = out.summary.per_label[want];
    ++cell.second;
    ++out.summary.total;
    if (out.predictions[i].label == eval[i].label) {
      ++cell.first;
      ++out.summary.correct;
    }
  }
  return out;
}

nlohmann::ordered_json CursorJson(std::uint64_t step, std::uint64_t epoch, std::uint64_t position) {
  return {{"step", step}, {"epoch", epoch}, {"position", position}};
}

// Everything one process does on an adaptation folder once it exists.
class AdaptSession {
 public:
  AdaptSession(fs::path dir, FileSystem& fsys, Clock& clock, AdaptTrainer& trainer,
               const AdaptControl& control)
      : dir_(std::move(dir)), fs_(fsys), clock_(clock), trainer_(trainer), control_(control) {}

  AdaptParams params;
  AdaptTrainerInfo info;
  Prepared items;
  AdaptJournalHeader header;
  AdaptJournalState state;  // what is journaled
  std::vector<std::string> command_line;
  std::uint64_t step = 0;  // optimiser steps done (restored or taken)
  std::vector<std::string> notes;

  Status OpenJournal() {
    auto j = fs_.OpenAppend(dir_ / kAdaptJournal);
    if (!j.ok()) return j.error();
    journal_ = std::move(j).value();
    return {};
  }

  Status Append(const nlohmann::ordered_json& record) {
    PILOT_TRY(journal_->Append(JsonLine(record) + "\n"));
    return journal_->Sync();
  }

  Status StartSession() {
    session_started_ = clock_.MonotonicSeconds();
    return Append(
        AdaptSessionRecord(clock_.UnixSeconds(), static_cast<long>(::getpid()), JoinArguments(command_line)));
  }

  Status Baseline() {
    Progress("baseline", std::nullopt);
    auto ev = Evaluate(trainer_, items.eval, info.labels);
    if (!ev.ok()) return ev.error();
    AdaptBaseline b;
    b.eval = ev.value().summary;
    for (const auto& p : ev.value().predictions) {
      b.predictions.push_back(info.labels[static_cast<std::size_t>(p.label)]);
      b.confidences.push_back(std::clamp(p.confidence, 0.0, 1.0));
    }
    PILOT_TRY(Append(b.ToJson()));
    state.baseline = std::move(b);
    return {};
  }

  // Trains from `step` to the end, checkpointing; false when stopped first.
  Result<bool> Train() {
    const std::size_t n = items.train.size();
    const auto batch = static_cast<std::size_t>(params.batch_size);
    std::uint64_t cached_epoch = ~0ull;
    std::vector<std::size_t> order;
    std::uint64_t taken = 0;
    while (step < header.total_steps) {
      if ((control_.should_stop && control_.should_stop()) ||
          (control_.stop_after_steps > 0 && taken >= control_.stop_after_steps)) {
        return false;
      }
      const std::uint64_t epoch = step / header.steps_per_epoch;
      const std::size_t begin = static_cast<std::size_t>(step % header.steps_per_epoch) * batch;
      if (epoch != cached_epoch) {
        order = EpochOrder(n, header.seed, epoch);
        cached_epoch = epoch;
      }
      std::vector<const std::string*> texts;
      std::vector<std::int64_t> labels;
      for (std::size_t i = begin; i < std::min(n, begin + batch); ++i) {
        texts.push_back(&items.train[order[i]].text);
        labels.push_back(items.train[order[i]].label);
      }
      auto loss = trainer_.Step(texts, labels);
      if (!loss.ok()) return loss.error();
      losses_.push_back(loss.value());
      ++step;
      ++taken;
      last_loss_ = loss.value();
      if (step % params.checkpoint_every == 0 || step == header.total_steps) {
        PILOT_TRY(Checkpoint());
      } else {
        Progress("training", std::nullopt);
      }
    }
    return true;
  }

  Status Checkpoint() {
    auto ev = Evaluate(trainer_, items.eval, info.labels);
    if (!ev.ok()) return ev.error();
    const std::uint64_t epoch = step / header.steps_per_epoch;
    const std::uint64_t position = std::min<std::uint64_t>(
        (step % header.steps_per_epoch) * static_cast<std::uint64_t>(params.batch_size), items.train.size());
    auto bytes = trainer_.SaveCheckpoint(JsonLine(CursorJson(step, epoch, position)));
    if (!bytes.ok()) return bytes.error();
    AdaptCheckpointRecord rec;
    rec.step = step;
    rec.epoch = epoch;
    rec.position = position;
    rec.file = CheckpointFileName(step);
    rec.sha256 = Sha256Hex(bytes.value());
    rec.bytes = bytes.value().size();
    const double t0 = clock_.MonotonicSeconds();
    PILOT_TRY(WriteCheckpointFile(rec.file, bytes.value()));
    rec.write_ms = (clock_.MonotonicSeconds() - t0) * 1000.0;
    rec.losses = std::move(losses_);
    losses_.clear();
    rec.eval = ev.value().summary;
    rec.params_digest = trainer_.ParametersDigest();
    rec.at_unix = clock_.UnixSeconds();
    PILOT_TRY(Append(rec.ToJson()));
    state.checkpoints.push_back(std::move(rec));
    Progress("checkpoint", state.checkpoints.back().eval.accuracy());
    // The last K and the best stay; the record of what goes is durable before it goes.
    std::vector<std::string> prune = CheckpointsToPrune(state, params.keep_checkpoints);
    if (!prune.empty()) {
      PILOT_TRY(Append(AdaptPrunedRecord(prune, step)));
      for (const auto& f : prune) {
        state.pruned.insert(f);
        PILOT_TRY(RemoveIfPresent(dir_ / f));
      }
    }
    return {};
  }

  // Temp, fsync, rename: pieces through an AtomicFile, so that a kill mid-write leaves a
  // temp file (removed by a resume), never a short checkpoint under its name.
  Status WriteCheckpointFile(const std::string& rel, const std::string& bytes) {
    auto file = fs_.CreateAtomic(dir_ / rel);
    if (!file.ok()) return file.error();
    for (std::size_t at = 0; at < bytes.size(); at += kCheckpointChunk) {
      PILOT_TRY(file.value()->Append(std::string_view(bytes).substr(at, kCheckpointChunk)));
      if (at == 0 && control_.on_checkpoint_piece) control_.on_checkpoint_piece(step);
    }
    return file.value()->Commit();
  }

  Status RemoveIfPresent(const fs::path& file) {
    auto st = fs_.LinkStat(file);
    if (!st.ok() || !st.value().exists) return {};
    return fs_.RemoveFile(file);
  }

  void Progress(const char* phase, std::optional<double> eval) {
    if (!control_.on_progress) return;
    AdaptProgress p;
    p.phase = phase;
    p.step = step;
    p.total = header.total_steps;
    p.loss = last_loss_;
    const double secs = clock_.MonotonicSeconds() - session_started_;
    p.steps_per_second = secs > 0 ? static_cast<double>(step - session_first_step_) / secs : 0;
    p.eval_accuracy = eval;
    control_.on_progress(p);
  }

  void MarkSessionStart() { session_first_step_ = step; }

  FolderIdentity Identity() const {
    return FolderIdentity{kFolderKindAdapt, kAdaptFormatVersion, header.run_id,
                          "pilot adapt: the adaptation (fine-tuning) pilot"};
  }

  Status WriteRunRecord(const std::string& run_state, const std::string& started_at,
                        const std::string& adapted_sha) {
    nlohmann::ordered_json j =
        RecordHead(Identity(), JoinArguments(command_line), run_state, started_at,
                   run_state == "finished" ? std::optional<std::string>(clock_.UtcNowIso()) : std::nullopt);
    j["params_sha256"] = header.params_sha256;
    j["train_manifest_copy"] = header.train_manifest_copy;
    j["train_manifest_sha256"] = header.train_manifest_sha256;
    j["eval_manifest_copy"] = header.eval_manifest_copy;
    j["eval_manifest_sha256"] = header.eval_manifest_sha256;
    j["base_model_sha256"] = header.base_model_sha256;
    j["adapted_model_sha256"] =
        adapted_sha.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(adapted_sha);
    j["device"] = header.device;
    j["threads"] = header.threads;
    j["seed"] = header.seed;
    return fs_.WriteFileAtomic(dir_ / kRunRecord, PrettyJson(j));
  }

  // The reports, the model and its card, the accounting, then the bag and its verification.
  Result<AdaptOutcome> Finish(RunLock& lock) {
    Progress("finishing", std::nullopt);
    AdaptOutcome out;
    out.dir = dir_;
    out.run_id = header.run_id;
    auto ev = Evaluate(trainer_, items.eval, info.labels);
    if (!ev.ok()) return ev.error();
    auto model = trainer_.SaveModel();
    if (!model.ok()) return model.error();
    const std::string adapted_sha = Sha256Hex(model.value());
    PILOT_TRY(fs_.CreateDirectories(dir_ / kModelFolder));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptModel, model.value()));

    // data/eval.jsonl: base and adapted prediction per evaluated item.
    const AdaptBaseline& base = *state.baseline;
    std::string eval_text;
    for (std::size_t i = 0; i < items.eval.size(); ++i) {
      EvalAccountingLine& line = items.eval_lines[items.eval_line_of[i]];
      line.base = base.predictions[i];
      line.base_confidence = base.confidences[i];
      line.adapted = info.labels[static_cast<std::size_t>(ev.value().predictions[i].label)];
      line.adapted_confidence = std::clamp(ev.value().predictions[i].confidence, 0.0, 1.0);
    }
    for (const auto& line : items.eval_lines) eval_text += JsonLine(line.ToJson()) + "\n";
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptEvalAccounting, eval_text));

    // data/metrics.jsonl and the loss of every step, from the journal.
    const AdaptMetrics metrics = BuildAdaptMetrics(state, base.eval.accuracy());
    const std::vector<double>& losses = metrics.losses;
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptMetrics, metrics.text));

    AdaptReportFacts facts;
    facts.pilot_version = build::kVersion;
    facts.pilot_revision = build::kSourceRevision;
    facts.libtorch = info.libtorch;
    facts.trainable = info.trainable;
    facts.trainable_values = info.trainable_values;
    facts.seconds = state.training_seconds + (clock_.MonotonicSeconds() - session_started_);
    nlohmann::ordered_json r = BuildAdaptReport({header, state, params, metrics, items.train_reasons,
                                                 items.eval_reasons, ev.value().summary, adapted_sha,
                                                 model.value().size(), trainer_.ParametersDigest(), facts});
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptReportJson, PrettyJson(r)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptReportMarkdown, RenderAdaptMarkdown(r)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptReportHtml, RenderAdaptHtml(r, losses)));
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kAdaptModelCard, RenderAdaptModelCard(r)));
    PILOT_TRY(WriteRunRecord("finished", header.started_at, adapted_sha));
    lock.RemoveFile();
    PILOT_TRY(FinalizeFolder(fs_, dir_, clock_.UtcNowIso().substr(0, 10), Identity()));
    auto verified = VerifyFolder(fs_, dir_, VerifyOptions{});
    if (!verified.ok()) return verified.error();
    out.verify = std::move(verified).value();
    out.fingerprint = out.verify.fingerprint;
    out.adapted_sha256 = adapted_sha;
    out.verdict = !out.verify.ok()                     ? AdaptVerdict::kVerifyFailed
                  : r["acceptance"]["met"].get<bool>() ? AdaptVerdict::kPassed
                                                       : AdaptVerdict::kAcceptanceFailed;
    out.progress.step = step;
    out.progress.total = header.total_steps;
    out.report = std::move(r);
    out.notes = notes;
    return out;
  }

  // From Train() to the end: the outcome of this session.
  Result<AdaptOutcome> Drive(RunLock& lock) {
    auto trained = Train();
    if (!trained.ok()) return trained.error();
    if (!trained.value()) {
      lock.RemoveFile();  // a clean stop: everything done is journaled (even under a lock taken over)
      AdaptOutcome out;
      out.dir = dir_;
      out.run_id = header.run_id;
      out.verdict = AdaptVerdict::kInterrupted;
      const AdaptCheckpointRecord* last = state.checkpoints.empty() ? nullptr : &state.checkpoints.back();
      out.progress.step = last ? last->step : 0;
      out.progress.total = header.total_steps;
      out.notes = notes;
      return out;
    }
    return Finish(lock);
  }

 private:
  fs::path dir_;
  FileSystem& fs_;
  Clock& clock_;
  AdaptTrainer& trainer_;
  const AdaptControl& control_;
  std::unique_ptr<AppendFile> journal_;
  std::vector<double> losses_;
  double last_loss_ = 0;
  double session_started_ = 0;
  std::uint64_t session_first_step_ = 0;
};

AdaptTrainerConfig TrainerConfig(const AdaptParams& p, const std::string& device, const fs::path& model) {
  AdaptTrainerConfig c;
  c.model = model;
  c.device = device;
  c.dtype = p.dtype;
  c.trainable = p.trainable;
  c.optimiser = p.optimiser;
  c.learning_rate = p.learning_rate;
  c.momentum = p.momentum;
  c.weight_decay = p.weight_decay;
  c.threads = p.threads;
  c.seed = p.seed;
  return c;
}

std::uint64_t StepsPerEpoch(std::size_t used, int batch) {
  return (used + static_cast<std::size_t>(batch) - 1) / static_cast<std::size_t>(batch);
}

Result<std::string> HashModel(FileSystem& fsys, const fs::path& model) {
  auto st = fsys.Stat(model);
  if (!st.ok() || !st.value().regular) {
    return BadInput("the base model is not found, or not a regular file", model.string(),
                    "check 'base_model.path'");
  }
  return Sha256File(fsys, model);
}

Error AsBadInput(Error e, const std::string& hint) {
  e.kind = ErrorKind::kBadInput;
  if (!hint.empty()) e.hint = hint;
  return e;
}

}  // namespace

Result<AdaptPlan> PlanAdapt(FileSystem& fsys, Runtime& runtime, const AdaptRequest& request) {
  if (!request.device.empty() && !IsKnownDevice(request.device)) {
    return BadInput("unknown device '" + ValueForMessage(request.device) + "'", "--device",
                    "use auto, cpu, cuda or rocm");
  }
  std::error_code ec;
  const fs::path params_file = fs::absolute(request.params_file, ec).lexically_normal();
  auto bytes = ReadCapped(fsys, params_file, limits::kParamsBytes, "adaptation parameter file");
  if (!bytes.ok()) return bytes.error();
  auto params = ParseAdaptParams(bytes.value(), params_file.parent_path(), params_file.string());
  if (!params.ok()) return params.error();
  AdaptPlan plan;
  plan.params = std::move(params).value();
  if (!request.device.empty()) plan.params.device = request.device;
  plan.params_file = params_file;
  plan.params_bytes = std::move(bytes).value();
  plan.runs_dir = request.runs_dir;
  plan.run_id = request.run_id;
  plan.command_line = request.command_line;
  auto device = runtime.ResolveDevice(plan.params.device);
  if (!device.ok()) return device.error();
  plan.device = device.value();
  auto info = runtime.Info();
  if (!info.ok()) return info.error();
  plan.environment["host"] = HostInfo(fsys);
  plan.environment["libtorch"] = std::move(info).value();
  plan.environment["device"] = plan.device;
  return plan;
}

Result<AdaptOutcome> ExecuteAdapt(FileSystem& fsys, Clock& clock, const AdaptPlan& plan,
                                  AdaptTrainer& trainer, const AdaptControl& control) {
  const AdaptParams& p = plan.params;
  const std::string run_id = plan.run_id.empty() ? NewRunId(clock) : plan.run_id;
  if (!IsValidRunId(run_id)) {
    return BadInput("invalid run id '" + ValueForMessage(run_id, 130) + "'", "--run-id",
                    "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  auto runs_dir = ResolveDestination(fsys, plan.runs_dir, "--runs-dir", Destination::kFolder);
  if (!runs_dir.ok()) return runs_dir.error();
  auto model_sha = HashModel(fsys, p.base_model);
  if (!model_sha.ok()) return model_sha.error();
  if (model_sha.value() != p.base_model_sha256) {
    return BadInput(
        "the base model's sha256 is " + model_sha.value() + ", not the pinned " + p.base_model_sha256,
        p.base_model.string(), "pin the model you mean in 'base_model.sha256'");
  }
  auto manifests = OpenManifests(fsys, p.train_manifest, p.eval_manifest);
  if (!manifests.ok()) return manifests.error();
  auto info = trainer.Load(TrainerConfig(p, plan.device, p.base_model));
  if (!info.ok()) return info.error();
  auto prepared = PrepareItems(fsys, manifests.value(), info.value().labels, p.max_bytes);
  if (!prepared.ok()) return prepared.error();

  const fs::path dir = runs_dir.value() / run_id;
  if (Status st = fsys.CreateDirectories(runs_dir.value()); !st.ok()) return AsBadInput(st.error(), "");
  if (Status st = fsys.CreateDirectoryExclusive(dir); !st.ok()) {
    return AsBadInput(st.error(), "an adaptation never reuses a folder: give another --run-id");
  }
  auto lock = RunLock::Acquire(fsys, dir);
  if (!lock.ok()) return lock.error();
  AdaptSession s(dir, fsys, clock, trainer, control);
  s.params = p;
  s.info = std::move(info).value();
  s.items = std::move(prepared).value();
  s.command_line = plan.command_line;
  AdaptJournalHeader& h = s.header;
  h.run_id = run_id;
  h.params_sha256 = Sha256Hex(plan.params_bytes);
  h.train_manifest_sha256 = manifests.value().train->sha256();
  h.eval_manifest_sha256 = manifests.value().eval->sha256();
  h.base_model_sha256 = model_sha.value();
  h.train_manifest_copy = CopyName(kAdaptTrainManifest, p.train_manifest);
  h.eval_manifest_copy = CopyName(kAdaptEvalManifest, p.eval_manifest);
  h.train_accounting_sha256 = Sha256Hex(s.items.train_accounting);
  h.train_items = s.items.train_items;
  h.train_used = s.items.train.size();
  h.eval_items = s.items.eval_items;
  h.eval_used = s.items.eval.size();
  h.steps_per_epoch = StepsPerEpoch(h.train_used, p.batch_size);
  h.total_steps = p.steps ? *p.steps : static_cast<std::uint64_t>(*p.epochs) * h.steps_per_epoch;
  h.threads = p.threads;
  h.seed = p.seed;
  h.device = plan.device;
  h.dtype = p.dtype;
  std::error_code ec;
  h.params_path = fs::absolute(plan.params_file, ec).lexically_normal().string();
  h.base_model_path = fs::absolute(p.base_model, ec).lexically_normal().string();
  h.train_manifest_path = fs::absolute(p.train_manifest, ec).lexically_normal().string();
  h.eval_manifest_path = fs::absolute(p.eval_manifest, ec).lexically_normal().string();
  h.started_at = clock.UtcNowIso();
  h.started_unix = clock.UnixSeconds();
  if (h.total_steps < 1 || h.total_steps > kMaxAdaptSteps) {
    return BadInput("the adaptation would take " + std::to_string(h.total_steps) + " steps",
                    plan.params_file.string(), "use 1.." + std::to_string(kMaxAdaptSteps) + " steps");
  }

  Status created = [&]() -> Status {
    PILOT_TRY(fsys.CreateDirectoryExclusive(dir / "data"));
    // The record first: from here on the folder says what it is, even if killed at once.
    PILOT_TRY(s.WriteRunRecord("running", h.started_at, ""));
    PILOT_TRY(fsys.CreateDirectoryExclusive(dir / kAdaptCheckpointDir));
    PILOT_TRY(WriteBagDeclaration(fsys, dir));
    PILOT_TRY(fsys.WriteFileAtomic(dir / kParamsCopy, plan.params_bytes));
    PILOT_TRY(
        CopyManifestPinned(fsys, p.train_manifest, dir / h.train_manifest_copy, h.train_manifest_sha256));
    PILOT_TRY(CopyManifestPinned(fsys, p.eval_manifest, dir / h.eval_manifest_copy, h.eval_manifest_sha256));
    PILOT_TRY(fsys.WriteFileAtomic(dir / kEnvironmentFile, PrettyJson(plan.environment)));
    PILOT_TRY(fsys.WriteFileAtomic(dir / kAdaptTrainAccounting, s.items.train_accounting));
    PILOT_TRY(s.OpenJournal());
    PILOT_TRY(s.Append(h.ToJson()));
    return {};
  }();
  if (!created.ok()) {
    Error e = created.error();
    e.hint += std::string(e.hint.empty() ? "" : "; ") + "nothing was trained; remove " + dir.string() +
              " and start again";
    return e;
  }
  s.state.header = h;
  PILOT_TRY(s.StartSession());
  s.state.sessions = 1;
  PILOT_TRY(s.Baseline());
  return s.Drive(lock.value());
}

namespace {

// The folder's own files that a resume trusts only as regular files, never through a link.
Status CheckFolderEntries(FileSystem& fsys, const fs::path& dir) {
  for (const char* rel : {"data", kAdaptCheckpointDir}) {
    auto st = fsys.LinkStat(dir / rel);
    if (rel != std::string("data")) {
      auto journal = fsys.LinkStat(dir / kAdaptJournal);
      if (journal.ok() && !journal.value().exists) {
        return BadInput(
            "the adaptation never started: it was stopped before its journal's header was written, so "
            "nothing was trained",
            dir.string(), "remove the folder and run `pilot adapt` again");
      }
    }
    if (!st.ok() || !st.value().exists || st.value().symlink || !st.value().directory) {
      return BadInput("is not a folder (a symlink?); pilot never follows one inside an adaptation folder",
                      (dir / rel).string(), "the folder is damaged or hostile; start a new adaptation");
    }
  }
  auto model_dir = fsys.LinkStat(dir / kModelFolder);
  if (model_dir.ok() && model_dir.value().exists &&
      (model_dir.value().symlink || !model_dir.value().directory)) {
    return BadInput("is not a folder (a symlink?)", (dir / kModelFolder).string(),
                    "the folder is damaged or hostile; start a new adaptation");
  }
  return {};
}

Result<std::string> ReadPinned(FileSystem& fsys, const fs::path& dir, const std::string& rel,
                               const std::string& want, std::uint64_t cap) {
  auto text = ReadInsideFolder(fsys, dir, rel, cap);
  if (!text.ok()) return AsBadInput(text.error(), "the adaptation folder is damaged; it cannot be resumed");
  if (Sha256Hex(text.value()) != want) {
    return BadInput("the copy does not match the sha256 the journal binds it to", (dir / rel).string(),
                    "the folder was altered after the adaptation began; it cannot be resumed");
  }
  return text;
}

Result<AdaptJournalState> LoadAdaptJournal(FileSystem& fsys, const fs::path& dir) {
  auto text = ReadInsideFolder(fsys, dir, kAdaptJournal, kMaxAdaptJournalBytes);
  if (!text.ok()) return AsBadInput(text.error(), "the adaptation folder is damaged");
  return ParseAdaptJournal(text.value(), (dir / kAdaptJournal).string());
}

}  // namespace

Result<std::string> AdaptFolderDevice(FileSystem& fsys, const fs::path& dir) {
  auto state = LoadAdaptJournal(fsys, dir);
  if (!state.ok()) return state.error();
  return state.value().header.device;
}

namespace {

// Resuming, step by step: every check comes before the folder is changed.

// The parameters from their pinned copy, the manifest copies against their pins, and the base
// model: the same bytes, or nothing resumes.
Result<AdaptParams> ReadPinnedParams(FileSystem& fsys, const fs::path& dir, const AdaptJournalHeader& h) {
  // The copies, against the journal's pins; the parameters read from the copy.
  auto params_text = ReadPinned(fsys, dir, kParamsCopy, h.params_sha256, limits::kParamsBytes);
  if (!params_text.ok()) return params_text.error();
  const fs::path params_dir = fs::path(h.params_path).parent_path();
  auto params = ParseAdaptParams(params_text.value(), params_dir, (dir / kParamsCopy).string());
  if (!params.ok()) return params.error();
  for (const auto& [copy, pin] : {std::pair{h.train_manifest_copy, h.train_manifest_sha256},
                                  std::pair{h.eval_manifest_copy, h.eval_manifest_sha256}}) {
    auto sha = Sha256File(fsys, dir / copy, false);
    if (!sha.ok() || sha.value() != pin) {
      return BadInput("the manifest copy does not match the sha256 the journal binds it to",
                      (dir / copy).string(),
                      "the folder was altered after the adaptation began; it cannot be resumed");
    }
  }
  // The base model: the same bytes, or nothing resumes.
  auto model_sha = HashModel(fsys, h.base_model_path);
  if (!model_sha.ok()) return model_sha.error();
  if (model_sha.value() != h.base_model_sha256) {
    return BadInput("the base model changed since the adaptation began (sha256 " + model_sha.value() +
                        ", pinned " + h.base_model_sha256 + ")",
                    h.base_model_path, "restore the pinned model, or start a new adaptation");
  }
  return std::move(params).value();
}

// The manifests from their copies; the inputs they name, relative to the original manifests'
// folders.
Result<ManifestPair> OpenPinnedManifests(FileSystem& fsys, const fs::path& dir, const AdaptJournalHeader& h) {
  ManifestPair m;
  auto t = ManifestSource::Open(fsys, dir / h.train_manifest_copy);
  if (!t.ok()) return t.error();
  m.train.emplace(std::move(t).value());
  auto e = ManifestSource::Open(fsys, dir / h.eval_manifest_copy);
  if (!e.ok()) return e.error();
  m.eval.emplace(std::move(e).value());
  auto tr = ManifestRoot(fsys, h.train_manifest_path);
  if (!tr.ok()) return tr.error();
  m.train_root = tr.value();
  auto er = ManifestRoot(fsys, h.eval_manifest_path);
  if (!er.ok()) return er.error();
  m.eval_root = er.value();
  return m;
}

Status CheckHeaderFollows(const AdaptJournalHeader& h, const AdaptParams& p, const Prepared& prepared,
                          const fs::path& dir) {
  // The header's schedule and settings follow from the pinned parameters and the inputs: a
  // journal that says otherwise was altered (a huge total_steps would train for ever).
  const std::uint64_t per_epoch = StepsPerEpoch(prepared.train.size(), p.batch_size);
  const std::uint64_t total = p.steps ? *p.steps : static_cast<std::uint64_t>(*p.epochs) * per_epoch;
  if (h.steps_per_epoch != per_epoch || h.total_steps != total || h.threads != p.threads ||
      h.seed != p.seed || h.dtype != p.dtype || h.train_used != prepared.train.size() ||
      h.train_items != prepared.train_items || h.eval_items != prepared.eval_items) {
    return BadInput("the journal's header does not match the parameters and inputs it is bound to",
                    (dir / kAdaptJournal).string(), "the folder was altered; it cannot be resumed");
  }
  return {};
}

// Every kept checkpoint against its record; the names of the checkpoint files the journal does
// not keep (pilot's own, removed once every check has passed).
Result<std::vector<std::string>> CheckCheckpoints(FileSystem& fsys, const fs::path& dir,
                                                  const AdaptJournalState& state, const Prepared& prepared) {
  // Checkpoints: every kept one must match its record; anything else in the folder goes.
  std::set<std::string> kept_files;
  for (const auto* c : KeptCheckpoints(state)) {
    kept_files.insert(fs::path(c->file).filename().string());
    auto st = fsys.LinkStat(dir / c->file);
    if (!st.ok() || !st.value().exists || !st.value().regular || st.value().symlink) {
      return BadInput("a checkpoint the journal keeps is missing, or not a regular file",
                      (dir / c->file).string(),
                      "the folder was damaged after it was written; it cannot be resumed to the same bits");
    }
    if (st.value().size != c->bytes) {
      return BadInput(
          "the checkpoint is " + std::to_string(st.value().size) + " bytes, the journal records " +
              std::to_string(c->bytes) + " (tampered or damaged)",
          (dir / c->file).string(), "it cannot be resumed to the same bits; start a new adaptation");
    }
    auto sha = Sha256File(fsys, dir / c->file, false);
    if (!sha.ok() || sha.value() != c->sha256) {
      return BadInput(
          "the checkpoint does not match the sha256 the journal records for it (tampered or damaged)",
          (dir / c->file).string(), "it cannot be resumed to the same bits; start a new adaptation");
    }
  }
  std::vector<std::string> strays;
  auto listing = fsys.ListDirectory(dir / kAdaptCheckpointDir);
  if (!listing.ok()) return listing.error();
  for (const auto& entry : listing.value()) {
    if (kept_files.count(entry.name)) continue;
    const bool ours =
        IsCheckpointFileName(entry.name) ||
        (entry.name.rfind("step-", 0) == 0 && entry.name.find(".ckpt.tmp-") != std::string::npos);
    if (!ours || entry.stat.symlink || !entry.stat.regular) {
      return BadInput("an unexpected entry in the checkpoints folder",
                      (dir / kAdaptCheckpointDir / entry.name).string(),
                      "remove it if it is not yours; pilot removes only its own unjournaled checkpoints");
    }
    strays.push_back(entry.name);
  }
  const auto kept = KeptCheckpoints(state);
  if (!state.baseline && !kept.empty()) {
    return BadInput("the journal has checkpoints but no baseline evaluation", (dir / kAdaptJournal).string(),
                    "the folder is damaged; it cannot be resumed");
  }
  if (state.baseline && state.baseline->predictions.size() != prepared.eval.size()) {
    return BadInput("the baseline evaluation does not cover the evaluation items",
                    (dir / kAdaptJournal).string(), "the folder is damaged; it cannot be resumed");
  }
  return strays;
}

// The step the last kept checkpoint restores the trainer to (0: none kept).
Result<std::uint64_t> RestoreLastCheckpoint(FileSystem& fsys, const fs::path& dir,
                                            const AdaptJournalState& state, AdaptTrainer& trainer) {
  const auto kept = KeptCheckpoints(state);
  std::uint64_t restored_step = 0;
  if (!kept.empty()) {
    const AdaptCheckpointRecord& last = *kept.back();
    if (last.bytes > trainer.CheckpointBytesLimit()) {
      return BadInput("the checkpoint's recorded size " + std::to_string(last.bytes) +
                          " is more than a checkpoint of this model can take (" +
                          std::to_string(trainer.CheckpointBytesLimit()) + ")",
                      (dir / last.file).string(), "the folder was altered; it cannot be resumed");
    }
    auto bytes = ReadInsideFolder(fsys, dir, last.file, last.bytes);
    if (!bytes.ok()) return AsBadInput(bytes.error(), "the checkpoint cannot be read");
    if (Sha256Hex(bytes.value()) != last.sha256) {
      return BadInput("the checkpoint changed while it was read", (dir / last.file).string());
    }
    auto cursor = trainer.LoadCheckpoint(bytes.value());
    if (!cursor.ok()) return cursor.error();
    auto cj = ParseJson(cursor.value(), (dir / last.file).string());
    if (!cj.ok() || UnsignedAt(cj.value(), "step") != last.step) {
      return BadInput("the checkpoint's cursor does not match its journal record",
                      (dir / last.file).string());
    }
    if (trainer.ParametersDigest() != last.params_digest) {
      return BadInput("the checkpoint's parameters do not match the digest the journal records",
                      (dir / last.file).string());
    }
    restored_step = last.step;
  }

  return restored_step;
}

// The folder made ready to append to: a torn last journal record cut off, the stray
// checkpoints and the temp files of writes a killed process never renamed removed.
Status CleanUpForResume(FileSystem& fsys, const fs::path& dir, const AdaptJournalState& state,
                        const std::vector<std::string>& strays, std::vector<std::string>& notes) {
  // A torn last journal record goes first, so that appends continue after whole records.
  if (state.torn_bytes > 0) {
    PILOT_TRY(fsys.Truncate(dir / kAdaptJournal, state.valid_bytes));
    notes.push_back("dropped a torn last journal record (" + std::to_string(state.torn_bytes) +
                    " bytes) left by a process killed while appending");
  }
  for (const auto& name : strays) {
    PILOT_TRY(fsys.RemoveFile(dir / kAdaptCheckpointDir / name));
    notes.push_back("removed " + std::string(kAdaptCheckpointDir) + "/" + name +
                    " (written by a process killed before its journal record, or pruned)");
  }
  // Temp files of writes a killed process never renamed (reports, the model, copies).
  for (const fs::path& d : {dir, dir / "data", dir / kModelFolder}) {
    auto entries = fsys.ListDirectory(d);
    if (!entries.ok()) continue;
    for (const DirEntry& e : entries.value()) {
      if (e.name.find(".tmp-") != std::string::npos && e.stat.regular && !e.stat.symlink) {
        PILOT_TRY(fsys.RemoveFile(d / e.name));
      }
    }
  }

  return {};
}

}  // namespace

Result<AdaptOutcome> ResumeAdapt(FileSystem& fsys, Clock& clock, const fs::path& given,
                                 const std::string& device, const std::vector<std::string>& command_line,
                                 AdaptTrainer& trainer, const AdaptControl& control) {
  std::error_code ec;
  const fs::path dir = fs::absolute(given, ec).lexically_normal();
  auto lock = RunLock::Acquire(fsys, dir);
  if (!lock.ok()) return lock.error();
  std::vector<std::string> notes;
  if (lock.value().stale_taken_over()) notes.push_back("took over the lock left by a process that is gone");
  PILOT_TRY(CheckFolderEntries(fsys, dir));
  auto finished = fsys.LinkStat(dir / kTagManifest);
  if (finished.ok() && finished.value().exists) {
    return BadInput("the adaptation has already finished", dir.string(), "verify it with `pilot verify`");
  }
  auto loaded = LoadAdaptJournal(fsys, dir);
  if (!loaded.ok()) return loaded.error();
  AdaptJournalState state = std::move(loaded).value();
  const AdaptJournalHeader h = state.header;
  if (!device.empty() && device != h.device) {
    return BadInput("the adaptation ran on '" + h.device + "', not '" + ValueForMessage(device) + "'",
                    "--device", "resume on the device it began on: bitwise identity holds only there");
  }
  auto params = ReadPinnedParams(fsys, dir, h);
  if (!params.ok()) return params.error();
  AdaptParams p = std::move(params).value();
  // The inputs: the copies name them, relative to the original manifests' folders.
  auto manifests = OpenPinnedManifests(fsys, dir, h);
  if (!manifests.ok()) return manifests.error();
  AdaptTrainerConfig config = TrainerConfig(p, h.device, h.base_model_path);
  config.threads = h.threads;
  config.seed = h.seed;
  auto info = trainer.Load(config);
  if (!info.ok()) return info.error();
  auto prepared = PrepareItems(fsys, manifests.value(), info.value().labels, p.max_bytes);
  if (!prepared.ok()) return prepared.error();
  if (Sha256Hex(prepared.value().train_accounting) != h.train_accounting_sha256 ||
      prepared.value().eval.size() != h.eval_used) {
    return BadInput(
        "the inputs' prechecks differ from when the adaptation began (an input changed, or was removed)",
        h.train_manifest_path, "restore the inputs as they were, or start a new adaptation");
  }
  PILOT_TRY(CheckHeaderFollows(h, p, prepared.value(), dir));

  auto strays = CheckCheckpoints(fsys, dir, state, prepared.value());
  if (!strays.ok()) return strays.error();
  auto restored_step = RestoreLastCheckpoint(fsys, dir, state, trainer);
  if (!restored_step.ok()) return restored_step.error();

  // Everything checked: only from here on is the folder changed.
  PILOT_TRY(CleanUpForResume(fsys, dir, state, strays.value(), notes));

  AdaptSession s(dir, fsys, clock, trainer, control);
  s.params = p;
  s.info = std::move(info).value();
  s.items = std::move(prepared).value();
  s.header = h;
  s.command_line = command_line;
  s.step = restored_step.value();
  s.state = std::move(state);
  s.notes = notes;
  PILOT_TRY(s.OpenJournal());
  PILOT_TRY(s.StartSession());
  ++s.state.sessions;
  s.MarkSessionStart();
  if (!s.state.baseline) PILOT_TRY(s.Baseline());
  return s.Drive(lock.value());
}

Result<AdaptStatus> ReadAdaptStatus(FileSystem& fsys, const fs::path& dir) {
  auto state = LoadAdaptJournal(fsys, dir);
  if (!state.ok()) return state.error();
  AdaptStatus st;
  st.run_id = state.value().header.run_id;
  st.total = state.value().header.total_steps;
  if (!state.value().checkpoints.empty()) {
    st.step = state.value().checkpoints.back().step;
    st.last_eval_accuracy = state.value().checkpoints.back().eval.accuracy();
  }
  st.checkpoints_kept = KeptCheckpoints(state.value()).size();
  st.writer_pid = LockHolder(fsys, dir);
  auto finished = fsys.LinkStat(dir / kTagManifest);
  const bool done = finished.ok() && finished.value().exists;
  st.state = st.writer_pid ? "running" : done ? "finished" : "interrupted";
  return st;
}

}  // namespace pilot
