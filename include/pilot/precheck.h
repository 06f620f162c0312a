// What happens to an item before the stage: path confinement, existence, size limit,
// pin check, emptiness and encoding. Either the item's text or its rejection.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/results.h"

namespace pilot {

struct Precheck {
  std::optional<ResultRecord> rejection;  // set: the item is rejected before the stage
  std::string text;                       // otherwise: its contents, valid UTF-8
};

// `root` is the manifest's folder, canonical (see ConfinePath). A file over `max_bytes` is rejected from its size alone
// and never read; a path outside `root` is never opened.
Precheck PrecheckItem(FileSystem& fs, const std::filesystem::path& root, const ManifestItem& item,
                      std::uint64_t max_bytes);

}  // namespace pilot
