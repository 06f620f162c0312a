// The run folder as a BagIt 1.0 bag (RFC 8493): payload under data/, sha256 manifests,
// bag-info.txt with Payload-Oxum. Writing the manifests is the last step of a run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

struct ManifestLine {
  std::string sha256;
  std::string path;  // relative to the bag root, '/' separated
};

// Writes bagit.txt (at creation of a run folder).
Status WriteBagDeclaration(FileSystem& fs, const std::filesystem::path& bag);

// Hashes every payload file, then writes manifest-sha256.txt, bag-info.txt and, last,
// tagmanifest-sha256.txt. `bagging_date` (YYYY-MM-DD, from the caller's Clock) is the
// Bagging-Date; `info` adds bag-info fields (Payload-Oxum is computed here).
Status FinalizeBag(FileSystem& fs, const std::filesystem::path& bag, const std::string& bagging_date,
                   const std::vector<std::pair<std::string, std::string>>& info);

// What a folder is, as the one writer of its identity records it: in bag-info.txt
// (Pilot-Folder-Kind, Pilot-Format-Version, External-Identifier, External-Description) and
// at the head of data/run.json (folder_kind, format_version, run_id).
struct FolderIdentity {
  std::string kind;
  int format_version = 0;
  std::string id;           // the run id (the folder's name for a sweep or a merge)
  std::string description;  // External-Description, when not empty
};

// The head every folder's data/run.json opens with, in this order: folder_kind,
// format_version, run_id, pilot_version, source_revision, command_line, state, started_at,
// finished_at (null until the folder is finished). The kind's own fields follow.
nlohmann::ordered_json RecordHead(const FolderIdentity& identity, const std::string& command_line,
                                  const std::string& state, const std::string& started_at,
                                  const std::optional<std::string>& finished_at);

// FinalizeBag with the folder's identity as bag-info's fields, in one order for every kind:
// Bag-Software-Agent, External-Identifier, External-Description, Pilot-Folder-Kind,
// Pilot-Format-Version.
Status FinalizeFolder(FileSystem& fs, const std::filesystem::path& folder, const std::string& bagging_date,
                      const FolderIdentity& identity);

// Parses "<sha256>  <path>" lines; errors name the file and line.
Result<std::vector<ManifestLine>> ParseManifestLines(const std::string& text, const std::string& source);

// RFC 8493 §2.1.3: CR, LF and % in file names are percent-encoded in manifests.
std::string EncodeManifestPath(const std::string& path);
std::string DecodeManifestPath(const std::string& path);

}  // namespace pilot
