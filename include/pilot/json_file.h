// A JSON document read from a file pilot does not trust, and a JSON value shown to a person.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/utf8.h"

namespace pilot {

// A regular file of at most `cap` bytes holding one JSON object (ParseJson's depth cap and
// duplicate-key refusal); errors (exit 2) name the file and `what` it is.
Result<nlohmann::json> ReadJsonFile(FileSystem& fs, const std::filesystem::path& file, std::uint64_t cap,
                                    const std::string& what);

// A value of an untrusted document for a terminal, a message or a page: "-" when absent, a
// number to 4 significant digits, a string bounded (1000 bytes) and with control bytes escaped, anything
// else as compact JSON (invalid UTF-8 replaced, never a throw).
template <typename Json>
std::string JsonValueText(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return EscapeTerminal(TruncateUtf8(v.template get<std::string>(), 1000));
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v.template get<double>());
    return buf;
  }
  return EscapeTerminal(TruncateUtf8(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 1000));
}

}  // namespace pilot
