// Fuzzes ParseShardOption (--shard and the schedulers' variables). The input's first line is
// the option's text; each further line NAME=VALUE is an environment variable.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto eol = input.find('\n');
  const std::string_view text = input.substr(0, eol);
  std::map<std::string, std::string> env;
  for (std::string_view rest = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
       !rest.empty();) {
    const auto next = rest.find('\n');
    const std::string_view line = rest.substr(0, next);
    const auto eq = line.find('=');
    if (eq != std::string_view::npos) env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto got = ParseShardOption(text, lookup);
  if (!got.ok()) {
    PILOT_FUZZ_CHECK(got.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(!got.error().what.empty() && !got.error().where.empty());
    // Messages are bounded whatever the input's length.
    PILOT_FUZZ_CHECK(got.error().what.size() < 1000 && got.error().where.size() < 1000);
    return 0;
  }
  const ShardChoice& c = got.value();
  PILOT_FUZZ_CHECK(c.spec.count >= 1 && c.spec.count <= kMaxShards && c.spec.index < c.spec.count);
  PILOT_FUZZ_CHECK(InShard("x", c.spec) == (ShardOfId("x", c.spec.count) == c.spec.index));
  const bool automatic = text.substr(0, 4) == "auto";
  if (!automatic) {
    // An explicit shard is I/N as written (leading zeros aside): the same spec read back.
    auto again = ParseShardOption(ShardText(c.spec), lookup);
    PILOT_FUZZ_CHECK(again.ok() && again.value().spec == c.spec);
    PILOT_FUZZ_CHECK(!c.local_rank);
  }
  if (c.local_rank) PILOT_FUZZ_CHECK(env.count("LOCAL_RANK") && env.count("RANK"));
  return 0;
}
