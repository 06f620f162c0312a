#include "pilot/sweep/sweep_records.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/results.h"
#include "pilot/utf8.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kCellLineBytes = 4096;

// A number field of a document pilot wrote: finite, else nullopt.
std::optional<double> Finite(const nlohmann::json& j, const char* key) {
  auto v = NumberAt(j, key);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

}  // namespace

std::string SweepCellFile(int group, int batch) {
  return std::string(kSweepCellsFolder) + "/g" + std::to_string(group) + "-b" + std::to_string(batch) +
         ".json";
}

// A file inside the folder, read only when it is a regular file (never through a link).
Result<std::vector<int>> ParseBatchSizes(std::string_view text) {
  auto bad = [](const std::string& what) {
    return BadInput(what, "--batch-sizes", "give increasing sizes from 1, e.g. 1,2,4,8,16");
  };
  std::vector<int> sizes;
  std::size_t start = 0;
  if (text.empty()) return bad("is empty");
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view part =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string_view::npos) {
      return bad("'" + EscapeTerminal(TruncateUtf8(std::string(part), 20)) +
                 "' is not a batch size (a whole number)");
    }
    int v = std::stoi(std::string(part));
    if (v < 1 || v > kMaxBatchSize)
      return bad(std::to_string(v) + " is outside 1.." + std::to_string(kMaxBatchSize));
    if (!sizes.empty() && v <= sizes.back())
      return bad("sizes must increase (" + std::to_string(v) + " after " + std::to_string(sizes.back()) +
                 ")");
    if (sizes.size() >= 64) return bad("more than 64 sizes");
    sizes.push_back(v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (sizes.front() != 1) return bad("must start at 1: every other size is compared with batch 1");
  return sizes;
}

Status CheckSweepSettings(const SweepSettings& s) {
  if (s.groups < 1 || s.groups > kMaxGroups) {
    return BadInput("--groups must be in 1.." + std::to_string(kMaxGroups), "--groups");
  }
  if (s.repeats < 1 || s.repeats > kMaxRepeats) {
    return BadInput("--repeats must be in 1.." + std::to_string(kMaxRepeats), "--repeats");
  }
  if (s.batch_sizes.empty() || s.batch_sizes.front() != 1) {
    return BadInput("the batch sizes must start at 1", "--batch-sizes");
  }
  for (std::size_t i = 0; i < s.batch_sizes.size(); ++i) {
    if (s.batch_sizes[i] < 1 || s.batch_sizes[i] > kMaxBatchSize ||
        (i > 0 && s.batch_sizes[i] <= s.batch_sizes[i - 1])) {
      return BadInput("the batch sizes must increase, each in 1.." + std::to_string(kMaxBatchSize),
                      "--batch-sizes");
    }
  }
  if (s.latency_budget_ms && !(*s.latency_budget_ms > 0 && std::isfinite(*s.latency_budget_ms))) {
    return BadInput("--latency-budget-ms must be a positive number", "--latency-budget-ms");
  }
  if (s.max_memory_mb && !(*s.max_memory_mb > 0 && std::isfinite(*s.max_memory_mb))) {
    return BadInput("--max-memory-mb must be a positive number", "--max-memory-mb");
  }
  for (auto [v, name] :
       {std::pair{&s.max_ttft_ms, "--max-ttft-ms"}, std::pair{&s.max_tpot_ms, "--max-tpot-ms"}}) {
    if (*v && !(**v > 0 && std::isfinite(**v)))
      return BadInput(std::string(name) + " must be a positive number", name);
  }
  return {};
}

nlohmann::ordered_json SweepSettingsToJson(const SweepSettings& s) {
  nlohmann::ordered_json j;
  j["groups"] = s.groups;
  j["batch_sizes"] = s.batch_sizes;
  j["repeats"] = s.repeats;
  j["latency_budget_ms"] =
      s.latency_budget_ms ? nlohmann::ordered_json(*s.latency_budget_ms) : nlohmann::ordered_json();
  j["max_memory_mb"] = s.max_memory_mb ? nlohmann::ordered_json(*s.max_memory_mb) : nlohmann::ordered_json();
  if (s.max_ttft_ms) j["max_ttft_ms"] = *s.max_ttft_ms;
  if (s.max_tpot_ms) j["max_tpot_ms"] = *s.max_tpot_ms;
  return j;
}

Result<SweepSettings> SweepSettingsFromJson(const nlohmann::json& j, const std::string& where) {
  auto bad = [&] {
    return BadInput("'settings' is malformed", where, "the folder was altered; start a new sweep");
  };
  if (!j.is_object()) return bad();
  SweepSettings s;
  auto groups = UnsignedAt(j, "groups");
  auto repeats = UnsignedAt(j, "repeats");
  if (!groups || !repeats || *groups > kMaxGroups || *repeats > kMaxRepeats) return bad();
  s.groups = static_cast<int>(*groups);
  s.repeats = static_cast<int>(*repeats);
  if (!j.contains("batch_sizes") || !j["batch_sizes"].is_array() || j["batch_sizes"].size() > 64)
    return bad();
  s.batch_sizes.clear();
  for (const auto& v : j["batch_sizes"]) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > kMaxBatchSize) return bad();
    s.batch_sizes.push_back(static_cast<int>(v.get<std::uint64_t>()));
  }
  for (auto [key, out] :
       {std::pair{"latency_budget_ms", &s.latency_budget_ms}, std::pair{"max_memory_mb", &s.max_memory_mb},
        std::pair{"max_ttft_ms", &s.max_ttft_ms}, std::pair{"max_tpot_ms", &s.max_tpot_ms}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    auto v = Finite(j, key);
    if (!v) return bad();
    *out = *v;
  }
  if (Status st = CheckSweepSettings(s); !st.ok()) return bad();
  return s;
}

