// Resuming a run folder: every check before anything is touched, then the repairs. The
// folder is untrusted (it may be a copy from a rented machine): nothing in it is followed
// through a symlink, and nothing its journal names may point inside it elsewhere.
#include <unordered_set>

#include "pilot/batch_plan.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/run.h"
#include "pilot/run_record.h"
#include "pilot/vectors.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

void RemoveStaleTempFiles(FileSystem& fsys, const fs::path& dir) {
  for (const fs::path& d : {dir, dir / "data"}) {
    auto entries = fsys.ListDirectory(d);
    if (!entries.ok()) continue;
    for (const DirEntry& e : entries.value()) {
      if (e.name.find(".tmp-") != std::string::npos) (void)fsys.RemoveFile(d / e.name);
    }
  }
}

// Every entry of the folder and of data/ must be a regular file (data/ itself a real
// folder): a symlink would make resume read or write outside the folder, a FIFO would hang it.
Status CheckEntries(FileSystem& fsys, const fs::path& run_dir) {
  const fs::path data = run_dir / "data";
  auto data_stat = fsys.LinkStat(data);
  if (!data_stat.ok()) return data_stat.error();
  const bool has_data = data_stat.value().exists;
  if (has_data && !data_stat.value().directory) {
    return BadInput(data_stat.value().symlink
                        ? "data/ is a symlink; pilot never follows one inside a run folder"
                        : "data/ is not a folder",
                    data.string(), "the folder is damaged or hostile; it cannot be resumed");
  }
  for (const fs::path& d : {run_dir, data}) {
    if (d == data && !has_data) continue;
    auto entries = fsys.ListDirectory(d);
    if (!entries.ok()) return BadInput("cannot list the folder: " + entries.error().what, d.string());
    for (const DirEntry& e : entries.value()) {
      const fs::path p = d / e.name;
      if (p == data) continue;
      if (e.stat.symlink || !e.stat.regular) {
        return BadInput(std::string(e.stat.symlink ? "is a symlink" : "is not a regular file") +
                            "; pilot never follows or writes one inside a run folder",
                        p.string(), "the folder is damaged or hostile; remove it or start a new run");
      }
    }
  }
  return {};
}

bool Exists(FileSystem& fsys, const fs::path& p) {
  auto st = fsys.LinkStat(p);
  return st.ok() && st.value().exists;
}

// The .npy a finish wrote before its sidecar went, checked before resume writes anything: the
// shape, dtype and size of every accepted row (the parameters' copy says the dtype). Each
// row's digest is checked as finish reads it back.
Status CheckWholeNpy(FileSystem& fsys, const fs::path& run_dir, const JournalState& journal,
                     std::uint32_t dim) {
  const fs::path file = run_dir / kVectorsNpy;
  const std::string hint =
      "the vectors sidecar is gone and the .npy is damaged; the run folder cannot be finished";
  auto params_text = ReadCapped(fsys, run_dir / kParamsCopy, limits::kParamsBytes, "parameters' copy");
  if (!params_text.ok()) return params_text.error();
  auto params = ParseParams(params_text.value(), run_dir, (run_dir / kParamsCopy).string());
  if (!params.ok()) return params.error();
  auto in = fsys.OpenRead(file, /*follow_symlinks=*/false);
  if (!in.ok()) return in.error();
  const std::uint64_t size = in.value()->size();
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, limits::kNpyHeaderBytes + 10)),
                   '\0');
  PILOT_TRY(ReadExactAt(*in.value(), 0, head.data(), head.size()));
  auto shape = ParseNpyHeader(head, file.string());
  if (!shape.ok()) {
    Error e = shape.error();
    e.hint = hint;
    return e;
  }
  const NpyShape& s = shape.value();
  const bool sized = s.cols == dim && s.rows == journal.accepted &&
                     s.rows <= (size / DtypeBytes(s.dtype)) / std::max<std::uint64_t>(1, s.cols) &&
                     size == s.data_offset + s.rows * s.row_bytes();
  if (!sized || VectorDtypeName(s.dtype) != params.value().vectors_dtype) {
    return BadInput("holds " + std::to_string(s.rows) + " rows of " + std::to_string(s.cols) + " " +
                        std::string(VectorDtypeName(s.dtype)) + " in " + std::to_string(size) +
                        " bytes; the journal accepted " + std::to_string(journal.accepted) +
                        " items of dim " + std::to_string(dim) + " in " + params.value().vectors_dtype,
                    file.string(), hint);
  }
  return {};
}

