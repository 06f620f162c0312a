// The run journal, data/journal.jsonl: append-only, the source of truth for resume and
// status. Its first record (the header) binds the run to the sha256 of its manifest,
// parameters and model and records the effective plan; then one "session" record per
// process that worked on the run, and one "result" record per finished item. Records are
// appended per batch and fsynced before anything derived from them is written.
//
// Loading tolerates a torn last record (a process killed mid-append): it recovers to the
// last whole record and says so. Anything worse (a damaged record before the last, a
// missing header, an id twice) is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/id_index.h"
#include "pilot/results.h"
#include "pilot/shard.h"
#include "pilot/status.h"

namespace pilot {

// The journal format this pilot writes. Version 1 (pilot 0.1): header, session, result,
// batch records. Version 2 adds "batch_failure" records and the embedding kind's result
// fields (dim, vector_at). A record type the header's version does not define is refused.
inline constexpr int kJournalVersion = 2;
inline constexpr std::size_t kBatchFailuresKept = 64;

struct JournalHeader {
  int version = kJournalVersion;
  std::string run_id;
  std::string manifest_sha256, params_sha256, model_sha256;
  std::size_t items = 0;
  std::string manifest_copy;  // kManifestCopyJson or kManifestCopyJsonl
  // The effective plan: resolved paths as the run used them.
  std::string manifest_path, params_path, model_path, inputs_root;
  std::string started_at;
  double started_unix = 0;  // the same instant, to the microsecond (0: not recorded, pilot < 0.5)
  // A shard's partition (shard.h): only its ids are processed, `items` counts them.
  std::optional<ShardSpec> shard;
  std::size_t manifest_items = 0;  // with a shard: the whole manifest's count

  nlohmann::ordered_json ToJson() const;
  static Result<JournalHeader> FromJson(const nlohmann::json& j, const std::string& where);
};

struct JournalState {
  JournalHeader header;
  IdIndex done;  // id -> byte offset of its record (IdIndex::Value)
  std::size_t accepted = 0, rejected = 0;
  std::uint64_t valid_bytes = 0;  // length of the whole-record prefix
  std::uint64_t torn_bytes = 0;   // bytes of a torn last record (dropped)
  std::size_t sessions = 0;
  double session_started = 0;            // unix seconds of the last session record
  std::size_t done_in_session = 0;       // results since the last session record
  double last_batch_at = 0;              // unix seconds of the last batch
  double processing_seconds = 0;         // summed over sessions: session start -> its last batch
  double peak_rss_mb = 0;                // the highest any session recorded
  std::optional<double> device_peak_mb;  // caching-allocator peak, when on a GPU
  std::uint64_t vectors_end = 0;         // embedding kinds: end of the last journaled sidecar entry
  std::unordered_map<std::string, std::uint64_t> vector_at;  // embedding kinds: id -> sidecar offset
  std::vector<BatchFailure> batch_failures;                  // the first kBatchFailuresKept
  std::size_t batch_failure_count = 0;
  std::size_t records = 0;  // whole records read (lines of the valid prefix)
};

// Parses journal text (the whole file's bytes) without touching any file: what LoadJournal
// does after reading, and the fuzzing entry point. Every field's type is checked; a wrong
// type is an error naming the record, never an exception.
Result<JournalState> ParseJournal(std::string_view text, const std::string& where);

// Reads a journal. A torn last record is reported in torn_bytes; with `repair`, the file
// is truncated to valid_bytes through `fs` so that appends continue after whole records.
Result<JournalState> LoadJournal(FileSystem& fs, const std::filesystem::path& file, bool repair);

// Reads on from `prior`, the state LoadJournal returned for the same file before this
// process appended to it: only the records after prior.valid_bytes are parsed (what a
// resumed run journaled), so finishing a resume does not re-read the whole journal. The
// caller holds the run lock: nothing else wrote the file meanwhile. A torn prior record must
// have been truncated away.
Result<JournalState> ContinueJournal(FileSystem& fs, const std::filesystem::path& file, JournalState prior);

// Reads result records at the offsets JournalState::done records. Records read in journal
// order need no seek (the common case: results are journaled in manifest order).
class JournalReader {
 public:
  JournalReader(FileSystem& fs, const std::filesystem::path& file);
  Result<ResultRecord> Read(std::uint64_t offset);
  // The record's line as written (valid until the next call).
  Result<std::string_view> ReadLine(std::uint64_t offset);

 private:
  std::string where_;
  std::optional<LineReader> in_;
  std::optional<Error> open_error_;
  std::string line_;
};

class JournalWriter {
 public:
  static Result<JournalWriter> Open(FileSystem& fs, const std::filesystem::path& file);
  Status AppendHeader(const JournalHeader& header);
  Status AppendSession(const nlohmann::ordered_json& session, double at_unix);
  // Appends the batch's records in order and a batch record (time, peak RSS), then
  // fsyncs: durable on success.
  // Batch failures met while producing these records come first, in the same write.
  Status AppendResults(const std::vector<ResultRecord>& records, double unix_seconds, double peak_rss_mb,
                       std::optional<double> device_peak_mb = std::nullopt,
                       const std::vector<BatchFailure>& failures = {});

 private:
  explicit JournalWriter(std::unique_ptr<AppendFile> file) : file_(std::move(file)) {}
  Status AppendSynced(const std::string& lines);
  std::unique_ptr<AppendFile> file_;
};

}  // namespace pilot
