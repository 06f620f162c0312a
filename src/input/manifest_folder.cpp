// `pilot manifest DIR` (manifest.h): a folder of inputs as a manifest pinned by sha256.
#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/utf8.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// An id from a relative path, its extension kept: '/' becomes '__', every other byte outside
// [A-Za-z0-9._-] '_', and an id where bytes were so replaced ends in '-' and 8 hex digits of
// the path's sha256, so that "a b.txt" and "a_b.txt", or "é.txt" and "ü.txt", stay apart. One
// longer than the 128-character limit of an id keeps its first 111 characters and ends in
// '-' and 16 hex digits of the path's sha256.
std::string IdFromPath(const std::string& rel) {
  std::string id;
  bool replaced = false;
  for (char c : rel) {
    if (c == '/') {
      id += "__";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') {
      id += c;
    } else {
      id += '_';
      replaced = true;
    }
  }
  if (replaced) id += "-" + Sha256Hex(rel).substr(0, 8);
  if (id.size() > 128) id = id.substr(0, 111) + "-" + Sha256Hex(rel).substr(0, 16);
  return id;
}

// Whether the start of a file is a manifest in pilot's format: a JSON object of `name` and
// `items` whose first item holds id, path and sha256 (and no key an item may not have), or
// such an item alone (the first line of a JSONL manifest). Judged on the events of a SAX
// parse of the first bytes, so that neither a huge file nor a truncated head costs more.
class ManifestShape : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool is_manifest() const { return is_manifest_; }

  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 3 && in_items_) item_keys_.clear();
    return depth_ <= 3;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      top_keys_.insert(k);
      in_items_ = false;
      pending_items_ = k == "items";
    } else if (depth_ == 3 && in_items_) {
      item_keys_.insert(k);
    }
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 0) {
      is_manifest_ = IsItem(top_keys_);  // a JSONL manifest's first line
      return false;
    }
    if (depth_ == 2 && in_items_) {
      is_manifest_ = IsItem(item_keys_) && Within(top_keys_, {"name", "items"});
      return false;  // the first item decides
    }
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    in_items_ = depth_ == 2 && pending_items_;
    pending_items_ = false;
    return depth_ <= 2;
  }
  bool end_array() override {
    --depth_;
    in_items_ = false;
    return true;
  }
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Value() {
    pending_items_ = false;
    return depth_ > 0;  // a bare value at the top is not a manifest
  }
  static bool Within(const std::set<std::string>& keys, std::initializer_list<const char*> allowed) {
    for (const auto& k : keys)
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) return false;
    return true;
  }
  static bool IsItem(const std::set<std::string>& keys) {
    return keys.count("id") && keys.count("path") && keys.count("sha256") &&
           Within(keys, {"id", "path", "sha256", "expected", "expected_rejection"});
  }
  int depth_ = 0;
  bool pending_items_ = false, in_items_ = false, is_manifest_ = false;
  std::set<std::string> top_keys_, item_keys_;
};

}  // namespace

bool StartsAsManifest(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF")
    head.remove_prefix(3);  // a byte order mark, as the parser skips it
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  ManifestShape shape;
  nlohmann::json::sax_parse(head.begin(), head.end(), &shape, nlohmann::json::input_format_t::json, false);
  return shape.is_manifest();
}