// An embedding run's vectors sidecar must hold every vector the journal points at, under
// the id it points at, before anything is written: a resume that found out later would
// have appended to a folder it cannot finish. Reads only.
Status CheckSidecar(FileSystem& fsys, const fs::path& run_dir, const JournalState& journal) {
  const fs::path file = run_dir / kVectorsSidecar;
  auto stat = fsys.LinkStat(file);
  if (!stat.ok()) return stat.error();
  if (stat.value().exists && !stat.value().regular) {
    return BadInput("is not a regular file (a symlink?); pilot never follows one inside a run folder",
                    file.string(), "the run folder is damaged or hostile; it cannot be resumed");
  }
  if (journal.vectors_end == 0) return {};  // nothing journaled points into it
  std::uint32_t dim = 0;
  auto text = ReadCapped(fsys, run_dir / kRunRecord, limits::kRunRecordBytes, "run record");
  if (!text.ok()) return text.error();
  auto record = ParseRunRecord(text.value(), (run_dir / kRunRecord).string());
  if (!record.ok()) return record.error();
  if (!record.value().output->vectors) {
    return BadInput(
        "the journal points into a vectors sidecar but data/run.json describes a run without vectors (output "
        "'" +
            std::string(record.value().output->name) + "')",
        (run_dir / kRunRecord).string(), "the run folder is damaged; it cannot be resumed");
  }
  dim = record.value().dim;
  // Run format 4's finish removes the sidecar once the .npy is whole, then seals the bag: a
  // kill in between leaves every item journaled and the vectors in the .npy alone, which
  // finish reads back, row by row against the journal's digests.
  if (!stat.value().exists && journal.done.size() == journal.header.items) {
    auto npy = fsys.LinkStat(run_dir / kVectorsNpy);
    if (npy.ok() && npy.value().regular) return CheckWholeNpy(fsys, run_dir, journal, dim);
  }
  const std::uint64_t size = stat.value().exists ? stat.value().size : 0;
  if (size < journal.vectors_end) {
    return BadInput("the vectors sidecar holds " + std::to_string(size) + " bytes, the journal refers to " +
                        std::to_string(journal.vectors_end),
                    file.string(), "vectors the journal recorded are lost; the run folder cannot be resumed");
  }
  auto reader = SidecarReader::Open(fsys, file, dim);
  if (!reader.ok()) {
    Error e = reader.error();
    e.hint = "the run folder cannot be resumed";
    return e;
  }
  for (const auto& [id, offset] : journal.vector_at) {
    auto entry = reader.value().ReadRaw(offset, id);
    if (!entry.ok()) {
      Error e = entry.error();
      e.hint = "the sidecar or the journal is damaged; the run folder cannot be resumed";
      return e;
    }
  }
  return {};
}

// The checks of PrepareResume, step by step: the journal, and the copies and model it binds.
// Reads only.

// The journal, of a version this pilot resumes.
Status LoadResumableJournal(FileSystem& fsys, const fs::path& run_dir, ResumeSetup& s) {
  // A run writes its copies first and then the journal's header: a folder stopped in
  // between has copies and no journal, and nothing was processed.
  if (!Exists(fsys, run_dir / kJournal) && Exists(fsys, run_dir / "data")) {
    return BadInput("the run never started: its folder has no journal (no item was processed)",
                    (run_dir / kJournal).string(), "start a new run with `pilot run`");
  }
  auto journal = LoadJournal(fsys, run_dir / kJournal, false);
  if (!journal.ok()) return journal.error();
  s.journal = std::move(journal).value();
  const JournalHeader& h = s.journal.header;
  if (h.version < kJournalVersion) {
    return BadInput(
        "the folder was written in run format " + std::to_string(h.version) +
            " (pilot 0.1), which this pilot verifies and reads the status of, but does not resume",
        run_dir.string(), "finish it with the pilot that started it, or start a new run with `pilot run`");
  }

  return {};
}

struct PinnedFiles {
  fs::path manifest, params;
};

