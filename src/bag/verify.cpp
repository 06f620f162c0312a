#include "pilot/verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>
#include <unordered_map>

#include "pilot/bag.h"
#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/journal.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/run_lock.h"
#include "pilot/run_record.h"
#include "pilot/utf8.h"
#include "pilot/vectors.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

class Verifier {
 public:
  // `kind`: a kind with its own checks (a sweep, an adaptation) has them replace a run's.
  Verifier(FileSystem& fs, fs::path dir, VerifyOptions options, const FolderKindSpec* kind = nullptr)
      : fs_(fs), dir_(std::move(dir)), options_(std::move(options)), kind_(kind) {}

  VerifyResult Run() {
    auto top = fs_.Stat(dir_);
    if (!top.ok() || !top.value().directory) {
      Add("bag", dir_.string(), "not a folder");
      return std::move(result_);
    }
    CheckDeclaration();
    CheckPayload();
    CheckTagFiles();
    CheckFingerprint();
    for (const FolderExtensionSpec& x : FolderKinds().Extensions()) {
      if (x.checks) x.checks(fs_, dir_, result_.findings);
    }
    if (kind_ && kind_->checks) {  // its own checks instead of a run's accounting
      kind_->checks(fs_, dir_, result_.findings);
      return std::move(result_);
    }
    CheckRunRecord();
    if (run_ && IsJoinedKind(run_->folder_kind)) CheckMergedShards();
    CheckAccounting();
    if (options_.inputs) CheckInputs();
    return std::move(result_);
  }

 private:
  // A name inside a hostile bag may hold a newline: escaped, it cannot forge a finding line.
  void Add(std::string check, const std::string& where, const std::string& what) {
    result_.findings.push_back({std::move(check), EscapeTerminal(where), EscapeTerminal(what)});
  }

  // What a name inside the bag is, without following it (an unreadable one: absent).
  using Entry = FileStat;
  Entry Look(const std::string& rel) const {
    auto st = fs_.LinkStat(dir_ / rel);
    return st.ok() ? st.value() : Entry{};
  }

  // A file of the bag that verify may open: a regular file, not through a symlink. Anything
  // else is a finding, and is never opened (a FIFO would hang, /dev/zero never end).
  bool Openable(const std::string& rel, const char* check, bool report_missing = true) {
    Entry e = Look(rel);
    if (!e.exists) {
      if (report_missing) Add(check, rel, "missing");
    } else if (e.symlink) {
      Add(check, rel, "is a symlink; a bag holds files, and verify never follows a link");
    } else if (!e.regular) {
      Add(check, rel,
          e.directory ? "is a folder where a file belongs" : "is not a regular file (a FIFO or device?)");
    } else {
      return true;
    }
    return false;
  }

  std::optional<std::string> Read(const std::string& rel, const char* check, std::uint64_t cap) {
    if (!Openable(rel, check)) return std::nullopt;
    auto text = ReadCapped(fs_, dir_ / rel, cap, "file");
    if (!text.ok()) {
      Add(check, rel, text.error().what);
      return std::nullopt;
    }
    return std::move(text).value();
  }

  void CheckDeclaration() {
    auto text = Read(kBagDeclaration, "bag", limits::kTagFileBytes);
    if (text && *text != "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n") {
      Add("bag", kBagDeclaration, "not a BagIt 1.0 declaration with UTF-8 tag files");
    }
  }

  // Verifies "<sha256>  <path>" lines; returns the paths listed.
  std::set<std::string> CheckManifestFile(const std::string& name, const char* check) {
    std::set<std::string> listed;
    auto text = Read(name, check, limits::kTagFileBytes);
    if (!text) {
      if (name == kPayloadManifest) {
        Add("bag", name, "no payload manifest: the run did not finish (in progress or interrupted)");
      }
      return listed;
    }
    auto lines = ParseManifestLines(*text, name);
    if (!lines.ok()) {
      Add(check, name, lines.error().what);
      return listed;
    }
    std::vector<const ManifestLine*> to_hash;
    for (const auto& line : lines.value()) {
      if (!listed.insert(line.path).second) Add(check, name, "lists '" + line.path + "' twice");
      bool escapes = line.path.empty() || line.path[0] == '/' || line.path.find('\0') != std::string::npos;
      for (const auto& part : fs::path(line.path)) escapes = escapes || part == "..";
      if (escapes) {
        Add(check, ValueForMessage(line.path, 200), "path in " + name + " escapes the bag");
        continue;
      }
      Entry e = Look(line.path);
      if (!e.exists) {
        Add("completeness", line.path, "listed in " + name + " but missing");
        continue;
      }
      if (!Openable(line.path, "completeness")) continue;
      ++result_.files_checked;
      if (options_.fast && name == kPayloadManifest) continue;
      to_hash.push_back(&line);
    }
    // Fixity on every core (Sha256Files), the findings then added in the manifest's order.
    std::vector<fs::path> paths;
    for (const ManifestLine* line : to_hash) paths.push_back(dir_ / line->path);
    auto digests = Sha256Files(fs_, paths, /*follow_symlinks=*/false);
    for (std::size_t i = 0; i < to_hash.size(); ++i) {
      const ManifestLine& line = *to_hash[i];
      if (!digests[i].ok()) {
        Add("fixity", line.path, "unreadable");
      } else if (digests[i].value() != line.sha256) {
        Add("fixity", line.path, "sha256 is " + digests[i].value() + ", " + name + " records " + line.sha256);
      }
    }
    return listed;
  }

