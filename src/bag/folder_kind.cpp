#include "pilot/folder_kind.h"

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
  // A kind whose record is its own (not a run record): only its kind and version here.
  auto doc = ParseJson(text.value(), (dir / kRunRecord).string());
  const FolderKindSpec* own = nullptr;
  if (doc.ok()) {
    const FolderKindSpec* spec = FolderKinds().Find(StringAt(doc.value(), "folder_kind").value_or(""));
    if (spec && !spec->run_record) own = spec;
  }
  if (own) {
    auto version = UnsignedAt(doc.value(), "format_version");
    if (!version || *version > 1000) {
      return BadInput("'format_version' must be a count", (dir / kRunRecord).string());
    }
    k.kind = own->name;
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

void FolderKindRegistry::Register(FolderKindSpec spec) { kinds_.push_back(std::move(spec)); }

void FolderKindRegistry::RegisterExtension(FolderExtensionSpec spec) {
  extensions_.push_back(std::move(spec));
}

const FolderKindSpec* FolderKindRegistry::Find(std::string_view name) const {
  for (const auto& k : kinds_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

namespace {
template <typename Property>
bool Ask(std::string_view kind, Property property) {
  const FolderKindSpec* spec = FolderKinds().Find(kind);
  return spec && property(*spec);
}
}  // namespace

bool HoldsRunResults(std::string_view kind) {
  return Ask(kind, [](const FolderKindSpec& s) { return s.results; });
}
bool IsPartitionKind(std::string_view kind) {
  return Ask(kind, [](const FolderKindSpec& s) { return s.results && s.partition; });
}
bool IsJoinedKind(std::string_view kind) {
  return Ask(kind, [](const FolderKindSpec& s) { return s.results && s.joined; });
}
bool IsWholeRunKind(std::string_view kind) {
  return Ask(kind, [](const FolderKindSpec& s) { return s.results && !s.partition; });
}
bool HasOwnJournalKind(std::string_view kind) {
  return Ask(kind, [](const FolderKindSpec& s) { return s.results && !s.joined; });
}

std::vector<std::string> FolderKindRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& k : kinds_) names.push_back(k.name);
  return names;
}

const FolderKindRegistry& FolderKinds() {
  static const FolderKindRegistry registry = [] {
    FolderKindRegistry r;
    RegisterRunFolderKinds(r);
    RegisterWorkflowFolderKinds(r);
    return r;
  }();
  return registry;
}

Status CheckFolderKind(const FolderKind& k, const fs::path& dir, std::string_view what) {
  const FolderKindSpec* spec = FolderKinds().Find(k.kind);
  if (!spec) {
    std::string known;
    for (const auto& name : FolderKinds().Names()) known += (known.empty() ? "" : ", ") + name;
    return BadInput("the folder is of kind '" + KeyForMessage(k.kind) + "', which this pilot cannot " +
                        std::string(what) + " (it knows: " + known + ")",
                    dir.string(), "use a pilot that knows this kind");
  }
  const bool readable = k.declared ? k.version >= spec->min_format && k.version <= spec->max_format
                                   : spec->undeclared_is_format_1;
  if (!readable) {
    const std::string formats =
        spec->min_format == spec->max_format
            ? "format " + std::to_string(spec->max_format)
            : "formats " + std::to_string(spec->min_format) + ".." + std::to_string(spec->max_format);
    return BadInput("the folder is in " + spec->name + " format " + std::to_string(k.version) +
                        ", which this pilot cannot " + std::string(what) + " (it knows " + formats + ")",
                    dir.string(), "use the pilot that wrote it, or a newer one");
  }
  return {};
}

Result<BatchPlan> BatchPlanFromFolder(FileSystem& fsys, const fs::path& dir) {
  auto kind = ReadFolderKind(fsys, dir);
  if (!kind.ok()) return kind.error();
  const FolderKindSpec* spec = FolderKinds().Find(kind.value().kind);
  if (spec && spec->batch_plan) return spec->batch_plan(fsys, dir);
  std::string holders;
  for (const auto& name : FolderKinds().Names()) {
    if (FolderKinds().Find(name)->batch_plan) holders += (holders.empty() ? "" : " or ") + name;
  }
  return BadInput("not a " + holders + " folder (its kind is '" + KeyForMessage(kind.value().kind) + "')",
                  dir.string(), "give the folder `pilot " + holders + "` wrote");
}

Result<FolderKind> OpenPilotFolder(FileSystem& fsys, const fs::path& dir, std::string_view what,
                                   std::string_view noun, const std::string& hint) {
  auto top = fsys.LinkStat(dir);
  if (!top.ok()) return top.error();
  if (!top.value().directory) {
    return BadInput(top.value().exists ? "not a folder" : "no such folder", dir.string(), hint);
  }
  auto kind = ReadFolderKind(fsys, dir);
  if (!kind.ok()) {
    Error e = kind.error();
    e.what = "not a pilot " + std::string(noun) + ": " + e.what;
    return e;
  }
  PILOT_TRY(CheckFolderKind(kind.value(), dir, what));
  return kind;
}

}  // namespace pilot