nlohmann::ordered_json GroupingToJson(const Grouping& g) {
  nlohmann::ordered_json j;
  j["measure"] = g.measure;
  j["excluded"] = g.excluded;
  auto groups = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < g.groups.size(); ++i) {
    const auto& lg = g.groups[i];
    groups.push_back({{"group", i + 1},
                      {"min_length", lg.min_length},
                      {"max_length", lg.max_length},
                      {"items", std::max(lg.items, lg.ids.size())},
                      {"sampled", lg.ids.size()},
                      {"ids", lg.ids}});
  }
  j["groups"] = groups;
  return j;
}

Result<Grouping> GroupingFromJson(std::string_view text, const std::string& where) {
  if (text.size() > limits::kSweepGroupsBytes)
    return BadInput("larger than pilot's cap for a groups file", where);
  auto parsed = ParseJson(text, where);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  auto bad = [&](const std::string& what) {
    return BadInput(what, where, "the folder was altered; start a new sweep");
  };
  Grouping g;
  auto measure = StringAt(j, "measure");
  auto excluded = UnsignedAt(j, "excluded");
  if (!measure || (*measure != "bytes" && *measure != "features"))
    return bad("'measure' is neither bytes nor features");
  if (!excluded) return bad("'excluded' is missing or not a count");
  g.measure = *measure;
  g.excluded = *excluded;
  if (!j.contains("groups") || !j["groups"].is_array() || j["groups"].size() > kMaxGroups) {
    return bad("'groups' is not a list of at most " + std::to_string(kMaxGroups) + " groups");
  }
  for (std::size_t i = 0; i < j["groups"].size(); ++i) {
    const auto& e = j["groups"][i];
    auto number = UnsignedAt(e, "group");
    auto lo = UnsignedAt(e, "min_length");
    auto hi = UnsignedAt(e, "max_length");
    auto total = UnsignedAt(e, "items");
    auto count = UnsignedAt(e, "sampled");
    std::string at = "group " + std::to_string(i + 1);
    if (!number || *number != i + 1 || !lo || !hi || *lo > *hi || !count || !total || *total < *count) {
      return bad(at + " is malformed");
    }
    if (!g.groups.empty() && *lo <= g.groups.back().max_length)
      return bad(at + " overlaps the group before it");
    if (!e.contains("ids") || !e["ids"].is_array() || e["ids"].size() != *count || *count == 0) {
      return bad(at + ": 'ids' does not hold its 'sampled' ids");
    }
    LengthGroup lg;
    lg.min_length = *lo;
    lg.max_length = *hi;
    lg.items = *total;
    for (const auto& id : e["ids"]) {
      if (!id.is_string() || !IsValidItemId(id.get_ref<const std::string&>()))
        return bad(at + " holds an invalid id");
      lg.ids.push_back(id.get<std::string>());
    }
    g.groups.push_back(std::move(lg));
  }
  return g;
}

nlohmann::ordered_json CellToJson(const CellMeasure& c) {
  nlohmann::ordered_json j;
  j["group"] = c.group;
  j["batch_size"] = c.batch_size;
  j["repeats"] = c.repeats;
  j["group_items"] = c.group_items;
  j["cycled"] = c.cycled;
  j["batches"] = c.batches;
  j["completed"] = c.completed;
  j["failed"] = c.failed;
  j["wall_seconds"] = c.wall_seconds;
  j["items_per_second"] = c.items_per_second;
  if (c.padded_tokens > 0) {
    j["tokens"] = c.tokens;
    j["padded_tokens"] = c.padded_tokens;
    j["tokens_per_second"] = c.tokens_per_second;
  }
  j["latency_ms"] = {{"p50", c.p50_ms}, {"p90", c.p90_ms}, {"p95", c.p95_ms}, {"p99", c.p99_ms}};
  if (c.generation) {
    const CellGeneration& g = *c.generation;
    j[kGenerationParamsKey] = {
        {"prompt_tokens", g.prompt_tokens},
        {"completion_tokens", g.completion_tokens},
        {"completion_tokens_per_second", g.completion_tokens_per_second},
        {"ttft_ms", {{"p50", g.ttft_p50_ms}, {"p99", g.ttft_p99_ms}}},
        {"tpot_ms", {{"p50", g.tpot_p50_ms}, {"p99", g.tpot_p99_ms}}},
        {"kv_cache_bytes", g.kv_cache_bytes},
        {"slot_occupancy", g.occupancy ? nlohmann::ordered_json(*g.occupancy) : nlohmann::ordered_json()}};
  }
  j["rss_after_load_mb"] = c.rss_after_load_mb;
  j["peak_rss_mb"] = c.peak_rss_mb;
  j["peak_device_mb"] =
      c.peak_device_mb ? nlohmann::ordered_json(*c.peak_device_mb) : nlohmann::ordered_json();
  j["limit"] = c.limit.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.limit);
  j["error"] = c.error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.error);
  j["repeat_mismatches"] = c.repeat_mismatches;
  if (!c.repeat_seconds.empty()) j["repeat_seconds"] = c.repeat_seconds;
  auto outcomes = nlohmann::ordered_json::array();
  for (const auto& o : c.outcomes) {
    nlohmann::ordered_json e;
    e["id"] = o.id;
    e["ok"] = o.ok;
    if (!o.ok) {
      e["error"] = o.error;
    } else if (o.generated) {
      e["completion_ids"] = o.completion;
      e["near_tie_steps"] = o.near_ties;
    } else if (!o.vector.empty()) {
      e["vector"] = o.vector;
    } else {
      e["label"] = o.label;
      e["confidence"] = o.confidence;
    }
    outcomes.push_back(std::move(e));
  }
  j["outcomes"] = outcomes;
  return j;
}