// The copies (or the originals), and the model, against the hashes the journal binds.
Result<PinnedFiles> CheckPinnedFiles(FileSystem& fsys, const fs::path& run_dir, const JournalHeader& h) {
  // The copies (or, if a kill came before they were written, the originals) must be the
  // very files the journal's header binds the run to.
  auto pinned_bytes = [&](const std::string& copy, const std::string& original, const std::string& want,
                          const char* what) -> Result<fs::path> {
    const bool in_folder = Exists(fsys, run_dir / copy);
    fs::path file = in_folder ? run_dir / copy : fs::path(original);
    auto digest = Sha256File(fsys, file, /*follow_symlinks=*/!in_folder);
    if (!digest.ok()) {
      return BadInput(std::string("the ") + what + " is missing or unreadable: " + digest.error().what,
                      file.string(), "the run cannot be resumed");
    }
    if (digest.value() != want) {
      return BadInput(std::string("the ") + what + " changed since the run started (sha256 " +
                          digest.value() + ", the journal binds " + want + ")",
                      file.string(), "restore it, or start a new run");
    }
    return file;
  };
  auto manifest_file = pinned_bytes(h.manifest_copy, h.manifest_path, h.manifest_sha256, "manifest");
  if (!manifest_file.ok()) return manifest_file.error();
  auto params_file = pinned_bytes(kParamsCopy, h.params_path, h.params_sha256, "parameter file");
  if (!params_file.ok()) return params_file.error();
  auto model = Sha256File(fsys, h.model_path);
  if (!model.ok()) {
    return BadInput("the model file is missing or unreadable: " + model.error().what, h.model_path,
                    "restore it to resume the run");
  }
  if (model.value() != h.model_sha256) {
    return BadInput("the model file changed since the run started (sha256 " + model.value() +
                        ", the run used " + h.model_sha256 + ")",
                    h.model_path, "restore the model the run used, or start a new run");
  }

  return PinnedFiles{manifest_file.value(), params_file.value()};
}

// The parameters and the manifest, read from the pinned files into the plan.
Status ReadPinnedPlan(FileSystem& fsys, const JournalHeader& h, const PinnedFiles& files, RunPlan& p) {
  auto bytes = ReadCapped(fsys, files.params, limits::kParamsBytes, "parameter file");
  if (!bytes.ok()) return bytes.error();
  p.params_bytes = std::move(bytes).value();
  auto params = ParseParams(p.params_bytes, fs::path(h.params_path).parent_path(), kParamsCopy);
  if (!params.ok()) return params.error();
  p.params = std::move(params).value();
  p.params.stage.model = h.model_path;
  p.params_file = h.params_path;
  // The copy hashes to the pin of the manifest validated when the run started: it is not
  // validated again (at a million items that would cost seconds); every line a resume
  // reads is still parsed strictly, and a repeated id is caught below.
  // (A .json manifest is capped in size and held in memory: it is simply loaded again.)
  if (files.manifest.extension() == ".jsonl") {
    p.manifest = ManifestSource::OpenPinned(fsys, files.manifest, h.shard ? h.manifest_items : h.items,
                                            h.manifest_sha256);
  } else {
    auto manifest = ManifestSource::Open(fsys, files.manifest);
    if (!manifest.ok()) return manifest.error();
    p.manifest = std::move(manifest).value();
  }
  return {};
}

// What run.json recorded of the request, and the batch plan from the folder's own copy.
Status ReadRecordedPlan(FileSystem& fsys, const fs::path& run_dir, const JournalHeader& h, RunPlan& p) {
  // What the user first asked stays in run.json across sessions.
  std::optional<std::string> plan_sha;
  bool recorded_no_plan = false;  // run.json says the run used none
  if (Exists(fsys, run_dir / kRunRecord)) {
    auto text = ReadCapped(fsys, run_dir / kRunRecord, limits::kRunRecordBytes, "run record");
    if (!text.ok()) return text.error();
    auto record = ParseJson(text.value(), (run_dir / kRunRecord).string());
    if (!record.ok()) return record.error();
    if (record.value().is_object() && record.value().contains("requested") &&
        record.value()["requested"].is_object()) {
      p.requested = nlohmann::ordered_json::parse(record.value()["requested"].dump());
    }
    if (record.value().is_object() && record.value().contains("plan") && record.value()["plan"].is_object() &&
        record.value()["plan"].contains("batch_plan") && record.value()["plan"]["batch_plan"].is_object()) {
      plan_sha = StringAt(record.value()["plan"]["batch_plan"], "sha256");
      if (!plan_sha) plan_sha = "";
    } else if (record.value().is_object() && record.value().contains("plan") &&
               record.value()["plan"].is_object() && record.value()["plan"].contains("batch_plan") &&
               record.value()["plan"]["batch_plan"].is_null()) {
      recorded_no_plan = true;
    }
  }
  // The batch plan comes from the folder's own copy, never from the sweep folder again.
  if (Exists(fsys, run_dir / kBatchPlanFile)) {
    if (recorded_no_plan) {
      return BadInput("the run recorded no batch plan, yet the folder holds one",
                      (run_dir / kBatchPlanFile).string(),
                      "the run folder was altered; it cannot be resumed");
    }
    auto text = ReadCapped(fsys, run_dir / kBatchPlanFile, limits::kBatchPlanBytes, "batch plan");
    if (!text.ok()) return text.error();
    if (plan_sha && Sha256Hex(text.value()) != *plan_sha) {
      return BadInput("the batch plan's copy differs from the one the run recorded",
                      (run_dir / kBatchPlanFile).string(),
                      "the run folder was altered; it cannot be resumed");
    }
    auto bp = ParseBatchPlan(text.value(), (run_dir / kBatchPlanFile).string());
    if (!bp.ok()) return bp.error();
    if (bp.value().model_sha256 != h.model_sha256) {
      return BadInput("the batch plan's copy is for another model", (run_dir / kBatchPlanFile).string(),
                      "the run folder was altered; it cannot be resumed");
    }
    p.batch_plan = std::move(bp).value();
  } else if (p.params.batch_plan || (plan_sha && !plan_sha->empty())) {
    return BadInput("the run used a batch plan, but its copy is missing", (run_dir / kBatchPlanFile).string(),
                    "the run folder is damaged; it cannot be resumed");
  }
  return {};
}

