#include "pilot/shard.h"

#include <cstdlib>
#include <vector>

#include "pilot/hash.h"
#include "pilot/json_util.h"

namespace pilot {

namespace {

// A count in 0..max written as plain decimal digits (no sign, no space, at most 9 digits).
std::optional<std::uint32_t> Count(std::string_view s, std::uint32_t max) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

Error ShardError(const std::string& what, const std::string& where) {
  return Error{ErrorKind::kBadInput, what, where,
               "use --shard I/N (0 <= I < N <= " + std::to_string(kMaxShards) +
                   "), --shard auto/N under a Slurm job array or a Kubernetes Indexed Job, or --shard auto "
                   "under torchrun"};
}

struct Found {
  std::string scheduler;
  std::string variable;
  std::uint32_t index;
  std::optional<std::uint32_t> count;  // stated by the scheduler (torchrun's WORLD_SIZE)
  std::optional<std::uint32_t> local_rank;
};

}  // namespace

std::uint32_t ShardOfId(std::string_view id, std::uint32_t count) {
  if (count <= 1) return 0;
  const std::string hex = Sha256Hex(id);
  std::uint64_t v = 0;
  for (int k = 0; k < 16; ++k) {
    char c = hex[static_cast<std::size_t>(k)];
    v = v << 4 | static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return static_cast<std::uint32_t>(v % count);
}

std::string ShardRunId(const ShardSpec& s) {
  return "shard-" + std::to_string(s.index) + "-of-" + std::to_string(s.count);
}

std::string ShardText(const ShardSpec& s) { return std::to_string(s.index) + "/" + std::to_string(s.count); }

EnvLookup ProcessEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Result<ShardChoice> ParseShardOption(std::string_view text, const EnvLookup& env) {
  const std::string shown = "--shard " + ValueForMessage(std::string(text.substr(0, 64)));
  const auto slash = text.find('/');
  const std::string_view first = text.substr(0, slash);
  std::optional<std::uint32_t> count;
  if (slash != std::string_view::npos) {
    count = Count(text.substr(slash + 1), kMaxShards);
    if (!count || *count == 0)
      return ShardError("N in '" + ValueForMessage(std::string(text.substr(0, 64))) +
                            "' is not a count in 1.." + std::to_string(kMaxShards),
                        shown);
  }
  ShardChoice choice;
  if (first != "auto") {
    if (!count)
      return ShardError("'" + ValueForMessage(std::string(text.substr(0, 64))) + "' is not I/N", shown);
    auto index = Count(first, kMaxShards);
    if (!index)
      return ShardError("I in '" + ValueForMessage(std::string(text.substr(0, 64))) + "' is not a count",
                        shown);
    if (*index >= *count) {
      return ShardError("shard " + std::to_string(*index) + " of " + std::to_string(*count) +
                            " does not exist: shards are numbered 0.." + std::to_string(*count - 1),
                        shown);
    }
    choice.spec = {*index, *count};
    choice.source = "--shard " + ShardText(choice.spec);
    return choice;
  }
  // auto: exactly one scheduler's variables.
  std::vector<Found> found;
  auto read = [&](const char* name, std::uint32_t max) -> Result<std::optional<std::uint32_t>> {
    auto v = env(name);
    if (!v) return std::optional<std::uint32_t>();
    auto n = Count(*v, max);
    if (!n)
      return ShardError(std::string(name) + "='" + ValueForMessage(v->substr(0, 32)) + "' is not a count",
                        name);
    return std::optional<std::uint32_t>(*n);
  };
  {
    auto task = read("SLURM_ARRAY_TASK_ID", kMaxShards);
    if (!task.ok()) return task.error();
    if (task.value())
      found.push_back({"Slurm job array", "SLURM_ARRAY_TASK_ID", *task.value(), std::nullopt, std::nullopt});
  }
  {
    auto rank = read("RANK", kMaxShards);
    if (!rank.ok()) return rank.error();
    auto world = read("WORLD_SIZE", kMaxShards);
    if (!world.ok()) return world.error();
    if (rank.value() || world.value()) {
      if (!rank.value() || !world.value() || *world.value() == 0) {
        return ShardError("torchrun's RANK and WORLD_SIZE must both be set (WORLD_SIZE at least 1)",
                          "RANK/WORLD_SIZE");
      }
      auto local = read("LOCAL_RANK", 999);  // a device index: cuda:0 .. cuda:999
      if (!local.ok()) return local.error();
      found.push_back({"torchrun", "RANK", *rank.value(), *world.value(), local.value()});
    }
  }
  {
    auto index = read("JOB_COMPLETION_INDEX", kMaxShards);
    if (!index.ok()) return index.error();
    if (index.value())
      found.push_back(
          {"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", *index.value(), std::nullopt, std::nullopt});
  }
  if (found.empty()) {
    return ShardError(
        "--shard auto found no scheduler: none of SLURM_ARRAY_TASK_ID, RANK/WORLD_SIZE (torchrun) or "
        "JOB_COMPLETION_INDEX (Kubernetes) is set",
        shown);
  }
  if (found.size() > 1) {
    return ShardError("--shard auto is ambiguous: both " + found[0].scheduler + " (" + found[0].variable +
                          ") and " + found[1].scheduler + " (" + found[1].variable + ") are set",
                      shown);
  }
  const Found& f = found[0];
  if (!count && !f.count) {
    return ShardError("--shard auto needs N under a " + f.scheduler +
                          ", which does not state it: use --shard auto/N "
                          "(a resubmitted single index must still be shard I of N)",
                      shown);
  }
  if (count && f.count && *count != *f.count) {
    return ShardError("--shard auto/" + std::to_string(*count) +
                          " disagrees with torchrun's WORLD_SIZE=" + std::to_string(*f.count),
                      shown);
  }
  choice.spec = {f.index, count ? *count : *f.count};
  if (choice.spec.index >= choice.spec.count) {
    return ShardError(f.variable + "=" + std::to_string(f.index) + " is not a shard of " +
                          std::to_string(choice.spec.count) + " (shards are numbered 0.." +
                          std::to_string(choice.spec.count - 1) + ")",
                      f.variable);
  }
  choice.source = f.scheduler + " (" + f.variable + "=" + std::to_string(f.index) +
                  (f.count ? ", WORLD_SIZE=" + std::to_string(*f.count) : std::string()) + ")";
  choice.local_rank = f.local_rank;
  return choice;
}

}  // namespace pilot
