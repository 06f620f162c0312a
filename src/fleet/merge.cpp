#include "pilot/fleet/merge.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <optional>

#include "pilot/bag.h"
#include "pilot/build_info.h"
#include "pilot/destination.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/journal.h"
#include "pilot/json_file.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/partial_folder.h"
#include "pilot/paths.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/run_lock.h"
#include "pilot/run_record.h"
#include "pilot/vectors.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

struct ShardFolder {
  MergedShard info;
  RunRecord record;
  nlohmann::json plan;  // the record's plan: the merged folder's, its device left to each shard
};

// One shard folder's record, before verification: a finished shard, or a refusal naming it.
Result<ShardFolder> ReadShard(FileSystem& fsys, const fs::path& dir) {
  ShardFolder s;
  s.info.dir = dir;
  auto kind =
      OpenPilotFolder(fsys, dir, "merge", "shard folder", "give the shard folders pilot run --shard wrote");
  if (!kind.ok()) return kind.error();
  if (!IsPartitionKind(kind.value().kind)) {
    return BadInput("a folder of kind '" + KeyForMessage(kind.value().kind) + "', not a shard", dir.string(),
                    "merge takes the folders written by pilot run --shard I/N");
  }
  const std::string where = (dir / kRunRecord).string();
  auto text = ReadCapped(fsys, dir / kRunRecord, limits::kRunRecordBytes, "run record");
  if (!text.ok()) return text.error();
  auto record = ParseRunRecord(text.value(), where);
  if (!record.ok()) return record.error();
  auto doc = ParseJson(text.value(), where);  // parsed above: an object, whose plan is kept whole
  if (!doc.ok()) return doc.error();
  s.record = std::move(record).value();
  if (!IsPartitionKind(s.record.folder_kind) || !s.record.shard) {  // read twice: it may have changed
    return BadInput("data/run.json is not a shard's record", dir.string(),
                    "give the shard folders pilot run --shard wrote");
  }
  s.plan = MemberOrNull(doc.value(), "plan").is_object() ? doc.value()["plan"] : nlohmann::json::object();
  auto lock = fsys.LinkStat(dir / kLockFile);
  auto tags = fsys.LinkStat(dir / kTagManifest);
  if (!lock.ok()) return lock.error();
  if (!tags.ok()) return tags.error();
  if (s.record.state != "finished" || !tags.value().exists || lock.value().exists) {
    return BadInput(
        "shard " + ShardText(*s.record.shard) + " is unfinished" +
            (lock.value().exists ? " (or still being written: `pilot status " + dir.string() + "`)" : ""),
        dir.string(), "finish it with: pilot resume " + dir.string() + ", then merge again");
  }
  s.info.spec = *s.record.shard;
  s.info.run_id = s.record.run_id;
  s.info.items = s.record.shard_items;
  s.info.started_at = s.record.started_at;
  s.info.finished_at = s.record.finished_at;
  return s;
}

// A shard's results (and, for an embedding, its vectors) read in step with the manifest.
struct ShardResults {
  std::optional<LineReader> results;
  std::unique_ptr<ReadableFile> npy;
  std::uint64_t npy_data = 0, npy_rows = 0, row = 0;
  VectorDtype dtype = VectorDtype::kFloat32;
};

// The merge's steps, in order, over what they share: the request, the shards by index, the
// figures read from their reports, and the outcome.
class Merger {
 public:
  Merger(FileSystem& fsys, Clock& clock, const MergeRequest& request, const RunControl& control)
      : fsys_(fsys), clock_(clock), request_(request), control_(control) {}

