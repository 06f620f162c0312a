#include "pilot/folder_kind.h"

#include "pilot/adapt_records.h"
#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/run_record.h"

namespace pilot {

namespace fs = std::filesystem;

std::string BagInfoValue(std::string_view info, std::string_view label) {
  for (std::size_t start = 0; start < info.size();) {
    std::size_t nl = info.find('\n', start);
    std::string_view line =
        info.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? info.size() : nl + 1;
    if (line.size() > label.size() && line.substr(0, label.size()) == label && line[label.size()] == ':') {
      auto v = line.find_first_not_of(' ', label.size() + 1);
      if (v == std::string_view::npos) return "";
      std::string_view value = line.substr(v);
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.remove_suffix(1);
      return std::string(value);
    }
  }
  return "";
}

Result<FolderKind> ReadFolderKind(FileSystem& fsys, const fs::path& dir) {
  // Never through a link: the folder may be a hostile copy.
  for (const char* rel : {kRunRecord, kBagInfo}) {
    auto st = fsys.LinkStat(dir / rel);
    if (st.ok() && st.value().exists && !st.value().regular) {
      return BadInput("is not a regular file (a symlink?); pilot never follows one inside a run folder",
                      (dir / rel).string());
    }
  }
  auto text = ReadCapped(fsys, dir / kRunRecord, limits::kRunRecordBytes, "run record");
  if (!text.ok()) {
    Error e = text.error();
    e.hint = "not a folder pilot wrote, or one that never started";
    return e;
  }
  FolderKind k;
  // An adaptation folder's record is its own (adapt_records.h): only its kind and version here.
  auto doc = ParseJson(text.value(), (dir / kRunRecord).string());
  if (doc.ok() && StringAt(doc.value(), "folder_kind") == std::string(kFolderKindAdapt)) {
    auto version = UnsignedAt(doc.value(), "format_version");
    if (!version || *version > 1000) {
      return BadInput("'format_version' must be a count", (dir / kRunRecord).string());
    }
    k.kind = kFolderKindAdapt;
    k.version = static_cast<int>(*version);
    k.declared = true;
  } else {
    auto record = ParseRunRecord(text.value(), (dir / kRunRecord).string());
    if (!record.ok()) return record.error();
    k.kind = record.value().folder_kind;
    k.version = record.value().format_version;
    k.declared = record.value().kind_declared;
  }
  auto info_stat = fsys.LinkStat(dir / kBagInfo);
  if (info_stat.ok() && info_stat.value().exists) {
    auto info = ReadCapped(fsys, dir / kBagInfo, limits::kTagFileBytes, kBagInfo);
    if (!info.ok()) return info.error();
    std::string kind = BagInfoValue(info.value(), "Pilot-Folder-Kind");
    std::string version = BagInfoValue(info.value(), "Pilot-Format-Version");
    std::string want_kind = k.declared ? k.kind : "";
    std::string want_version = k.declared ? std::to_string(k.version) : "";
    if (kind != want_kind || version != want_version) {
      return BadInput("bag-info.txt says kind '" + KeyForMessage(kind) + "' format '" +
                          KeyForMessage(version) + "' but data/run.json says kind '" +
                          KeyForMessage(want_kind) + "' format '" + want_version + "'",
                      (dir / kBagInfo).string(), "the folder was altered; do not trust it");
    }
  }
  return k;
}

Status CheckFolderKind(const FolderKind& k, const fs::path& dir, std::string_view what) {
  if (k.kind == kFolderKindSweep && k.declared) {
    if (k.version != kSweepFormatVersion) {
      return BadInput("the folder is in sweep format " + std::to_string(k.version) +
                          ", which this pilot cannot " + std::string(what) + " (it knows format " +
                          std::to_string(kSweepFormatVersion) + ")",
                      dir.string(), "use the pilot that wrote it, or a newer one");
    }
    return {};
  }
  if (k.kind == kFolderKindAdapt) {
    if (!k.declared || k.version != kAdaptFormatVersion) {
      return BadInput("the folder is in adapt format " + std::to_string(k.version) +
                          ", which this pilot cannot " + std::string(what) + " (it knows format " +
                          std::to_string(kAdaptFormatVersion) + ")",
                      dir.string(), "use the pilot that wrote it, or a newer one");
    }
    return {};
  }
  if (k.kind == kFolderKindShard || k.kind == kFolderKindMerged) {
    if (!k.declared || k.version != kRunFormatVersion) {
      return BadInput("the " + k.kind + " folder is in format " + std::to_string(k.version) +
                          ", which this pilot cannot " + std::string(what) + " (it knows format " +
                          std::to_string(kRunFormatVersion) + ")",
                      dir.string(), "use the pilot that wrote it, or a newer one");
    }
    return {};
  }
  if (k.kind != kFolderKindRun) {
    return BadInput("the folder is of kind '" + KeyForMessage(k.kind) + "', which this pilot cannot " +
                        std::string(what) + " (it knows: run, shard, merged, sweep, adapt)",
                    dir.string(), "use a pilot that knows this kind");
  }
  if (k.version < 1 || k.version > kRunFormatVersion) {
    return BadInput("the folder is in run format " + std::to_string(k.version) +
                        ", which this pilot cannot " + std::string(what) + " (it knows formats 1.." +
                        std::to_string(kRunFormatVersion) + ")",
                    dir.string(), "use the pilot that wrote it, or a newer one");
  }
  return {};
}

}  // namespace pilot
