// `verify` of a sweep folder, after the bag's own checks (verify.cpp): its record, groups and
// cells, read through the records layer's strict parsers; then what the cells say (the
// recommendation, the equivalence findings) is derived again and compared with sweep.json,
// so that a folder re-hashed after an edit of its summary is caught. Last, sweep.json is
// built again whole from the record, groups and cells (SweepSummary) and compared byte for
// byte, and so are its three renderings: an edited sweep.csv, sweep.md or report.html is a
// finding too.
#include <functional>
#include <map>

#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/sweep/sweep_records.h"
#include "pilot/sweep/sweep_report.h"
#include "pilot/sweep/sweep_run.h"
#include "pilot/utf8.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// sweep.json against the document its sources give, key by key, then as bytes; then the
// renderings against that document's.
void CheckDerivedFiles(FileSystem& fsys, const fs::path& dir, const SweepState& state, std::string_view text,
                       const std::function<void(const std::string&, const std::string&)>& add) {
  const SweepRecord& record = state.record;
  const nlohmann::ordered_json want =
      SweepSummary({record.run_id, record.stage, record.footprint, state.grouping, record.settings,
                    state.cells, state.analysis, record.format_version});
  const std::string want_text = PrettyJson(want);
  if (text != want_text) {
    auto got = ParseJson(text, kSweepSummary);
    const std::string keys = got.ok() ? DifferingKeys(got.value(), want) : "";
    add(kSweepSummary, keys.empty() ? "is not byte for byte the document its record, groups and cells give"
                                    : "differs from what its record, groups and cells give, at: " + keys);
  }
  // Each rendering as this pilot writes it, or as pilot wrote it before signed counts were
  // rendered (SweepRendering): a faithful rendering either way, so an older folder verifies.
  // Each file is judged alone, and a newer folder is not told from an older one: a rendering
  // with counts left blank hides figures but changes none.
  using Render = std::string (*)(const nlohmann::ordered_json&, SweepRendering);
  const std::pair<const char*, Render> renderings[] = {
      {kSweepCsv, &SweepCsv}, {kSweepMarkdown, &SweepMarkdown}, {kReportHtml, &SweepHtml}};
  for (const auto& [rel, render] : renderings) {
    auto got = ReadInsideFolder(fsys, dir, rel, limits::kReportBytes);
    if (!got.ok()) {
      add(rel, got.error().what);
    } else if (got.value() != render(want, SweepRendering::kCurrent) &&
               got.value() != render(want, SweepRendering::kBlankSignedCounts)) {
      add(rel, "differs from the rendering of what the folder's record, groups and cells give (edited?)");
    }
  }
}

