#include "pilot/run.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_map>

#include "engine/bounded_queue.h"
#include "pilot/bag.h"
#include "pilot/batch_plan.h"
#include "pilot/build_info.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"
#include "pilot/stage.h"
#include "pilot/utf8.h"
#include "pilot/vectors.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// Judges one item's outcome through the stage's output kind. `failed`: the stage failed on
// this item alone (a batch of one), `out_of_memory` saying whether from lack of device memory.
ResultRecord Judge(const ManifestItem& item, const ItemOutput& out, bool out_of_memory,
                   const StageDescription& desc, const OutputRules& rules, double latency_ms) {
  ResultRecord r;
  if (!out.ok) {
    const bool known = !out.reason.empty() && reason::IsKnown(out.reason);
    r = ResultRecord::Rejected(
        item.id,
        out_of_memory ? reason::kDeviceOutOfMemory
        : known       ? std::string_view(out.reason)
                      : reason::kStageError,
        TruncateUtf8(out.error.empty() ? "the stage failed without a message" : out.error, 2000));
  } else if (auto rejected = desc.output->judge(out, rules, r)) {
    r = ResultRecord::Rejected(item.id, rejected->reason, std::move(rejected->detail));
  } else {
    r.id = item.id;
    r.accepted = true;
  }
  r.model = "sha256:" + desc.model_sha256;
  r.latency_ms = latency_ms;
  r.tokens = out.tokens;
  r.truncated = out.truncated;
  return r;
}

