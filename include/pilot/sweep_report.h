// sweep.csv, sweep.md and report.html, each rendered from sweep.json's document alone, so
// the three always say the same thing. report.html is self-contained: inline CSS and SVG,
// no script, nothing fetched.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pilot {

std::string SweepCsv(const nlohmann::ordered_json& summary);
std::string SweepMarkdown(const nlohmann::ordered_json& summary);
std::string SweepHtml(const nlohmann::ordered_json& summary);

}  // namespace pilot
