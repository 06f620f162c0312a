#include "pilot/fleet/export.h"

#include <spdlog/spdlog.h>

#include "pilot/destination.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/partial_folder.h"
#include "pilot/paths.h"
#include "pilot/run_lock.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

Error Interrupted() { return Error{ErrorKind::kInterrupted, "interrupted", "", ""}; }

}  // namespace

Result<ExportOutcome> ExportFolder(FileSystem& fsys, const fs::path& source, const fs::path& dest_given,
                                   const RunControl& control) {
  ExportOutcome out;
  out.source = source;
  auto kind = OpenPilotFolder(fsys, source, "export", "folder", "give a run, shard, merged or sweep folder");
  if (!kind.ok()) return kind.error();
  out.folder_kind = kind.value().kind;
  auto lock = fsys.LinkStat(source / kLockFile);
  auto tags = fsys.LinkStat(source / kTagManifest);
  if (!lock.ok()) return lock.error();
  if (!tags.ok()) return tags.error();
  if (lock.value().exists || !tags.value().regular) {
    return BadInput(
        "the folder is unfinished (or still being written)", source.string(),
        "finish it first (pilot resume " + source.string() + "); export copies finished folders only");
  }
  PILOT_TRY(engine::RefuseInside(fsys, dest_given, source, "the folder it would copy,"));
  auto resolved_dest = ResolveDestination(fsys, dest_given, "DEST", Destination::kNew);
  if (!resolved_dest.ok()) return resolved_dest.error();
  const fs::path dest = resolved_dest.value();
  // The source is checked before anything is copied (structure, completeness, the accounting;
  // fixity is checked on the copy, against the source's fingerprint): a damaged folder is
  // refused with nothing written, never copied and then found wanting.
  VerifyOptions quick;
  quick.fast = true;
  auto pre = VerifyFolder(fsys, source, quick);
  if (!pre.ok()) return pre.error();
  if (!pre.value().ok()) {
    const Finding& f = pre.value().findings.front();
    return BadInput("the folder fails verification (" + std::to_string(pre.value().findings.size()) +
                        " finding(s); first: [" + f.check + "] " + f.where + ": " + f.what +
                        "): nothing was copied",
                    source.string(), "pilot verify " + source.string() + " lists every finding");
  }
  auto fingerprint = Sha256File(fsys, source / kTagManifest, false);
  if (!fingerprint.ok()) return fingerprint.error();
  out.source_fingerprint = fingerprint.value();

  // What is to be copied: regular files and folders only, listed before anything is written.
  std::vector<std::string> folders, files;
  std::vector<std::string> pending{""};
  while (!pending.empty()) {
    const std::string rel = pending.back();
    pending.pop_back();
    auto entries = fsys.ListDirectory(rel.empty() ? source : source / rel);
    if (!entries.ok()) return entries.error();
    for (const DirEntry& e : entries.value()) {
      const std::string name = rel.empty() ? e.name : rel + "/" + e.name;
      if (e.stat.directory) {
        folders.push_back(name);
        pending.push_back(name);
      } else if (e.stat.regular) {
        files.push_back(name);
        out.bytes += e.stat.size;
      } else {
        return BadInput(std::string(e.stat.symlink ? "a symlink" : "not a regular file (a FIFO or device?)") +
                            " inside the folder; export copies regular files only and never follows a link",
                        (source / name).string(), "verify the source: pilot verify " + source.string());
      }
    }
  }

  if (control.should_stop && control.should_stop()) return Interrupted();
  auto partial = engine::PartialFolder::Create(fsys, dest, {source});
  if (!partial.ok()) return partial.error();
  const fs::path copy = partial.value().path();
  std::sort(folders.begin(), folders.end());  // a parent before its children
  for (const std::string& f : folders) PILOT_TRY(fsys.CreateDirectoryExclusive(copy / f));
  std::uint64_t copied = 0;
  for (const std::string& f : files) {
    if (control.should_stop && control.should_stop()) return Interrupted();
    PILOT_TRY(fsys.CopyFileAtomic(source / f, copy / f,
                                  /*follow_symlinks=*/false));  // temp name, fsync, rename, fsync the folder
    auto st = fsys.LinkStat(copy / f);
    if (st.ok()) copied += st.value().size;
    ++out.files;
    if (control.on_progress) {
      Progress p;
      p.done = out.files;
      p.total = files.size();
      control.on_progress(p);
    }
  }
  out.folders = folders.size();
  spdlog::info("copied {} files ({} bytes) into {}", out.files, copied, copy.string());

  // The copy verified in full where it lies, against the source's fingerprint.
  if (control.should_stop && control.should_stop()) return Interrupted();
  VerifyOptions options;
  options.expect_fingerprint = out.source_fingerprint;
  auto verified = VerifyFolder(fsys, copy, options);
  if (!verified.ok()) return verified.error();
  out.verify = std::move(verified).value();
  out.fingerprint = out.verify.fingerprint;
  out.dest = copy;
  if (!out.ok()) return out;  // left at DEST.partial, named in the outcome
  PILOT_TRY(partial.value().Commit());
  out.dest = dest;
  auto final_print = Sha256File(fsys, dest / kTagManifest, false);
  if (!final_print.ok()) return final_print.error();
  out.fingerprint = final_print.value();
  return out;
}

}  // namespace pilot