std::string JoinCommandLine(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

Error Interrupted() { return Error{ErrorKind::kInterrupted, "interrupted", "", ""}; }

// The byte copy of the manifest, hashed after it landed: it must be the validated bytes the
// run is bound to (`want`), or the manifest changed while pilot copied it.
Status CopyPinnedManifest(FileSystem& fs, const fs::path& from, const fs::path& to, const std::string& want) {
  PILOT_TRY(fs.CopyFileAtomic(from, to));
  auto digest = Sha256File(fs, to, /*follow_symlinks=*/false);
  if (!digest.ok()) return digest.error();
  if (digest.value() != want) {
    return BadInput("the manifest changed while pilot was copying it (its copy's sha256 is " +
                        digest.value() + ", the run is bound to " + want + ")",
                    from.string(), "leave the manifest alone while a run starts");
  }
  return {};
}

// Drives one process's session on a run folder: processes the items without a result,
// then finishes the folder. Shared by a fresh run and a resumed one.
class Driver {
 public:
  Driver(const fs::path& dir, const RunPlan& plan, const JournalHeader& header, Stage& stage, FileSystem& fs,
         Clock& clock, const RunControl& control)
      : dir_(dir),
        plan_(plan),
        manifest_(plan.manifest),
        header_(header),
        stage_(stage),
        fs_(fs),
        clock_(clock),
        control_(control) {
    auto root = fs.Resolve(plan.inputs_root);
    auto root_stat = fs.Stat(plan.inputs_root);
    // Gone: every item will be missing_file.
    inputs_root_ = root.ok() && root_stat.ok() && root_stat.value().exists ? root.value() : plan.inputs_root;
  }

  // `previous`: the journal's state when resuming, null for a fresh run.
  Result<RunOutcome> Drive(JournalWriter& journal, RunLock& lock, JournalState* previous,
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
    progress_.total = header_.items;
    progress_.done = progress_.accepted + progress_.rejected;
    sessions_ = (previous ? previous->sessions : 0) + 1;
    previous_ = previous;
    Status st = Work(previous != nullptr);
    if (!st.ok() && st.error().kind == ErrorKind::kInterrupted) {
      lock.RemoveFile();  // a clean stop: everything done is journaled
      outcome_.interrupted = true;
      outcome_.verdict = RunVerdict::kInterrupted;
      outcome_.progress = progress_;
      return std::move(outcome_);
    }
    if (st.ok()) st = Finish(lock);
    if (!st.ok()) {
      // The folder exists: whatever failed, it failed during work (exit 5), and the folder
      // keeps everything journaled so far.
      Error e = st.error();
      e.kind = ErrorKind::kWorkFailed;
      e.hint += std::string(e.hint.empty() ? "" : "; ") +
                "the run folder is unfinished but resumable: pilot resume " + dir_.string();
      return e;
    }
    outcome_.progress = progress_;
    return std::move(outcome_);
  }

 private:
  Status Work(bool resumed) {
    const StageDescription& d = stage_.Describe();
    PILOT_TRY(journal_->AppendSession({{"pid", static_cast<long>(::getpid())},
                                       {"resumed", resumed},
                                       {"device", d.device},
                                       {"pilot_version", build::kVersion}},
                                      clock_.UnixSeconds()));
    session_start_ = clock_.MonotonicSeconds();
    last_log_ = session_start_;
    PILOT_TRY(EnsureFolderFiles());
    PILOT_TRY(WriteRunRecord("running"));
    PILOT_TRY(OpenSidecar(previous_));
    return RunPipeline();
  }

  // --- the pipeline ---------------------------------------------------------------------
  // reader:   iterates the manifest copy, skipping ids already journaled, into batches
  // workers:  (prepare_threads of them) read, hash and precheck each batch's inputs
  // this thread: the stage (bisecting failed batches), judging, numbering sidecar offsets
  // writer:   appends each batch's vectors (fsynced) and then its journal records (fsynced)
  // Batches go through bounded queues in manifest order; the writer journals them in that
  // order, one fsync per batch, exactly as the serial loop did.
  // A batch as the reader cuts it: its items, and how many the stage works on at once (the
  // batch size; a stage that refills its slots takes more items than that per call).
  struct RawBatch {
    std::vector<ManifestItem> items;
    std::size_t slots = 1;
  };
  struct Prepared {
    std::size_t slots = 1;
    std::vector<ManifestItem> items;
    std::vector<std::optional<ResultRecord>> slot;  // prechecks' rejections
    std::vector<std::string> texts;
    std::vector<std::size_t> staged;      // items[staged[k]] holds texts[k]
    std::vector<PreparedInput> features;  // the stage's Prepare(texts[k]), when it has one
  };
  struct Written {
    std::vector<ResultRecord> records;
    std::string vectors;
    std::vector<BatchFailure> failures;
    double peak_rss_mb = 0;
    std::optional<double> device_peak_mb;
  };

  Prepared PrepareBatch(RawBatch raw) {
    const InputKind input = stage_.Describe().input;
    std::vector<ManifestItem> items = std::move(raw.items);
    Prepared p;
    p.slots = raw.slots;
    p.slot.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      Precheck pre = PrecheckItem(fs_, inputs_root_, items[i], plan_.params.max_bytes, input);
      if (pre.rejection) {
        p.slot[i] = std::move(pre.rejection);
      } else {
        p.texts.push_back(std::move(pre.text));
        p.staged.push_back(i);
      }
    }
    p.items = std::move(items);
    // The stage's featurisation, here on a worker rather than on the model's thread. Prepare
    // must not throw; should it (out of memory), the batch goes to Process unprepared, where a
    // failure is a batch failure like any other instead of an exception on this thread.
    try {
      p.features.resize(p.texts.size());
      for (std::size_t k = 0; k < p.texts.size(); ++k) {
        if (!stage_.Prepare(p.texts[k], p.features[k])) {
          p.features.clear();
          break;
        }
        p.features[k].key = p.items[p.staged[k]].id;
      }
    } catch (...) {
      p.features.clear();
      p.features.shrink_to_fit();
    }
    return p;
  }

  // An item's length group under the batch plan: its length in the plan's measure (the
  // stage's features, else bytes). An item the prechecks reject goes anywhere (group 0): it
  // never reaches the stage.
  std::size_t GroupOfItem(const BatchPlan& bp, const ManifestItem& item) {
    Precheck pre = PrecheckItem(fs_, inputs_root_, item, plan_.params.max_bytes, stage_.Describe().input);
    if (pre.rejection) return 0;
    std::uint64_t length = pre.text.size();
    if (bp.measure == "features") {
      bool features = false;
      length = InputLength(stage_, pre.text, features);
    }
    return GroupForLength(bp.max_lengths, length);
  }

  Status RunPipeline() {
    const auto batch = static_cast<std::size_t>(plan_.params.batch_size);
    const auto workers = static_cast<std::size_t>(std::max(1, plan_.params.prepare_threads));
    constexpr std::size_t kDepth = 4;  // batches in flight per queue: memory flat in N
    std::vector<std::unique_ptr<engine::BoundedQueue<RawBatch>>> raw;
    std::vector<std::unique_ptr<engine::BoundedQueue<Prepared>>> prepared;
    for (std::size_t w = 0; w < workers; ++w) {
      raw.push_back(std::make_unique<engine::BoundedQueue<RawBatch>>(kDepth));
      prepared.push_back(std::make_unique<engine::BoundedQueue<Prepared>>(kDepth));
    }
    engine::BoundedQueue<Written> to_write(kDepth);
    Status reader_status, writer_status;
    std::atomic<bool> writer_failed{false};

    // Batch b goes to worker b % workers and comes back from that worker's queue: order kept.
    std::thread reader([&] {
      std::vector<ManifestItem> pending;
      std::size_t next = 0;
      std::size_t hint = 0;
      auto is_done = [&](std::string_view id) {
        if (!done_) return false;
        std::size_t at = done_->Find(id, hint);
        if (at == IdIndex::npos) return false;
        hint = at + 1;
        return true;
      };
      // With a batch plan, items wait in their length group's batch until it is full; results
      // are still written in manifest order at the end, whatever order batches ran in.
      const BatchPlan* bp = plan_.batch_plan ? &*plan_.batch_plan : nullptr;
      std::vector<std::vector<ManifestItem>> groups(bp ? bp->batch_sizes.size() : 0);
      auto send_items = [&](std::vector<ManifestItem>& items, std::size_t slots) -> Status {
        if (!raw[next++ % workers]->Push(RawBatch{std::move(items), slots}))
          return Interrupted();  // the consumer stopped
        items.clear();
        return {};
      };
      auto send = [&]() -> Status { return send_items(pending, batch); };
      const std::size_t per_call = stage_.InputsPerCall(batch);
      reader_status = manifest_.ForEach(
          [&](const ManifestItem& item) -> Status {
            if (bp) {
              const std::size_t g = GroupOfItem(*bp, item);
              groups[g].push_back(item);
              const auto slots = static_cast<std::size_t>(bp->batch_sizes[g]);
              return groups[g].size() < stage_.InputsPerCall(slots) ? Status() : send_items(groups[g], slots);
            }
            pending.push_back(item);
            return pending.size() < per_call ? Status() : send();
          },
          [&](std::string_view id) { return !InShard(id, shard_) || is_done(id); });
      for (auto& g : groups) {
        if (reader_status.ok() && !g.empty())
          reader_status = send_items(
              g, static_cast<std::size_t>(bp->batch_sizes[static_cast<std::size_t>(&g - groups.data())]));
      }
      if (reader_status.ok() && !pending.empty()) reader_status = send();
      for (auto& q : raw) q->Close();
    });
    std::vector<std::thread> preparers;
    for (std::size_t w = 0; w < workers; ++w) {
      preparers.emplace_back([&, w] {
        while (auto items = raw[w]->Pop()) {
          if (!prepared[w]->Push(PrepareBatch(std::move(*items)))) break;
        }
        prepared[w]->Close();
      });
    }
    std::thread writer([&] {
      while (auto job = to_write.Pop()) {
        if (!writer_status.ok()) continue;  // drain: nothing after a failed write is written
        Status st;
        if (!job->vectors.empty()) {  // vectors first, synced, then the records that point at them
          st = sidecar_->Append(job->vectors);
          if (st.ok()) st = sidecar_->Sync();
        }
        // Journaled and synced before anything derived from these results is written.
        if (st.ok()) {
          st = journal_->AppendResults(job->records, clock_.UnixSeconds(), job->peak_rss_mb,
                                       job->device_peak_mb, job->failures);
        }
        if (!st.ok()) {
          writer_status = st;
          writer_failed = true;
        }
      }
    });

    Status st;
    for (std::size_t b = 0;; ++b) {
      if (writer_failed) break;
      auto p = prepared[b % workers]->Pop();
      if (!p) break;  // the reader is done (or failed: its status says)
      Written job = StageBatch(std::move(*p));
      processed_ += job.records.size();
      progress_.done += job.records.size();
      if (!to_write.Push(std::move(job))) break;
      Report();
      if ((control_.should_stop && control_.should_stop()) ||
          (control_.stop_after > 0 && processed_ >= control_.stop_after)) {
        st = Interrupted();
        break;
      }
    }
    // Stop the producers (a blocked Push returns at once), let the writer finish what was
    // handed to it, then report the first failure: a write, the reader, or the stop.
    for (auto& q : raw) q->Close();
    for (auto& q : prepared) q->Close();
    to_write.Close();
    reader.join();
    for (auto& t : preparers) t.join();
    writer.join();
    if (!writer_status.ok()) return writer_status;
    if (!st.ok()) return st;
    if (!reader_status.ok()) return reader_status;
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
    // Only a folder started by an earlier 0.2 build, which wrote its header before the copies,
    // can lack them here.
    if (missing(header_.manifest_copy.c_str())) {
      PILOT_TRY(CopyPinnedManifest(fs_, plan_.manifest.file(), manifest_copy, header_.manifest_sha256));
    }
    manifest_.Rebind(manifest_copy);
    if (missing(kParamsCopy)) {
      PILOT_TRY(fs_.WriteFileAtomic(dir_ / kParamsCopy, plan_.params_bytes));
    }
    if (missing(kBagDeclaration)) PILOT_TRY(WriteBagDeclaration(fs_, dir_));
    if (missing(kEnvironmentFile)) {
      PILOT_TRY(fs_.WriteFileAtomic(dir_ / kEnvironmentFile, PrettyJson(plan_.environment)));
    }
    return {};
  }

  FolderIdentity Identity() const {
    return FolderIdentity{header_.shard ? kFolderKindShard : kFolderKindRun, kRunFormatVersion,
                          header_.run_id, ""};
  }

  Status WriteRunRecord(const std::string& state) {
    const StageDescription& d = stage_.Describe();
    nlohmann::ordered_json j =
        RecordHead(Identity(), JoinCommandLine(plan_.command_line), state, header_.started_at,
                   state == "finished" ? std::optional<std::string>(clock_.UtcNowIso()) : std::nullopt);
    if (header_.started_unix > 0) {
      j["started_unix"] = header_.started_unix;
      j["finished_unix"] =
          state == "finished" ? nlohmann::ordered_json(clock_.UnixSeconds()) : nlohmann::ordered_json();
    }
    j["sessions"] = sessions_;
    j["manifest_copy"] = header_.manifest_copy;
    j["manifest_sha256"] = header_.manifest_sha256;
    j["params_sha256"] = header_.params_sha256;
    j["model_sha256"] = header_.model_sha256;
    if (header_.shard) {
      j["shard"] = {{"index", header_.shard->index},
                    {"count", header_.shard->count},
                    {"items", header_.items},
                    {"assignment", "sha256(id)[0:8] big-endian mod count"},
                    {"acceptance", "judged by pilot merge over the whole manifest"}};
    }
    j["requested"] = plan_.requested;
    j["plan"] = {{"manifest", header_.manifest_path},
                 {"inputs_root", header_.inputs_root},
                 {"params", header_.params_path},
                 {"model", header_.model_path},
                 {"items", header_.items},
                 {"stage_kind", d.kind},
                 {"output", d.output->name},
                 {"input", InputKindName(d.input)},
                 {"device_requested", plan_.params.device},
                 {"device", d.device},
                 {"batch_size", plan_.params.batch_size},
                 {"threads", plan_.params.threads},
                 {"seed", plan_.params.seed},
                 {"max_bytes", plan_.params.max_bytes},
                 {"min_confidence", d.min_confidence},
                 {"model_contract", d.details}};
    if (plan_.batch_plan) {
      const BatchPlan& bp = *plan_.batch_plan;
      j["plan"]["batch_plan"] = {{"file", kBatchPlanFile},
                                 {"sha256", Sha256Hex(PrettyJson(BatchPlanToJson(bp)))},
                                 {"sweep_fingerprint", bp.sweep_fingerprint},
                                 {"measure", bp.measure},
                                 {"groups", BatchPlanToJson(bp)["groups"]}};
    } else {
      j["plan"]["batch_plan"] = nullptr;
    }
    d.output->plan_fields(rules_, j["plan"]);
    return fs_.WriteFileAtomic(dir_ / kRunRecord, PrettyJson(j));
  }

  // Runs inputs [begin, end) through the stage. The engine owns the retry policy: a batch
  // that fails as a whole is recorded (size, error) and bisected until the failing items are
  // isolated; a batch of one that fails is that item's rejection.
  // `slots`: how many inputs the stage works on at once (a call may hold more: a generator's
  // in-flight window). A window that runs out of memory is retried whole with half the slots,
  // the failure recorded at the slots it had; anything else is bisected by inputs.
  void RunStage(const std::vector<std::string_view>& views, const std::vector<PreparedInput>& features,
                std::size_t begin, std::size_t end, std::vector<ItemOutput>& outs, std::vector<char>& oom,
                std::vector<double>& latency, std::vector<BatchFailure>& failures, std::size_t slots) {
    slots = std::max<std::size_t>(1, std::min(slots, end - begin));
    stage_.SetConcurrency(slots);
    std::vector<std::string_view> sub(views.begin() + static_cast<std::ptrdiff_t>(begin),
                                      views.begin() + static_cast<std::ptrdiff_t>(end));
    double t0 = clock_.MonotonicSeconds();
    BatchOutput b;
    if (features.empty()) {
      b = stage_.Process(sub);
    } else {
      std::vector<const PreparedInput*> prepared;
      prepared.reserve(sub.size());
      for (std::size_t k = begin; k < end; ++k) prepared.push_back(&features[k]);
      b = stage_.ProcessPrepared(sub, prepared);
    }
    double ms = (clock_.MonotonicSeconds() - t0) * 1000.0;
    if (b.ok && b.items.size() != sub.size()) {
      b = BatchOutput::Failed("the stage returned " + std::to_string(b.items.size()) + " outputs for " +
                                  std::to_string(sub.size()) + " inputs",
                              false);
    }
    if (b.ok) {
      for (std::size_t k = 0; k < sub.size(); ++k) {
        outs[begin + k] = std::move(b.items[k]);
        latency[begin + k] = ms;
        // A completion's own time, from its prefill to its last token: in a window its call's
        // time would be every sequence's.
        if (const auto& c = outs[begin + k].completion; c && std::isfinite(c->ttft_ms)) {
          latency[begin + k] = c->ttft_ms + c->tpot_ms.value_or(0) *
                                                static_cast<double>(c->ids.empty() ? 0 : c->ids.size() - 1);
        }
      }
      return;
    }
    std::string error = TruncateUtf8(b.error.empty() ? "the stage failed without a message" : b.error, 2000);
    if (sub.size() == 1) {
      outs[begin].ok = false;
      outs[begin].error = error;
      oom[begin] = b.out_of_memory;
      latency[begin] = ms;
      return;
    }
    if (b.out_of_memory) {
      spdlog::warn("the stage ran out of memory at batch size {}; retrying in halves",
                   std::min(sub.size(), slots));
    }
    failures.push_back(BatchFailure{std::min(sub.size(), slots), b.out_of_memory, error});
    if (b.out_of_memory && slots > 1 && sub.size() > slots) {
      RunStage(views, features, begin, end, outs, oom, latency, failures, slots / 2);
      return;
    }
    std::size_t mid = begin + (end - begin) / 2;
    RunStage(views, features, begin, mid, outs, oom, latency, failures, slots);
    RunStage(views, features, mid, end, outs, oom, latency, failures, slots);
  }

  // This thread's part of a batch: the stage, the verdicts, the sidecar offsets.
  Written StageBatch(Prepared p) {
    const StageDescription& desc = stage_.Describe();
    Written w;
    if (!p.texts.empty()) {
      std::vector<std::string_view> views(p.texts.begin(), p.texts.end());
      std::vector<ItemOutput> outs(views.size());
      std::vector<char> oom(views.size(), 0);
      std::vector<double> latency(views.size(), 0);
      RunStage(views, p.features, 0, views.size(), outs, oom, latency, w.failures, p.slots);
      for (std::size_t k = 0; k < p.staged.size(); ++k) {
        ResultRecord r = Judge(p.items[p.staged[k]], outs[k], oom[k] != 0, desc, rules_, latency[k]);
        if (r.accepted && r.dim) {
          r.vector_at = sidecar_end_ + w.vectors.size();
          w.vectors += SidecarEntry(r.id, outs[k].vector);
          // The row as the .npy will store it, digested now: the journal's own account of it.
          r.vector_sha256 =
              VectorDigest(StoredVector(outs[k].vector.data(), outs[k].vector.size(), vectors_dtype_));
        }
        p.slot[p.staged[k]] = std::move(r);
      }
    }
    sidecar_end_ += w.vectors.size();
    w.records.reserve(p.slot.size());
    for (auto& r : p.slot) {
      (r->accepted ? progress_.accepted : progress_.rejected)++;
      w.records.push_back(std::move(*r));
    }
    w.peak_rss_mb = PeakRssMegabytes();
    w.device_peak_mb = stage_.PeakDeviceMemoryMb();
    return w;
  }

  // The vectors' sidecar, for a kind with vectors: created with its header on a fresh run; on
  // resume cut back
  // to the end of the last journaled vector (a batch whose journal record never made it
  // leaves vectors nothing points at).
  Status OpenSidecar(const JournalState* previous) {
    const StageDescription& desc = stage_.Describe();
    if (!desc.output->vectors) return {};
    const fs::path file = dir_ / kVectorsSidecar;
    const std::uint64_t journaled = previous ? previous->vectors_end : 0;
    auto stat = fs_.LinkStat(file);
    if (!stat.ok()) return stat.error();
    const std::uint64_t size = stat.value().exists ? stat.value().size : 0;
    if (journaled > 0) {
      // A kill after finish removed the sidecar (the .npy whole by then) and before the bag
      // was sealed: every item is journaled, and finish reads the rows back from the .npy.
      if (!stat.value().exists && previous->done.size() == header_.items) {
        auto npy = fs_.LinkStat(dir_ / kVectorsNpy);
        if (npy.ok() && npy.value().regular) return {};
      }
      if (!stat.value().exists || size < journaled) {
        return BadInput("the vectors sidecar holds " + std::to_string(size) +
                            " bytes, the journal refers to " + std::to_string(journaled),
                        file.string(), "vectors the journal recorded are lost; the run cannot be resumed");
      }
      auto reader = SidecarReader::Open(fs_, file, static_cast<std::uint32_t>(desc.dim));
      if (!reader.ok()) return reader.error();
      if (size > journaled) PILOT_TRY(fs_.Truncate(file, journaled));
      auto opened = fs_.OpenAppend(file);
      if (!opened.ok()) return opened.error();
      sidecar_ = std::move(opened).value();
      sidecar_end_ = journaled;
      return {};
    }
    if (stat.value().exists && size > 0) PILOT_TRY(fs_.Truncate(file, 0));
    auto opened = fs_.OpenAppend(file);
    if (!opened.ok()) return opened.error();
    sidecar_ = std::move(opened).value();
    PILOT_TRY(sidecar_->Append(SidecarHeader(static_cast<std::uint32_t>(desc.dim))));
    PILOT_TRY(sidecar_->Sync());
    sidecar_end_ = kSidecarHeaderBytes;
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

  // Where finish reads the vectors from: the sidecar, or (when it is gone, see OpenSidecar)
  // the .npy a finish wrote before, which must hold every accepted row in the stored dtype.
  Status OpenRowSource(std::uint64_t accepted, std::optional<SidecarReader>& sidecar,
                       std::unique_ptr<ReadableFile>& npy_source, std::uint64_t& data) {
    const StageDescription& desc = stage_.Describe();
    const fs::path file = dir_ / kVectorsSidecar;
    auto stat = fs_.LinkStat(file);
    if (!stat.ok()) return stat.error();
    if (stat.value().exists) {
      auto opened = SidecarReader::Open(fs_, file, static_cast<std::uint32_t>(desc.dim));
      if (!opened.ok()) return opened.error();
      sidecar.emplace(std::move(opened).value());
      return {};
    }
    const fs::path npy = dir_ / kVectorsNpy;
    auto opened = fs_.OpenRead(npy, /*follow_symlinks=*/false);
    if (!opened.ok()) return opened.error();
    std::string head(static_cast<std::size_t>(
                         std::min<std::uint64_t>(opened.value()->size(), limits::kNpyHeaderBytes + 10)),
                     '\0');
    PILOT_TRY(ReadExactAt(*opened.value(), 0, head.data(), head.size()));
    auto shape = ParseNpyHeader(head, npy.string());
    if (!shape.ok()) return shape.error();
    const NpyShape& s = shape.value();
    if (s.rows != accepted || s.cols != desc.dim || s.dtype != vectors_dtype_ ||
        opened.value()->size() != s.data_offset + s.rows * s.row_bytes()) {
      return BadInput("the vectors sidecar is gone and the .npy does not hold the run's " +
                          std::to_string(accepted) + " rows of dim " + std::to_string(desc.dim) + " in " +
                          std::string(VectorDtypeName(vectors_dtype_)),
                      npy.string(), "the run folder is damaged; it cannot be finished");
    }
    npy_source = std::move(opened).value();
    data = s.data_offset;
    return {};
  }

  Status Finish(RunLock& lock) {
    const fs::path journal_file = dir_ / kJournal;
    // A resumed run reads on from the state it started from: only this session's records.
    auto journal = previous_ ? ContinueJournal(fs_, journal_file, std::move(*previous_))
                             : LoadJournal(fs_, journal_file, false);
    done_ = nullptr;  // moved from
    if (!journal.ok()) return journal.error();
    const JournalState& js = journal.value();
    const StageDescription& desc = stage_.Describe();
    const bool embeds = desc.output->vectors;
    JournalReader reader(fs_, journal_file);
    ReportBuilder builder(*desc.output, desc.dim);
    // results.jsonl is streamed to its temp file a megabyte at a time (memory flat in N),
    // and appears whole at Commit, after the .npy, as before.
    auto results_file = fs_.CreateAtomic(dir_ / kResults);
    if (!results_file.ok()) return results_file.error();
    std::string results;
    auto flush = [&](std::size_t at_least) -> Status {
      if (results.size() < at_least) return {};
      Status st = results_file.value()->Append(results);
      results.clear();
      return st;
    };
    constexpr std::size_t kFlushBytes = 1 << 20;
    std::vector<ResultRecord> rows;
    std::size_t n = 0;
    // Embeddings: rows are numbered here, in manifest order of the accepted items, each
    // converted to the stored dtype, checked against the digest journaled with its record, and
    // streamed into the .npy (format 4: the vectors' one copy). They come from the sidecar, or,
    // after a kill that came once the sidecar was removed, from the .npy already whole.
    std::optional<SidecarReader> sidecar;
    std::unique_ptr<ReadableFile> npy_source;
    std::uint64_t npy_source_data = 0;
    std::unique_ptr<AtomicFile> npy_file;
    std::string npy;
    const std::uint64_t row_bytes = desc.dim * DtypeBytes(vectors_dtype_);
    std::uint64_t row = 0;
    if (embeds) {
      PILOT_TRY(OpenRowSource(js.accepted, sidecar, npy_source, npy_source_data));
      if (sidecar) {
        auto created = fs_.CreateAtomic(dir_ / kVectorsNpy);
        if (!created.ok()) return created.error();
        npy_file = std::move(created).value();
        PILOT_TRY(
            npy_file->Append(NpyHeader(js.accepted, static_cast<std::uint32_t>(desc.dim), vectors_dtype_)));
      }
    }
    std::size_t next_hint = 0;
    PILOT_TRY(manifest_.ForEach(
        [&](const ManifestItem& item) -> Status {
          const std::size_t at = js.done.Find(item.id, next_hint);
          // (Ids of other shards are skipped below; a journaled one of them is counted out at the end.)
          if (at == IdIndex::npos) return BadInput("no result was journaled for this item", item.id);
          next_hint = at + 1;
          // The common case copies the journal's line: a classifier's or a rejection's record
          // there is its result line with "type":"result" in front, as verify checks. Anything
          // the strict scanner does not take (and every embedding, whose row is numbered here)
          // is parsed and written afresh.
          auto raw = reader.ReadLine(js.done.Value(at));
          if (!raw.ok()) return raw.error();
          std::optional<ResultRecord> scanned =
              embeds ? std::nullopt : ScanResultRecord(raw.value(), /*journal=*/true);
          if (scanned && scanned->id == item.id) {
            constexpr std::string_view kType = "{\"type\":\"result\",";
            results += '{';
            std::string_view body = raw.value().substr(kType.size());
            if (item.expected) {
              // The manifest's label goes last, as ToJson writes it (results.h).
              body.remove_suffix(1);  // the closing brace
              results.append(body);
              results += ",\"expected\":";
              results += JsonLine(nlohmann::ordered_json(*item.expected));
              results += '}';
              scanned->expected = item.expected;
            } else {
              results.append(body);
            }
            results += '\n';
            if (Status flushed = flush(kFlushBytes); !flushed.ok()) return flushed;
            builder.Add(item, *scanned);
            if (rows.size() < kMarkdownItemRows) rows.push_back(std::move(*scanned));
            ++n;
            return {};
          }
          auto rec = reader.Read(js.done.Value(at));
          if (!rec.ok()) return rec.error();
          ResultRecord& r = rec.value();
          if (embeds && r.accepted) {
            if (!r.vector_at || !r.dim || *r.dim != desc.dim) {
              return BadInput("the journal's record of item '" + item.id +
                                  "' does not point at a vector of dim " + std::to_string(desc.dim),
                              journal_file.string());
            }
            std::string stored;
            if (sidecar) {
              auto vector = sidecar->ReadRaw(*r.vector_at, r.id);
              if (!vector.ok()) return vector.error();
              stored = StoredFromRaw(vector.value(), vectors_dtype_);
            } else {
              stored.resize(static_cast<std::size_t>(row_bytes));
              Status read =
                  ReadExactAt(*npy_source, npy_source_data + row * row_bytes, stored.data(), stored.size());
              if (!read.ok()) return read;
            }
            const std::string digest = VectorDigest(stored);
            if (r.vector_sha256 && *r.vector_sha256 != digest) {
              return BadInput("item '" + item.id + "''s vector is not the one its journal record digested",
                              (dir_ / (sidecar ? kVectorsSidecar : kVectorsNpy)).string(),
                              "the vectors or the journal are damaged");
            }
            r.vector_sha256 = digest;  // a record journaled by a pilot before format 4 had none
            if (npy_file) {
              npy += stored;
              if (npy.size() >= kFlushBytes) {
                Status appended = npy_file->Append(npy);
                if (!appended.ok()) return appended;
                npy.clear();
              }
            }
            r.row = row++;
            r.vector_at.reset();
          }
          r.expected = item.expected;
          results += ToJsonLine(r);
          results += '\n';
          if (Status flushed = flush(kFlushBytes); !flushed.ok()) return flushed;
          builder.Add(item, r);
          if (rows.size() < kMarkdownItemRows) rows.push_back(std::move(r));
          ++n;
          return {};
        },
        [&](std::string_view id) { return !InShard(id, shard_); }));
    if (js.done.size() != n) {
      return BadInput("the journal holds results for ids that are not in the manifest",
                      journal_file.string());
    }
    if (npy_file) {
      PILOT_TRY(npy_file->Append(npy));
      PILOT_TRY(npy_file->Commit());
    }
    PILOT_TRY(flush(0));
    PILOT_TRY(results_file.value()->Commit());
    // A shard's acceptance is judged by merge, over the whole manifest.
    outcome_.report =
        builder.Finish(header_.shard ? Acceptance{} : plan_.params.acceptance,
                       RunMetrics{js.processing_seconds, std::max(js.peak_rss_mb, PeakRssMegabytes()),
                                  js.device_peak_mb, js.batch_failure_count, js.batch_failures});
    PILOT_TRY(fs_.WriteFileAtomic(dir_ / kReportJson, PrettyJson(ReportToJson(outcome_.report))));
    PILOT_TRY(
        fs_.WriteFileAtomic(dir_ / kReportMarkdown, ReportToMarkdown(outcome_.report, header_.run_id, rows)));
    // The vectors are whole in the .npy: the sidecar goes before the bag is sealed (the
    // record's write below fsyncs data/, so its removal is durable by then).
    if (embeds) {
      sidecar.reset();
      sidecar_.reset();
      PILOT_TRY(fs_.RemoveFile(dir_ / kVectorsSidecar));
    }
    PILOT_TRY(WriteRunRecord("finished"));
    PILOT_TRY(FinalizeFolder(fs_, dir_, clock_.UtcNowIso().substr(0, 10), Identity()));
    lock.RemoveFile();
    auto fingerprint = Sha256File(fs_, dir_ / kTagManifest, false);
    if (fingerprint.ok()) outcome_.fingerprint = fingerprint.value();
    // Everything but re-hashing the payload FinalizeBag hashed a moment ago (those bytes
    // would come back from the page cache: no new assurance, and a second pass over a
    // gigabyte at a million items). `pilot verify` on a copy re-hashes all of it.
    VerifyOptions self;
    self.fast = true;
    outcome_.verify = VerifyRunFolder(fs_, dir_, self);
    if (!outcome_.verify.ok()) {
      outcome_.verdict = RunVerdict::kVerifyFailed;
    } else if (!outcome_.report.acceptance_met) {
      outcome_.verdict = RunVerdict::kAcceptanceFailed;
    }
    return {};
  }

  const fs::path dir_;
  fs::path inputs_root_;
  const RunPlan& plan_;
  ManifestSource manifest_;     // iterates the run folder's copy once it exists
  const JournalHeader header_;  // a copy: a resume moves its journal state into Finish
  const ShardSpec shard_ = header_.shard.value_or(ShardSpec{});
  Stage& stage_;
  FileSystem& fs_;
  Clock& clock_;
  const RunControl& control_;
  // What the stage's output kind judges items by, fixed for the session.
  const OutputRules rules_ = [this] {
    OutputRules r = RulesFor(stage_.Describe(), plan_.params.allowed_categories);
    r.vectors_float16 = plan_.params.vectors_dtype == "float16";
    if (plan_.params.generation) r.max_new_tokens = plan_.params.generation->max_new_tokens;
    return r;
  }();
  const VectorDtype vectors_dtype_ =
      plan_.params.vectors_dtype == "float16" ? VectorDtype::kFloat16 : VectorDtype::kFloat32;
  JournalWriter* journal_ = nullptr;
  JournalState* previous_ = nullptr;
  std::unique_ptr<AppendFile> sidecar_;
  std::uint64_t sidecar_end_ = 0;
  const IdIndex* done_ = nullptr;
  RunOutcome outcome_;
  Progress progress_;
  std::size_t processed_ = 0;
  std::size_t sessions_ = 1;
  double session_start_ = 0, last_log_ = 0;
};

std::string ManifestCopyName(const fs::path& manifest) {
  return manifest.extension() == ".jsonl" ? kManifestCopyJsonl : kManifestCopyJson;
}

}  // namespace