// The checks of a sweep folder after the bag's own: the record, the groups, every journaled
// cell file against its sha256, sweep.json against the cells, then the derived files rebuilt.
void CheckSweepFolder(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
  auto add = [&](const std::string& where, const std::string& what) {
    findings.push_back({"sweep", EscapeTerminal(where), EscapeTerminal(what)});
  };
  auto state = LoadSweepState(fsys, dir);
  if (!state.ok()) {
    add(state.error().where, state.error().what);
    return;
  }
  const SweepRecord& record = state.value().record;
  const auto& measures = state.value().cells;
  const SweepAnalysis& analysis = state.value().analysis;
  if (record.state != "finished") {
    add(kRunRecord,
        "the sweep has not finished (state '" + KeyForMessage(record.state) + "'); `pilot resume` it");
  }
  for (const auto& p : analysis.problems) add(kSweepCells, p);
  // A generator's figures and completions belong to a generator's sweep alone.
  if (record.output && !record.output->generates) {
    for (const auto& m : measures) {
      bool generated = m.generation.has_value();
      for (const auto& o : m.outcomes) generated = generated || o.generated;
      if (generated) {
        add(SweepCellFile(m.group, m.batch_size),
            "holds a generator's figures or completions, but the sweep's stage does not generate");
      }
    }
  }

  auto summary_text = ReadInsideFolder(fsys, dir, kSweepSummary, limits::kReportBytes);
  if (!summary_text.ok()) {
    add(kSweepSummary, summary_text.error().what);
    return;
  }
  auto summary = ParseJson(summary_text.value(), kSweepSummary);
  if (!summary.ok()) {
    add(kSweepSummary, summary.error().what);
    return;
  }
  const auto& s = summary.value();
  auto differs = [&](const std::string& what) {
    add(kSweepSummary, what + " differs from what its cells say");
  };
  // The cells, one by one.
  if (!s.contains("cells") || !s["cells"].is_array() || s["cells"].size() != measures.size()) {
    differs("the number of cells");
  } else {
    std::map<std::pair<int, int>, const CellMeasure*> by_cell;
    for (const auto& m : measures) by_cell[{m.group, m.batch_size}] = &m;
    for (const auto& e : s["cells"]) {
      auto g = UnsignedAt(e, "group");
      auto b = UnsignedAt(e, "batch_size");
      auto it = g && b && *g <= 1000 && *b <= 100000
                    ? by_cell.find({static_cast<int>(*g), static_cast<int>(*b)})
                    : by_cell.end();
      if (it == by_cell.end()) {
        differs("a cell the journal does not have");
        continue;
      }
      const CellMeasure& m = *it->second;
      auto ips = NumberAt(e, "items_per_second");
      auto n = UnsignedAt(e, "equivalence_findings");
      auto found = analysis.findings_per_cell.find({m.group, m.batch_size});
      const std::size_t want = found == analysis.findings_per_cell.end() ? 0 : found->second;
      if (StringAt(e, "limit").value_or("") != m.limit || !ips || *ips != m.items_per_second || !n ||
          *n != want) {
        differs("cell group " + std::to_string(m.group) + " batch " + std::to_string(m.batch_size));
      }
    }
  }
  // The groups, the findings and the recommendation.
  const auto& groups = state.value().grouping.groups;
  if (!s.contains("groups") || !s["groups"].is_array() || s["groups"].size() != groups.size()) {
    differs("the groups");
  } else {
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const auto& e = s["groups"][i];
      if (UnsignedAt(e, "min_length") != groups[i].min_length ||
          UnsignedAt(e, "max_length") != groups[i].max_length) {
        differs("group " + std::to_string(i + 1));
      }
    }
  }
  const auto* eq = s.contains("equivalence") && s["equivalence"].is_object() ? &s["equivalence"] : nullptr;
  if (!eq || UnsignedAt(*eq, "findings") != analysis.findings) differs("the number of equivalence findings");
  const auto& recs = analysis.recommendations;
  if (!s.contains("recommendation") || !s["recommendation"].is_array() ||
      s["recommendation"].size() != recs.size()) {
    differs("the recommendation");
  } else {
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const auto& e = s["recommendation"][i];
      std::optional<std::uint64_t> want;
      if (recs[i].batch_size) want = static_cast<std::uint64_t>(*recs[i].batch_size);
      const bool null_ok = !want && e.contains("batch_size") && e["batch_size"].is_null();
      if (!null_ok && UnsignedAt(e, "batch_size") != want)
        differs("group " + std::to_string(i + 1) + "'s recommended size");
    }
  }
  auto model = s.contains("stage") ? StringAt(s["stage"], "model_sha256") : std::nullopt;
  if (model != record.model_sha256) differs("the model's sha256");
  CheckDerivedFiles(fsys, dir, state.value(), summary_text.value(), add);
}

}  // namespace

void RegisterSweepFolderKind(FolderKindRegistry& registry) {
  FolderKindSpec spec;
  spec.name = kFolderKindSweep;
  spec.checked = "a sweep folder: record, groups and every cell against its sha256";
  spec.min_format = kMinSweepFormatVersion;
  spec.max_format = kSweepFormatVersion;
  spec.checks = CheckSweepFolder;
  spec.markers = {kSweepCells};
  spec.status = ReadSweepStatus;
  spec.batch_plan = BatchPlanFromSweep;
  registry.Register(std::move(spec));
}

}  // namespace pilot
