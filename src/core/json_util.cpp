#include "pilot/json_util.h"

namespace pilot {

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return BadInput(std::string("not valid JSON: ") + e.what(), source, "fix the file's syntax");
  }
}

std::string PrettyJson(const nlohmann::ordered_json& doc) { return doc.dump(2) + "\n"; }

}  // namespace pilot
