// data/sweep.json from what a sweep folder records alone (sweep_report.h): the sweep writes
// it with this function, and verify builds it again from the folder and compares the bytes.
#include <map>
#include <optional>
#include <utility>

#include "pilot/folder_files.h"
#include "pilot/sweep/sweep_report.h"

namespace pilot {

namespace {

using ojson = nlohmann::ordered_json;

// The first cell of each (group, batch size), looked up once: a hostile journal may hold many.
class CellIndex {
 public:
  explicit CellIndex(const std::vector<CellMeasure>& cells) {
    for (const auto& c : cells) first_.emplace(std::make_pair(c.group, c.batch_size), &c);
  }
  const CellMeasure* Find(int group, int batch_size) const {
    auto it = first_.find({group, batch_size});
    return it == first_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::pair<int, int>, const CellMeasure*> first_;
};

template <typename T>
ojson OrNull(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson();
}

ojson MeasuredOn(const std::string& device) {
  return {{"device", device},
          {"memory", device == "cpu" ? "resident high-water mark of each cell's process (RSS)"
                                     : "the device allocator's peak in each cell's process"},
          {"note", device == "cpu" ? "a CPU measurement does not stand for a GPU"
                                   : "measured on " + device + "; another card model needs its own sweep"}};
}

ojson GroupsJson(const Grouping& grouping) {
  auto gj = ojson::array();
  for (std::size_t i = 0; i < grouping.groups.size(); ++i) {
    const auto& g = grouping.groups[i];
    gj.push_back({{"group", i + 1},
                  {"min_length", g.min_length},
                  {"max_length", g.max_length},
                  {"items", g.items},
                  {"sampled", g.ids.size()}});
  }
  return gj;
}

// Cells in sweep order (group, then the settings' batch sizes).
ojson CellsJson(const SweepSummaryInput& in, const CellIndex& index) {
  auto cells = ojson::array();
  for (std::size_t gi = 0; gi < in.grouping.groups.size(); ++gi) {
    for (int b : in.settings.batch_sizes) {
      const CellMeasure* c = index.Find(static_cast<int>(gi + 1), b);
      if (!c) continue;
      ojson cj = CellToJson(*c);
      cj.erase("outcomes");
      if (c->padded_tokens > 0) cj["padding_waste"] = c->padding_waste();
      cj["file"] = SweepCellFile(c->group, c->batch_size);
      auto n = in.analysis.findings_per_cell.find({c->group, c->batch_size});
      cj["equivalence_findings"] = n == in.analysis.findings_per_cell.end() ? 0 : n->second;
      cells.push_back(std::move(cj));
    }
  }
  return cells;
}

// What was not run and why.
ojson NotRunJson(const SweepSummaryInput& in, const CellIndex& index) {
  auto not_run = ojson::array();
  for (std::size_t gi = 0; gi < in.grouping.groups.size(); ++gi) {
    const int g = static_cast<int>(gi + 1);
    std::optional<int> limit_at;
    for (int b : in.settings.batch_sizes) {
      if (const CellMeasure* c = index.Find(g, b)) {
        if (!c->limit.empty()) limit_at = b;
      } else {
        not_run.push_back(
            {{"group", g},
             {"batch_size", b},
             {"reason", limit_at ? "escalation stopped at the limit at batch " + std::to_string(*limit_at)
                                 : std::string("not run")}});
      }
    }
  }
  return not_run;
}

// Format 2: the fastest size against its repeats' noise, in figures and in words.
void AddNoise(const GroupRecommendation& r, ojson& j) {
  if (!r.fastest_batch_size) {
    j["fastest_within_noise_of"] = ojson();
    j["noise"] = ojson();
    return;
  }
  if (!r.fastest_within_noise_of) {
    j["fastest_within_noise_of"] = ojson();
    j["noise"] = "unmeasured: fewer than two repeats (--repeats 2 or more to judge the fastest)";
    return;
  }
  j["fastest_within_noise_of"] = *r.fastest_within_noise_of;
  if (r.fastest_within_noise_of->empty()) {
    j["noise"] = "batch " + std::to_string(*r.fastest_batch_size) +
                 "'s slowest repeat is faster than every other size's fastest";
  } else {
    std::string sizes;
    for (int b : *r.fastest_within_noise_of) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b);
    j["noise"] = "within the repeats' noise: batch " + std::to_string(*r.fastest_batch_size) +
                 " is not told apart from batch " + sizes +
                 " (a repeat of theirs reaches its slowest); more repeats may separate them";
  }
}

ojson RecommendationJson(const SweepSummaryInput& in) {
  auto rj = ojson::array();
  for (const auto& r : in.analysis.recommendations) {
    const auto& lg = in.grouping.groups[static_cast<std::size_t>(r.group - 1)];
    rj.push_back(
        {{"group", r.group},
         {"min_length", lg.min_length},
         {"max_length", lg.max_length},
         {"batch_size", OrNull(r.batch_size)},
         {"why", r.why},
         {"limit_batch_size", OrNull(r.limit_batch_size)},
         {"limit", r.limit.empty() ? ojson() : ojson(r.limit)},
         {"peak_memory_mb", r.batch_size ? ojson(r.peak_memory_mb) : ojson()},
         {"fastest_batch_size", OrNull(r.fastest_batch_size)},
         {"fastest_items_per_second", r.fastest_batch_size ? ojson(r.fastest_items_per_second) : ojson()}});
    if (in.format_version >= 2) AddNoise(r, rj.back());
  }
  return rj;
}

// Headroom: each group's peak at its recommended size against common cards, a share kept back.
// Format 2: a CPU's resident memory says nothing of a GPU's, so a CPU sweep's table gives the
// peak against each card but no fit ("unknown on a GPU", as `pilot plan` says).
ojson HeadroomJson(const SweepSummaryInput& in, const std::string& device) {
  const bool unknown = in.format_version >= 2 && device == "cpu";
  auto cards = ojson::array();
  for (double gb : kCardSizesGb) {
    const double usable = gb * 1024.0 * (1.0 - kCardReserve);
    auto per_group = ojson::array();
    for (const auto& r : in.analysis.recommendations) {
      if (!r.batch_size) continue;
      per_group.push_back({{"group", r.group},
                           {"peak_mb", r.peak_memory_mb},
                           {"fits", unknown ? ojson() : ojson(r.peak_memory_mb <= usable)},
                           {"headroom_mb", unknown ? ojson() : ojson(usable - r.peak_memory_mb)}});
    }
    cards.push_back({{"card_gb", gb}, {"usable_mb", usable}, {"groups", per_group}});
  }
  return {{"reserve", kCardReserve},
          {"basis",
           unknown ? "unknown on a GPU: the peak is resident memory on the CPU, which says nothing of a "
                     "card's (the CUDA context, the allocator's cache and the kernels' workspace are not "
                     "in it); sweep on the card to know"
           : device == "cpu" ? "resident memory on the CPU: a GPU's use differs (no host runtime, "
                               "but the CUDA context, the allocator's cache and the kernels' workspace)"
                             : "the device allocator's peak on " + device},
          {"cards", cards}};
}

// A generator's headroom (docs/generation.md, "A generator's sweep"): at each context, the most
// sequences whose KV cache fits on each card beside the overhead the cells measured (their
// peak less their cache: the weights, the runtime, the step's work). The cache is planned at
// (1 + 1/layers) x the formula, as the step concatenates one layer's cache with its new keys and
// values. On a CPU the overhead is resident memory, which says nothing of a card's: unknown.
ojson GeneratorHeadroomJson(const SweepSummaryInput& in, const std::string& device) {
  const ojson& st = in.stage;
  auto whole = [&](const char* key) -> std::uint64_t {
    // Live, the stage's details hold signed integers; read back from run.json, unsigned ones.
    if (!st.contains(key) || !st[key].is_number_integer() || st[key].get<std::int64_t>() <= 0) return 0;
    return static_cast<std::uint64_t>(st[key].get<std::int64_t>());
  };
  const std::uint64_t per_token = whole("kv_bytes_per_token"), context = whole("context"),
                      layers = whole("layers");
  if (per_token == 0 || context == 0 || layers == 0 || per_token > (std::uint64_t{1} << 40) ||
      context > (std::uint64_t{1} << 24))
    return ojson();
  std::optional<double> overhead;
  for (const auto& c : in.cells) {
    if (!c.generation || c.completed == 0) continue;
    const double o =
        c.peak_memory_mb() - static_cast<double>(c.generation->kv_cache_bytes) / (1024.0 * 1024.0);
    overhead = std::max(overhead.value_or(0), o);
  }
  if (!overhead) return ojson();
  const bool unknown = device == "cpu";
  const double factor = 1.0 + 1.0 / static_cast<double>(layers);
  std::vector<std::uint64_t> contexts;
  for (std::uint64_t c = 512; c < context && contexts.size() < 10; c *= 2) contexts.push_back(c);
  contexts.push_back(context);
  auto rows = ojson::array();
  for (std::uint64_t ctx : contexts) {
    const double seq_mb =
        factor * static_cast<double>(per_token) * static_cast<double>(ctx) / (1024.0 * 1024.0);
    auto cards = ojson::array();
    for (double gb : kCardSizesGb) {
      const double free_mb = gb * 1024.0 * (1.0 - kCardReserve) - *overhead;
      const double n = free_mb > 0 ? std::floor(free_mb / seq_mb) : 0;
      cards.push_back(
          {{"card_gb", gb}, {"sequences", unknown ? ojson() : ojson(static_cast<std::uint64_t>(n))}});
    }
    rows.push_back({{"context", ctx}, {"kv_mb_per_sequence", seq_mb}, {"cards", cards}});
  }
  return {
      {"basis", unknown ? "unknown on a GPU: the overhead was measured as resident memory on the CPU, which "
                          "says nothing of a card's; the KV cache per sequence is the model's own and holds"
                        : "the device allocator's peak on " + device + " less each cell's KV cache"},
      {"overhead_mb", *overhead},
      {"kv_bytes_per_token", per_token},
      {"kv_factor", factor},
      {"contexts", rows}};
}

}  // namespace

nlohmann::ordered_json SweepSummary(const SweepSummaryInput& in) {
  const std::string device =
      in.stage.is_object() && in.stage.contains("device") && in.stage["device"].is_string()
          ? in.stage["device"].get<std::string>()
          : "";
  ojson j;
  j["folder_kind"] = kFolderKindSweep;
  j["format_version"] = in.format_version;
  j["run_id"] = in.run_id;
  j["stage"] = in.stage;
  j["measured_on"] = MeasuredOn(device);
  j["settings"] = SweepSettingsToJson(in.settings);
  j["tolerances"] = {{"confidence", kConfidenceTolerance}, {"vector", kVectorTolerance}};
  j["footprint"] = in.footprint;
  j["measure"] = in.grouping.measure;
  j["excluded"] = in.grouping.excluded;
  j["groups"] = GroupsJson(in.grouping);
  const CellIndex index(in.cells);
  ojson cells = CellsJson(in, index);
  auto findings = ojson::array();
  for (const auto& f : in.analysis.listed) {
    findings.push_back({{"group", f.group},
                        {"batch_size", f.batch_size},
                        {"position", f.position},
                        {"id", f.id},
                        {"what", f.what}});
  }
  if (!in.analysis.problems.empty()) j["problems"] = in.analysis.problems;
  j["cells"] = std::move(cells);
  j["not_run"] = NotRunJson(in, index);
  j["equivalence"] = {{"findings", in.analysis.findings}, {"listed", findings.size()}};
  j["findings"] = std::move(findings);
  j["recommendation"] = RecommendationJson(in);
  j["headroom"] = HeadroomJson(in, device);
  if (ojson g = GeneratorHeadroomJson(in, device); !g.is_null()) j["generator_headroom"] = std::move(g);
  return j;
}

}  // namespace pilot
