// The layout of a .pt2 (AOTInductor) package, read from its ZIP central directory before
// libtorch's loader sees it. The loader (libtorch 2.11) writes every entry under the model's
// folder to <its temp dir>/<entry name> without checking the name, reads the second entry
// of any archive, compiles a package that ships C++ source instead of a library (running the
// commands its own JSON names), and parses the metadata JSON whatever its size. So pilot
// refuses, naming the package, any package that would make it do one of those.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/status.h"

namespace pilot {

class ReadableFile;

struct ZipEntry {
  std::string name;
  std::uint64_t uncompressed_size = 0;
};

inline constexpr std::size_t kMaxPackageEntries = 1u << 16;
inline constexpr std::uint64_t kMaxCentralDirectoryBytes = 64u << 20;
inline constexpr std::uint64_t kMaxPackageMetadataBytes = 4u << 20;  // *_metadata.json

// The names and uncompressed sizes of a ZIP archive's central directory (ZIP64 included).
// Refuses (exit 2, naming `where`) an archive whose end record or directory is missing,
// truncated or out of the file's bounds, or that lists more than kMaxPackageEntries entries
// or kMaxCentralDirectoryBytes of directory (memory in proportion to the directory, capped).
Result<std::vector<ZipEntry>> ListZipEntries(ReadableFile& file, const std::string& where);

// Refuses (exit 2, naming `where` and the entry) a package that has fewer than two entries;
// an entry name that is empty, absolute, holds a backslash, a NUL or control byte, or a
// "." or ".." component, or is longer than 1024 bytes; no compiled library
// (<prefix>/data/aotinductor/model/*.so); or a metadata file (*_metadata.json) larger than
// kMaxPackageMetadataBytes.
Status CheckPackageLayout(const std::vector<ZipEntry>& entries, const std::string& where);

}  // namespace pilot