// Every result in the journal is for an id of the manifest (of the shard's partition), and the
// manifest holds as many items as the journal's header says.
Status CheckJournalAgainstManifest(const fs::path& run_dir, const fs::path& manifest_file, ResumeSetup& s) {
  RunPlan& p = s.plan;
  const JournalHeader& h = s.journal.header;
  // Every result in the journal must be for an id of the manifest: checked here, before
  // anything is written, not when the folder is finished.
  // A shard counts only its partition: a journaled id of another shard is a ghost too.
  p.shard = h.shard;
  std::size_t known = 0, items = 0, hint = 0, all_items = 0;
  auto count = [&](std::string_view id) {
    ++all_items;
    if (h.shard && !InShard(id, *h.shard)) return;
    ++items;
    std::size_t at = s.journal.done.Find(id, hint);
    if (at != IdIndex::npos) {
      ++known;
      hint = at + 1;
    }
  };
  auto count_known = [&](std::string_view id) {
    count(id);
    return true;  // never parse: only ids are needed
  };
  auto count_parsed = [&](const ManifestItem& item) {  // a line whose id is not where pilot writes it
    count(item.id);
    return Status();
  };
  if (Status st = p.manifest.ForEach(count_parsed, count_known); !st.ok()) return st.error();
  if (items != h.items || (h.shard && all_items != h.manifest_items)) {
    return BadInput("the manifest holds " + std::to_string(items) + " items" +
                        (h.shard ? " of shard " + ShardText(*h.shard) : std::string()) + ", the journal " +
                        std::to_string(h.items),
                    manifest_file.string(), "the run folder is damaged; it cannot be resumed");
  }
  if (known != s.journal.done.size()) {
    std::unordered_set<std::string> ids;
    (void)p.manifest.ForEach([&](const ManifestItem& item) {
      if (!h.shard || InShard(item.id, *h.shard)) ids.insert(item.id);
      return Status();
    });
    std::string ghost;
    for (std::size_t k = 0; k < s.journal.done.size(); ++k) {
      if (!ids.count(std::string(s.journal.done.Id(k)))) ghost = s.journal.done.Id(k);
    }
    if (ghost.empty()) {
      return BadInput("the manifest copy names an id more than once", manifest_file.string(),
                      "the run folder is damaged; it cannot be resumed");
    }
    return BadInput("the journal holds a result for '" + ghost + "', an id that is not in the manifest" +
                        (h.shard ? std::string(" or not of shard ") + ShardText(*h.shard) : std::string()),
                    (run_dir / kJournal).string(), "the run folder is damaged; it cannot be resumed");
  }
  return {};
}

Result<ResumeSetup> CheckAgainstJournal(FileSystem& fsys, const fs::path& run_dir, ResumeSetup& s) {
  PILOT_TRY(LoadResumableJournal(fsys, run_dir, s));
  const JournalHeader& h = s.journal.header;
  auto files = CheckPinnedFiles(fsys, run_dir, h);
  if (!files.ok()) return files.error();
  if (Status st = CheckSidecar(fsys, run_dir, s.journal); !st.ok()) return st.error();
  RunPlan& p = s.plan;
  PILOT_TRY(ReadPinnedPlan(fsys, h, files.value(), p));
  PILOT_TRY(ReadRecordedPlan(fsys, run_dir, h, p));
  PILOT_TRY(CheckJournalAgainstManifest(run_dir, files.value().manifest, s));
  p.inputs_root = h.inputs_root;
  (void)fsys.Anchor(p.inputs_root);  // pinned when it exists; a missing one rejects each item by name
  p.model_sha256 = h.model_sha256;
  p.runs_dir = run_dir.parent_path();
  p.run_id = h.run_id;
  return Result<ResumeSetup>(std::move(s));
}