Result<CellMeasure> CellFromJson(std::string_view text, const std::string& where) {
  if (text.size() > limits::kSweepCellBytes)
    return BadInput("larger than pilot's cap for a sweep cell", where);
  auto parsed = ParseJson(text, where);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  auto bad = [&](const std::string& what) { return BadInput("the cell is malformed: " + what, where); };
  if (!j.is_object()) return bad("not an object");
  CellMeasure c;
  auto group = UnsignedAt(j, "group");
  auto batch = UnsignedAt(j, "batch_size");
  auto repeats = UnsignedAt(j, "repeats");
  auto items = UnsignedAt(j, "group_items");
  if (!group || *group < 1 || *group > kMaxGroups || !batch || *batch < 1 || *batch > kMaxBatchSize ||
      !repeats || *repeats < 1 || *repeats > kMaxRepeats || !items) {
    return bad("'group', 'batch_size', 'repeats' or 'group_items' is missing or out of range");
  }
  c.group = static_cast<int>(*group);
  c.batch_size = static_cast<int>(*batch);
  c.repeats = static_cast<int>(*repeats);
  c.group_items = *items;
  if (!j.contains("cycled") || !j["cycled"].is_boolean()) return bad("'cycled' is not a boolean");
  c.cycled = j["cycled"].get<bool>();
  for (auto [key, out] :
       {std::pair{"batches", &c.batches}, std::pair{"completed", &c.completed},
        std::pair{"failed", &c.failed}, std::pair{"repeat_mismatches", &c.repeat_mismatches}}) {
    auto v = UnsignedAt(j, key);
    if (!v) return bad(std::string("'") + key + "' is not a count");
    *out = *v;
  }
  for (auto [key, out] :
       {std::pair{"wall_seconds", &c.wall_seconds}, std::pair{"items_per_second", &c.items_per_second},
        std::pair{"rss_after_load_mb", &c.rss_after_load_mb}, std::pair{"peak_rss_mb", &c.peak_rss_mb}}) {
    auto v = Finite(j, key);
    if (!v || *v < 0) return bad(std::string("'") + key + "' is not a number >= 0");
    *out = *v;
  }
  if (j.contains("padded_tokens") || j.contains("tokens") || j.contains("tokens_per_second")) {
    auto tokens = UnsignedAt(j, "tokens");
    auto padded = UnsignedAt(j, "padded_tokens");
    auto per_second = Finite(j, "tokens_per_second");
    if (!tokens || !padded || *padded == 0 || *tokens > *padded || *padded > (std::uint64_t{1} << 50) ||
        !per_second || *per_second < 0) {
      return bad(
          "'tokens', 'padded_tokens' and 'tokens_per_second' are not counts with tokens <= "
          "padded_tokens and a rate >= 0");
    }
    // The rate is the count over the cell's wall time, as RunCell computes it: a rate that is
    // not (an edited figure) is refused.
    const double want = c.wall_seconds > 0 ? static_cast<double>(*tokens) / c.wall_seconds : 0;
    if (std::fabs(*per_second - want) > 1e-9 * std::max(1.0, want)) {
      return bad("'tokens_per_second' is not 'tokens' over 'wall_seconds'");
    }
    c.tokens = *tokens;
    c.padded_tokens = *padded;
    c.tokens_per_second = *per_second;
  }
  if (j.contains(kGenerationParamsKey)) {
    const nlohmann::json& g = j[kGenerationParamsKey];
    if (!g.is_object()) return bad("'generation' is not an object");
    CellGeneration cg;
    auto prompt = UnsignedAt(g, "prompt_tokens");
    auto completion = UnsignedAt(g, "completion_tokens");
    auto kv = UnsignedAt(g, "kv_cache_bytes");
    auto rate = Finite(g, "completion_tokens_per_second");
    if (!prompt || !completion || !kv || !rate || *rate < 0 || *completion > (std::uint64_t{1} << 50) ||
        *prompt > (std::uint64_t{1} << 50)) {
      return bad("'generation' lacks its token counts, KV cache bytes or rate");
    }
    const double want = c.wall_seconds > 0 ? static_cast<double>(*completion) / c.wall_seconds : 0;
    if (std::fabs(*rate - want) > 1e-9 * std::max(1.0, want)) {
      return bad("'generation.completion_tokens_per_second' is not 'completion_tokens' over 'wall_seconds'");
    }
    cg.prompt_tokens = *prompt;
    cg.completion_tokens = *completion;
    cg.kv_cache_bytes = *kv;
    cg.completion_tokens_per_second = *rate;
    for (auto [key, p50, p99] : {std::tuple{"ttft_ms", &cg.ttft_p50_ms, &cg.ttft_p99_ms},
                                 std::tuple{"tpot_ms", &cg.tpot_p50_ms, &cg.tpot_p99_ms}}) {
      if (!g.contains(key) || !g[key].is_object())
        return bad(std::string("'generation.") + key + "' is not an object");
      auto a = Finite(g[key], "p50");
      auto b = Finite(g[key], "p99");
      if (!a || !b || *a < 0 || *b < *a)
        return bad(std::string("'generation.") + key + "' is not p50 <= p99, >= 0");
      *p50 = *a;
      *p99 = *b;
    }
    if (g.contains("slot_occupancy") && !g["slot_occupancy"].is_null()) {
      auto o = Finite(g, "slot_occupancy");
      if (!o || *o < 0 || *o > 1) return bad("'generation.slot_occupancy' is not a share in 0..1");
      cg.occupancy = *o;
    }
    c.generation = cg;
  }
  if (!j.contains("latency_ms") || !j["latency_ms"].is_object()) return bad("'latency_ms' is not an object");
  for (auto [key, out] : {std::pair{"p50", &c.p50_ms}, std::pair{"p90", &c.p90_ms},
                          std::pair{"p95", &c.p95_ms}, std::pair{"p99", &c.p99_ms}}) {
    auto v = Finite(j["latency_ms"], key);
    if (!v || *v < 0) return bad(std::string("'latency_ms.") + key + "' is not a number >= 0");
    *out = *v;
  }
  if (j.contains("peak_device_mb") && !j["peak_device_mb"].is_null()) {
    auto v = Finite(j, "peak_device_mb");
    if (!v || *v < 0) return bad("'peak_device_mb' is not a number >= 0");
    c.peak_device_mb = *v;
  }
  for (auto [key, out] : {std::pair{"limit", &c.limit}, std::pair{"error", &c.error}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    auto v = StringAt(j, key);
    if (!v) return bad(std::string("'") + key + "' is not a string");
    *out = *v;
  }
  if (j.contains("repeat_seconds")) {
    const nlohmann::json& rs = j["repeat_seconds"];
    if (!rs.is_array() || rs.empty() || rs.size() > static_cast<std::size_t>(c.repeats))
      return bad("'repeat_seconds' is not a list of 1 to 'repeats' numbers");
    double sum = 0;
    for (const auto& v : rs) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        return bad("'repeat_seconds' holds something other than a number >= 0");
      c.repeat_seconds.push_back(v.get<double>());
      sum += v.get<double>();
    }
    // The repeats are the cell's wall time cut in turn: an edited figure is refused.
    if (std::fabs(sum - c.wall_seconds) > 1e-6 * std::max(1.0, c.wall_seconds))
      return bad("'repeat_seconds' do not add up to 'wall_seconds'");
  }
  if (!c.limit.empty() && c.limit != kLimitOutOfMemory && c.limit != kLimitStageError &&
      c.limit != kLimitKilled && c.limit != kLimitLatency && c.limit != kLimitMemoryCap &&
      c.limit != kLimitTtft && c.limit != kLimitTpot) {
    return bad("'limit' is not one pilot records");
  }
  if (!j.contains("outcomes") || !j["outcomes"].is_array()) return bad("'outcomes' is not a list");
  const std::size_t max_outcomes =
      std::max<std::size_t>(c.group_items, static_cast<std::size_t>(c.batch_size));
  if (j["outcomes"].size() > max_outcomes) return bad("more outcomes than the cell ran");
  for (const auto& e : j["outcomes"]) {
    CellOutcome o;
    auto id = StringAt(e, "id");
    if (!id || !IsValidItemId(*id)) return bad("an outcome's 'id' is missing or invalid");
    o.id = *id;
    if (!e.contains("ok") || !e["ok"].is_boolean()) return bad("outcome " + o.id + ": 'ok' is not a boolean");
    o.ok = e["ok"].get<bool>();
    if (!o.ok) {
      auto err = StringAt(e, "error");
      if (!err) return bad("outcome " + o.id + ": 'error' is not a string");
      o.error = *err;
    } else if (e.contains("completion_ids")) {
      const auto& ids = e["completion_ids"];
      const auto& ties = e.contains("near_tie_steps") ? e["near_tie_steps"] : nlohmann::json::array();
      if (!ids.is_array() || ids.empty() || ids.size() > kMaxCompletionIds || !ties.is_array() ||
          ties.size() > ids.size()) {
        return bad("outcome " + o.id +
                   ": 'completion_ids' or 'near_tie_steps' is not a list of the right size");
      }
      o.generated = true;
      for (const auto& x : ids) {
        if (!x.is_number_unsigned() || x.get<std::uint64_t>() > 2147483647u)
          return bad("outcome " + o.id + ": 'completion_ids' holds something other than a token id");
        o.completion.push_back(static_cast<std::int64_t>(x.get<std::uint64_t>()));
      }
      for (const auto& x : ties) {
        if (!x.is_number_unsigned() || x.get<std::uint64_t>() >= ids.size() ||
            (!o.near_ties.empty() && x.get<std::uint64_t>() <= o.near_ties.back()))
          return bad("outcome " + o.id + ": 'near_tie_steps' is not rising steps of the completion");
        o.near_ties.push_back(x.get<std::uint64_t>());
      }
    } else if (e.contains("vector")) {
      if (!e["vector"].is_array() || e["vector"].size() > limits::kEmbeddingDim) {
        return bad("outcome " + o.id + ": 'vector' is not a list of at most " +
                   std::to_string(limits::kEmbeddingDim));
      }
      for (const auto& x : e["vector"]) {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || std::fabs(x.get<double>()) > FLT_MAX) {
          return bad("outcome " + o.id + ": 'vector' holds a non-number or one beyond float32");
        }
        o.vector.push_back(x.get<float>());
      }
    } else {
      auto label = StringAt(e, "label");
      auto conf = Finite(e, "confidence");
      if (!label || !conf) return bad("outcome " + o.id + ": 'label' or 'confidence' is missing");
      o.label = *label;
      o.confidence = *conf;
    }
    c.outcomes.push_back(std::move(o));
  }
  return c;
}

