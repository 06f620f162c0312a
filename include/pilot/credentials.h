// Refuses parameter files that carry access information. Secrets belong in the
// environment; parameters may name the environment variable (a key ending in "_env" whose
// value is a variable name) and nothing more. Messages never echo the suspect value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pilot/status.h"

namespace pilot {

// True if a key name reads like a credential (password, token, secret, api key, ...).
bool KeyLooksLikeCredential(std::string_view key);
// True if a string value has the shape of a credential (private key block, known token
// prefixes, a long high-entropy string).
bool ValueLooksLikeCredential(std::string_view value);

// Walks a parsed JSON document; the first credential-like key or value is an error naming
// its key path (e.g. "stage.options.api_token") in `source`.
Status CheckNoCredentials(const nlohmann::json& doc, const std::string& source);

}  // namespace pilot
