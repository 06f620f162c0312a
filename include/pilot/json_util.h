// Small helpers around nlohmann::json that turn its exceptions into pilot Errors.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pilot/status.h"

namespace pilot {

// Parses JSON; a syntax error names `source` and the byte position.
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& source);

// Pretty JSON with a trailing newline (the form of every JSON file in a run folder).
std::string PrettyJson(const nlohmann::ordered_json& doc);

}  // namespace pilot
