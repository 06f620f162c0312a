// Resuming a run folder: every check before anything is touched, then the repairs.
#include "pilot/hash.h"
#include "pilot/run.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

void RemoveStaleTempFiles(const fs::path& dir) {
  for (const fs::path& d : {dir, dir / "data"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      if (e.path().filename().string().find(".tmp-") != std::string::npos) fs::remove(e.path(), ec);
    }
  }
}

// The checks of PrepareResume: the journal, and the copies and model it binds. Reads only.
Result<ResumeSetup> CheckAgainstJournal(const fs::path& run_dir, ResumeSetup& s) {
  auto journal = LoadJournal(RealFileSystem(), run_dir / kJournal, false);
  if (!journal.ok()) return journal.error();
  s.journal = std::move(journal).value();
  const JournalHeader& h = s.journal.header;

  // The copies (or, if a kill came before they were written, the originals) must be the
  // very files the journal's header binds the run to.
  auto pinned_bytes = [&](const std::string& copy, const std::string& original, const std::string& want,
                          const char* what) -> Result<fs::path> {
    fs::path file = fs::exists(run_dir / copy) ? run_dir / copy : fs::path(original);
    auto digest = Sha256File(file);
    if (!digest.ok()) return BadInput(std::string("the ") + what + " is missing", file.string(), "the run cannot be resumed");
    if (digest.value() != want) {
      return BadInput(std::string("the ") + what + " changed since the run started (sha256 " + digest.value() +
                          ", the journal binds " + want + ")",
                      file.string(), "restore it, or start a new run");
    }
    return file;
  };
  auto manifest_file = pinned_bytes(h.manifest_copy, h.manifest_path, h.manifest_sha256, "manifest");
  if (!manifest_file.ok()) return manifest_file.error();
  auto params_file = pinned_bytes("data/params.json", h.params_path, h.params_sha256, "parameter file");
  if (!params_file.ok()) return params_file.error();
  auto model = Sha256File(h.model_path);
  if (!model.ok()) return BadInput("the model file is missing", h.model_path, "restore it to resume the run");
  if (model.value() != h.model_sha256) {
    return BadInput("the model file changed since the run started (sha256 " + model.value() + ", the run used " +
                        h.model_sha256 + ")",
                    h.model_path, "restore the model the run used, or start a new run");
  }

  RunPlan& p = s.plan;
  auto bytes = RealFileSystem().ReadFile(params_file.value());
  if (!bytes.ok()) return bytes.error();
  p.params_bytes = std::move(bytes).value();
  auto params = ParseParams(p.params_bytes, fs::path(h.params_path).parent_path(), "data/params.json");
  if (!params.ok()) return params.error();
  p.params = std::move(params).value();
  p.params.stage.model = h.model_path;
  p.params_file = h.params_path;
  auto manifest = ManifestSource::Open(manifest_file.value());
  if (!manifest.ok()) return manifest.error();
  p.manifest = std::move(manifest).value();
  if (p.manifest.size() != h.items) {
    return BadInput("the manifest holds " + std::to_string(p.manifest.size()) + " items, the journal " +
                        std::to_string(h.items),
                    manifest_file.value().string());
  }
  p.manifest_sha256 = h.manifest_sha256;
  p.inputs_root = h.inputs_root;
  p.model_sha256 = h.model_sha256;
  p.runs_dir = run_dir.parent_path();
  p.run_id = h.run_id;
  return Result<ResumeSetup>(std::move(s));
}

// Takes the lock, then checks; on refusal the folder is left as it was (a lock file this
// call created is removed).
Result<ResumeSetup> LockAndCheck(const fs::path& run_dir, bool bagged) {
  const bool lock_existed = fs::exists(run_dir / kLockFile);
  ResumeSetup s;
  s.run_dir = run_dir;
  auto lock = RunLock::Acquire(run_dir);
  if (!lock.ok()) return lock.error();
  s.lock.emplace(std::move(lock).value());
  if (s.lock->stale_taken_over()) s.notes.push_back("took over the lock left by a process that is gone");
  s.already_finished = bagged;
  auto r = CheckAgainstJournal(run_dir, s);
  if (!r.ok() && !lock_existed) s.lock->RemoveFile();
  return r;
}

}  // namespace

Result<ResumeSetup> PrepareResume(const fs::path& run_dir, FileSystem& fsys) {
  if (!fs::is_directory(run_dir)) {
    return BadInput("not a folder", run_dir.string(), "give the path of a run folder, e.g. runs/<run-id>");
  }
  const bool bagged = fs::exists(run_dir / "tagmanifest-sha256.txt");
  if (bagged && !fs::exists(run_dir / kLockFile)) {
    return BadInput("the run already finished; there is nothing to resume", run_dir.string(),
                    "check it with `pilot verify`, or start a new run");
  }
  auto checked = LockAndCheck(run_dir, bagged);
  if (!checked.ok()) return checked.error();
  ResumeSetup& s = checked.value();
  // Only now, with every check passed, is the folder touched.
  const fs::path journal_file = run_dir / kJournal;
  if (s.journal.torn_bytes > 0) {
    if (Status st = fsys.Truncate(journal_file, s.journal.valid_bytes); !st.ok()) return st.error();
    s.notes.push_back("journal: dropped a torn last record (" + std::to_string(s.journal.torn_bytes) +
                      " bytes); recovered to the last whole record");
  }
  RemoveStaleTempFiles(run_dir);
  return std::move(s);
}


}  // namespace pilot