  // Every name under data/, without following links: regular files are the payload;
  // links, FIFOs, devices and empty folders are findings (never opened).
  std::vector<std::string> WalkPayload() {
    std::vector<std::string> files;
    Entry data = Look("data");
    if (!data.exists) {
      Add("completeness", "data", "missing: a bag's payload folder");
      return files;
    }
    if (!data.directory) {
      Add("completeness", "data",
          data.symlink ? "is a symlink; verify never follows a link" : "is not a folder");
      return files;
    }
    // Depth first by hand, so that each folder's listing (with LinkStat of every name) is
    // one FileSystem call and a symlinked folder is reported, never entered.
    std::vector<std::string> pending{"data"};
    while (!pending.empty()) {
      std::string folder = std::move(pending.back());
      pending.pop_back();
      auto entries = fs_.ListDirectory(dir_ / folder);
      if (!entries.ok()) {
        Add("completeness", folder, "cannot list the payload: " + entries.error().what);
        continue;
      }
      if (entries.value().empty() && folder != "data") {
        Add("completeness", folder, "an empty folder in the payload (unexpected)");
      }
      for (const DirEntry& e : entries.value()) {
        std::string rel = folder + "/" + e.name;
        if (e.stat.regular) {
          files.push_back(rel);
        } else if (e.stat.directory) {
          pending.push_back(rel);
        } else {
          Add("completeness", rel,
              e.stat.symlink ? "is a symlink in the payload; verify never follows a link"
                             : "is not a regular file (a FIFO or device?)");
        }
      }
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  void CheckPayload() {
    std::set<std::string> listed = CheckManifestFile(kPayloadManifest, "fixity");
    std::vector<std::string> actual = WalkPayload();
    std::uintmax_t octets = 0;
    for (const auto& rel : actual) {
      octets += Look(rel).size;
      if (!listed.empty() && !listed.count(rel)) {
        Add("completeness", rel, "payload file not listed in manifest-sha256.txt (unexpected file)");
      }
    }
    for (const auto& rel : listed) {
      if (rel.rfind(std::string(kPayloadFolder) + "/", 0) != 0)
        Add("completeness", rel, "manifest-sha256.txt lists a file outside data/");
    }
    auto info = Read(kBagInfo, "bag", limits::kTagFileBytes);
    if (!info) return;
    const std::string oxum = BagInfoValue(*info, "Payload-Oxum");
    std::string want = std::to_string(octets) + "." + std::to_string(actual.size());
    if (oxum.empty()) {
      Add("bag", kBagInfo, "no Payload-Oxum");
    } else if (oxum != want) {
      Add("completeness", kBagInfo,
          "Payload-Oxum is " + ValueForMessage(oxum) + " but the payload holds " + want + " (octets.files)");
    }
  }

  void CheckTagFiles() {
    if (!Look(kTagManifest).exists) {
      Add("bag", kTagManifest, "missing: the run did not finish");
      return;
    }
    std::set<std::string> listed = CheckManifestFile(kTagManifest, "fixity");
    for (const char* required : {kBagDeclaration, kBagInfo, kPayloadManifest}) {
      if (!listed.count(required)) Add("bag", kTagManifest, std::string("does not cover ") + required);
    }
    auto entries = fs_.ListDirectory(dir_);
    if (!entries.ok()) {
      Add("bag", dir_.string(), "cannot list the folder: " + entries.error().what);
      return;
    }
    for (const DirEntry& e : entries.value()) {
      const std::string& name = e.name;
      if (name == "data" || name == kTagManifest) continue;
      const auto& extensions = FolderKinds().Extensions();
      const auto pending = std::find_if(
          extensions.begin(), extensions.end(),
          [&](const FolderExtensionSpec& x) { return !x.pending_entry.empty() && x.pending_entry == name; });
      if (pending != extensions.end()) {
        Add(pending->name, name, pending->pending_what);
      } else if (name == kLockFile) {
        Add("completeness", name,
            "a writer's lock: a run may still be writing this folder (`pilot status`), or `pilot resume` "
            "removes one left by a process that is gone");
      } else if (!listed.count(name)) {
        Add("completeness", ValueForMessage(name, 200),
            "not covered by tagmanifest-sha256.txt (unexpected file)");
      }
    }
  }

  void CheckFingerprint() {
    if (!Look(kTagManifest).regular) return;
    auto digest = Sha256File(fs_, dir_ / kTagManifest, /*follow_symlinks=*/false);
    if (!digest.ok()) return;
    result_.fingerprint = digest.value();
    if (options_.expect_fingerprint && *options_.expect_fingerprint != digest.value()) {
      Add("fingerprint", kTagManifest,
          "fingerprint is " + digest.value() + ", expected " + *options_.expect_fingerprint +
              ": this is not the folder that was fingerprinted (or it was re-hashed)");
    }
  }

  void CheckRunRecord() {
    auto text = Read(kRunRecord, "copies", limits::kRunRecordBytes);
    if (!text) return;
    auto parsed = ParseRunRecord(*text, kRunRecord);
    if (!parsed.ok()) {
      Add("copies", kRunRecord, parsed.error().what);
      return;
    }
    run_ = std::move(parsed).value();
    run_text_ = *text;
    if (auto kind = ReadFolderKind(fs_, dir_); !kind.ok()) Add("bag", kind.error().where, kind.error().what);
    if (run_->state != "finished") {
      Add("bag", kRunRecord, "state is '" + ValueForMessage(run_->state) + "', not 'finished'");
    }
    manifest_copy_ = run_->manifest_copy;
    for (auto [file, want, key] :
         {std::tuple{manifest_copy_, run_->manifest_sha256, "manifest_sha256"},
          std::tuple{std::string(kParamsCopy), run_->params_sha256, "params_sha256"}}) {
      if (!Openable(file, "copies")) continue;
      auto digest = Sha256File(fs_, dir_ / file, /*follow_symlinks=*/false);
      if (digest.ok() && digest.value() == want && file == manifest_copy_) manifest_copy_sha256_ = want;
      if (!digest.ok() || digest.value() != want) {
        Add("copies", file, std::string("does not match ") + key + " in data/run.json");
      }
    }
  }

  // The journal is the run's own account of every item; results.jsonl is derived from it.
  // A result that differs from its journal record was changed after the fact, even when
  // the bag was re-hashed consistently.
  class Journal {
   public:
    Journal() = default;
    Journal(JournalState state, FileSystem& fs, const fs::path& file)
        : state_(std::move(state)), reader_(std::in_place, fs, file) {}
    void Compare(const ResultRecord& r, std::string_view line, Verifier& v) {
      if (!state_) return;
      const std::size_t at = state_->done.Find(r.id, next_hint_);
      if (at == IdIndex::npos) {
        v.Add("accounting", r.id, "has a result but no record in data/journal.jsonl");
        return;
      }
      next_hint_ = at + 1;
      // The common case costs one comparison: the journal's line is the result line with
      // "type":"result" in front (a classifier's record; an embedding's differs: row / vector_at).
      // A labelled item's line ends in its `expected` label, which the journal never holds.
      constexpr std::string_view kType = "{\"type\":\"result\",";
      if (!r.dim && line.size() >= 2) {
        // The record's fields X: the line is {X} or {X,"expected":"…"}, the journal's {"type":"result",X}.
        std::string_view fields = line.substr(1, line.size() - 2);
        if (r.expected) {
          const std::string tail = ",\"expected\":" + JsonLine(nlohmann::ordered_json(*r.expected)) + "}";
          fields = line.size() > tail.size() + 1 && line.substr(line.size() - tail.size()) == tail
                       ? line.substr(1, line.size() - tail.size() - 1)
                       : std::string_view();
        }
        auto raw = reader_->ReadLine(state_->done.Value(at));
        if (!fields.empty() && raw.ok() && raw.value().size() == kType.size() + fields.size() + 1 &&
            raw.value().substr(0, kType.size()) == kType &&
            raw.value().substr(kType.size(), fields.size()) == fields && raw.value().back() == '}') {
          return;
        }
      }
      auto rec = reader_->Read(state_->done.Value(at));
      if (rec.ok()) rec.value().expected = r.expected;  // judged against the manifest (JudgeOutcome)
      if (rec.ok() && rec.value().dim) {
        // The journal points into the sidecar; results.jsonl carries the row numbered at finish.
        // (Kept for CompareWithSidecar, which only a folder before format 4 has a sidecar for.)
        if (rec.value().vector_at && r.row && v.run_ && v.run_->format_version < 4)
          v.rows_.push_back({*r.row, *rec.value().vector_at, r.id});
        rec.value().vector_at.reset();
        rec.value().row = r.row;
        // A record journaled by a pilot before format 4 (a run resumed by a later one) carries
        // no digest: finish wrote the row's into results.jsonl.
        if (!rec.value().vector_sha256) rec.value().vector_sha256 = r.vector_sha256;
      }
      if (!rec.ok()) {
        v.Add("journal", r.id, rec.error().what);
      } else if (ToJsonLine(rec.value()) != ToJsonLine(r)) {
        v.Add("accounting", r.id,
              "its result differs from its record in data/journal.jsonl (changed after the run)");
      }
    }

    const JournalState* state() const { return state_ ? &*state_ : nullptr; }

   private:
    std::optional<JournalState> state_;
    std::optional<JournalReader> reader_;
    std::size_t next_hint_ = 0;
  };

  // `loading`: the journal, read on another thread while the manifest was parsed.
  Journal OpenJournal(std::future<Result<JournalState>>& loading, const std::string& rel = kJournal) {
    if (!Openable(rel, "journal")) return {};
    auto state = loading.valid() ? loading.get() : LoadJournal(fs_, dir_ / rel, false);
    if (!state.ok()) {
      Add("journal", rel, state.error().what);
      return {};
    }
    if (state.value().torn_bytes > 0) Add("journal", rel, "ends in a torn record");
    return Journal(std::move(state).value(), fs_, dir_ / rel);
  }

  // The journal's header binds the run (resume and status trust it): it must say what
  // data/run.json says, the shard included.
  void CompareHeader(const JournalHeader& h, const std::string& file, const std::optional<ShardSpec>& shard) {
    if (!run_) return;
    const bool same_shard = h.shard.has_value() == shard.has_value() && (!shard || *h.shard == *shard);
    if (!same_shard) {
      Add("journal", file,
          "its header is of " + (h.shard ? "shard " + ShardText(*h.shard) : std::string("no shard")) +
              ", data/run.json of " + (shard ? "shard " + ShardText(*shard) : std::string("no shard")));
    }
    if (h.manifest_sha256 != run_->manifest_sha256 || h.params_sha256 != run_->params_sha256 ||
        h.model_sha256 != run_->model_sha256) {
      Add("journal", file, "its header names another manifest, parameters or model than data/run.json");
    }
    if (!IsJoinedKind(run_->folder_kind) && h.run_id != run_->run_id) {
      Add("journal", file, "its header's run id differs from data/run.json's");
    }
    // Journal version 2 came with folder format 2: a folder that declares format 1 over a
    // version-2 journal was relabelled (which would spare its report the rebuild below).
    if (run_->format_version < 2 && h.version >= 2) {
      Add("journal", file,
          "is version " + std::to_string(h.version) + ", written by a pilot of folder format 2 or later, " +
              "but the folder declares format " + std::to_string(run_->format_version));
    }
    // And the other way: a folder of format 2 was written with a version-2 journal; an older
    // version would spare its report (a merged folder's: through its shards') the rebuild.
    if (run_->format_version >= 2 && h.version < 2) {
      Add("journal", file,
          "is version " + std::to_string(h.version) + ", but the folder declares format " +
              std::to_string(run_->format_version) + ", whose pilot writes journal version 2");
    }
  }

  // A merged folder: each shard's run.json, under data/shards/, is a finished shard I of N
  // over the same manifest, parameters and model. (Its journal is compared with the results
  // in CheckAccounting.)
  void CheckMergedShards() {
    const std::uint32_t n = run_->merged_shards;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::string folder = MergedShardFolder({i, n});
      const std::string file = folder + "/" + kMergedShardRecord;
      shard_items_.push_back(kUnknownItems);  // replaced once the record is read
      shard_spans_.emplace_back();
      auto text = Read(file, "shards", limits::kRunRecordBytes);
      if (!text) continue;
      auto rec = ParseRunRecord(*text, file);
      if (!rec.ok()) {
        Add("shards", file, rec.error().what);
        continue;
      }
      shard_spans_.back() = rec.value().span;
      if (!shard_spans_.back().started || !shard_spans_.back().finished) {
        // Merge spans the shards with these: without them the merged report cannot be rebuilt.
        Add("shards", file,
            "gives no start and finish (started_unix and finished_unix, or started_at and finished_at)");
      }
      const RunRecord& r = rec.value();
      if (!IsPartitionKind(r.folder_kind) || !r.shard || !(*r.shard == ShardSpec{i, n})) {
        Add("shards", file, "is not the record of shard " + ShardText({i, n}));
      } else if (r.state != "finished") {
        Add("shards", file, "the shard did not finish");
      }
      if (r.manifest_sha256 != run_->manifest_sha256 || r.params_sha256 != run_->params_sha256 ||
          r.model_sha256 != run_->model_sha256) {
        Add("shards", file, "names another manifest, parameters or model than data/run.json");
      }
      shard_items_.back() = r.shard_items;
      shard_run_ids_.resize(i + 1);
      shard_run_ids_[i] = r.run_id;
    }
    CheckMergeList();
  }

  // run.json's merge.shards: one entry per shard, in order, each naming its own folder under
  // data/shards/ (a path anywhere else, `../../etc`, is a finding: a tool reading the record
  // must never be sent outside the folder), the run id and item count of the shard's record,
  // and accepted + rejected = items. `source` is where the shard was merged from: provenance,
  // never opened.
  void CheckMergeList() {
    auto doc = ParseJson(run_text_, kRunRecord);
    if (!doc.ok()) return;  // already a finding of CheckRunRecord
    const std::uint32_t n = run_->merged_shards;
    listed_accepted_.assign(n, std::nullopt);
    accepted_per_shard_.assign(n, 0);
    const nlohmann::json* list = nullptr;
    if (doc.value().contains("merge") && doc.value()["merge"].is_object() &&
        doc.value()["merge"].contains("shards") && doc.value()["merge"]["shards"].is_array()) {
      list = &doc.value()["merge"]["shards"];
    }
    if (!list || list->size() != n) {
      return Add("shards", kRunRecord, "merge.shards does not list the " + std::to_string(n) + " shards");
    }
    const nlohmann::json& merge = doc.value()["merge"];
    listed_figures_.rate_sum = NumberAt(merge, "throughput_sum_of_shards_items_per_s");
    listed_figures_.wall_seconds = NumberAt(merge, "wall_clock_seconds");
    listed_figures_.wall_rate = NumberAt(merge, "throughput_wall_clock_items_per_s");
    listed_figures_.rates.assign(n, std::nullopt);
    for (std::uint32_t i = 0; i < n; ++i) {
      const nlohmann::json& e = (*list)[i];
      const std::string at = "merge.shards[" + std::to_string(i) + "]";
      listed_figures_.rates[i] = NumberAt(e, "items_per_second");
      const std::string folder = MergedShardFolder({i, n});
      auto named = StringAt(e, "folder");
      if (named != folder) {
        Add("shards", kRunRecord,
            at + ".folder is '" + ValueForMessage(named.value_or("")) + "', not " + folder +
                ": a merged record names only its own shard folders");
      }
      auto items = UnsignedAt(e, "items"), accepted = UnsignedAt(e, "accepted"),
           rejected = UnsignedAt(e, "rejected");
      const bool counts_ok = items && accepted && rejected && *accepted <= *items && *rejected <= *items &&
                             *accepted + *rejected == *items;
      if (counts_ok) listed_accepted_[i] = *accepted;  // against the results, after the accounting
      if (UnsignedAt(e, "index") != i || !counts_ok ||
          (i < shard_items_.size() && shard_items_[i] != kUnknownItems && *items != shard_items_[i]) ||
          (i < shard_run_ids_.size() && !shard_run_ids_[i].empty() &&
           StringAt(e, "run_id") != shard_run_ids_[i]) ||
          !StringAt(e, "source")) {
        Add("shards", kRunRecord,
            at + " differs from " + folder + "/run.json (index, run id, items, accepted + rejected, source)");
      }
    }
  }

  // What the results add up to, line by line: each manifest item's count, by manifest position.
  struct Tally {
    const IdIndex* ids = nullptr;
    std::vector<std::uint8_t> seen;
    std::map<std::string, std::size_t> by_reason, by_category;
    std::size_t pos = 0;   // the manifest position after the last result's
    std::size_t last = 0;  // the last result's manifest position
    bool in_order = true;
    // The common case compares each line's id with the next item's; a result out of manifest
    // order is looked up.
    std::optional<std::size_t> Find(std::string_view id) const {
      if (pos < ids->size() && ids->Id(pos) == id) return pos;
      std::size_t at = ids->Find(id);
      if (at == IdIndex::npos) return std::nullopt;
      return at;
    }
  };

  // The manifest copy's ids: from the cache when an earlier folder had the same bytes, else
  // streamed (validated line by line, as `pilot run` validates it) into `local`. Null, with a
  // finding, when it does not parse.
  const ManifestIndex* IndexManifestCopy(ManifestIndex& local) {
    const std::shared_ptr<ManifestCache>& cache = options_.inputs ? nullptr : options_.manifest_cache;
    if (cache && !cache->sha256.empty() && cache->sha256 == manifest_copy_sha256_) {
      return &cache->index;  // the same bytes, validated for an earlier folder
    } else {
      auto source = ManifestSource::Open(fs_, dir_ / manifest_copy_, &local);
      if (!source.ok()) {
        Add("accounting", manifest_copy_, source.error().what);
        return nullptr;
      }
      manifest_.emplace(std::move(source).value());
      if (cache && cache->sha256.empty()) {
        cache->sha256 = manifest_->sha256();
        cache->index = std::move(local);
        return &cache->index;
      }
    }
    return &local;
  }

  // A merged folder's shards' journals, each compared with its record's header.
  std::vector<Journal> OpenShardJournals() {
    std::vector<Journal> shard_journals;
    for (std::uint32_t i = 0; i < run_->merged_shards; ++i) {
      std::future<Result<JournalState>> none;
      const ShardSpec spec{i, run_->merged_shards};
      const std::string file = MergedShardFolder(spec) + "/" + kMergedShardJournal;
      shard_journals.push_back(OpenJournal(none, file));
      if (const JournalState* js = shard_journals.back().state()) CompareHeader(js->header, file, spec);
    }
    return shard_journals;
  }

  // One result line: its id is the manifest's (and the shard's), once, and it agrees with the
  // journal (a merged folder's: its shard's). False when it cannot be judged further.
  bool AccountResult(const ResultRecord& r, const std::string& line, std::size_t line_number,
                     const std::optional<ShardSpec>& shard, bool merged, std::vector<Journal>& shard_journals,
                     Journal& journal, Tally& tally) {
    auto where = [&] { return std::string(kResults) + ":" + std::to_string(line_number); };
    auto k = tally.Find(r.id);
    if (!k) {
      Add("accounting", r.id, "result for an id that is not in the manifest (" + where() + ")");
      return false;
    }
    if (shard && !InShard(r.id, *shard)) {
      Add("accounting", r.id,
          "belongs to shard " + std::to_string(ShardOfId(r.id, shard->count)) + ", not to this shard " +
              ShardText(*shard));
      return false;
    }
    tally.in_order = tally.in_order && *k >= tally.pos;
    tally.pos = *k + 1;
    tally.last = *k;
    if (tally.seen[*k] < 2 && ++tally.seen[*k] == 2)
      Add("accounting", r.id, "appears more than once in data/results.jsonl");
    if (merged) {
      const std::uint32_t owner = ShardOfId(r.id, run_->merged_shards);
      if (r.accepted && owner < accepted_per_shard_.size()) ++accepted_per_shard_[owner];
      if (owner < shard_journals.size()) {
        const std::size_t before = rows_.size();
        shard_journals[owner].Compare(r, line, *this);
        rows_.resize(before);  // the shards' sidecars are not in a merged folder
      }
    } else {
      journal.Compare(r, line, *this);
    }
    return true;
  }

  void CheckAccounting() {
    // The journal is read on a second core while this one parses the manifest copy. Only a
    // regular file is read there; the findings about it are made here, in order, as before.
    std::future<Result<JournalState>> loading;
    if (Look(kJournal).regular) {
      try {
        loading = std::async(std::launch::async,
                             [this, file = dir_ / kJournal] { return LoadJournal(fs_, file, false); });
      } catch (const std::system_error&) {
        // No thread to be had: OpenJournal reads it on this one.
      }
    }
    // The manifest copy is streamed (validated line by line, as `pilot run` validates it);
    // only its ids are kept.
    ManifestIndex local;
    if (!Openable(manifest_copy_, "accounting")) return;
    auto params_text = Read(kParamsCopy, "accounting", limits::kParamsBytes);
    const ManifestIndex* index = IndexManifestCopy(local);
    if (!index) return;
    if (!params_text || !Openable(kResults, "accounting")) return;
    auto results = LineReader::Open(fs_, dir_ / kResults, limits::kResultLineBytes,
                                    /*follow_symlinks=*/false);
    if (!results.ok()) {
      Add("accounting", kResults, results.error().what);
      return;
    }
    // A merged folder has no journal of its own: each result is compared with its shard's.
    const bool merged = run_ && IsJoinedKind(run_->folder_kind);
    const std::optional<ShardSpec> shard = run_ ? run_->shard : std::nullopt;
    std::vector<Journal> shard_journals;
    if (merged) {
      shard_journals = OpenShardJournals();
      if (loading.valid()) (void)loading.get();
    }
    Journal journal = merged ? Journal() : OpenJournal(loading);
    if (!merged && journal.state() && run_) CompareHeader(journal.state()->header, kJournal, run_->shard);
    auto params = ParseParams(*params_text, dir_, kParamsCopy);
    if (!params.ok()) {
      Add("accounting", kParamsCopy, params.error().what);
      return;
    }
    const bool embeds = run_ && run_->output->vectors;
    std::set<std::string> allowed(params.value().allowed_categories.begin(),
                                  params.value().allowed_categories.end());
    const IdIndex& ids = index->ids;
    // Memory in proportion to the ids, not the records: the ids themselves, one count per
    // manifest item, and for the report's rebuild the labelled items' `expected`, one latency
    // per item and the first kMarkdownItemRows results. The common case compares each line's
    // id with the next item's; a result out of manifest order is looked up.
    Tally tally;
    tally.ids = &ids;
    tally.seen.assign(ids.size(), 0);
    // The report, rebuilt from the results as they pass, the way the run's finish (or merge)
    // built it: only where every journal behind it was written by a pilot of the current
    // format (version 2; the report's content is part of the format, and an older folder's
    // counts are checked): a run's or a shard's own, a merged folder's shards'.
    const bool rebuild = run_ && (merged ? MergedReportRebuildable(shard_journals)
                                         : journal.state() && journal.state()->header.version >= 2);
    Rebuilt rebuilt{ReportBuilder(*(run_ ? run_->output : OutputKinds().front()), run_ ? run_->dim : 0,
                                  run_ ? run_->format_version : kRunFormatVersion),
                    {}};
    std::string line;
    for (;;) {
      auto more = results.value().Next(line);
      if (!more.ok()) {
        Add("accounting", kResults, more.error().what);
        break;
      }
      if (!more.value()) break;
      auto where = [&] {
        return std::string(kResults) + ":" + std::to_string(results.value().line_number());
      };
      std::optional<ResultRecord> fast = ScanResultRecord(line, /*journal=*/false);
      auto rec = fast ? Result<ResultRecord>(std::move(*fast)) : ParseResultRecord(line, where());
      if (!rec.ok()) {
        Add("accounting", where(), rec.error().what);
        continue;
      }
      if (embeds && run_->format_version >= 4 && rec.value().accepted && rec.value().dim) {
        CheckRowDigest(rec.value());
      }
      if (AccountResult(rec.value(), line, results.value().line_number(), shard, merged, shard_journals,
                        journal, tally)) {
        JudgeOutcome(rec.value(), tally.last, allowed, *index, tally.by_reason, tally.by_category);
        if (rebuild) AddToRebuilt(rec.value(), tally.last, *index, rebuilt);
      }
    }
    CheckCompleteness(ids, tally.seen, shard, merged, tally.in_order, journal);
    auto report = CheckReport(tally.by_reason, tally.by_category);
    // Compared only where the rebuild is exact: its results complete and in manifest order, and
    // no finding so far about them or the report.
    if (rebuild && report && tally.in_order && result_.findings.empty()) {
      CheckRebuiltReport(*report, std::move(rebuilt),
                         merged ? MergedSources(shard_journals) : RunSources(*journal.state()),
                         shard ? Acceptance{} : params.value().acceptance);
    }
    if (embeds) CheckVectors(run_->dim, params.value().vectors_dtype);
  }

  // Run format 4: an accepted embedding's row of the .npy hashes to the `vector_sha256` its
  // result carries (and its journal record: Journal::Compare). Read as the results pass, in
  // row order, so memory stays flat; a .npy whose header or size is wrong is CheckVectors'
  // finding, and its rows are not read.
  void CheckRowDigest(const ResultRecord& r) {
    RowDigests& d = digests_;
    if (!r.vector_sha256) {
      if (++d.missing <= 20)
        Add("vectors", r.id, "accepted without the vector_sha256 that run format 4 requires");
      return;
    }
    if (!d.tried) {
      d.tried = true;
      if (!Look(kVectorsNpy).regular) return;
      auto opened = fs_.OpenRead(dir_ / kVectorsNpy, /*follow_symlinks=*/false);
      if (!opened.ok()) return;
      std::string head(static_cast<std::size_t>(
                           std::min<std::uint64_t>(opened.value()->size(), limits::kNpyHeaderBytes + 10)),
                       '\0');
      if (!ReadExactAt(*opened.value(), 0, head.data(), head.size()).ok()) return;
      auto shape = ParseNpyHeader(head, kVectorsNpy);
      const std::uint64_t size = opened.value()->size();
      if (!shape.ok() || shape.value().cols == 0 ||
          shape.value().rows > (size / DtypeBytes(shape.value().dtype)) / shape.value().cols ||
          size != shape.value().data_offset + shape.value().rows * shape.value().row_bytes()) {
        return;
      }
      d.shape = shape.value();
      d.npy = std::move(opened).value();
    }
    if (!d.npy || !r.row || *r.row >= d.shape.rows || *r.dim != d.shape.cols) return;
    std::string row(static_cast<std::size_t>(d.shape.row_bytes()), '\0');
    Status got = ReadExactAt(*d.npy, d.shape.data_offset + *r.row * row.size(), row.data(), row.size());
    if ((!got.ok() || VectorDigest(row) != *r.vector_sha256) && ++d.reported <= 20) {
      Add("vectors", kVectorsNpy,
          "row " + std::to_string(*r.row) + " is not the vector item '" + r.id +
              "''s vector_sha256 in data/results.jsonl digests (changed after the run)");
    }
  }

  // One result's outcome against the run's contract: an accepted record against its output
  // kind's rules (output_kind.h: a category among those allowed, an embedding's row and dim), a
  // rejection's known reason and detail, and the rejection the manifest expects of the item at
  // manifest position `k`.
  void JudgeOutcome(const ResultRecord& r, std::size_t k, const std::set<std::string>& allowed,
                    const ManifestIndex& index, std::map<std::string, std::size_t>& by_reason,
                    std::map<std::string, std::size_t>& by_category) {
    if (r.accepted) {
      const OutputKindSpec& kind = *(run_ ? run_->output : OutputKinds().front());
      if (auto wrong =
              kind.check_accepted(r, AcceptedRules{run_ ? run_->dim : 0, &allowed, result_.accepted,
                                                   run_ ? run_->max_new_tokens : 0, run_ ? run_->vocab : 0,
                                                   run_ ? &run_->eos_token_ids : nullptr,
                                                   run_ ? &run_->stop_token_ids : nullptr}))
        Add("accounting", r.id, *wrong);
      ++result_.accepted;
      if (kind.labels) ++by_category[r.category];
    } else {
      ++result_.rejected;
      ++by_reason[r.reason];
      if (!reason::IsKnown(r.reason))
        Add("accounting", r.id, "rejected with unknown reason '" + r.reason + "'");
      if (r.detail.empty()) Add("accounting", r.id, "rejected without a detail");
    }
    // Run format 3: a labelled item's result carries the manifest's label, and no other does.
    auto label = index.expected.find(k);
    const bool carries = run_ && run_->format_version >= 3 && label != index.expected.end();
    if (carries && r.expected != label->second) {
      Add("accounting", r.id,
          r.expected ? "its 'expected' label differs from the manifest's"
                     : "has no 'expected' label, though the manifest gives the item one");
    } else if (!carries && r.expected) {
      Add("accounting", r.id,
          run_ && run_->format_version >= 3
              ? "carries an 'expected' label the manifest does not give the item"
              : "carries an 'expected' label, which a folder of this format never has");
    }
    auto expected = index.expected_rejection.find(k);
    const std::optional<std::string> want = expected == index.expected_rejection.end()
                                                ? std::nullopt
                                                : std::optional<std::string>(expected->second);
    if (want && (r.accepted || r.reason != *want)) {
      Add("accounting", r.id,
          "expected rejection '" + *want + "' but got " + (r.accepted ? "accepted" : "'" + r.reason + "'"));
    }
  }

  // Every manifest id (of this shard) has its result, in order; the journal's and the record's
  // item counts, and a merged folder's shards' counts, agree with the manifest.
  void CheckCompleteness(const IdIndex& ids, const std::vector<std::uint8_t>& seen,
                         const std::optional<ShardSpec>& shard, bool merged, bool in_order,
                         Journal& journal) {
    result_.items = 0;
    std::vector<std::size_t> per_shard(merged ? run_->merged_shards : 0, 0);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      if (shard && !InShard(ids.Id(k), *shard)) continue;
      ++result_.items;
      if (merged) ++per_shard[ShardOfId(ids.Id(k), run_->merged_shards)];
      if (seen[k]) continue;
      Add("accounting", std::string(ids.Id(k)),
          shard ? "id of shard " + ShardText(*shard) + " has no result in data/results.jsonl"
                : "manifest id has no result in data/results.jsonl");
    }
    if (!in_order) Add("accounting", kResults, "results are not in manifest order");
    if (!merged && journal.state() && journal.state()->header.items != result_.items) {
      Add("journal", kJournal,
          "its header counts " + std::to_string(journal.state()->header.items) +
              " items; the manifest holds " + std::to_string(result_.items) +
              (shard ? " of this shard's" : ""));
    }
    if (shard && run_->shard_items != result_.items) {
      Add("accounting", kRunRecord,
          "shard.items is " + std::to_string(run_->shard_items) + " but the manifest holds " +
              std::to_string(result_.items) + " ids of shard " + ShardText(*shard));
    }
    for (std::size_t i = 0; merged && i < per_shard.size() && i < shard_items_.size(); ++i) {
      if (shard_items_[i] != kUnknownItems && shard_items_[i] != per_shard[i]) {
        Add("shards",
            MergedShardFolder({static_cast<std::uint32_t>(i), run_->merged_shards}) + "/" +
                kMergedShardRecord,
            "the shard processed " + std::to_string(shard_items_[i]) + " items; the manifest holds " +
                std::to_string(per_shard[i]) + " of its ids");
      }
    }
    for (std::size_t i = 0; merged && i < listed_accepted_.size() && i < accepted_per_shard_.size(); ++i) {
      if (listed_accepted_[i] && *listed_accepted_[i] != accepted_per_shard_[i]) {
        Add("shards", kRunRecord,
            "merge.shards[" + std::to_string(i) + "].accepted is " + std::to_string(*listed_accepted_[i]) +
                "; data/results.jsonl holds " + std::to_string(accepted_per_shard_[i]) +
                " accepted results of that shard");
      }
    }
  }

