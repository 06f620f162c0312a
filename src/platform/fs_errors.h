// The errors both file systems (fs.cpp, memory_fs.cpp) report: a read that fails is bad input
// (exit 2); a write that fails is a failure during work (exit 5): the folder it was writing
// stays resumable.
#pragma once

#include <cstring>
#include <filesystem>
#include <string>

#include "pilot/status.h"

namespace pilot {

inline Error FileReadError(const std::string& what, const std::filesystem::path& file, int err) {
  return Error{ErrorKind::kBadInput, what + ": " + std::strerror(err), file.string(),
               "check the file and retry"};
}

inline Error FileWriteError(const std::string& what, const std::filesystem::path& file, int err) {
  return Error{ErrorKind::kWorkFailed, what + ": " + std::strerror(err), file.string(),
               "check the disk (space, permissions) and retry"};
}

}  // namespace pilot
