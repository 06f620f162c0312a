// SHA-256 through OpenSSL's EVP interface. Thread-safe (no shared state).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "pilot/status.h"

namespace pilot {

// Lower-case hex SHA-256 of bytes.
std::string Sha256Hex(std::string_view bytes);

// Lower-case hex SHA-256 of a file's contents, streamed (constant memory).
Result<std::string> Sha256File(const std::filesystem::path& file);

// True for exactly 64 lower-case hex digits.
bool IsSha256Hex(std::string_view s);

}  // namespace pilot
