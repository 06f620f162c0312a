// What happens to an item before the stage: path confinement, existence, size limit,
// pin check, emptiness and (for a stage that takes text) encoding. Either the item's bytes
// or its rejection.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "pilot/fs.h"
#include "pilot/manifest.h"
#include "pilot/results.h"
#include "pilot/stage.h"

namespace pilot {

struct Precheck {
  std::optional<ResultRecord> rejection;  // set: the item is rejected before the stage
  std::string text;                       // otherwise: its contents (valid UTF-8 when the stage takes text)
};

// `root` is the manifest's folder, canonical (see ConfinePath). A file over `max_bytes` is
// rejected from its size alone and never read; a path outside `root` is never opened. For
// InputKind::kText a whitespace-only file is empty_input and invalid UTF-8 is
// invalid_encoding; for kBytes only a zero-byte file is empty_input.
Precheck PrecheckItem(FileSystem& fs, const std::filesystem::path& root, const ManifestItem& item,
                      std::uint64_t max_bytes, InputKind input = InputKind::kText);

}  // namespace pilot