  Result<MergeOutcome> Run() {
    auto out_dir = CheckDestination();
    if (!out_dir.ok()) return out_dir.error();
    PILOT_TRY(CollectShards());
    PILOT_TRY(VerifyShards());
    if (!outcome_.failed_shards.empty()) {
      outcome_.verdict = RunVerdict::kVerifyFailed;
      return std::move(outcome_);
    }
    PILOT_TRY(ReadShardFigures());

    // 3. The merged folder, written under OUT.partial.
    if (Stopped()) return Interrupted();
    auto partial = engine::PartialFolder::Create(fsys_, out_dir.value(), request_.shards);
    if (!partial.ok()) return partial.error();
    const fs::path dir = partial.value().path();
    const std::string merge_started = clock_.UtcNowIso();
    PILOT_TRY(CopyRecords(dir));
    auto params_text = ReadCapped(fsys_, dir / kParamsCopy, limits::kParamsBytes, "parameter file");
    if (!params_text.ok()) return params_text.error();
    auto params = ParseParams(params_text.value(), dir, kParamsCopy);
    if (!params.ok()) return params.error();
    auto manifest = ManifestSource::Open(fsys_, dir / first_->record.manifest_copy);
    if (!manifest.ok()) return manifest.error();

    auto streamed = JoinResults(dir, manifest.value());
    if (!streamed.ok()) return streamed.error();
    Joined& joined = streamed.value();

    // 4. The report over the whole manifest, and the acceptance judged on it.
    const double wall = figures_.wall_seconds;
    RunMetrics metrics;
    metrics.processing_seconds = wall;
    metrics.peak_rss_mb = figures_.peak_rss_mb;
    metrics.device_peak_mb = figures_.device_peak_mb;
    Report report = joined.builder.Finish(params.value().acceptance, metrics);
    report.shards = n_;
    report.shard_rate_sum = figures_.shard_rate_sum;
    report.wall_seconds = wall;
    PILOT_TRY(fsys_.WriteFileAtomic(dir / kReportJson, PrettyJson(ReportToJson(report))));
    PILOT_TRY(fsys_.WriteFileAtomic(dir / kReportMarkdown, ReportToMarkdown(report, out_name_, joined.rows)));

    PILOT_TRY(fsys_.WriteFileAtomic(dir / kRunRecord,
                                    PrettyJson(MergedRecord(merge_started, joined.total, report))));
    PILOT_TRY(FinalizeFolder(fsys_, dir, clock_.UtcNowIso().substr(0, 10),
                             FolderIdentity{kFolderKindMerged, kRunFormatVersion, out_name_, ""}));
    // Checked before it takes its name: structure, completeness, the copies, and global
    // exactly-once against every shard's journal (the bytes were hashed a moment ago).
    VerifyOptions self;
    self.fast = true;
    outcome_.verify = VerifyRunFolder(fsys_, dir, self);
    if (outcome_.verify.ok()) PILOT_TRY(partial.value().Commit());
    outcome_.dir = outcome_.verify.ok() ? out_dir.value() : dir;
    auto fingerprint = Sha256File(fsys_, outcome_.dir / kTagManifest, false);
    if (fingerprint.ok()) outcome_.fingerprint = fingerprint.value();
    outcome_.report = std::move(report);
    if (!outcome_.verify.ok()) {
      outcome_.verdict = RunVerdict::kVerifyFailed;
    } else if (!outcome_.report.acceptance_met) {
      outcome_.verdict = RunVerdict::kAcceptanceFailed;
    }
    spdlog::info("merged {} shards, {} items, into {}", n_, joined.total, outcome_.dir.string());
    return outcome_;
  }

 private:
  struct Joined {
    ReportBuilder builder;
    std::vector<ResultRecord> rows;  // the first kMarkdownItemRows, for report.md
    std::size_t total = 0;
  };

  bool Stopped() const { return control_.should_stop && control_.should_stop(); }
  static Error Interrupted() { return Error{ErrorKind::kInterrupted, "interrupted", "", ""}; }

