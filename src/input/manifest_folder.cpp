// `pilot manifest DIR` (manifest.h): a folder of inputs as a manifest pinned by sha256.
#include <cctype>
#include <set>

#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/utf8.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// An id from a relative path without its extension: '/' becomes '__', other disallowed
// characters '_'; `suffix` (to tell apart two paths that map alike) is kept within the
// 128-character limit of an id.
std::string IdFromPath(const std::string& rel, const std::string& suffix = "") {
  std::string id;
  std::string stem = (fs::path(rel).parent_path() / fs::path(rel).stem()).generic_string();
  for (char c : stem) {
    if (c == '/')
      id += "__";
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')
      id += c;
    else
      id += '_';
  }
  if (id.size() + suffix.size() > 128)
    id = id.substr(0, 111 - suffix.size()) + "-" + Sha256Hex(rel).substr(0, 16);
  return id + suffix;
}

// A name that can be pinned: JSON text holds it faithfully, and `pilot run` accepts it.
Status CheckFileName(const fs::path& root, const std::string& rel) {
  if (!CheckUtf8(rel).valid) {
    return BadInput("a file name is not valid UTF-8: " + CheckUtf8(rel).detail,
                    EscapeTerminal((root / rel).string()),
                    "rename the file (e.g. with `convmv`) and run `pilot manifest` again");
  }
  if (EscapeTerminal(rel) != rel) {
    return BadInput("a file name holds a control character (e.g. a newline)",
                    EscapeTerminal((root / rel).string()), "rename the file and run `pilot manifest` again");
  }
  return {};
}

}  // namespace

Result<Manifest> ManifestOfFolder(FileSystem& fsys, const fs::path& root, const std::optional<fs::path>& out,
                                  const std::string& name, bool replace,
                                  const std::function<void(const std::string& why)>& not_pinned) {
  fs::path out_dir = root, out_abs;
  if (out) {
    auto dir = fsys.Resolve(out->parent_path());
    if (!dir.ok()) return dir.error();
    out_dir = dir.value();
    out_abs = out_dir / out->filename();
  }
  const fs::path rel_root = root.lexically_relative(out_dir);
  if (rel_root.empty() || *rel_root.begin() == "..") {
    return BadInput("the manifest must sit in the inputs' folder or above it",
                    out ? out->string() : root.string(),
                    "manifest paths are relative to the manifest's folder and may not climb out");
  }
  if (out) {
    auto there = fsys.LinkStat(*out);
    if (!there.ok()) return there.error();
    if (there.value().exists && !replace) {
      return BadInput("refusing to overwrite an existing manifest", out->string(),
                      "a manifest is immutable: write a new file with --out, or pass --force");
    }
  }
  Manifest result;
  result.name = name.empty() ? root.filename().string() : name;
  std::set<std::string> ids;
  auto listed = ListFilesRecursive(fsys, root, root);
  if (!listed.ok()) return listed.error();
  for (const auto& rel : listed.value()) {
    const fs::path file = root / rel;
    if (file == out_abs || rel.find("/.") != std::string::npos || rel[0] == '.') continue;
    PILOT_TRY(CheckFileName(root, rel));
    // `pilot run` rejects a path that resolves outside the folder (path_outside_root): such a
    // file is not pinned.
    ConfinedPath confined = ConfinePath(fsys, root, rel);
    if (!confined.inside) {
      if (not_pinned) not_pinned(confined.why);
      continue;
    }
    auto digest = Sha256File(fsys, file);
    if (!digest.ok()) return digest.error();
    std::string id = IdFromPath(rel);
    for (int n = 2; !ids.insert(id).second; ++n) id = IdFromPath(rel, "-" + std::to_string(n));
    const std::string path = (rel_root == "." ? fs::path(rel) : rel_root / rel).generic_string();
    result.items.push_back({id, path, digest.value(), std::nullopt, std::nullopt});
  }
  if (result.items.empty()) {
    return BadInput("no input files found", root.string(), "put the inputs in the folder first");
  }
  return result;
}

}  // namespace pilot
