#include "pilot/journal.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"

namespace pilot {

namespace fs = std::filesystem;

nlohmann::ordered_json JournalHeader::ToJson() const {
  nlohmann::ordered_json j;
  j["type"] = "header";
  j["version"] = version;
  j["run_id"] = run_id;
  j["manifest_sha256"] = manifest_sha256;
  j["params_sha256"] = params_sha256;
  j["model_sha256"] = model_sha256;
  j["items"] = items;
  j["manifest_copy"] = manifest_copy;
  j["plan"] = {{"manifest", manifest_path},
               {"params", params_path},
               {"model", model_path},
               {"inputs_root", inputs_root}};
  j["started_at"] = started_at;
  if (started_unix > 0) j["started_unix"] = started_unix;
  if (shard)
    j["shard"] = {{"index", shard->index}, {"count", shard->count}, {"manifest_items", manifest_items}};
  return j;
}

Result<JournalHeader> JournalHeader::FromJson(const nlohmann::json& j, const std::string& where) {
  try {
    JournalHeader h;
    if (j.at("type") != "header") throw std::runtime_error("first record is not a header");
    auto version = UnsignedAt(j, "version");
    if (!version || *version < 1 || *version > kJournalVersion) {
      return BadInput(
          "the journal's format version " +
              (j.contains("version") ? KeyForMessage(j.at("version").dump()) : std::string("(none)")) +
              " is not one this pilot reads (1.." + std::to_string(kJournalVersion) + ")",
          where, "use the pilot that wrote this folder, or a newer one");
    }
    h.version = static_cast<int>(*version);
    h.run_id = j.at("run_id").get<std::string>();
    h.manifest_sha256 = j.at("manifest_sha256").get<std::string>();
    h.params_sha256 = j.at("params_sha256").get<std::string>();
    h.model_sha256 = j.at("model_sha256").get<std::string>();
    // Checked before the conversion: 1e20 or -1.5 as a size_t is undefined behaviour.
    if (!j.at("items").is_number_unsigned()) throw std::runtime_error("'items' is not a count");
    h.items = j.at("items").get<std::size_t>();
    h.manifest_copy = j.at("manifest_copy").get<std::string>();
    const auto& plan = j.at("plan");
    h.manifest_path = plan.at("manifest").get<std::string>();
    h.params_path = plan.at("params").get<std::string>();
    h.model_path = plan.at("model").get<std::string>();
    h.inputs_root = plan.at("inputs_root").get<std::string>();
    h.started_at = StringAt(j, "started_at").value_or("");
    if (auto it = j.find("started_unix");
        it != j.end() && it->is_number() && std::isfinite(it->get<double>())) {
      h.started_unix = std::max(0.0, it->get<double>());
    }
    if (j.contains("shard")) {
      const auto& s = j.at("shard");
      const std::uint64_t none = ~std::uint64_t{0};
      const std::uint64_t index = UnsignedAt(s, "index").value_or(none);
      const std::uint64_t count = UnsignedAt(s, "count").value_or(0);
      const std::uint64_t total = UnsignedAt(s, "manifest_items").value_or(0);
      if (total < h.items || count < 1 || count > kMaxShards || index >= count) {
        throw std::runtime_error("'shard' is not {index, count, manifest_items} with index < count <= " +
                                 std::to_string(kMaxShards));
      }
      h.shard = ShardSpec{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(count)};
      h.manifest_items = static_cast<std::size_t>(total);
    }
    // The header steers what resume reads and writes: nothing in it may point elsewhere.
    if (h.manifest_copy != kManifestCopyJson && h.manifest_copy != kManifestCopyJsonl) {
      throw std::runtime_error("'manifest_copy' is neither data/manifest.json nor data/manifest.jsonl");
    }
    if (!IsValidItemId(h.run_id)) throw std::runtime_error("'run_id' is not a valid run id");
    for (const std::string* sha : {&h.manifest_sha256, &h.params_sha256, &h.model_sha256}) {
      if (!IsSha256Hex(*sha)) throw std::runtime_error("a sha256 is not 64 lower-case hex digits");
    }
    for (const std::string* path : {&h.manifest_path, &h.params_path, &h.model_path, &h.inputs_root}) {
      if (path->empty() || (*path)[0] != '/' || path->find('\0') != std::string::npos) {
        throw std::runtime_error("a plan path is not an absolute path");
      }
    }
    return h;
  } catch (const std::exception& e) {
    return BadInput(std::string("the journal's header is damaged: ") + e.what(), where,
                    "the run folder cannot be resumed; start a new run");
  }
}

namespace {

// Builds a JournalState record by record; shared by LoadJournal (a file, streamed) and
// ParseJournal (bytes in memory).
class JournalParser {
 public:
  explicit JournalParser(std::string where) : where_(std::move(where)) {}
  // Continues after the whole records of `prior` (ContinueJournal).
  JournalParser(std::string where, JournalState prior)
      : where_(std::move(where)), st_(std::move(prior)), line_no_(st_.records) {
    st_.torn_bytes = 0;
  }

