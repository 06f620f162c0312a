// A result record: one per manifest id, accepted with a category or rejected with a
// reason (DESIGN.md, "Result records"), and its JSON Lines form.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pilot/status.h"

namespace pilot {

struct ResultRecord {
  std::string id;
  bool accepted = false;
  std::string category;  // accepted only
  double confidence = 0;
  std::string reason;  // rejected only
  std::string detail;  // rejected only
  std::string model;   // "sha256:<hex>" when the item reached the stage
  std::optional<double> latency_ms;  // when the item reached the stage

  static ResultRecord Rejected(std::string id, std::string_view reason, std::string detail);
};

// `prefix` fields come first (the journal puts "type" there).
nlohmann::ordered_json ToJson(const ResultRecord& record,
                              nlohmann::ordered_json prefix = nlohmann::ordered_json::object());
std::string ToJsonLine(const ResultRecord& record);  // no trailing newline
Result<ResultRecord> ParseResultRecord(std::string_view line, const std::string& where);

}  // namespace pilot
