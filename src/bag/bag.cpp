#include "pilot/bag.h"

#include <algorithm>
#include <ctime>
#include <sstream>

#include "pilot/build_info.h"
#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/run_lock.h"

namespace pilot {

namespace fs = std::filesystem;

std::string EncodeManifestPath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%')
      out += "%25";
    else if (c == '\n')
      out += "%0A";
    else if (c == '\r')
      out += "%0D";
    else
      out += c;
  }
  return out;
}

std::string DecodeManifestPath(const std::string& path) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size()) {
      std::string code = path.substr(i, 3);
      if (code == "%25") {
        out += '%';
        i += 2;
        continue;
      }
      if (code == "%0A" || code == "%0a") {
        out += '\n';
        i += 2;
        continue;
      }
      if (code == "%0D" || code == "%0d") {
        out += '\r';
        i += 2;
        continue;
      }
    }
    out += path[i];
  }
  return out;
}

Result<std::vector<ManifestLine>> ParseManifestLines(const std::string& text, const std::string& source) {
  // Strict: exactly the form pilot writes ("<sha256> <path>" with one or more spaces, one
  // line per file, every line ending in LF). A blank line, a CR, or a '*' (binary mode
  // marker of sha256sum) is a sign that the file was edited by hand.
  std::vector<ManifestLine> out;
  std::size_t n = 0;
  if (!text.empty() && text.back() != '\n') {
    return BadInput("the last line does not end with a newline", source);
  }
  for (std::size_t start = 0; start < text.size();) {
    std::size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    ++n;
    const std::string where = "line " + std::to_string(n);
    if (line.empty()) return BadInput("malformed manifest " + where + ": blank line", source);
    if (line.find('\r') != std::string::npos)
      return BadInput("malformed manifest " + where + ": carriage return", source);
    auto sep = line.find_first_of(" \t");
    auto path_start = sep == std::string::npos ? sep : line.find_first_not_of(" \t", sep);
    if (sep == std::string::npos || path_start == std::string::npos || !IsSha256Hex(line.substr(0, sep))) {
      return BadInput("malformed manifest " + where + ": expected '<sha256>  <path>'", source);
    }
    if (line[path_start] == '*') {
      return BadInput("malformed manifest " + where + ": a '*' (binary mode) marker", source);
    }
    out.push_back({line.substr(0, sep), DecodeManifestPath(line.substr(path_start))});
  }
  return out;
}

Status WriteBagDeclaration(FileSystem& fs, const fs::path& bag) {
  return fs.WriteFileAtomic(bag / kBagDeclaration,
                            "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n");
}

namespace {

// "<sha256>  <path>" lines, the files hashed on every core.
Result<std::string> HashLines(FileSystem& fs, const fs::path& bag, const std::vector<std::string>& files) {
  std::vector<fs::path> paths;
  paths.reserve(files.size());
  for (const auto& rel : files) paths.push_back(bag / rel);
  auto digests = Sha256Files(fs, paths, /*follow_symlinks=*/false);
  std::string out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!digests[i].ok()) return digests[i].error();
    out += digests[i].value() + "  " + EncodeManifestPath(files[i]) + "\n";
  }
  return out;
}

}  // namespace

Status FinalizeBag(FileSystem& fs, const fs::path& bag, const std::string& bagging_date,
                   const std::vector<std::pair<std::string, std::string>>& info) {
  // Each field is one line of bag-info.txt: a value with a line break (a folder renamed since
  // it was created names it) would add fields. Refused before anything is written.
  for (const auto& [label, value] : info) {
    if ((label + value).find_first_of("\r\n") != std::string::npos) {
      return BadInput("the bag-info field '" + label + "' holds a line break", bag.string(),
                      "give the folder a name without control characters");
    }
  }
  auto listed = ListFilesRecursive(fs, bag, bag / "data");
  if (!listed.ok()) return Error{ErrorKind::kWorkFailed, listed.error().what, listed.error().where, ""};
  const std::vector<std::string>& payload = listed.value();
  std::uintmax_t octets = 0;
  for (const auto& rel : payload) {
    auto st = fs.LinkStat(bag / rel);
    if (!st.ok()) return Error{ErrorKind::kWorkFailed, st.error().what, st.error().where, ""};
    octets += st.value().size;
  }
  auto manifest = HashLines(fs, bag, payload);
  if (!manifest.ok()) return manifest.error();
  if (Status st = fs.WriteFileAtomic(bag / kPayloadManifest, manifest.value()); !st.ok()) return st;

  std::string bag_info = "Bagging-Date: " + bagging_date + "\n";
  bag_info += "Payload-Oxum: " + std::to_string(octets) + "." + std::to_string(payload.size()) + "\n";
  for (const auto& [k, v] : info) bag_info += k + ": " + v + "\n";
  if (Status st = fs.WriteFileAtomic(bag / kBagInfo, bag_info); !st.ok()) return st;

  // Every tag file at the top level, except the tag manifests themselves.
  std::vector<std::string> tags;
  auto entries = fs.ListDirectory(bag);
  if (!entries.ok()) {
    return Error{ErrorKind::kWorkFailed, "cannot list the run folder: " + entries.error().what, bag.string(),
                 ""};
  }
  for (const DirEntry& e : entries.value()) {
    // Not the tag manifests themselves, nor the writer's lock (removed once the bag is done).
    if (e.stat.regular && e.name.rfind("tagmanifest-", 0) != 0 && e.name != kLockFile &&
        e.name.find(".tmp-") == std::string::npos) {
      tags.push_back(e.name);
    }
  }
  auto tagmanifest = HashLines(fs, bag, tags);
  if (!tagmanifest.ok()) return tagmanifest.error();
  return fs.WriteFileAtomic(bag / kTagManifest, tagmanifest.value());
}

nlohmann::ordered_json RecordHead(const FolderIdentity& identity, const std::string& command_line,
                                  const std::string& state, const std::string& started_at,
                                  const std::optional<std::string>& finished_at) {
  nlohmann::ordered_json j;
  j["folder_kind"] = identity.kind;
  j["format_version"] = identity.format_version;
  j["run_id"] = identity.id;
  j["pilot_version"] = build::kVersion;
  j["source_revision"] = build::kSourceRevision;
  j["command_line"] = command_line;
  j["state"] = state;
  j["started_at"] = started_at;
  j["finished_at"] = finished_at ? nlohmann::ordered_json(*finished_at) : nlohmann::ordered_json();
  return j;
}

Status FinalizeFolder(FileSystem& fs, const fs::path& folder, const std::string& bagging_date,
                      const FolderIdentity& identity) {
  std::vector<std::pair<std::string, std::string>> info{
      {"Bag-Software-Agent", std::string("pilot ") + build::kVersion}, {"External-Identifier", identity.id}};
  if (!identity.description.empty()) info.emplace_back("External-Description", identity.description);
  info.emplace_back("Pilot-Folder-Kind", identity.kind);
  info.emplace_back("Pilot-Format-Version", std::to_string(identity.format_version));
  return FinalizeBag(fs, folder, bagging_date, info);
}

}  // namespace pilot
