// The layout of a .pt2 (AOTInductor) package, read from its ZIP central directory before
// libtorch's loader sees it. The loader (libtorch 2.11) writes every entry under the model's
// folder to <its temp dir>/<entry name> without checking the name, reads the second entry
// of any archive, compiles a package that ships C++ source instead of a library (running the
// commands its own JSON names), and parses the metadata JSON whatever its size. So pilot
// refuses, naming the package, any package that would make it do one of those.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pilot/status.h"

namespace pilot {

class ReadableFile;

struct ZipEntry {
  std::string name;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t local_offset = 0;  // of its local header
  std::uint16_t compression = 0;   // 0: stored
};

inline constexpr std::size_t kMaxPackageEntries = 1u << 16;
inline constexpr std::uint64_t kMaxCentralDirectoryBytes = 64u << 20;
inline constexpr std::uint64_t kMaxPackageMetadataBytes = 4u << 20;  // *_metadata.json

// The names and uncompressed sizes of a ZIP archive's central directory (ZIP64 included),
// found the way miniz (libtorch's ZIP reader) finds it, so that both read the same directory:
// the end record nearest the end of the file, and the ZIP64 end record whenever its locator
// precedes the end record. Refuses (exit 2, naming `where`) an archive whose end record or
// directory is missing, truncated or out of the file's bounds, whose end record's comment
// does not end with the file, whose plain and ZIP64 end records disagree, or that lists
// more than kMaxPackageEntries entries
// or kMaxCentralDirectoryBytes of directory (memory in proportion to the directory, capped).
Result<std::vector<ZipEntry>> ListZipEntries(ReadableFile& file, const std::string& where);

// Refuses (exit 2, naming `where` and the entry by its index, never its name) a package
// that has fewer than two entries; an entry name that is empty, absolute, holds a backslash,
// a NUL or control byte, or a "." or ".." component, or is longer than 1024 bytes; two names
// equal up to ASCII letter case (miniz looks names up case-insensitively); no compiled
// library where the loader looks (<prefix>data/aotinductor/model*.so, the prefix being the
// first component shared by entries 0 and 1); or a metadata file (*_metadata.json, any case)
// larger than kMaxPackageMetadataBytes.
Status CheckPackageLayout(const std::vector<ZipEntry>& entries, const std::string& where);

// A stored (uncompressed) entry's bytes, at most `max_bytes` of them: refused (exit 2, naming
// `where`) when it is compressed, larger, or its local header or data lie out of the file.
Result<std::string> ReadStoredZipEntry(ReadableFile& file, const ZipEntry& entry, std::uint64_t max_bytes,
                                       const std::string& where);

// What a TorchScript archive (torch.jit.save's ZIP) says of where it came from, for the
// message of a model that does not load: its format version ("<archive>/version" in 1.x,
// "<archive>/.data/version" in 2.x) and the torch that saved it, where the documented export
// recorded it as the extra file "torch_version" (docs/models.md). Each is unset when absent
// or not a short printable value; nothing is trusted beyond that, and nothing fails.
struct TorchArchiveFacts {
  bool zip = false;
  std::optional<std::string> format_version, saved_by;
};
TorchArchiveFacts ReadTorchArchiveFacts(ReadableFile& file, const std::string& where);
// "archive format version 10, saved by torch 2.11.0 (extra/torch_version)".
std::string DescribeTorchArchive(const TorchArchiveFacts& facts);

}  // namespace pilot