  // Every row of the .npy is the vector the journal recorded for its id, in the sidecar: a
  // row swapped or edited, even with the bag re-hashed, differs from the run's own account.
  void CompareWithSidecar(ReadableFile& npy, const NpyShape& s, std::uint32_t dim) {
    if (rows_.empty() || !Openable(kVectorsSidecar, "vectors")) return;
    auto sidecar = SidecarReader::Open(fs_, dir_ / kVectorsSidecar, dim);
    if (!sidecar.ok()) {
      Add("vectors", kVectorsSidecar, sidecar.error().what);
      return;
    }
    std::string row(4ull * dim, '\0');
    std::size_t reported = 0;
    for (const auto& ref : rows_) {
      if (ref.row >= s.rows) continue;  // already a finding of the accounting
      auto want = sidecar.value().ReadRaw(ref.vector_at, ref.id);
      Status got = ReadExactAt(npy, s.data_offset + ref.row * row.size(), row.data(), row.size());
      std::string what;
      if (!want.ok()) {
        what = want.error().what;
      } else if (!got.ok() || want.value() != row) {
        what = "row " + std::to_string(ref.row) + " differs from item '" + ref.id +
               "''s vector journaled in data/vectors.sidecar (changed after the run)";
      }
      if (!what.empty() && ++reported <= 20) Add("vectors", kVectorsNpy, what);
    }
  }

