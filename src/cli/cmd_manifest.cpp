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

int Execute(const ManifestCliOptions& o) {
  ApplyLogLevel(o.common);
  auto dir = ResolveGivenFolder(RealFileSystem(), o.dir, "the folder that holds the inputs");
  if (!dir.ok()) return ReportError(dir.error(), o.common);
  const bool to_stdout = o.out == "-";
  std::optional<fs::path> out;
  if (!to_stdout) {
    // Resolved once (paths.h): a manifest written into a pilot folder would change its bag.
    auto resolved =
        ResolveDestination(RealFileSystem(), o.out.empty() ? dir.value() / "manifest.json" : fs::path(o.out),
                           "--out", Destination::kNew);
    if (!resolved.ok()) return ReportError(resolved.error(), o.common);
    out = resolved.value();
  }
  auto made = ManifestOfFolder(RealFileSystem(), dir.value(), out, o.name, o.force,
                               [](const std::string& why) { spdlog::warn("not pinned: {}", why); });
  if (!made.ok()) return ReportError(made.error(), o.common);
  const Manifest& manifest = made.value();
  std::string text = ManifestToJson(manifest);
  if (!out) {
    std::cout << text;
    return 0;
  }
  if (Status st = RealFileSystem().WriteFileAtomic(*out, text); !st.ok())
    return ReportError(st.error(), o.common);
  if (o.common.json) {
    PrintJson({{"ok", true}, {"manifest", out->string()}, {"items", manifest.items.size()}});
  } else {
    std::printf("wrote %s: %zu items pinned by sha256\n", out->c_str(), manifest.items.size());
  }
  return 0;
}

}  // namespace

void AddManifestCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ManifestCliOptions>();
  CLI::App* cmd = app.add_subcommand("manifest", "Write a sha256-pinned manifest for a folder of inputs");
  cmd->footer(
      "Pins every file under DIR (hidden files, folders pilot wrote and manifests left out). An id is\n"
      "the whole path, extension kept, '/' as '__' and other bytes than [A-Za-z0-9._-] as '_' (then\n"
      "8 hex digits of the path's sha256 end it); two files that would share an id are refused.\n"
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