// Takes the lock, then checks; on refusal the folder is left as it was (a lock file this
// call created goes with the lock).
Result<ResumeSetup> LockAndCheck(FileSystem& fsys, const fs::path& run_dir) {
  ResumeSetup s;
  s.run_dir = run_dir;
  auto lock = RunLock::Acquire(fsys, run_dir);
  if (!lock.ok()) return lock.error();
  s.lock.emplace(std::move(lock).value());
  if (s.lock->stale_taken_over()) s.notes.push_back("took over the lock left by a process that is gone");
  return CheckAgainstJournal(fsys, run_dir, s);
}

}  // namespace

Result<ResumeSetup> PrepareResume(FileSystem& fsys, const fs::path& given) {
  std::error_code ec;
  // Absolute from the start: `cd runs && pilot resume <id>` has no parent in its argument.
  const fs::path run_dir = given.empty() ? fs::path() : fs::absolute(given, ec).lexically_normal();
  auto top = given.empty() || ec ? Result<FileStat>(FileStat{}) : fsys.Stat(run_dir);
  if (!top.ok() || !top.value().directory) {
    return BadInput("not a folder", given.string(), "give the path of a run folder, e.g. runs/<run-id>");
  }
  // The folder itself, not a link to one: resume writes into it.
  if (auto link = fsys.LinkStat(run_dir); !link.ok() || link.value().symlink) {
    return BadInput("is a symlink; resume never writes through a link", given.string(),
                    "give the run folder's own path");
  }
  if (Status st = CheckEntries(fsys, run_dir); !st.ok()) return st.error();
  // What the folder is: a kill before data/run.json was written leaves only the journal,
  // whose header carries the version.
  if (Exists(fsys, run_dir / kRunRecord)) {
    auto kind = ReadFolderKind(fsys, run_dir);
    if (!kind.ok()) return kind.error();
    if (Status st = CheckFolderKind(kind.value(), run_dir, "resume"); !st.ok()) return st.error();
    // A shard resumes as a run over its partition; a sweep through ResumeSweep (sweep_run.h).
    if (!HasOwnJournalKind(kind.value().kind)) {
      return BadInput("the folder is of kind '" + kind.value().kind + "', not a run", run_dir.string(),
                      "`pilot resume` resumes it as what it is");
    }
  }
  const bool bagged = Exists(fsys, run_dir / kTagManifest);
  if (bagged) {
    // Finished: never rewritten. A lock left behind by a process killed after its last
    // write (before removing the lock) is the only thing a finished folder may lack.
    if (!Exists(fsys, run_dir / kLockFile)) {
      return BadInput("the run already finished; there is nothing to resume", run_dir.string(),
                      "check it with `pilot verify`, or start a new run");
    }
    if (auto pid = LockHolder(fsys, run_dir)) {
      return BadInput("the run folder is being written by " + LockHolderText(*pid), run_dir.string(),
                      "wait for it to finish");
    }
    ResumeSetup s;
    s.run_dir = run_dir;
    s.already_finished = true;
    if (Status st = fsys.RemoveFile(run_dir / kLockFile); !st.ok()) return st.error();
    s.finished_verify = VerifyRunFolder(fsys, run_dir, VerifyOptions{});
    s.notes.push_back("the run had already finished; removed the lock left by a process that is gone");
    return s;
  }
  auto checked = LockAndCheck(fsys, run_dir);
  if (!checked.ok()) return checked.error();
  ResumeSetup& s = checked.value();
  // Only now, with every check passed, is the folder touched.
  const fs::path journal_file = run_dir / kJournal;
  if (s.journal.torn_bytes > 0) {
    if (Status st = fsys.Truncate(journal_file, s.journal.valid_bytes); !st.ok()) return st.error();
    s.notes.push_back("journal: dropped a torn last record (" + std::to_string(s.journal.torn_bytes) +
                      " bytes); recovered to the last whole record");
  }
  RemoveStaleTempFiles(fsys, run_dir);
  return std::move(s);
}

}  // namespace pilot
