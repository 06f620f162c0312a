// `pilot manifest DIR`: writes a sha256-pinned manifest for a folder of inputs.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "cli/cli.h"
#include "pilot/bag.h"
#include "pilot/destination.h"
#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/utf8.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct ManifestCliOptions {
  Common common;
  std::string dir;
  std::string out;
  std::string name;
  bool force = false;
};

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

int Execute(const ManifestCliOptions& o) {
  ApplyLogLevel(o.common);
  std::error_code ec;
  auto dir = ResolveGivenFolder(RealFileSystem(), o.dir, "the folder that holds the inputs");
  if (!dir.ok()) return ReportError(dir.error(), o.common);
  const bool to_stdout = o.out == "-";
  fs::path out;
  if (!to_stdout) {
    // Resolved once (paths.h): a manifest written into a pilot folder would change its bag.
    auto resolved =
        ResolveDestination(RealFileSystem(), o.out.empty() ? dir.value() / "manifest.json" : fs::path(o.out),
                           "--out", Destination::kNew);
    if (!resolved.ok()) return ReportError(resolved.error(), o.common);
    out = resolved.value();
  }
  fs::path root = dir.value();
  fs::path out_dir = to_stdout ? root : fs::weakly_canonical(fs::absolute(out, ec).parent_path(), ec);
  if (ec) return ReportError(BadInput("cannot resolve the paths: " + ec.message(), o.dir), o.common);
  auto rel_root = root.lexically_relative(out_dir);
  if (!to_stdout && (rel_root.empty() || *rel_root.begin() == "..")) {
    return ReportError(BadInput("the manifest must sit in the inputs' folder or above it", out.string(),
                                "manifest paths are relative to the manifest's folder and may not climb out"),
                       o.common);
  }
  if (!to_stdout && fs::exists(fs::symlink_status(out, ec)) && !o.force) {
    return ReportError(BadInput("refusing to overwrite an existing manifest", out.string(),
                                "a manifest is immutable: write a new file with --out, or pass --force"),
                       o.common);
  }
  Manifest manifest;
  manifest.name = o.name.empty() ? root.filename().string() : o.name;
  std::set<std::string> ids;
  fs::path out_abs = to_stdout ? fs::path() : fs::weakly_canonical(fs::absolute(out, ec), ec);
  auto listed = ListFilesRecursive(RealFileSystem(), root, root);
  if (!listed.ok()) return ReportError(listed.error(), o.common);
  for (const auto& rel : listed.value()) {
    fs::path file = root / rel;
    if (file == out_abs || rel.find("/.") != std::string::npos || rel[0] == '.') continue;
    if (!CheckUtf8(rel).valid) {
      // A manifest is JSON text: a name that is not UTF-8 cannot be written into it faithfully.
      return ReportError(BadInput("a file name is not valid UTF-8: " + CheckUtf8(rel).detail,
                                  EscapeTerminal((root / rel).string()),
                                  "rename the file (e.g. with `convmv`) and run `pilot manifest` again"),
                         o.common);
    }
    if (EscapeTerminal(rel) != rel) {
      // `pilot run` refuses a path holding a control character: never pin one.
      return ReportError(
          BadInput("a file name holds a control character (e.g. a newline)",
                   EscapeTerminal((root / rel).string()), "rename the file and run `pilot manifest` again"),
          o.common);
    }
    // `pilot run` rejects a path that resolves outside the folder (path_outside_root):
    // such a file is not pinned.
    ConfinedPath confined = ConfinePath(RealFileSystem(), root, rel);
    if (!confined.inside) {
      spdlog::warn("not pinned: {}", confined.why);
      continue;
    }
    auto digest = Sha256File(RealFileSystem(), file);
    if (!digest.ok()) return ReportError(digest.error(), o.common);
    std::string id = IdFromPath(rel);
    for (int n = 2; !ids.insert(id).second; ++n) id = IdFromPath(rel, "-" + std::to_string(n));
    std::string path = (rel_root == "." ? fs::path(rel) : rel_root / rel).generic_string();
    manifest.items.push_back({id, path, digest.value(), std::nullopt, std::nullopt});
  }
  if (manifest.items.empty()) {
    return ReportError(BadInput("no input files found", o.dir, "put the inputs in the folder first"),
                       o.common);
  }
  std::string text = ManifestToJson(manifest);
  if (to_stdout) {
    std::cout << text;
    return 0;
  }
  if (Status st = RealFileSystem().WriteFileAtomic(out, text); !st.ok())
    return ReportError(st.error(), o.common);
  if (o.common.json) {
    PrintJson({{"ok", true}, {"manifest", out.string()}, {"items", manifest.items.size()}});
  } else {
    std::printf("wrote %s: %zu items pinned by sha256\n", out.c_str(), manifest.items.size());
  }
  return 0;
}

}  // namespace

void AddManifestCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ManifestCliOptions>();
  CLI::App* cmd = app.add_subcommand("manifest", "Write a sha256-pinned manifest for a folder of inputs");
  cmd->footer(
      "Pins every file under DIR (hidden files skipped); ids come from the paths without extension.\n"
      "Add `expected` or `expected_rejection` to items by hand afterwards. Never overwrites a manifest\n"
      "unless --force.");
  cmd->add_option("DIR", o->dir, "Folder of inputs")->required();
  cmd->add_option("--out", o->out, "Manifest to write (default DIR/manifest.json; '-' for stdout)");
  cmd->add_option("--name", o->name, "Manifest name (default: the folder's name)");
  cmd->add_flag("--force", o->force, "Overwrite an existing manifest file");
  AddCommonOptions(*cmd, o->common);
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