  // One line without its '\n'; `complete` when it had one; `end` is the offset after it.
  Status Add(const std::string& line, bool complete, std::uint64_t end) {
    const std::uint64_t start = end - line.size() - (complete ? 1 : 0);
    ++line_no_;
    if (!pending_error_.empty()) {
      return BadInput(pending_error_, where_,
                      "the journal is damaged before its end; the run folder cannot be resumed");
    }
    if (complete && line_no_ > 1 && FastResult(line, start)) {
      st_.valid_bytes = end;
      return {};
    }
    std::optional<nlohmann::json> j;
    if (complete) {
      auto parsed = ParseJson(line, where_ + ":" + std::to_string(line_no_));
      if (parsed.ok() && parsed.value().is_object() && parsed.value().contains("type"))
        j = std::move(parsed).value();
    }
    if (!j) {
      // Torn (no newline) or unreadable: acceptable only as the very last record.
      pending_error_ = "record " + std::to_string(line_no_) + " is damaged";
      st_.torn_bytes = end - start;
      return {};
    }
    if (Status s = Record(*j, start); !s.ok()) return s;
    st_.valid_bytes = end;
    return {};
  }

  Result<JournalState> Finish() {
    if (line_no_ == 0 || st_.valid_bytes == 0) {
      return BadInput("the journal has no header: the run never started (no item was processed)", where_,
                      "start a new run with `pilot run`");
    }
    st_.records = line_no_ - (st_.torn_bytes > 0 ? 1 : 0);
    return std::move(st_);
  }

 private:
  Error Bad(const std::string& what) const {
    return BadInput("record " + std::to_string(line_no_) + " " + what, where_,
                    "the journal is damaged; the run folder cannot be resumed");
  }

  // Result records as pilot writes them: {"type":"result","id":"…","status":"…"
  // (ids cannot hold quotes): no JSON parse for the bulk of a long journal.
  bool FastResult(const std::string& line, std::uint64_t start) {
    constexpr std::string_view kResult = "{\"type\":\"result\",\"id\":\"";
    constexpr std::string_view kStatus = "\",\"status\":\"";
    if (line.compare(0, kResult.size(), kResult) != 0 || line.back() != '}') return false;
    auto id_end = line.find('"', kResult.size());
    if (id_end == std::string::npos || line.compare(id_end, kStatus.size(), kStatus) != 0) return false;
    std::string_view id(line.data() + kResult.size(), id_end - kResult.size());
    bool accepted = line.compare(id_end + kStatus.size(), 9, "accepted\"") == 0;
    bool rejected = line.compare(id_end + kStatus.size(), 9, "rejected\"") == 0;
    if (!(accepted || rejected) || !IsValidItemId(id)) return false;  // the slow path names the fault
    if (accepted && line.find("\"vector_at\":") != std::string::npos)
      return false;  // the slow path tracks it
    // A completion goes to the slow path, which reads it whole: any line that names one, and
    // any with an escape (a key may spell it with \u escapes).
    if (accepted && (line.find("completion") != std::string::npos || line.find('\\') != std::string::npos))
      return false;
    return AddResult(id, accepted, start).ok();
  }

  Status AddResult(std::string_view id, bool accepted, std::uint64_t start) {
    if (!st_.done.Insert(id, start)) {
      return BadInput(
          "item '" + std::string(id) + "' has two results (record " + std::to_string(line_no_) + ")", where_,
          "the journal is inconsistent; the run folder cannot be resumed");
    }
    (accepted ? st_.accepted : st_.rejected)++;
    ++st_.done_in_session;
    return {};
  }