// data/cells.jsonl: one line per finished cell. A torn last line (a kill while appending) is
// cut off when `repair`; any other damage refuses the folder.
Result<std::vector<JournaledCell>> LoadSweepCells(FileSystem& fsys, const fs::path& dir, bool repair) {
  std::vector<JournaledCell> cells;
  auto st = fsys.LinkStat(dir / kSweepCells);
  if (!st.ok()) return st.error();
  if (!st.value().exists) return cells;
  if (st.value().symlink || !st.value().regular) {
    return BadInput("is not a regular file; pilot never follows one inside a sweep folder",
                    (dir / kSweepCells).string());
  }
  auto reader = LineReader::Open(fsys, dir / kSweepCells, kCellLineBytes, /*follow_symlinks=*/false);
  if (!reader.ok()) return reader.error();
  std::string line;
  std::set<std::pair<int, int>> seen;
  for (;;) {
    const std::uint64_t at = reader.value().offset();
    bool complete = true;
    auto more = reader.value().Next(line, &complete);
    if (!more.ok()) return more.error();
    if (!more.value()) break;
    const std::string where =
        (dir / kSweepCells).string() + ":" + std::to_string(reader.value().line_number());
    if (!complete) {
      if (!repair) return BadInput("the last line is torn", where);
      PILOT_TRY(fsys.Truncate(dir / kSweepCells, at));
      break;
    }
    auto parsed = ParseJson(line, where);
    if (!parsed.ok()) return parsed.error();
    const auto& j = parsed.value();
    auto group = UnsignedAt(j, "group");
    auto batch = UnsignedAt(j, "batch_size");
    auto file = StringAt(j, "file");
    auto sha = StringAt(j, "sha256");
    if (!group || !batch || !file || !sha || *group > kMaxGroups || *batch > kMaxBatchSize ||
        *file != SweepCellFile(static_cast<int>(*group), static_cast<int>(*batch)) || !IsSha256Hex(*sha)) {
      return BadInput("not a cell record pilot wrote", where, "the folder was altered");
    }
    if (!seen.emplace(static_cast<int>(*group), static_cast<int>(*batch)).second) {
      return BadInput("the cell is journaled twice", where, "the folder was altered");
    }
    auto text = ReadInsideFolder(fsys, dir, *file, limits::kSweepCellBytes);
    if (!text.ok()) return text.error();
    if (Sha256Hex(text.value()) != *sha) {
      return BadInput("its sha256 differs from the one journaled", (dir / *file).string(),
                      "the folder was altered");
    }
    auto cell = CellFromJson(text.value(), (dir / *file).string());
    if (!cell.ok()) return cell.error();
    if (cell.value().group != static_cast<int>(*group) ||
        cell.value().batch_size != static_cast<int>(*batch)) {
      return BadInput("the cell file is of another cell than its journal line", (dir / *file).string());
    }
    cells.push_back({std::move(cell).value(), *file, *sha});
  }
  return cells;
}