  // data/vectors.npy: the shape and dtype pilot writes, one row per accepted item, every
  // value finite. (Its bytes are covered by fixity like any payload file.)
  void CheckVectors(std::uint32_t dim, const std::string& params_dtype) {
    const bool once = run_->format_version >= 4;
    if (once && Look(kVectorsSidecar).exists) {
      Add("vectors", kVectorsSidecar,
          "is present; a run of format 4 keeps its vectors once, in data/vectors.npy");
    }
    if (!Openable(kVectorsNpy, "vectors")) return;
    auto opened = fs_.OpenRead(dir_ / kVectorsNpy, /*follow_symlinks=*/false);
    if (!opened.ok()) {
      Add("vectors", kVectorsNpy, opened.error().what);
      return;
    }
    ReadableFile& npy = *opened.value();
    const std::uint64_t size = npy.size();
    std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, limits::kNpyHeaderBytes + 10)),
                     '\0');
    if (!ReadExactAt(npy, 0, head.data(), head.size()).ok()) {
      Add("vectors", kVectorsNpy, "cannot be read");
      return;
    }
    auto shape = ParseNpyHeader(head, kVectorsNpy);
    if (!shape.ok()) {
      Add("vectors", kVectorsNpy, shape.error().what);
      return;
    }
    const NpyShape& s = shape.value();
    const std::string want_dtype = once ? params_dtype : std::string("float32");
    if (VectorDtypeName(s.dtype) != want_dtype) {
      Add("vectors", kVectorsNpy,
          "stores " + std::string(VectorDtypeName(s.dtype)) + " ('" + std::string(NpyDescr(s.dtype)) +
              "'); " +
              (once ? "the parameters' vectors_dtype is " + std::string(want_dtype)
                    : std::string("a run of format ") + std::to_string(run_->format_version) +
                          " stores float32"));
      return;
    }
    if (s.cols != dim)
      Add("vectors", kVectorsNpy,
          "has " + std::to_string(s.cols) + " columns; the run's dim is " + std::to_string(dim));
    if (s.rows != result_.accepted) {
      Add("vectors", kVectorsNpy,
          "has " + std::to_string(s.rows) + " rows for " + std::to_string(result_.accepted) +
              " accepted items");
    }
    const std::size_t bytes = DtypeBytes(s.dtype);
    if (s.cols == 0 || s.rows > (size / bytes) / std::max<std::uint64_t>(1, s.cols) ||
        size != s.data_offset + s.rows * s.row_bytes()) {
      Add("vectors", kVectorsNpy,
          "is " + std::to_string(size) + " bytes, not what its header's shape (" + std::to_string(s.rows) +
              ", " + std::to_string(s.cols) + ") of " + std::string(VectorDtypeName(s.dtype)) + " needs");
      return;
    }
    if (!once) CompareWithSidecar(npy, s, dim);
    std::string buf(1 << 18, '\0');
    std::uint64_t at = s.data_offset, values = 0;
    while (at < size) {
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - at));
      auto got = npy.ReadAt(at, buf.data(), want);
      if (!got.ok() || got.value() == 0 || got.value() % bytes != 0) {
        Add("vectors", kVectorsNpy, "cannot be read");
        return;
      }
      const std::size_t n = got.value();
      const std::vector<float> floats = StoredToFloats(std::string_view(buf.data(), n), s.dtype);
      for (std::size_t k = 0; k < floats.size(); ++k, ++values) {
        if (!std::isfinite(floats[k])) {
          Add("vectors", kVectorsNpy,
              "row " + std::to_string(values / s.cols) + " holds a value that is not finite");
          return;
        }
      }
      at += n;
    }
  }

  // report.json as read: its bytes and the object they parse to.
  struct ReportFile {
    std::string text;
    nlohmann::json doc;
  };
  // report.json's counts against the results. Returns the file when it is a JSON object.
  std::optional<ReportFile> CheckReport(const std::map<std::string, std::size_t>& by_reason,
                                        const std::map<std::string, std::size_t>& by_category) {
    auto text = Read(kReportJson, "report", limits::kReportBytes);
    if (!text) return std::nullopt;
    auto parsed = ParseJson(*text, kReportJson);
    if (!parsed.ok()) {
      Add("report", kReportJson, parsed.error().what);
      return std::nullopt;
    }
    const auto& j = parsed.value();
    if (!j.is_object()) {
      Add("report", kReportJson, "not a JSON object");
      return std::nullopt;
    }
    const nlohmann::json no_counts = nlohmann::json::object();
    const nlohmann::json& c = j.contains("counts") && j["counts"].is_object() ? j["counts"] : no_counts;
    auto count = [&](const char* key) -> long long {
      return c.contains(key) && c[key].is_number_integer() ? c[key].get<long long>() : -1;
    };
    auto expect = [&](const char* key, std::size_t actual) {
      if (count(key) != static_cast<long long>(actual)) {
        Add("report", kReportJson,
            std::string("counts.") + key + " is " + std::to_string(count(key)) +
                " but data/results.jsonl holds " + std::to_string(actual));
      }
    };
    expect("total", result_.items);
    expect("accepted", result_.accepted);
    expect("rejected", result_.rejected);
    if (result_.accepted + result_.rejected != result_.items) {
      Add("accounting", kResults,
          "accepted " + std::to_string(result_.accepted) + " + rejected " + std::to_string(result_.rejected) +
              " != manifest count " + std::to_string(result_.items));
    }
    auto as_map = [&](const char* key) {
      std::map<std::string, std::size_t> m;
      if (j.contains(key) && j[key].is_object()) {
        for (const auto& [k, v] : j[key].items()) m[k] = v.is_number_unsigned() ? v.get<std::size_t>() : 0;
      }
      return m;
    };
    if (as_map("by_reason") != by_reason)
      Add("report", kReportJson, "by_reason does not match data/results.jsonl");
    if (as_map("by_category") != by_category)
      Add("report", kReportJson, "by_category does not match data/results.jsonl");
    return ReportFile{std::move(*text), std::move(parsed).value()};
  }

  // The report as the run's finish builds it: every result in manifest order, with the item's
  // labels from the manifest copy, and the first rows for report.md's table.
  struct Rebuilt {
    ReportBuilder builder;
    std::vector<ResultRecord> rows;
  };
  static void AddToRebuilt(const ResultRecord& r, std::size_t k, const ManifestIndex& index,
                           Rebuilt& rebuilt) {
    ManifestItem item;
    item.id = r.id;
    if (auto e = index.expected.find(k); e != index.expected.end()) item.expected = e->second;
    if (auto e = index.expected_rejection.find(k); e != index.expected_rejection.end())
      item.expected_rejection = e->second;
    rebuilt.builder.Add(item, r);
    if (rebuilt.rows.size() < kMarkdownItemRows) rebuilt.rows.push_back(r);
  }

  // What a report is rebuilt from besides the results, the manifest copy and the parameters.
  struct ReportSources {
    RunMetrics metrics;  // its peak_rss_mb: the floor under the recorded figure
    std::string run_id;  // report.md's title
    std::string from;    // what the sources are, for the finding
    std::string peak_from;
    // A merged folder's: the shards, their rates summed, and the span from the first start
    // to the last finish (the report's processing seconds too).
    std::size_t shards = 0;
    double shard_rate_sum = 0, wall_seconds = 0;
    std::vector<double> shard_rates;
  };
  static ReportSources RunSources(const JournalState& js) {
    ReportSources s;
    s.metrics = RunMetrics{js.processing_seconds, js.peak_rss_mb, js.device_peak_mb, js.batch_failure_count,
                           js.batch_failures};
    s.run_id = js.header.run_id;
    s.from = "data/results.jsonl, the manifest copy, the parameters and the journal";
    s.peak_from = "the journal's peak";
    return s;
  }
  // A merged folder's report comes from its shards' reports and records, as merge read them:
  // each shard's rate is its items over its journal's processing seconds, its device peak its
  // journal's, and the span runs from the first shard's start to the last one's finish (their
  // records under data/shards/). The peak RSS is each shard's finishing session's, in no file
  // the merged folder holds: taken as recorded, never below the shards' journals' peaks.
  bool MergedReportRebuildable(const std::vector<Journal>& shard_journals) const {
    const std::uint32_t n = run_->merged_shards;
    if (n == 0 || shard_journals.size() != n || shard_spans_.size() != n) return false;
    for (std::uint32_t i = 0; i < n; ++i) {
      const JournalState* js = shard_journals[i].state();
      if (!js || js->header.version < 2 || !shard_spans_[i].started || !shard_spans_[i].finished)
        return false;
    }
    return true;
  }
  ReportSources MergedSources(const std::vector<Journal>& shard_journals) const {
    ReportSources s;
    std::vector<ShardFigures> shards;
    for (std::size_t i = 0; i < shard_journals.size(); ++i) {
      const JournalState& js = *shard_journals[i].state();
      // Each shard's report, as its verify rebuilds it: its items over its processing seconds,
      // its journal's device peak; its peak RSS, in no file here, bounded below by its journal's.
      shards.push_back(ShardFigures{RateOf(js.header.items, js.processing_seconds), js.peak_rss_mb,
                                    js.device_peak_mb, shard_spans_[i]});
      s.shard_rates.push_back(shards.back().items_per_second);
    }
    const MergedFigures merged = CombineShardFigures(shards);
    s.metrics.processing_seconds = merged.wall_seconds;
    s.metrics.peak_rss_mb = merged.peak_rss_mb;
    s.metrics.device_peak_mb = merged.device_peak_mb;
    s.shard_rate_sum = merged.shard_rate_sum;
    s.wall_seconds = merged.wall_seconds;
    s.shards = shard_journals.size();
    s.run_id = run_->run_id;
    s.from = "data/results.jsonl, the manifest copy, the parameters and the shards' journals and records";
    s.peak_from = "the shards' journals' highest peak";
    return s;
  }

  // report.json and report.md are derived documents: rebuilt from the results, the manifest
  // copy, the parameters' acceptance and the journal's metrics (a merged folder's: its
  // shards'), they must be the folder's, byte for byte. One figure is in no other file: the
  // peak RSS of the session that finished, taken as recorded but never below the journal's.
  void CheckRebuiltReport(const ReportFile& recorded, Rebuilt rebuilt, ReportSources sources,
                          const Acceptance& acceptance) {
    const nlohmann::json& j = recorded.doc;
    const bool peak_ok = j.contains("peak_rss_mb") && j["peak_rss_mb"].is_number() &&
                         std::isfinite(j["peak_rss_mb"].get<double>()) &&
                         j["peak_rss_mb"].get<double>() >= sources.metrics.peak_rss_mb;
    if (!peak_ok) {
      Add("report", kReportJson,
          "peak_rss_mb is not a number at or above " + sources.peak_from + " (" +
              std::to_string(sources.metrics.peak_rss_mb) + " MB)");
      return;
    }
    sources.metrics.peak_rss_mb = j["peak_rss_mb"].get<double>();
    Report report = rebuilt.builder.Finish(acceptance, sources.metrics);
    report.shards = sources.shards;
    report.shard_rate_sum = sources.shard_rate_sum;
    report.wall_seconds = sources.wall_seconds;
    const nlohmann::ordered_json want = ReportToJson(report);
    if (PrettyJson(want) != recorded.text) {
      const std::string keys = DifferingKeys(j, want);
      Add("report", kReportJson,
          "does not match the report rebuilt from " + sources.from +
              (keys.empty() ? std::string(" (its bytes differ)") : "; differing keys: " + keys));
      return;
    }
    auto md = Read(kReportMarkdown, "report", limits::kReportBytes);
    if (md && *md != ReportToMarkdown(report, sources.run_id, rebuilt.rows)) {
      Add("report", kReportMarkdown, "does not match the report rendered again from data/report.json");
    }
    if (sources.shards > 0) CheckMergedFigures(sources, report);
  }

  // A merged record's figures (run.json's `merge`) are the rebuilt report's, number for number.
  void CheckMergedFigures(const ReportSources& sources, const Report& report) {
    auto check = [&](const std::string& key, std::optional<double> listed, double rebuilt) {
      if (listed != rebuilt) {
        Add("shards", kRunRecord,
            key + " is " + (listed ? std::to_string(*listed) : std::string("missing")) +
                " but the shards' journals and records give " + std::to_string(rebuilt));
      }
    };
    check("merge.throughput_sum_of_shards_items_per_s", listed_figures_.rate_sum, sources.shard_rate_sum);
    check("merge.wall_clock_seconds", listed_figures_.wall_seconds, sources.wall_seconds);
    check("merge.throughput_wall_clock_items_per_s", listed_figures_.wall_rate, report.items_per_second);
    for (std::size_t i = 0; i < sources.shard_rates.size() && i < listed_figures_.rates.size(); ++i) {
      check("merge.shards[" + std::to_string(i) + "].items_per_second", listed_figures_.rates[i],
            sources.shard_rates[i]);
    }
  }

  void CheckInputs() {
    fs::path root = options_.inputs_root ? *options_.inputs_root : fs::path(run_ ? run_->inputs_root : "");
    if (!manifest_) return;  // unreadable: already a finding of the accounting check
    auto root_stat = root.empty() ? Result<FileStat>(FileStat{}) : fs_.Stat(root);
    if (root.empty() || !root_stat.ok() || !root_stat.value().directory) {
      Add("inputs", root.empty() ? "plan.inputs_root in data/run.json" : root.string(),
          "inputs folder not found; give it with --inputs-root");
      return;
    }
    if (auto canonical = fs_.Resolve(root); canonical.ok()) root = canonical.value();
    InputsChecked checked;
    checked.root = root.string();
    Status read = manifest_->ForEach([&](const ManifestItem& item) -> Status {
      ++checked.items;
      // Opened once, never leaving the inputs' folder, and hashed through that descriptor.
      BeneathOpen opened = fs_.OpenBeneath(root, item.path);
      if (opened.failure == BeneathOpen::Failure::kOutside) {
        ++checked.not_opened;  // never opened, by rule; its rejection says so
        return {};
      }
      if (!opened.file) {
        ++checked.missing;
        if (!item.expected_rejection) Add("inputs", item.id, "input '" + item.path + "' is missing");
        return {};
      }
      auto digest = Sha256Of(*opened.file);
      ++checked.rehashed;
      if (digest.ok() && digest.value() != item.sha256) {
        ++checked.changed;
        if (item.expected_rejection != std::string(reason::kInputChanged)) {
          Add("inputs", item.id, "input '" + item.path + "' no longer matches its pinned sha256");
        }
      }
      return {};
    });
    result_.inputs = checked;
    if (!read.ok()) Add("inputs", manifest_copy_, read.error().what);
  }

  FileSystem& fs_;
  fs::path dir_;
  VerifyOptions options_;
  const FolderKindSpec* kind_;
  VerifyResult result_;
  std::optional<RunRecord> run_;
  std::string run_text_;                    // data/run.json as read
  std::vector<std::string> shard_run_ids_;  // a merged folder's shards' run ids, by index
  // A merged folder: each shard's accepted count as merge.shards lists it, and as the results
  // hold it (each result counted for the shard its id belongs to).
  std::vector<std::optional<std::uint64_t>> listed_accepted_;
  std::vector<std::uint64_t> accepted_per_shard_;
  std::string manifest_copy_ = kManifestCopyJson;
  std::string manifest_copy_sha256_;        // set when the copy hashed to its record's pin
  std::optional<ManifestSource> manifest_;  // the run's copy, validated by CheckAccounting
  struct RowRef {
    std::uint64_t row, vector_at;
    std::string id;
  };
  std::vector<RowRef> rows_;  // embedding runs: each accepted item's row and journaled vector
  struct RowDigests {         // format 4: the .npy read row by row (CheckRowDigest)
    bool tried = false;
    std::unique_ptr<ReadableFile> npy;
    NpyShape shape;
    std::size_t reported = 0, missing = 0;
  } digests_;
  std::vector<std::size_t> shard_items_;   // merged: each shard's own item count, from its run.json
  std::vector<RecordedSpan> shard_spans_;  // merged: each shard's start and finish, from its run.json
  struct ListedFigures {                   // merged: run.json's merge figures, as recorded
    std::optional<double> rate_sum, wall_seconds, wall_rate;
    std::vector<std::optional<double>> rates;
  } listed_figures_;
  static constexpr std::size_t kUnknownItems = static_cast<std::size_t>(-1);  // its record unreadable
};

}  // namespace

