// Shards: one partition of a manifest, so that several workers (Slurm array tasks, torchrun
// ranks, Kubernetes Indexed Job pods, or `pilot run --workers K` on one host) each process
// a disjoint part and `pilot merge` joins them (merge.h).
//
// Assignment is a stable hash of the id: item `id` belongs to shard
//   (first 8 bytes of SHA-256(id), big-endian) mod N
// which anyone can recompute (`printf %s ID | sha256sum`). A hash rather than contiguous
// ranges because manifests are often sorted (by length, by source): ranges would hand one
// shard all the long documents, a hash spreads every kind of item evenly over the shards.
// An id's shard depends only on the id and N, never on the rest of the manifest.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "pilot/status.h"

namespace pilot {

// At most this many shards (the argument is user input; each shard is a folder).
inline constexpr std::uint32_t kMaxShards = 4096;

struct ShardSpec {
  std::uint32_t index = 0;  // 0-based, < count
  std::uint32_t count = 1;
  bool operator==(const ShardSpec& o) const { return index == o.index && count == o.count; }
};

// The shard `id` belongs to among `count` (count >= 1).
std::uint32_t ShardOfId(std::string_view id, std::uint32_t count);
inline bool InShard(std::string_view id, const ShardSpec& s) {
  return s.count <= 1 || ShardOfId(id, s.count) == s.index;
}

// "shard-I-of-N": a shard's default run id, the same for a resubmitted task.
std::string ShardRunId(const ShardSpec& spec);
// "I/N".
std::string ShardText(const ShardSpec& spec);

// Where a shard came from: the option itself or a scheduler's variables.
struct ShardChoice {
  ShardSpec spec;
  std::string source;  // e.g. "--shard 2/4", "Slurm job array (SLURM_ARRAY_TASK_ID=2)"
  // torchrun's LOCAL_RANK: the device index on this host (cuda:LOCAL_RANK).
  std::optional<std::uint32_t> local_rank;
};

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// Parses --shard: "I/N", "auto/N" (I from the scheduler: SLURM_ARRAY_TASK_ID, RANK with
// WORLD_SIZE (torchrun), or JOB_COMPLETION_INDEX), or "auto" (only under torchrun, which
// states N as WORLD_SIZE). Scheduler variables are read only for "auto". Refuses (exit 2,
// naming --shard or the variable) a malformed number, I >= N, N over kMaxShards, no
// scheduler, or two schedulers' variables at once.
Result<ShardChoice> ParseShardOption(std::string_view text, const EnvLookup& env);

// The process's real environment (getenv).
EnvLookup ProcessEnvironment();

}  // namespace pilot