namespace {

// run.json's `stage` and `footprint`, which sweep.json repeats as recorded: their keys, types
// and sizes are checked, and the stage's model is the record's, so that nothing else reaches
// the summary and its renderings.
Status CheckSweepStage(const nlohmann::json& stage, const SweepRecord& r, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return BadInput(what, where, "the folder was altered or is not a sweep");
  };
  PILOT_TRY(CheckKnownKeys(stage,
                           {"kind", "output", "device", "model_sha256", "dim", "layers", "context",
                            "kv_bytes_per_token", "batching", "max_new_tokens"},
                           "stage", where, ""));
  for (const char* key : {"kind", "device"}) {
    auto v = StringAt(stage, key);
    if (!v || v->empty() || v->size() > 64 || EscapeTerminal(*v) != *v)
      return bad(std::string("'stage.") + key +
                 "' is missing, longer than 64 bytes or holds control characters");
  }
  if (StringAt(stage, "model_sha256") != r.model_sha256)
    return bad("'stage.model_sha256' is not the record's");
  if (stage.contains("dim") && (!r.output || !r.output->vectors || !UnsignedAt(stage, "dim") ||
                                *UnsignedAt(stage, "dim") > (1u << 20))) {
    return bad("'stage.dim' is malformed");
  }
  // A generator's facts: whole numbers within the generator contract's bounds, and its batching.
  for (auto [key, max] :
       {std::pair{"layers", std::uint64_t{1024}}, std::pair{"context", std::uint64_t{1} << 24},
        std::pair{"kv_bytes_per_token", std::uint64_t{1} << 40},
        std::pair{"max_new_tokens", std::uint64_t{1} << 15}}) {
    if (!stage.contains(key)) continue;
    auto v = UnsignedAt(stage, key);
    if (!r.output || !r.output->generates || !v || *v == 0 || *v > max)
      return bad(std::string("'stage.") + key + "' is malformed");
  }
  if (stage.contains("batching")) {
    auto v = StringAt(stage, "batching");
    if (!r.output || !r.output->generates || !v || (*v != "in-flight" && *v != "static"))
      return bad("'stage.batching' is not in-flight or static");
  }
  return {};
}

Status CheckSweepFootprint(const nlohmann::json& footprint, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return BadInput(what, where, "the folder was altered or is not a sweep");
  };
  PILOT_TRY(CheckKnownKeys(
      footprint,
      {"parameters", "parameter_bytes", "buffers", "buffer_bytes", "weights_mb", "note", "rss_after_load_mb"},
      "footprint", where, ""));
  for (const char* key : {"parameters", "parameter_bytes", "buffers", "buffer_bytes"}) {
    if (footprint.contains(key) && !UnsignedAt(footprint, key))
      return bad(std::string("'footprint.") + key + "' is not a count");
  }
  auto finite = [&](const char* key) {
    auto v = NumberAt(footprint, key);
    return v && std::isfinite(*v) && *v >= 0;
  };
  if (!finite("rss_after_load_mb")) return bad("'footprint.rss_after_load_mb' is not a size");
  if (!(footprint.contains("weights_mb") && footprint["weights_mb"].is_null()) && !finite("weights_mb"))
    return bad("'footprint.weights_mb' is neither a size nor null");
  if (footprint.contains("note") &&
      (!StringAt(footprint, "note") || StringAt(footprint, "note")->size() > 200))
    return bad("'footprint.note' is not a short text");
  return {};
}

}  // namespace