  // The request's shards and OUT: a count pilot merges, OUT a new folder outside every shard.
  Result<fs::path> CheckDestination() {
    if (request_.shards.empty())
      return BadInput("no shard folders given", "SHARD_DIR", "give every shard folder of the job");
    if (request_.shards.size() > kMaxShards) {
      return BadInput(std::to_string(request_.shards.size()) + " folders given; pilot merges at most " +
                          std::to_string(kMaxShards) + " shards",
                      "SHARD_DIR");
    }
    // The name first (as written), then where it lies: never inside a shard, nor any pilot folder.
    fs::path lexical = request_.out.lexically_normal();
    if (!lexical.has_filename() && lexical.has_parent_path()) lexical = lexical.parent_path();
    out_name_ = lexical.filename().string();
    if (!request_.out.empty() && out_name_ != "." && out_name_ != ".." && !IsValidRunId(out_name_)) {
      return BadInput(
          "the merged folder's name '" + ValueForMessage(out_name_, 130) + "' is not a valid run id", "--out",
          "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
    }
    for (const fs::path& dir : request_.shards)
      PILOT_TRY(engine::RefuseInside(fsys_, request_.out, dir, "the shard folder"));
    auto resolved_out = request_.out_resolved
                            ? Result<fs::path>(request_.out)
                            : ResolveDestination(fsys_, request_.out, "--out", Destination::kNew);
    if (!resolved_out.ok()) return resolved_out.error();
    const fs::path out_dir = resolved_out.value();
    if (auto out = fsys_.LinkStat(out_dir); !out.ok() || out.value().exists) {
      return BadInput("already exists; pilot never writes into an existing folder", request_.out.string(),
                      "choose an --out that does not exist yet");
    }
    return out_dir;
  }

  // 1. Every folder a finished shard of the same job; no index twice, none missing.
  Status CollectShards() {
    for (const fs::path& dir : request_.shards) {
      auto s = ReadShard(fsys_, dir);
      if (!s.ok()) return s.error();
      shards_.push_back(std::move(s).value());
    }
    first_ = &shards_.front();
    n_ = first_->info.spec.count;
    by_index_.assign(n_, nullptr);
    for (const ShardFolder& s : shards_) {
      const std::string dir = s.info.dir.string();
      if (s.info.spec.count != n_) {
        return BadInput("is shard " + ShardText(s.info.spec) + ", but " + first_->info.dir.string() +
                            " is shard " + ShardText(first_->info.spec) + ": shards of different splits",
                        dir, "merge the shards of one job, all with the same N");
      }
      for (auto [mine, theirs, what] :
           {std::tuple{&s.record.manifest_sha256, &first_->record.manifest_sha256, "manifest"},
            std::tuple{&s.record.params_sha256, &first_->record.params_sha256, "parameters"},
            std::tuple{&s.record.model_sha256, &first_->record.model_sha256, "model"}}) {
        if (*mine != *theirs) {
          return BadInput(std::string("used another ") + what + " (sha256 " + *mine + ") than " +
                              first_->info.dir.string() + " (sha256 " + *theirs + ")",
                          dir, "every shard of a job runs the same manifest, parameters and model");
        }
      }
      if (s.record.output != first_->record.output || s.record.dim != first_->record.dim) {
        return BadInput("its stage output differs from " + first_->info.dir.string() + "'s", dir,
                        "every shard of a job runs the same stage");
      }
      const ShardFolder*& slot = by_index_[s.info.spec.index];
      if (slot) {
        return BadInput(
            "shard " + ShardText(s.info.spec) + " given twice: " + slot->info.dir.string() + " and " + dir,
            dir, "give each shard once");
      }
      slot = &s;
    }
    std::string missing;
    std::size_t missing_count = 0;
    for (std::uint32_t i = 0; i < n_; ++i) {
      if (by_index_[i]) continue;
      if (++missing_count <= 20) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    }
    if (missing_count > 0) {
      return BadInput(std::to_string(missing_count) + " of " + std::to_string(n_) +
                          " shards missing: " + missing + (missing_count > 20 ? ", ..." : ""),
                      "SHARD_DIR",
                      "run each missing one (pilot run --shard I/" + std::to_string(n_) +
                          ", or resubmit that array index), then merge again");
    }
    return {};
  }

  // 2. Each shard verified in full: fixity, accounting over its partition, its report. One that
  // fails is listed in outcome_.failed_shards.
  Status VerifyShards() {
    VerifyOptions full;
    full.manifest_cache = std::make_shared<ManifestCache>();  // one manifest, validated once
    for (std::uint32_t i = 0; i < n_; ++i) {
      if (Stopped()) return Interrupted();
      const ShardFolder& s = *by_index_[i];
      VerifyResult v = VerifyRunFolder(fsys_, s.info.dir, full);
      if (!v.ok()) {
        outcome_.failed_shards.emplace_back(s.info.dir, std::move(v));
        continue;
      }
      MergedShard info = s.info;
      info.accepted = v.accepted;
      info.rejected = v.rejected;
      info.fingerprint = v.fingerprint;
      outcome_.shards.push_back(std::move(info));
    }
    return {};
  }

  // Each shard's rate, peak memory and time span, from its report and record, combined as
  // verify combines them again (CombineShardFigures).
  Status ReadShardFigures() {
    std::vector<ShardFigures> shards;
    for (std::uint32_t i = 0; i < n_; ++i) {
      const ShardFolder& s = *by_index_[i];
      MergedShard& info = outcome_.shards[i];
      accepted_total_ += info.accepted;
      auto report = ReadRecordedReport(fsys_, s.info.dir,
                                       "the shard verified, so its report was edited and "
                                       "re-hashed: run the shard again into a new folder");
      if (!report.ok()) return report.error();
      const RecordedReport& r = report.value();
      info.items_per_second = r.items_per_second;
      shards.push_back(ShardFigures{r.items_per_second, r.peak_rss_mb, r.device_peak_mb, s.record.span});
    }
    figures_ = CombineShardFigures(shards);
    return {};
  }

  // The bag's declaration, the copies of the manifest and parameters, each shard's record,
  // journal and environment under data/shards/, and the merge's environment.
  Status CopyRecords(const fs::path& dir) {
    PILOT_TRY(fsys_.CreateDirectoryExclusive(dir / kPayloadFolder));
    PILOT_TRY(WriteBagDeclaration(fsys_, dir));
    const std::string& manifest_copy = first_->record.manifest_copy;
    PILOT_TRY(CopyManifestPinned(fsys_, first_->info.dir / manifest_copy, dir / manifest_copy,
                                 first_->record.manifest_sha256));
    PILOT_TRY(fsys_.CopyFileAtomic(first_->info.dir / kParamsCopy, dir / kParamsCopy, false));
    if (auto digest = Sha256File(fsys_, dir / kParamsCopy, false);
        !digest.ok() || digest.value() != first_->record.params_sha256) {
      return BadInput("the parameters' copy changed while merging",
                      (first_->info.dir / kParamsCopy).string());
    }
    PILOT_TRY(fsys_.CreateDirectoryExclusive(dir / kShardsFolder));
    for (std::uint32_t i = 0; i < n_; ++i) {
      const fs::path to = dir / MergedShardFolder({i, n_});
      PILOT_TRY(fsys_.CreateDirectoryExclusive(to));
      for (auto [from, as] :
           {std::pair{kRunRecord, kMergedShardRecord}, std::pair{kJournal, kMergedShardJournal},
            std::pair{kEnvironmentFile, kMergedShardEnvironment}}) {
        PILOT_TRY(fsys_.CopyFileAtomic(by_index_[i]->info.dir / from, to / as, false));
      }
    }
    nlohmann::ordered_json environment;
    environment["note"] = "each shard's environment is in data/shards/<shard>/environment.json";
    environment["merge_host"] = HostInfo(fsys_);
    PILOT_TRY(fsys_.WriteFileAtomic(dir / kEnvironmentFile, PrettyJson(environment)));
    return {};
  }

  Result<std::vector<ShardResults>> OpenShardResults(bool embeds) {
    std::vector<ShardResults> readers(n_);
    for (std::uint32_t i = 0; i < n_; ++i) {
      auto lines =
          LineReader::Open(fsys_, by_index_[i]->info.dir / kResults, limits::kResultLineBytes, false);
      if (!lines.ok()) return lines.error();
      readers[i].results.emplace(std::move(lines).value());
      if (embeds) {
        auto npy = fsys_.OpenRead(by_index_[i]->info.dir / kVectorsNpy, false);
        if (!npy.ok()) return npy.error();
        std::string head(static_cast<std::size_t>(
                             std::min<std::uint64_t>(npy.value()->size(), limits::kNpyHeaderBytes + 10)),
                         '\0');
        PILOT_TRY(ReadExactAt(*npy.value(), 0, head.data(), head.size()));
        auto shape = ParseNpyHeader(head, (by_index_[i]->info.dir / kVectorsNpy).string());
        if (!shape.ok()) return shape.error();
        if (i == 0) readers[0].dtype = shape.value().dtype;
        const fs::path npy_path = by_index_[i]->info.dir / kVectorsNpy;
        if (shape.value().cols != first_->record.dim) {
          return BadInput("has " + std::to_string(shape.value().cols) + " columns; the run's dim is " +
                              std::to_string(first_->record.dim),
                          npy_path.string());
        }
        if (shape.value().dtype != readers[0].dtype) {
          return BadInput("stores " + std::string(VectorDtypeName(shape.value().dtype)) + ", shard 0 " +
                              std::string(VectorDtypeName(readers[0].dtype)),
                          npy_path.string(), "the shards of one run store one dtype");
        }
        readers[i].npy_data = shape.value().data_offset;
        readers[i].npy_rows = shape.value().rows;
        readers[i].npy = std::move(npy).value();
      }
    }
    return readers;
  }

  // The shards' results side by side, in manifest order, into results.jsonl (and the vectors
  // into vectors.npy), each item judged into the report as it passes.
  Result<Joined> JoinResults(const fs::path& dir, ManifestSource& manifest) {
    const bool embeds = first_->record.output->vectors;
    const std::uint32_t dim = first_->record.dim;
    auto opened = OpenShardResults(embeds);
    if (!opened.ok()) return opened.error();
    std::vector<ShardResults>& readers = opened.value();
    auto results_file = fsys_.CreateAtomic(dir / kResults);
    if (!results_file.ok()) return results_file.error();
    std::unique_ptr<AtomicFile> npy_file;
    const VectorDtype dtype = embeds ? readers[0].dtype : VectorDtype::kFloat32;
    if (embeds) {
      auto created = fsys_.CreateAtomic(dir / kVectorsNpy);
      if (!created.ok()) return created.error();
      npy_file = std::move(created).value();
      PILOT_TRY(npy_file->Append(NpyHeader(accepted_total_, dim, dtype)));
    }
    Joined joined{ReportBuilder(*first_->record.output, dim), {}, manifest.size()};
    ReportBuilder& builder = joined.builder;
    std::vector<ResultRecord>& rows = joined.rows;
    std::string out, vectors, line, vector(DtypeBytes(dtype) * dim, '\0');
    std::uint64_t merged_row = 0;
    std::size_t done = 0;
    const std::size_t total = manifest.size();
    constexpr std::size_t kFlushBytes = 1 << 20;
    Status streamed = manifest.ForEach([&](const ManifestItem& item) -> Status {
      const std::uint32_t owner = ShardOfId(item.id, n_);
      ShardResults& rd = readers[owner];
      const fs::path& from = by_index_[owner]->info.dir;
      auto more = rd.results->Next(line);
      if (!more.ok()) return more.error();
      if (!more.value()) {
        return BadInput("no result for '" + item.id + "', which belongs to this shard",
                        (from / kResults).string());
      }
      std::optional<ResultRecord> scanned = embeds ? std::nullopt : ScanResultRecord(line, /*journal=*/false);
      auto rec = scanned ? Result<ResultRecord>(std::move(*scanned))
                         : ParseResultRecord(line, (from / kResults).string() + ":" +
                                                       std::to_string(rd.results->line_number()));
      if (!rec.ok()) return rec.error();
      ResultRecord& r = rec.value();
      if (r.id != item.id) {
        return BadInput("holds '" + KeyForMessage(r.id) + "' where manifest order puts '" + item.id + "'",
                        (from / kResults).string() + ":" + std::to_string(rd.results->line_number()));
      }
      if (embeds && r.accepted) {
        if (!r.row || *r.row != rd.row || rd.row >= rd.npy_rows) {
          return BadInput("the row of '" + item.id + "' is not the shard's next", (from / kResults).string());
        }
        PILOT_TRY(ReadExactAt(*rd.npy, rd.npy_data + rd.row * vector.size(), vector.data(), vector.size()));
        // A shard of format 4 digested the row; one of an earlier format gets its digest here.
        const std::string digest = VectorDigest(vector);
        if (r.vector_sha256 && *r.vector_sha256 != digest) {
          return BadInput("row " + std::to_string(rd.row) + " is not the vector '" + item.id +
                              "''s vector_sha256 digests",
                          (from / kVectorsNpy).string(), "the shard was changed after its run");
        }
        r.vector_sha256 = digest;
        ++rd.row;
        vectors += vector;
        r.row = merged_row++;
        r.expected = item.expected;
        out += ToJsonLine(r);
      } else if (r.expected != item.expected) {  // a shard of run format 2 carries no label
        r.expected = item.expected;
        out += ToJsonLine(r);
      } else {
        out += line;
      }
      out += '\n';
      builder.Add(item, r);
      if (rows.size() < kMarkdownItemRows) rows.push_back(r);
      ++done;
      if (out.size() >= kFlushBytes) {
        PILOT_TRY(results_file.value()->Append(out));
        out.clear();
      }
      if (vectors.size() >= kFlushBytes) {
        PILOT_TRY(npy_file->Append(vectors));
        vectors.clear();
      }
      if ((done & 4095) == 0) {
        if (control_.on_progress) {
          Progress p;
          p.done = done;
          p.total = total;
          control_.on_progress(p);
        }
        if (control_.should_stop && control_.should_stop())
          return Error{ErrorKind::kInterrupted, "interrupted", "", ""};
      }
      return {};
    });
    if (!streamed.ok()) {
      Error e = streamed.error();
      if (e.kind != ErrorKind::kInterrupted) {
        e.hint += std::string(e.hint.empty() ? "" : "; ") + "nothing was merged; " + dir.string() +
                  " is left for the next merge to replace";
      }
      return e;
    }
    for (std::uint32_t i = 0; i < n_; ++i) {
      auto more = readers[i].results->Next(line);
      if (!more.ok()) return more.error();
      if (more.value()) {
        return BadInput("holds more results than the manifest gives this shard",
                        (by_index_[i]->info.dir / kResults).string());
      }
    }
    PILOT_TRY(results_file.value()->Append(out));
    PILOT_TRY(results_file.value()->Commit());
    if (npy_file) {
      PILOT_TRY(npy_file->Append(vectors));
      PILOT_TRY(npy_file->Commit());
    }
    if (control_.on_progress) {
      Progress p;
      p.done = p.total = total;
      control_.on_progress(p);
    }
    return joined;
  }

  // The merged folder's run.json.
  nlohmann::ordered_json MergedRecord(const std::string& merge_started, std::size_t total,
                                      const Report& report) const {
    nlohmann::ordered_json j =
        RecordHead(FolderIdentity{kFolderKindMerged, kRunFormatVersion, out_name_, ""},
                   JoinArguments(request_.command_line), "finished", merge_started, clock_.UtcNowIso());
    j["sessions"] = 1;
    j["manifest_copy"] = first_->record.manifest_copy;
    j["manifest_sha256"] = first_->record.manifest_sha256;
    j["params_sha256"] = first_->record.params_sha256;
    j["model_sha256"] = first_->record.model_sha256;
    nlohmann::ordered_json plan = nlohmann::ordered_json::parse(first_->plan.dump());
    plan["items"] = total;
    plan["device"] = nullptr;  // each shard's own is in its run.json
    j["plan"] = plan;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const MergedShard& s : outcome_.shards) {
      list.push_back({{"index", s.spec.index},
                      {"folder", MergedShardFolder(s.spec)},
                      {"source", s.dir.string()},
                      {"run_id", s.run_id},
                      {"fingerprint", s.fingerprint},
                      {"items", s.items},
                      {"accepted", s.accepted},
                      {"rejected", s.rejected},
                      {"started_at", s.started_at},
                      {"finished_at", s.finished_at},
                      {"items_per_second", s.items_per_second}});
    }
    j["merge"] = {{"shard_count", n_},
                  {"assignment", "sha256(id)[0:8] big-endian mod shard_count"},
                  {"shards", list},
                  {"throughput_sum_of_shards_items_per_s", figures_.shard_rate_sum},
                  {"wall_clock_seconds", report.wall_seconds},
                  {"throughput_wall_clock_items_per_s", report.items_per_second}};
    return j;
  }

  FileSystem& fsys_;
  Clock& clock_;
  const MergeRequest& request_;
  const RunControl& control_;
  std::string out_name_;
  std::vector<ShardFolder> shards_;  // as given
  const ShardFolder* first_ = nullptr;
  std::uint32_t n_ = 0;
  std::vector<const ShardFolder*> by_index_;
  MergeOutcome outcome_;
  std::size_t accepted_total_ = 0;
  MergedFigures figures_;  // the shards' figures combined (ReadShardFigures)
};

}  // namespace

Result<MergeOutcome> MergeShards(FileSystem& fsys, Clock& clock, const MergeRequest& request,
                                 const RunControl& control) {
  return Merger(fsys, clock, request, control).Run();
}

}  // namespace pilot
