// data/run.json, the run's record: what verify and resume read back from it. Parsing
// checks every field's type; a wrong type is an error naming the field, never an exception.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pilot/folder_files.h"
#include "pilot/output_kind.h"
#include "pilot/shard.h"
#include "pilot/status.h"

namespace pilot {

// When the run a record describes started and finished, in seconds since the epoch: its
// `started_unix` and `finished_unix`, or, for a record from a pilot that kept whole seconds
// only, its `started_at` and `finished_at` ("2026-11-29T19:10:36Z"). Either is empty when the
// record does not give it. Merge spans its shards with it, and verify rebuilds the span.
struct RecordedSpan {
  std::optional<double> started, finished;
};

// The effective settings run.json's `plan` records, as the run resolved them: what compare
// names as changed and decide reads. A setting an older record lacks is unset; one of the
// wrong type refuses the record, naming its key.
struct RecordedSettings {
  std::optional<std::string> device;  // unset in a merged record: each shard's own is in its record
  std::optional<std::string> dtype;   // plan.model_contract.dtype: the option, or "as saved"
  // plan.model_contract.held_dtype: what the model's floating-point tensors held once loaded
  // (and converted), "bfloat16+float32" when mixed; unset for a .pt2 or an older record.
  std::optional<std::string> held_dtype;
  std::optional<std::uint64_t> batch_size, threads, seed, max_bytes;
  nlohmann::json batch_plan;  // plan.batch_plan as recorded (null, or an object with its sha256)
};

struct RunRecord {
  std::string run_id;
  std::string state;          // running | finished
  std::string manifest_copy;  // data/manifest.json or data/manifest.jsonl
  std::string manifest_sha256, params_sha256, model_sha256;
  std::string inputs_root;  // plan.inputs_root: where the run read its inputs
  // Absent in format 1 (pilot 0.1): kind "run", format 1, a classifier.
  std::string folder_kind = kFolderKindRun;
  int format_version = 1;
  bool kind_declared = false;
  // plan.output (pilot/output_kind.h); never null. A record without it is of the first
  // registered kind, which every folder was before output kinds were recorded.
  const OutputKindSpec* output = OutputKinds().front();
  std::uint32_t dim = 0;  // plan.dim, embedding only
  // A kind that generates: plan.max_new_tokens and plan.vocab, and the ids that end a completion
  // (plan.model_contract.eos_token_ids and .generation.stop_token_ids).
  std::uint64_t max_new_tokens = 0, vocab = 0;
  std::vector<std::int64_t> eos_token_ids, stop_token_ids;
  // Kind `shard`: its partition and its own item count ("shard": {index, count, items}).
  std::optional<ShardSpec> shard;
  std::size_t shard_items = 0;
  // Kind `merged`: how many shards were joined ("merge": {"shard_count": N, ...}); each one's
  // run.json and journal are under data/shards/shard-I-of-N/.
  std::uint32_t merged_shards = 0;
  RecordedSettings settings;
  std::optional<std::string> pilot_version, source_revision;
  std::string started_at, finished_at;  // "" when the record has none
  RecordedSpan span;
};

// Where a merged folder keeps shard I's run.json, journal and environment.
std::string MergedShardFolder(const ShardSpec& spec);

// Parses run.json text (at most limits::kRunRecordBytes, nesting capped, duplicate keys
// refused). `where` names the file in errors.
Result<RunRecord> ParseRunRecord(std::string_view text, const std::string& where);

}  // namespace pilot