namespace {

// Whether `file` starts as a manifest does (ManifestShape), read through `fsys` without
// following a link.
Result<bool> IsManifestFile(FileSystem& fsys, const fs::path& file) {
  auto opened = fsys.OpenRead(file, false);
  if (!opened.ok()) return opened.error();
  std::string head(kManifestHeadBytes, '\0');
  auto got = opened.value()->ReadAt(0, head.data(), head.size());
  if (!got.ok()) return got.error();
  head.resize(got.value());
  return StartsAsManifest(head);
}

// Whether the folder `dir` is one pilot wrote: its bag-info.txt names a Pilot-Folder-Kind.
Result<bool> IsPilotFolder(FileSystem& fsys, const fs::path& dir) {
  auto opened = fsys.OpenRead(dir / kBagInfo, false);
  if (!opened.ok()) return opened.error();
  auto text = ReadAllCapped(*opened.value(), kManifestHeadBytes);
  if (!text.ok()) return text.error();
  const std::string& t = text.value();
  return t.rfind("Pilot-Folder-Kind:", 0) == 0 || t.find("\nPilot-Folder-Kind:") != std::string::npos;
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
  // A folder pilot wrote, or one inside it (runs/r/data), holds its output: never inputs.
  for (fs::path up = root; up.has_relative_path(); up = up.parent_path()) {
    auto info = fsys.LinkStat(up / kBagInfo);
    if (!info.ok() || !info.value().regular) continue;
    auto is_pilot = IsPilotFolder(fsys, up);
    if (is_pilot.ok() && is_pilot.value()) {
      return BadInput("this folder is " + std::string(up == root ? "" : "inside ") +
                          "a folder pilot wrote (" + EscapeTerminal(up.string()) +
                          ": its bag-info.txt names a Pilot-Folder-Kind), not a folder of inputs",
                      root.string(), "give the folder that holds the inputs");
    }
  }
  Manifest result;
  result.name = name.empty() ? root.filename().string() : name;
  auto listed = ListFilesRecursive(fsys, root, root);
  if (!listed.ok()) return listed.error();
  // The folders pilot wrote (run, sweep, ... folders: bags whose bag-info.txt names a kind):
  // their files are pilot's output, never inputs.
  std::set<std::string> pilot_folders;
  for (const auto& rel : listed.value()) {
    const fs::path rel_path(rel);
    if (rel_path.filename() != kBagInfo || rel[0] == '.' || rel.find("/.") != std::string::npos) continue;
    auto is_pilot = IsPilotFolder(fsys, root / rel_path.parent_path());
    if (!is_pilot.ok()) return is_pilot.error();
    if (!is_pilot.value()) continue;
    pilot_folders.insert(rel_path.parent_path().generic_string());
  }
  const auto in_pilot_folder = [&](const std::string& rel) {
    for (fs::path p = fs::path(rel).parent_path(); !p.empty(); p = p.parent_path())
      if (pilot_folders.count(p.generic_string())) return true;
    return false;
  };
  for (const auto& folder : pilot_folders)  // hidden ones were never collected; nested ones go with theirs
    if (!in_pilot_folder(folder) && not_pinned) not_pinned(EscapeTerminal(folder) + ": a folder pilot wrote");
  std::map<std::string, std::string> path_of_id;
  for (const auto& rel : listed.value()) {
    const fs::path file = root / rel;
    if (file == out_abs || rel.find("/.") != std::string::npos || rel[0] == '.' || in_pilot_folder(rel))
      continue;
    PILOT_TRY(CheckFileName(root, rel));
    // `pilot run` rejects a path that resolves outside the folder (path_outside_root): such a
    // file is not pinned.
    ConfinedPath confined = ConfinePath(fsys, root, rel);
    if (!confined.inside) {
      if (not_pinned) not_pinned(confined.why);
      continue;
    }
    auto manifest = IsManifestFile(fsys, file);
    if (!manifest.ok()) return manifest.error();
    if (manifest.value()) {
      if (not_pinned) not_pinned(rel + ": a manifest, never an input");
      continue;
    }
    auto digest = Sha256File(fsys, file);
    if (!digest.ok()) return digest.error();
    const std::string id = IdFromPath(rel);
    if (auto [at, fresh] = path_of_id.emplace(id, rel); !fresh) {
      return BadInput(
          "two files would have the id '" + id + "': '" + EscapeTerminal(at->second) + "' and '" +
              EscapeTerminal(rel) + "'",
          root.string(),
          "an id is the file's path with '/' as '__' and other characters than letters, digits, '.', "
          "'_' and '-' as '_': rename one of the files, or write the manifest by hand");
    }
    const std::string path = (rel_root == "." ? fs::path(rel) : rel_root / rel).generic_string();
    result.items.push_back({id, path, digest.value(), std::nullopt, std::nullopt});
  }
  if (result.items.empty()) {
    return BadInput("no input files found", root.string(), "put the inputs in the folder first");
  }
  return result;
}

}  // namespace pilot