Result<SweepRecord> ReadSweepRecord(FileSystem& fsys, const fs::path& dir) {
  auto text = ReadInsideFolder(fsys, dir, kRunRecord, limits::kRunRecordBytes);
  if (!text.ok()) return text.error();
  const std::string where = (dir / kRunRecord).string();
  // Parsed once with its key order kept (sweep.json repeats `stage` and `footprint` as
  // written), then read through the typed accessors.
  auto ordered = ParseOrderedJson(text.value(), where);
  if (!ordered.ok()) return ordered.error();
  const nlohmann::json j(ordered.value());
  auto bad = [&](const std::string& what) {
    return BadInput(what, where, "the folder was altered or is not a sweep");
  };
  SweepRecord r;
  if (StringAt(j, "folder_kind").value_or("") != kFolderKindSweep) return bad("not a sweep folder");
  for (auto [key, out] :
       {std::pair{"run_id", &r.run_id}, std::pair{"state", &r.state},
        std::pair{"manifest_sha256", &r.manifest_sha256}, std::pair{"params_sha256", &r.params_sha256},
        std::pair{"model_sha256", &r.model_sha256}}) {
    auto v = StringAt(j, key);
    if (!v) return bad(std::string("'") + key + "' is missing or not a string");
    *out = *v;
  }
  if (!IsSha256Hex(r.manifest_sha256) || !IsSha256Hex(r.params_sha256) || !IsSha256Hex(r.model_sha256)) {
    return bad("a sha256 in the record is not 64 lower-case hex digits");
  }
  if (!IsValidItemId(r.run_id) || r.run_id[0] == '.') return bad("'run_id' is not a valid run id");
  if (r.state != "running" && r.state != "finished") return bad("'state' is neither running nor finished");
  if (j.contains("stage") && j["stage"].is_object()) {
    r.stage = ordered.value()["stage"];
    if (ordered.value().contains("footprint")) r.footprint = ordered.value()["footprint"];
    r.output = FindOutputKind(StringAt(j["stage"], "output").value_or(""));
    if (!r.output) return bad("'stage.output' is not an output kind (" + OutputKindChoices() + ")");
    PILOT_TRY(CheckSweepStage(j["stage"], r, where));
    if (!j.contains("footprint")) return bad("'footprint' is missing");
    PILOT_TRY(CheckSweepFootprint(j["footprint"], where));
  } else {
    return bad("'stage' is missing");
  }
  if (!j.contains("request") || !j["request"].is_object()) return bad("'request' is missing");
  for (auto [key, out] : {std::pair{"params", &r.params_path}, std::pair{"manifest", &r.manifest_path},
                          std::pair{"device", &r.device}}) {
    auto v = StringAt(j["request"], key);
    if (!v || v->empty() || v->size() > 4096 || EscapeTerminal(*v) != *v) {
      return bad(std::string("'request.") + key + "' is missing, not a string or holds control characters");
    }
    *out = *v;
  }
  r.started_at = StringAt(j, "started_at").value_or("");
  auto format = UnsignedAt(j, "format_version");
  if (!format || *format < static_cast<std::uint64_t>(kMinSweepFormatVersion) ||
      *format > static_cast<std::uint64_t>(kSweepFormatVersion)) {
    return bad("'format_version' is not a sweep format this pilot reads (" +
               std::to_string(kMinSweepFormatVersion) + "-" + std::to_string(kSweepFormatVersion) + ")");
  }
  r.format_version = static_cast<int>(*format);
  if (!j.contains("settings")) return bad("'settings' is missing");
  auto settings = SweepSettingsFromJson(j["settings"], where);
  if (!settings.ok()) return settings.error();
  r.settings = settings.value();
  if (j.contains("command_args") && j["command_args"].is_array()) {
    for (const auto& a : j["command_args"]) {
      if (a.is_string()) r.command_line.push_back(a.get<std::string>());
    }
  }
  return r;
}

namespace {
std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
}  // namespace

// --- equivalence ---------------------------------------------------------------------------

std::optional<std::size_t> FirstDivergence(const CellOutcome& a, const CellOutcome& b) {
  const std::size_t n = std::min(a.completion.size(), b.completion.size());
  for (std::size_t k = 0; k < n; ++k) {
    if (a.completion[k] != b.completion[k]) return k;
  }
  if (a.completion.size() != b.completion.size()) return n;
  return std::nullopt;
}

