// A result record: one per manifest id, accepted with its stage kind's payload (a category,
// or an embedding's row) or rejected with a reason (docs/formats.md, "Result records"), and its JSON Lines
// form.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/status.h"

namespace pilot {

// The most tokens a record may count (a text of limits.max_bytes could never take more).
inline constexpr std::uint64_t kMaxRecordTokens = std::uint64_t{1} << 40;

// A generator's completion of one prompt (docs/generation.md, "Records").
struct Completion {
  std::string text;               // decoded; the stop string and the end-of-sequence token left out
  std::vector<std::int64_t> ids;  // every token generated, the one that ended it included
  std::string finish_reason;      // stop | eos | length
  double ttft_ms = 0;             // from its batch's start to its first token
  std::optional<double> tpot_ms;  // mean time per output token after the first (two tokens or more)
  // Its share of its batch's prefill and decode time (split by tokens): summed over a run's
  // records they give the time the model spent, so tokens per second follow from the records.
  double prefill_ms = 0, decode_ms = 0;
  std::uint64_t kv_cache_bytes = 0;  // the KV cache its batch allocated
  // Its share of the slots its decode steps ran (each step's slots over the sequences live in
  // it, idle slots included): summed over a run, decode tokens / slot_steps is slot occupancy.
  // Absent (nullopt) in a record written before pilot measured it.
  std::optional<double> slot_steps;
  // The steps (token indices) decided within a near-tie's margin (sampling.h): where another
  // batch size or device may choose otherwise by rounding alone.
  std::vector<std::uint64_t> near_tie_steps;
  // When each token came, in ms from the start of the stage call that made it (one per id). Held
  // in memory for `pilot load`'s TTFT and inter-token latency; never written to a record.
  std::vector<double> token_ms;
};
// Bounds on a completion as a record holds it: its text's bytes (a longer one is rejected
// invalid_output), its finish reasons.
inline constexpr std::size_t kMaxCompletionBytes = 256u << 10;
inline constexpr std::size_t kMaxCompletionIds = 1u << 15;  // = kMaxNewTokens (params.h)
bool IsFinishReason(std::string_view reason);               // stop | eos | length

struct ResultRecord {
  std::string id;
  bool accepted = false;
  // Accepted, classification kinds:
  std::string category;
  double confidence = 0;
  std::string reason;                // rejected only
  std::string detail;                // rejected only
  std::string model;                 // "sha256:<hex>" when the item reached the stage
  std::optional<double> latency_ms;  // when the item reached the stage
  // Accepted, embedding kinds: the vector's length; in results.jsonl its row in
  // data/vectors.npy (numbered at finish, in manifest order); in the journal its byte offset
  // in the vectors sidecar (data/vectors.sidecar), written and fsynced before the record.
  std::optional<std::uint32_t> dim;
  std::optional<std::uint64_t> row;
  std::optional<std::uint64_t> vector_at;
  // Run format 4: the sha256 of the vector's bytes as data/vectors.npy stores them (dtype and
  // all), in the journal and in results.jsonl alike; verify hashes the row against it.
  std::optional<std::string> vector_sha256;
  // A tokenized input (stage.tokenizer): its length in tokens, special tokens included and
  // before any truncation; `truncated` when the model saw only its first max_length.
  std::optional<std::uint64_t> tokens;
  bool truncated = false;
  // Accepted, a generator's: the completion (`tokens` is then the prompt's length).
  std::optional<Completion> completion;
  // results.jsonl only (run format 3), last: the manifest's `expected` label of a labelled item,
  // so that each line can be judged on its own. Never in the journal.
  std::optional<std::string> expected;

  static ResultRecord Rejected(std::string id, std::string_view reason, std::string detail);
};

// A batch the stage failed as a whole (an exception, an out-of-memory): the engine bisects
// it and records each failure, so that a limit is visible in the report, never hidden.
struct BatchFailure {
  std::uint64_t batch_size = 0;
  bool out_of_memory = false;
  std::string error;
};

// `prefix` fields come first (the journal puts "type" there).
nlohmann::ordered_json ToJson(const ResultRecord& record,
                              nlohmann::ordered_json prefix = nlohmann::ordered_json::object());
std::string ToJsonLine(const ResultRecord& record);  // no trailing newline
Result<ResultRecord> ParseResultRecord(std::string_view line, const std::string& where);
// The same, of a record already parsed as JSON (the journal's reader).
Result<ResultRecord> ResultRecordFromJson(const nlohmann::json& j, const std::string& where);

// The fast path of reading records back (finish, verify): a record exactly in the form pilot
// writes (ToJson's key order, no whitespace, strings without escapes), with the journal's
// "type":"result" first when `journal`. Anything else, or anything ParseResultRecord would
// refuse, gives nullopt and the caller falls back to ParseResultRecord, which reads any JSON
// and names the fault. Whatever this returns, ParseResultRecord returns the same record
// (checked by the result_record fuzz target).
std::optional<ResultRecord> ScanResultRecord(std::string_view line, bool journal);

}  // namespace pilot