Result<std::size_t> CountShardItems(const ManifestSource& manifest, const std::optional<ShardSpec>& shard) {
  if (!shard || shard->count <= 1) return manifest.size();
  std::size_t n = 0;
  // Every id is passed to skip and skipped: on JSON Lines the lines are not parsed again.
  PILOT_TRY(manifest.ForEach([](const ManifestItem&) -> Status { return {}; },
                             [&](std::string_view id) {
                               if (InShard(id, *shard)) ++n;
                               return true;
                             }));
  return n;
}

Status CopyManifestPinned(FileSystem& fs, const fs::path& from, const fs::path& to, const std::string& want) {
  return CopyPinnedManifest(fs, from, to, want);
}
std::string ManifestCopyFileName(const fs::path& manifest) { return ManifestCopyName(manifest); }
std::string JoinArguments(const std::vector<std::string>& args) { return JoinCommandLine(args); }

std::string NewRunId(Clock& clock) {
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", rd() & 0xffffff);
  return clock.UtcNowCompact() + "-" + suffix;
}

bool IsValidRunId(const std::string& id) { return IsValidItemId(id) && id[0] != '.'; }

Result<RunOutcome> ExecuteRun(FileSystem& fs, Clock& clock, const RunPlan& plan, Stage& stage,
                              const RunControl& control) {
  PILOT_TRY(CheckStageDeclaresOutput(stage.Describe()));
  std::string run_id = plan.run_id.empty() ? NewRunId(clock) : plan.run_id;
  if (!IsValidRunId(run_id)) {
    return BadInput("invalid run id '" + run_id + "'", "--run-id",
                    "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (Status st = fs.CreateDirectories(plan.runs_dir); !st.ok()) {
    Error e = st.error();
    e.kind = ErrorKind::kBadInput;  // nothing was created: a bad --runs-dir, not a failure during work
    return e;
  }
  const fs::path dir = plan.runs_dir / run_id;
  if (Status st = fs.CreateDirectoryExclusive(dir); !st.ok()) {
    Error e = st.error();
    e.kind = ErrorKind::kBadInput;
    return e;
  }
  auto lock = RunLock::Acquire(fs, dir);
  if (!lock.ok()) return lock.error();
  spdlog::info("run {}: {} items{}, stage {} on {}", run_id, plan.manifest.size(),
               plan.shard ? " (shard " + ShardText(*plan.shard) + ")" : std::string(), stage.Describe().kind,
               stage.Describe().device);
  PILOT_TRY(fs.CreateDirectoryExclusive(dir / "data"));

  // The byte copies of manifest and parameters come first, and the run is bound to the
  // copy's own hash: from here on a fresh run reads only its copies, exactly as a resumed one.
  // A failure (or a kill) before the journal's header leaves a folder that never started.
  const std::string copy_name = ManifestCopyName(plan.manifest.file());
  auto copied = [&]() -> Result<std::string> {
    PILOT_TRY(CopyPinnedManifest(fs, plan.manifest.file(), dir / copy_name, plan.manifest.sha256()));
    PILOT_TRY(fs.WriteFileAtomic(dir / kParamsCopy, plan.params_bytes));
    if (plan.batch_plan)
      PILOT_TRY(fs.WriteFileAtomic(dir / kBatchPlanFile, PrettyJson(BatchPlanToJson(*plan.batch_plan))));
    return plan.manifest.sha256();  // the copy's own hash, just checked equal
  }();
  if (!copied.ok()) {
    Error e = copied.error();
    // Not resumable (exit 5 promises that): nothing is journaled yet. A write that failed is
    // the machine's (a full disk: exit 3); a manifest changed under pilot stays bad input.
    if (e.kind == ErrorKind::kWorkFailed) e.kind = ErrorKind::kEnvironment;
    e.hint += std::string(e.hint.empty() ? "" : "; ") + "nothing was processed; remove " + dir.string() +
              " and start a new run";
    return e;
  }

  auto items = CountShardItems(plan.manifest, plan.shard);
  if (!items.ok()) return items.error();
  JournalHeader header;
  header.shard = plan.shard;
  header.manifest_items = plan.manifest.size();
  header.run_id = run_id;
  header.manifest_sha256 = copied.value();
  header.params_sha256 = Sha256Hex(plan.params_bytes);
  header.model_sha256 = plan.model_sha256;
  header.items = items.value();
  header.manifest_copy = copy_name;
  header.manifest_path = fs::absolute(plan.manifest.file()).lexically_normal().string();
  header.params_path = fs::absolute(plan.params_file).lexically_normal().string();
  header.model_path = fs::absolute(plan.params.stage.model).lexically_normal().string();
  header.inputs_root = plan.inputs_root.string();
  header.started_at = clock.UtcNowIso();
  header.started_unix = clock.UnixSeconds();
  auto journal = JournalWriter::Open(fs, dir / kJournal);
  Status opened = journal.ok() ? journal.value().AppendHeader(header) : journal.status();
  if (!opened.ok()) {
    Error e = opened.error();
    if (e.kind == ErrorKind::kWorkFailed) e.kind = ErrorKind::kEnvironment;  // as for the copies above
    e.hint = "nothing was processed; remove " + dir.string() + " and start a new run";
    return e;
  }
  return Driver(dir, plan, header, stage, fs, clock, control)
      .Drive(journal.value(), lock.value(), nullptr, {});
}

Result<RunOutcome> ResumeRun(FileSystem& fs, Clock& clock, ResumeSetup& setup, Stage& stage,
                             const RunControl& control) {
  PILOT_TRY(CheckStageDeclaresOutput(stage.Describe()));
  auto journal = JournalWriter::Open(fs, setup.run_dir / kJournal);
  if (!journal.ok()) return journal.error();
  spdlog::info("resume {}: {} of {} items already done", setup.journal.header.run_id,
               setup.journal.done.size(), setup.journal.header.items);
  return Driver(setup.run_dir, setup.plan, setup.journal.header, stage, fs, clock, control)
      .Drive(journal.value(), *setup.lock, &setup.journal, setup.notes);
}

}  // namespace pilot