std::vector<EquivalenceFinding> CompareWithReference(const CellMeasure& reference, const CellMeasure& cell,
                                                     bool vectors) {
  std::vector<EquivalenceFinding> findings;
  std::map<std::string, const CellOutcome*> by_id;
  for (const auto& o : reference.outcomes) by_id.emplace(o.id, &o);
  const std::size_t n = reference.group_items;
  for (std::size_t pos = 0; pos < cell.outcomes.size(); ++pos) {
    const CellOutcome& o = cell.outcomes[pos];
    auto add = [&](std::string what) {
      findings.push_back({cell.group, cell.batch_size, pos, o.id, std::move(what)});
    };
    // Order: position p of a pass holds the group's (p mod n)-th item, as at batch 1.
    if (n > 0 && pos % n < reference.outcomes.size() && reference.outcomes[pos % n].id != o.id) {
      add("position " + std::to_string(pos) + " holds this item, where batch 1 had '" +
          reference.outcomes[pos % n].id + "': the order changed");
      continue;
    }
    auto it = by_id.find(o.id);
    if (it == by_id.end()) {
      add("not in the batch-1 outcomes");
      continue;
    }
    const CellOutcome& r = *it->second;
    if (r.ok != o.ok) {
      add(std::string(o.ok ? "accepted" : "failed (" + o.error + ")") + " at batch " +
          std::to_string(cell.batch_size) + " but " + (r.ok ? "accepted" : "failed (" + r.error + ")") +
          " at batch 1");
    } else if (!o.ok) {
      if (r.error != o.error) add("fails with '" + o.error + "' but with '" + r.error + "' at batch 1");
    } else if (o.generated || r.generated) {
      if (o.generated != r.generated) {
        add("a completion at one batch size only");
      } else if (auto k = FirstDivergence(r, o)) {
        auto tie = [&](const CellOutcome& x) {
          return std::binary_search(x.near_ties.begin(), x.near_ties.end(), static_cast<std::uint64_t>(*k));
        };
        if (!tie(r) && !tie(o)) {
          add("completion differs from batch 1's at token " + std::to_string(*k) + " (" +
              std::to_string(o.completion.size()) + " tokens against " + std::to_string(r.completion.size()) +
              "), not at a near-tie");
        }
      }
    } else if (!vectors) {
      if (r.label != o.label) {
        add("label '" + o.label + "' but '" + r.label + "' at batch 1");
      } else if (std::fabs(r.confidence - o.confidence) > kConfidenceTolerance) {
        add("confidence " + std::to_string(o.confidence) + " but " + std::to_string(r.confidence) +
            " at batch 1 (tolerance " + Num(kConfidenceTolerance) + ")");
      }
    } else {
      if (r.vector.size() != o.vector.size()) {
        add("vector of " + std::to_string(o.vector.size()) + " values but " +
            std::to_string(r.vector.size()) + " at batch 1");
        continue;
      }
      double worst = 0;
      for (std::size_t d = 0; d < o.vector.size(); ++d) {
        worst = std::max(worst, std::fabs(static_cast<double>(o.vector[d]) - r.vector[d]));
      }
      if (!(worst <= kVectorTolerance)) {
        add("vector differs from batch 1 by up to " + Num(worst) + " (tolerance " + Num(kVectorTolerance) +
            ")");
      }
    }
  }
  return findings;
}

// --- recommendation --------------------------------------------------------------------

