// The manifest: the immutable, sha256-pinned list of inputs of a pilot (docs/formats.md, "Manifest").
// Loading either yields a fully valid manifest or refuses the whole file (exit 2): nothing
// runs on a manifest with a duplicate id, a missing field or a parse error.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pilot/fs.h"
#include "pilot/id_index.h"
#include "pilot/status.h"

namespace pilot {

struct ManifestItem {
  std::string id;
  std::string path;    // as written: relative to the manifest's folder
  std::string sha256;  // lower-case hex
  std::optional<std::string> expected;
  std::optional<std::string> expected_rejection;
};

struct Manifest {
  std::string name;
  std::vector<ManifestItem> items;
};

// 1-128 characters of [A-Za-z0-9._-].
bool IsValidItemId(std::string_view id);

// Parses manifest text; `jsonl` selects JSON Lines (one item per line). `source` names the
// file in messages.
Result<Manifest> ParseManifest(std::string_view text, bool jsonl, const std::string& source);

// One line of a JSON Lines manifest, validated as one item. `where` ("file:line") names it
// in messages.
Result<ManifestItem> ParseManifestLine(std::string_view line, const std::string& where);

// The fast path of ParseManifestLine: a line that is one flat object of the allowed keys,
// each once, with plain printable-ASCII string values (no escape), as almost every manifest
// is written. Anything else gives nullopt and ParseManifestLine parses it as JSON. Whatever
// this returns, the JSON parser reads the same fields (the manifest fuzz target checks it);
// the item is not yet validated.
std::optional<ManifestItem> ScanManifestLine(std::string_view line);

// Reads and parses a manifest file (.json or .jsonl by extension).
Result<Manifest> LoadManifest(FileSystem& fs, const std::filesystem::path& file);

// What a validation pass over a manifest can keep, in proportion to its ids (not its
// records): the ids in order, and the few expected rejections (by position).
struct ManifestIndex {
  IdIndex ids;
  std::unordered_map<std::size_t, std::string> expected_rejection;
  std::unordered_map<std::size_t, std::string> expected;  // the labelled items' `expected`
};

// A validated manifest file, read item by item. A .json manifest is held in memory (a JSON
// document is parsed whole anyway); a .jsonl manifest is streamed, so that memory does not
// grow with its length: opening it validates every line (ids unique: the only state kept,
// and only while validating) and ForEach reads it again.
class ManifestSource {
 public:
  // `fs` is kept for ForEach's reads: it must outlive the source.
  // With `index`, the validation pass also fills it.
  static Result<ManifestSource> Open(FileSystem& fs, const std::filesystem::path& file,
                                     ManifestIndex* index = nullptr);
  // A byte copy whose sha256 the caller has just checked equal to `sha256`, the pin of a
  // JSON Lines manifest that was validated when the run started (a resumed run's copy): not
  // validated again, only read by ForEach, which parses every line it does not skip as strictly as
  // ever. `count` is the item count validated then.
  static ManifestSource OpenPinned(FileSystem& fs, const std::filesystem::path& file, std::size_t count,
                                   std::string sha256);
  std::size_t size() const { return count_; }
  const std::string& name() const { return name_; }
  const std::filesystem::path& file() const { return file_; }
  // The sha256 of exactly the bytes that were validated (read once: hashed as validated).
  const std::string& sha256() const { return sha256_; }
  // Reads items from now on from `copy`, a byte copy of the validated file whose sha256 the
  // caller has checked: a run iterates its own pinned copy, never the original again.
  void Rebind(const std::filesystem::path& copy);
  // Calls fn for each item in order; stops at the first error fn returns. Items for which
  // `skip(id)` is true are passed over, on JSON Lines without parsing the whole line when it
  // starts with its id (as pilot writes them): what makes resuming a long run cheap.
  Status ForEach(const std::function<Status(const ManifestItem&)>& fn,
                 const std::function<bool(std::string_view)>& skip = nullptr) const;

 private:
  FileSystem* fs_ = nullptr;
  std::filesystem::path file_;
  bool jsonl_ = false;
  std::optional<Manifest> loaded_;
  std::size_t count_ = 0;
  std::string name_;
  std::string sha256_;
};

// Serialises a manifest as pretty JSON (the form `pilot manifest` writes).
std::string ManifestToJson(const Manifest& manifest);

// Whether the first bytes of a file (`head`: kManifestHeadBytes of it, or all of a shorter
// one) are a manifest in pilot's format: a JSON object of `name` and `items` whose first item
// holds id, path and sha256 and no key an item may not have, or such an item alone (the first
// line of a JSONL manifest). A truncated head is judged on what it holds.
inline constexpr std::size_t kManifestHeadBytes = 64 * 1024;
bool StartsAsManifest(std::string_view head);

// `pilot manifest DIR`: every regular file under `root` (resolved), pinned by its sha256, in
// sorted order; hidden files and folders, links and special files left out, and the manifest
// file itself (`out`, resolved; nullopt when it goes to stdout). Paths are relative to `out`'s
// folder (to `root` without `out`), which must be `root` or above it. An id is the whole path,
// extension kept, '/' as "__" and other bytes outside [A-Za-z0-9._-] as '_', an id with bytes so
// replaced ending in '-' and 8 hex digits of the path's sha256 (one over 128 characters: its
// first 111, '-', 16 hex digits of the path's sha256); two paths that still give one id are
// refused (exit 2, naming both). What pilot wrote is never pinned: a folder whose
// bag-info.txt names a Pilot-Folder-Kind (refused as `root` or around it), and a file that starts as
// a manifest does (a JSON object of name and items whose first item has id, path and sha256,
// or such an item alone: a JSONL manifest), judged on its first 64 KiB. A file name that is
// not UTF-8 or holds a control character is refused (exit 2, naming it); a file whose path
// leads out of `root` is left out. `not_pinned` is told each thing left out and why. An `out`
// that exists is refused unless `replace` (a manifest is immutable).
Result<Manifest> ManifestOfFolder(FileSystem& fs, const std::filesystem::path& root,
                                  const std::optional<std::filesystem::path>& out, const std::string& name,
                                  bool replace = false,
                                  const std::function<void(const std::string& why)>& not_pinned = {});

}  // namespace pilot