VerifyResult VerifyRunFolder(FileSystem& fs, const fs::path& run_dir, const VerifyOptions& options) {
  return Verifier(fs, run_dir, options).Run();
}

Result<VerifyResult> VerifyFolder(FileSystem& fs, const fs::path& dir, const VerifyOptions& options) {
  auto kind = ReadFolderKind(fs, dir);
  if (kind.ok()) {
    if (Status st = CheckFolderKind(kind.value(), dir, "verify"); !st.ok()) return st.error();
    VerifyResult r = Verifier(fs, dir, options, FolderKinds().Find(kind.value().kind)).Run();
    r.folder_kind = kind.value().kind;
    return r;
  }
  // A folder whose record and bag-info.txt disagree (or whose format this pilot does not know)
  // and whose record names a kind with checks of its own: those checks, with the disagreement
  // as the first finding. Any other: a run's checks, which report it.
  if (auto record = ReadInsideFolder(fs, dir, kRunRecord, limits::kRunRecordBytes); record.ok()) {
    auto doc = ParseJson(record.value(), kRunRecord);
    const FolderKindSpec* spec =
        doc.ok() ? FolderKinds().Find(StringAt(doc.value(), "folder_kind").value_or("")) : nullptr;
    if (spec && spec->checks) {
      VerifyResult r = Verifier(fs, dir, options, spec).Run();
      r.findings.insert(r.findings.begin(), Finding{"bag", EscapeTerminal(kind.error().where),
                                                    EscapeTerminal(kind.error().what)});
      r.folder_kind = spec->name;
      return r;
    }
  }
  return VerifyRunFolder(fs, dir, options);
}

