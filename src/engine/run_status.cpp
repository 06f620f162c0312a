// `pilot status`: a run folder's state from its journal and lock, without taking the lock.
#include <algorithm>

#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/report.h"
#include "pilot/run.h"

namespace pilot {

namespace fs = std::filesystem;

Result<RunStatus> ReadRunStatus(FileSystem& fsys, const fs::path& run_dir) {
  auto top = run_dir.empty() ? Result<FileStat>(FileStat{}) : fsys.Stat(run_dir);
  if (!top.ok() || !top.value().directory) {
    return BadInput("not a folder", run_dir.string(), "give the path of a run folder, e.g. runs/<run-id>");
  }
  auto exists = [&](const fs::path& p) {
    auto st = fsys.LinkStat(p);
    return st.ok() && st.value().exists;
  };
  std::string folder_kind = FolderKind{}.kind;  // a folder without data/run.json: a run being created
  if (exists(run_dir / kRunRecord)) {
    auto kind = ReadFolderKind(fsys, run_dir);
    if (!kind.ok()) return kind.error();
    if (Status s = CheckFolderKind(kind.value(), run_dir, "read the status of"); !s.ok()) return s.error();
    const FolderKindSpec* spec = FolderKinds().Find(kind.value().kind);
    if (spec && spec->status) return spec->status(fsys, run_dir);
    folder_kind = kind.value().kind;
  }
  if (IsJoinedKind(folder_kind)) {
    // Written whole by `pilot merge` (never resumed): its report holds the counts.
    auto report = ReadRecordedReport(fsys, run_dir, "check the folder with `pilot verify`");
    if (!report.ok()) return report.error();
    RunStatus st;
    st.folder_kind = folder_kind;
    st.run_id = run_dir.filename().string();
    st.format_version = kJournalVersion;
    st.state = exists(run_dir / kTagManifest) ? "finished" : "interrupted";
    st.total = report.value().total;
    st.accepted = report.value().accepted;
    st.rejected = report.value().rejected;
    st.done = st.accepted + st.rejected;
    return st;
  }
  auto journal = LoadJournal(fsys, run_dir / kJournal, false);
  if (!journal.ok()) return journal.error();
  const JournalState& js = journal.value();
  RunStatus st;
  st.folder_kind = folder_kind;
  st.run_id = js.header.run_id;
  st.format_version = js.header.version;
  st.writer_pid = LockHolder(fsys, run_dir);
  bool finished = exists(run_dir / kTagManifest);
  st.state = st.writer_pid ? "running" : finished ? "finished" : "interrupted";
  st.total = js.header.items;
  st.accepted = js.accepted;
  st.rejected = js.rejected;
  st.done = js.accepted + js.rejected;
  st.torn_bytes = js.torn_bytes;
  double span = js.last_batch_at - js.session_started;
  if (js.done_in_session > 0 && span > 0) st.items_per_second = js.done_in_session / span;
  if (st.state == "running" && st.items_per_second > 0) {
    st.eta_seconds = (st.total - std::min(st.total, st.done)) / st.items_per_second;
  }
  return st;
}

nlohmann::ordered_json RunStatusToJson(const RunStatus& s) {
  nlohmann::ordered_json j;
  j["folder_kind"] = s.folder_kind;
  j["run_id"] = s.run_id;
  j["state"] = s.state;
  j["format_version"] = s.format_version;
  j["resumable"] = s.state == "interrupted" && s.format_version >= kJournalVersion;
  j["writer_pid"] = s.writer_pid ? nlohmann::ordered_json(*s.writer_pid) : nlohmann::ordered_json();
  j["done"] = s.done;
  j["total"] = s.total;
  j["accepted"] = s.accepted;
  j["rejected"] = s.rejected;
  j["items_per_second"] = s.items_per_second;
  j["eta_seconds"] = s.eta_seconds ? nlohmann::ordered_json(*s.eta_seconds) : nlohmann::ordered_json();
  return j;
}

}  // namespace pilot