std::vector<GroupRecommendation> Recommend(const Grouping& grouping,
                                           const std::vector<CellMeasure>& unordered) {
  std::vector<const CellMeasure*> cells;
  for (const auto& c : unordered) cells.push_back(&c);
  std::stable_sort(cells.begin(), cells.end(),
                   [](const CellMeasure* a, const CellMeasure* b) { return a->batch_size < b->batch_size; });
  std::vector<GroupRecommendation> out;
  for (std::size_t g = 0; g < grouping.groups.size(); ++g) {
    GroupRecommendation r;
    r.group = static_cast<int>(g + 1);
    for (const CellMeasure* cp : cells) {
      const CellMeasure& c = *cp;
      if (c.group != r.group) continue;
      if (!c.limit.empty()) {
        if (!r.limit_batch_size || c.batch_size < *r.limit_batch_size) {
          r.limit_batch_size = c.batch_size;
          r.limit = c.limit;
        }
        continue;
      }
      if (r.limit_batch_size && c.batch_size > *r.limit_batch_size) continue;
      if (!r.batch_size || c.batch_size > *r.batch_size) {
        r.batch_size = c.batch_size;
        r.peak_memory_mb = c.peak_memory_mb();
      }
      if (!r.fastest_batch_size || c.items_per_second > r.fastest_items_per_second) {
        r.fastest_batch_size = c.batch_size;
        r.fastest_items_per_second = c.items_per_second;
      }
    }
    // The fastest against the repeats' noise: another size whose best repeat reaches the
    // fastest's worst is not told apart from it.
    const CellMeasure* fastest = nullptr;
    for (const CellMeasure* cp : cells) {
      if (cp->group == r.group && cp->limit.empty() && r.fastest_batch_size &&
          cp->batch_size == *r.fastest_batch_size)
        fastest = fastest ? fastest : cp;
    }
    if (const auto range = fastest ? fastest->repeat_rate_range() : std::nullopt) {
      std::vector<int> near;
      for (const CellMeasure* cp : cells) {
        const CellMeasure& c = *cp;
        if (c.group != r.group || &c == fastest || !c.limit.empty()) continue;
        if (r.limit_batch_size && c.batch_size > *r.limit_batch_size) continue;
        const auto other = c.repeat_rate_range();
        if (other && other->second >= range->first &&
            std::find(near.begin(), near.end(), c.batch_size) == near.end()) {
          near.push_back(c.batch_size);
        }
      }
      r.fastest_within_noise_of = near;
    }
    if (!r.batch_size) {
      r.why = "no batch size ran without a limit";
    } else if (r.limit_batch_size) {
      r.why = "the largest size below the limit at batch " + std::to_string(*r.limit_batch_size) + " (" +
              r.limit + ")";
    } else {
      r.why = "the largest size measured; no limit was reached";
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::pair<double, double>> CellMeasure::repeat_rate_range() const {
  const std::size_t done = completed + failed;
  if (repeat_seconds.size() < 2 || repeat_seconds.size() != static_cast<std::size_t>(repeats) || done == 0)
    return std::nullopt;
  const double per_repeat = static_cast<double>(done) / static_cast<double>(repeats);
  std::optional<std::pair<double, double>> range;
  for (double s : repeat_seconds) {
    if (!(s > 0)) return std::nullopt;
    const double rate = per_repeat / s;
    range = range ? std::pair{std::min(range->first, rate), std::max(range->second, rate)}
                  : std::pair{rate, rate};
  }
  return range;
}

SweepAnalysis AnalyseSweep(const Grouping& grouping, const SweepSettings& settings,
                           const std::vector<CellMeasure>& cells, bool vectors) {
  SweepAnalysis a;
  std::map<std::pair<int, int>, const CellMeasure*> at;
  for (const auto& c : cells) {
    const std::string name =
        "cell group " + std::to_string(c.group) + " batch " + std::to_string(c.batch_size);
    const bool known_size = std::find(settings.batch_sizes.begin(), settings.batch_sizes.end(),
                                      c.batch_size) != settings.batch_sizes.end();
    if (c.group < 1 || static_cast<std::size_t>(c.group) > grouping.groups.size() || !known_size) {
      a.problems.push_back(name + " is not on the sweep's grid of groups and batch sizes");
      continue;
    }
    const auto& group = grouping.groups[static_cast<std::size_t>(c.group - 1)];
    if (c.group_items != group.ids.size()) {
      a.problems.push_back(name + " ran " + std::to_string(c.group_items) + " items; the group holds " +
                           std::to_string(group.ids.size()));
    }
    if (!at.emplace(std::pair{c.group, c.batch_size}, &c).second)
      a.problems.push_back(name + " appears twice");
  }
  for (std::size_t gi = 0; gi < grouping.groups.size(); ++gi) {
    const int g = static_cast<int>(gi + 1);
    const CellMeasure* ref = nullptr;
    bool limited = false;
    for (int b : settings.batch_sizes) {
      auto it = at.find({g, b});
      if (it == at.end()) continue;
      const CellMeasure& c = *it->second;
      const std::string name = "cell group " + std::to_string(g) + " batch " + std::to_string(b);
      if (limited) a.problems.push_back(name + " was measured after the group's limit");
      if (b == settings.batch_sizes.front()) ref = &c;
      if (!ref) a.problems.push_back(name + " has no batch-1 cell to be compared with");
      std::size_t n = 0;
      if (c.limit.empty()) {
        if (c.outcomes.size() != (c.cycled ? static_cast<std::size_t>(c.batch_size) : c.group_items)) {
          a.problems.push_back(name + " holds " + std::to_string(c.outcomes.size()) +
                               " outcomes, not one per position");
        }
        if (ref && ref != &c && ref->limit.empty()) {
          for (auto& f : CompareWithReference(*ref, c, vectors)) {
            ++n;
            if (a.listed.size() < kFindingsListed) a.listed.push_back(std::move(f));
          }
        }
        if (c.repeat_mismatches > 0) {
          ++n;
          if (a.listed.size() < kFindingsListed) {
            a.listed.push_back(
                {g, b, 0, c.outcomes.empty() ? std::string("-") : c.outcomes.front().id,
                 std::to_string(c.repeat_mismatches) +
                     " position(s) gave other outcomes in a later repeat of the same batch size"});
          }
        }
      }
      a.findings += n;
      a.findings_per_cell[{g, b}] = n;
      if (!c.limit.empty()) limited = true;
    }
  }
  a.recommendations = Recommend(grouping, cells);
  return a;
}

std::string SettingsLimit(const CellMeasure& c, const SweepSettings& s, std::string& why) {
  if (s.latency_budget_ms && c.p95_ms > *s.latency_budget_ms) {
    why = "p95 batch latency " + Num(c.p95_ms) + " ms exceeds the budget of " + Num(*s.latency_budget_ms) +
          " ms";
    return kLimitLatency;
  }
  if (s.max_memory_mb && c.peak_memory_mb() > *s.max_memory_mb) {
    why =
        "peak memory " + Num(c.peak_memory_mb()) + " MB exceeds the cap of " + Num(*s.max_memory_mb) + " MB";
    return kLimitMemoryCap;
  }
  if (c.generation && s.max_ttft_ms && c.generation->ttft_p99_ms > *s.max_ttft_ms) {
    why = "p99 time to first token " + Num(c.generation->ttft_p99_ms) + " ms exceeds the budget of " +
          Num(*s.max_ttft_ms) + " ms";
    return kLimitTtft;
  }
  if (c.generation && s.max_tpot_ms && c.generation->tpot_p99_ms > *s.max_tpot_ms) {
    why = "p99 time per output token " + Num(c.generation->tpot_p99_ms) + " ms exceeds the budget of " +
          Num(*s.max_tpot_ms) + " ms";
    return kLimitTpot;
  }
  return "";
}

Result<Grouping> ReadSweepGroups(FileSystem& fsys, const fs::path& dir) {
  auto text = ReadInsideFolder(fsys, dir, kSweepGroups, limits::kSweepGroupsBytes);
  if (!text.ok()) return text.error();
  return GroupingFromJson(text.value(), (dir / kSweepGroups).string());
}

Result<SweepState> LoadSweepState(FileSystem& fsys, const fs::path& dir) {
  SweepState st;
  auto record = ReadSweepRecord(fsys, dir);
  if (!record.ok()) return record.error();
  st.record = std::move(record).value();
  auto grouping = ReadSweepGroups(fsys, dir);
  if (!grouping.ok()) return grouping.error();
  st.grouping = std::move(grouping).value();
  auto cells = LoadSweepCells(fsys, dir, /*repair=*/false);
  if (!cells.ok()) return cells.error();
  for (auto& c : cells.value()) st.cells.push_back(std::move(c.measure));
  st.analysis =
      AnalyseSweep(st.grouping, st.record.settings, st.cells, st.record.output && st.record.output->vectors);
  return st;
}

}  // namespace pilot