  Status Record(const nlohmann::json& j, std::uint64_t start) {
    auto type = StringAt(j, "type");
    if (!type) return Bad("has a 'type' that is not a string");
    if (line_no_ == 1) {
      auto header = JournalHeader::FromJson(j, where_);
      if (!header.ok()) return header.error();
      st_.header = std::move(header).value();
      // One record per item is coming: no rehash on the way (capped: a hostile header's
      // count must not allocate without bound).
      st_.done.Reserve(
          static_cast<std::size_t>(std::min<std::uint64_t>(st_.header.items, std::uint64_t{1} << 20)));
      return {};
    }
    auto number = [&](const char* key, double& out, bool required) -> Status {
      if (!j.contains(key)) return required ? Status(Bad(std::string("has no '") + key + "'")) : Status();
      auto v = NumberAt(j, key);
      if (!v || !std::isfinite(*v)) return Bad(std::string("has a '") + key + "' that is not a number");
      out = *v;
      return {};
    };
    if (*type == "session") {
      double at = 0;
      if (Status s = number("at_unix", at, true); !s.ok()) return s;
      ++st_.sessions;
      st_.session_started = at;
      st_.done_in_session = 0;
    } else if (*type == "batch") {
      double at = 0, rss = 0, device = 0;
      if (Status s = number("at_unix", at, true); !s.ok()) return s;
      if (Status s = number("peak_rss_mb", rss, false); !s.ok()) return s;
      if (Status s = number("device_peak_mb", device, false); !s.ok()) return s;
      // Time since the previous batch of this session (or its start) is processing time.
      double since = st_.last_batch_at > st_.session_started ? st_.last_batch_at : st_.session_started;
      if (st_.session_started > 0 && at >= since) st_.processing_seconds += at - since;
      st_.last_batch_at = at;
      st_.peak_rss_mb = std::max(st_.peak_rss_mb, rss);
      if (j.contains("device_peak_mb"))
        st_.device_peak_mb = std::max(st_.device_peak_mb.value_or(0.0), device);
    } else if (*type == "result") {
      auto id = StringAt(j, "id");
      auto status = StringAt(j, "status");
      if (!id || !IsValidItemId(*id)) return Bad("has no valid id");
      if (!status || (*status != "accepted" && *status != "rejected")) {
        return Bad("has a status that is neither 'accepted' nor 'rejected'");
      }
      if (*status == "accepted" && j.contains("vector_at")) {
        auto at = UnsignedAt(j, "vector_at");
        auto dim = UnsignedAt(j, "dim");
        if (!at || !dim || *dim == 0 || *dim > limits::kEmbeddingDim || *at > (std::uint64_t{1} << 48)) {
          return Bad("has a 'vector_at' or 'dim' that is not a count in range");
        }
        st_.vectors_end = std::max(st_.vectors_end, *at + 4 + id->size() + 4 * *dim);
        st_.vector_at[*id] = *at;
      }
      if (*status == "accepted" && j.contains("completion")) {
        // A completion is read whole now, so that resume refuses a damaged one before it writes.
        auto whole = ResultRecordFromJson(j, where_);
        if (!whole.ok()) return Bad("(item '" + *id + "') is malformed: " + whole.error().what);
      }
      return AddResult(*id, *status == "accepted", start);
    } else if (*type == "batch_failure" && st_.header.version >= 2) {
      auto size = UnsignedAt(j, "batch_size");
      auto error = StringAt(j, "error");
      if (!size || !error) return Bad("(a batch failure) has no 'batch_size' count or no 'error' text");
      ++st_.batch_failure_count;
      if (st_.batch_failures.size() < kBatchFailuresKept) {
        BatchFailure f;
        f.batch_size = *size;
        f.error = *error;
        f.out_of_memory =
            j.contains("out_of_memory") && j["out_of_memory"].is_boolean() && j["out_of_memory"].get<bool>();
        st_.batch_failures.push_back(std::move(f));
      }
    } else {
      return Bad("has unknown type '" + KeyForMessage(*type) + "'");
    }
    return {};
  }

