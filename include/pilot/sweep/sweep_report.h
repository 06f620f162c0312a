// sweep.csv, sweep.md and report.html, each rendered from sweep.json's document alone, so
// the three always say the same thing. report.html is self-contained: inline CSS and SVG,
// no script, nothing fetched.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pilot/sweep/sweep_records.h"

namespace pilot {

// data/sweep.json, from what the folder records alone: its run id, data/run.json's `stage`
// and `footprint` objects, the settings, the groups, the journaled cells and what they say as
// a whole (AnalyseSweep). The sweep writes sweep.json with it; verify builds it again from the
// folder and compares the bytes, then the three renderings below against it.
struct SweepSummaryInput {
  std::string run_id;
  nlohmann::ordered_json stage, footprint;
  const Grouping& grouping;
  const SweepSettings& settings;
  const std::vector<CellMeasure>& cells;
  const SweepAnalysis& analysis;
  int format_version = kSweepFormatVersion;  // a folder of an older format is rebuilt as written
};
nlohmann::ordered_json SweepSummary(const SweepSummaryInput& input);

// How a count is rendered. kCurrent writes every whole number >= 0. kBlankSignedCounts is what
// pilot wrote before 2026-12-03: a count the summary held as a signed integer (the group, the
// batch size, the repeats, among others) was left blank. A sweep writes kCurrent; verify
// accepts a folder whose renderings match either, so that sweeps written then still verify.
enum class SweepRendering { kCurrent, kBlankSignedCounts };

std::string SweepCsv(const nlohmann::ordered_json& summary,
                     SweepRendering rendering = SweepRendering::kCurrent);
std::string SweepMarkdown(const nlohmann::ordered_json& summary,
                          SweepRendering rendering = SweepRendering::kCurrent);
std::string SweepHtml(const nlohmann::ordered_json& summary,
                      SweepRendering rendering = SweepRendering::kCurrent);

}  // namespace pilot
