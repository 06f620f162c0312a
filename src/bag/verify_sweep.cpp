// `verify` of a sweep folder, after the bag's own checks (verify.cpp): its record, groups and
// cells, read through the records layer's strict parsers.
#include <map>

#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/sweep_records.h"
#include "pilot/utf8.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;

void CheckSweepFolder(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
  auto add = [&](const std::string& where, const std::string& what) {
    findings.push_back({"sweep", EscapeControl(where), EscapeControl(what)});
  };
  auto record = ReadSweepRecord(fsys, dir);
  if (!record.ok()) {
    add("data/run.json", record.error().what);
  } else if (record.value().state != "finished") {
    add("data/run.json", "the sweep has not finished (state '" + KeyForMessage(record.value().state) +
                             "'); `pilot resume` it");
  }
  auto groups_text = ReadInsideFolder(fsys, dir, kSweepGroups, limits::kSweepGroupsBytes);
  if (!groups_text.ok()) {
    add(kSweepGroups, groups_text.error().what);
  } else if (auto g = GroupingFromJson(groups_text.value(), kSweepGroups); !g.ok()) {
    add(kSweepGroups, g.error().what);
  }
  auto cells = LoadSweepCells(fsys, dir, /*repair=*/false);
  if (!cells.ok()) {
    add(cells.error().where, cells.error().what);
    return;
  }
  auto summary_text = ReadInsideFolder(fsys, dir, "data/sweep.json", limits::kReportBytes);
  if (!summary_text.ok()) {
    add("data/sweep.json", summary_text.error().what);
    return;
  }
  auto summary = ParseJson(summary_text.value(), "data/sweep.json");
  if (!summary.ok()) {
    add("data/sweep.json", summary.error().what);
    return;
  }
  const auto& s = summary.value();
  if (!s.contains("cells") || !s["cells"].is_array() || s["cells"].size() != cells.value().size()) {
    add("data/sweep.json", "lists " + std::string(s.contains("cells") && s["cells"].is_array()
                                                      ? std::to_string(s["cells"].size())
                                                      : "no") +
                               " cells; the journal has " + std::to_string(cells.value().size()));
    return;
  }
  std::map<std::pair<int, int>, const CellMeasure*> by_cell;
  for (const auto& c : cells.value()) by_cell[{c.measure.group, c.measure.batch_size}] = &c.measure;
  for (const auto& e : s["cells"]) {
    auto g = UnsignedAt(e, "group");
    auto b = UnsignedAt(e, "batch_size");
    auto it = g && b ? by_cell.find({static_cast<int>(*g), static_cast<int>(*b)}) : by_cell.end();
    if (it == by_cell.end()) {
      add("data/sweep.json", "lists a cell the journal does not have");
      continue;
    }
    const CellMeasure& m = *it->second;
    std::string limit = StringAt(e, "limit").value_or("");
    auto ips = NumberAt(e, "items_per_second");
    if (limit != m.limit || !ips || *ips != m.items_per_second) {
      add("data/sweep.json", "cell group " + std::to_string(m.group) + " batch " + std::to_string(m.batch_size) +
                                 " does not match its file " + SweepCellFile(m.group, m.batch_size));
    }
  }
}

}  // namespace pilot