  std::string where_;
  JournalState st_;
  std::size_t line_no_ = 0;
  std::string pending_error_;  // a bad record is fatal unless it turns out to be the last
};

}  // namespace

Result<JournalState> ParseJournal(std::string_view text, const std::string& where) {
  JournalParser parser(where);
  std::string line;
  for (std::size_t start = 0; start < text.size();) {
    auto nl = text.find('\n', start);
    bool complete = nl != std::string_view::npos;
    std::size_t stop = complete ? nl : text.size();
    if (stop - start > limits::kJournalLineBytes) {
      return BadInput(
          "a record is longer than pilot's cap of " + std::to_string(limits::kJournalLineBytes) + " bytes",
          where, "the journal is damaged; the run folder cannot be resumed");
    }
    line.assign(text.substr(start, stop - start));
    start = complete ? nl + 1 : text.size();
    if (Status st = parser.Add(line, complete, start); !st.ok()) return st.error();
  }
  return parser.Finish();
}

namespace {

Result<JournalState> ParseLines(LineReader& in, JournalParser& parser) {
  std::string line;
  for (;;) {
    bool complete = false;
    auto more = in.Next(line, &complete);
    if (!more.ok()) return more.error();
    if (!more.value()) break;
    if (Status st = parser.Add(line, complete, in.offset()); !st.ok()) return st.error();
  }
  return parser.Finish();
}

}  // namespace

Result<JournalState> LoadJournal(FileSystem& fsys, const fs::path& file, bool repair) {
  const std::string where = file.string();
  auto stat = fsys.LinkStat(file);
  if (stat.ok() && !stat.value().exists) {
    return BadInput("no journal: the run never started (no item was processed)", where,
                    "start a new run with `pilot run`");
  }
  auto in = LineReader::Open(fsys, file, limits::kJournalLineBytes, /*follow_symlinks=*/false);
  if (!in.ok()) {
    return BadInput("cannot read the journal: " + in.error().what, where,
                    "a journal must be a regular file inside the run folder");
  }
  JournalParser parser(where);
  auto st = ParseLines(in.value(), parser);
  if (!st.ok()) return st;
  if (st.value().torn_bytes > 0 && repair) {
    if (Status s = fsys.Truncate(file, st.value().valid_bytes); !s.ok()) return s.error();
  }
  return st;
}

Result<JournalState> ContinueJournal(FileSystem& fsys, const fs::path& file, JournalState prior) {
  const std::uint64_t from = prior.valid_bytes;
  auto in = LineReader::Open(fsys, file, limits::kJournalLineBytes, /*follow_symlinks=*/false);
  if (!in.ok()) {
    return BadInput("cannot read the journal: " + in.error().what, file.string(),
                    "a journal must be a regular file inside the run folder");
  }
  if (Status st = in.value().Seek(from); !st.ok()) return st.error();
  JournalParser parser(file.string(), std::move(prior));
  return ParseLines(in.value(), parser);
}

JournalReader::JournalReader(FileSystem& fsys, const fs::path& file) : where_(file.string()) {
  auto in = LineReader::Open(fsys, file, limits::kJournalLineBytes, /*follow_symlinks=*/false);
  if (in.ok()) {
    in_.emplace(std::move(in).value());
  } else {
    open_error_ = in.error();
  }
}

Result<std::string_view> JournalReader::ReadLine(std::uint64_t offset) {
  if (!in_) return *open_error_;
  if (offset != in_->offset()) {
    if (Status st = in_->Seek(offset); !st.ok()) return st.error();
  }
  auto more = in_->Next(line_);
  if (!more.ok()) return more.error();
  if (!more.value()) return BadInput("cannot read the journal at offset " + std::to_string(offset), where_);
  return std::string_view(line_);
}

Result<ResultRecord> JournalReader::Read(std::uint64_t offset) {
  auto line = ReadLine(offset);
  if (!line.ok()) return line.error();
  if (auto fast = ScanResultRecord(line.value(), /*journal=*/true)) return std::move(*fast);
  return ParseResultRecord(line.value(), where_);
}

Result<JournalWriter> JournalWriter::Open(FileSystem& fsys, const fs::path& file) {
  auto f = fsys.OpenAppend(file);
  if (!f.ok()) return f.error();
  return JournalWriter(std::move(f).value());
}

Status JournalWriter::AppendSynced(const std::string& lines) {
  if (Status s = file_->Append(lines); !s.ok()) return s;
  return file_->Sync();
}

Status JournalWriter::AppendHeader(const JournalHeader& header) {
  return AppendSynced(JsonLine(header.ToJson()) + "\n");
}

Status JournalWriter::AppendSession(const nlohmann::ordered_json& session, double at_unix) {
  nlohmann::ordered_json j = {{"type", "session"}, {"at_unix", at_unix}};
  for (const auto& [k, v] : session.items()) j[k] = v;
  return AppendSynced(JsonLine(j) + "\n");
}

Status JournalWriter::AppendResults(const std::vector<ResultRecord>& records, double unix_seconds,
                                    double peak_rss_mb, std::optional<double> device_peak_mb,
                                    const std::vector<BatchFailure>& failures) {
  std::string lines;
  for (const auto& f : failures) {
    lines += JsonLine(nlohmann::ordered_json{{"type", "batch_failure"},
                                             {"batch_size", f.batch_size},
                                             {"out_of_memory", f.out_of_memory},
                                             {"error", f.error}}) +
             "\n";
  }
  for (const auto& r : records) lines += JsonLine(ToJson(r, {{"type", "result"}})) + "\n";
  nlohmann::ordered_json batch = {
      {"type", "batch"}, {"at_unix", unix_seconds}, {"items", records.size()}, {"peak_rss_mb", peak_rss_mb}};
  if (device_peak_mb) batch["device_peak_mb"] = *device_peak_mb;
  lines += JsonLine(batch) + "\n";
  return AppendSynced(lines);
}

}  // namespace pilot
