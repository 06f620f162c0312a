// The run folder as a BagIt 1.0 bag (RFC 8493): payload under data/, sha256 manifests,
// bag-info.txt with Payload-Oxum. Writing the manifests is the last step of a run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
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

// Parses "<sha256>  <path>" lines; errors name the file and line.
Result<std::vector<ManifestLine>> ParseManifestLines(const std::string& text, const std::string& source);

// RFC 8493 §2.1.3: CR, LF and % in file names are percent-encoded in manifests.
std::string EncodeManifestPath(const std::string& path);
std::string DecodeManifestPath(const std::string& path);

}  // namespace pilot