void RegisterRunFolderKinds(FolderKindRegistry& registry) {
  FolderKindSpec run;
  run.name = kFolderKindRun;
  run.max_format = kRunFormatVersion;
  run.undeclared_is_format_1 = true;
  run.results = true;
  registry.Register(run);
  for (const char* name : {kFolderKindShard, kFolderKindMerged}) {
    FolderKindSpec spec;  // written in run format only, and always declared
    spec.name = name;
    spec.min_format = 2;  // shards and merged folders came with format 2
    spec.max_format = kRunFormatVersion;
    spec.results = true;
    spec.partition = name == std::string_view(kFolderKindShard);
    spec.joined = name == std::string_view(kFolderKindMerged);
    registry.Register(std::move(spec));
  }
}

std::string DifferingKeys(const nlohmann::json& got, const nlohmann::ordered_json& want) {
  constexpr std::size_t kListed = 20;
  std::vector<std::string> keys;
  if (got.is_object()) {
    for (const auto& [key, value] : want.items()) {
      if (!got.contains(key) || got[key] != nlohmann::json(value)) keys.push_back(key);
    }
    for (const auto& [key, value] : got.items()) {
      if (!want.contains(key)) keys.push_back(KeyForMessage(key));
    }
  }
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < kListed; ++i) out += (i ? ", " : "") + keys[i];
  if (keys.size() > kListed) out += " and " + std::to_string(keys.size() - kListed) + " more";
  return out;
}

nlohmann::ordered_json VerifyResultToJson(const fs::path& run_dir, const VerifyResult& result) {
  nlohmann::ordered_json j;
  j["run_dir"] = run_dir.string();
  j["folder_kind"] = result.folder_kind;
  j["ok"] = result.ok();
  j["items"] = result.items;
  j["accepted"] = result.accepted;
  j["rejected"] = result.rejected;
  j["files_checked"] = result.files_checked;
  j["fingerprint"] =
      result.fingerprint.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(result.fingerprint);
  if (result.inputs) {
    const InputsChecked& in = *result.inputs;
    j["inputs"] = {{"root", in.root},       {"items", in.items},     {"rehashed", in.rehashed},
                   {"missing", in.missing}, {"changed", in.changed}, {"not_opened", in.not_opened}};
  }
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : result.findings)
    findings.push_back({{"check", f.check}, {"where", f.where}, {"what", f.what}});
  j["findings"] = findings;
  return j;
}

}  // namespace pilot
