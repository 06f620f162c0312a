#include "pilot/run_session.h"

#include <tuple>
#include <utility>

#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/journal.h"
#include "pilot/shard.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;

Status CheckEnvironment(Runtime& runtime, const Params& params, const fs::path& runs_dir,
                        const char* untouched) {
  auto got = runtime.ReceivedEnvironment(params.device, runs_dir);
  if (!got.ok()) return got.error();
  std::vector<std::string> unmet = UnmetRequirements(params.requires_, got.value());
  auto device = runtime.ResolveDevice(params.device);
  if (!device.ok()) unmet.insert(unmet.begin(), "device: " + device.error().what);
  if (unmet.empty()) return {};
  std::string what = std::to_string(unmet.size()) + " requirement(s) not met by this machine:";
  for (const auto& u : unmet) what += "\n  - " + u;
  return EnvironmentError(
      what, "requires / --device",
      std::string("run `pilot doctor` for details; use a machine that provides them, or revise "
                  "the parameters; ") +
          untouched);
}

Result<std::string> DeviceBackend(Runtime& runtime, const std::string& device, const fs::path& runs_dir) {
  if (device != "auto") return device;
  auto got = runtime.ReceivedEnvironment("auto", runs_dir);
  if (!got.ok()) return got.error();
  return got.value().backend;
}

Result<BuiltStage> BuildStage(FileSystem& fsys, Runtime& runtime, const Params& params,
                              const std::string& model_sha256, const fs::path& runs_dir) {
  auto device = runtime.ResolveDevice(params.device);
  if (!device.ok()) return device.error();
  StageRegistry registry;
  PILOT_TRY(runtime.RegisterStages(registry));
  StageConfig config;
  config.kind = params.stage.kind;
  config.model = params.stage.model;
  config.model_sha256 = model_sha256;
  config.options = params.stage.options;
  config.device = device.value();
  config.threads = params.threads;
  config.seed = params.seed;
  config.generation = params.generation;
  if (params.stage.tokenizer) PILOT_TRY(LoadStageTokenizer(fsys, *params.stage.tokenizer, config));
  auto stage = registry.Create(config);
  if (!stage.ok()) return stage.error();
  PILOT_TRY(CheckStageFitsParams(stage.value()->Describe(), params));
  auto info = runtime.Info();
  if (!info.ok()) return info.error();
  auto received = runtime.ReceivedEnvironment(params.device, runs_dir);
  if (!received.ok()) return received.error();
  BuiltStage built;
  built.stage = std::move(stage).value();
  built.environment["host"] = HostInfo(fsys);
  built.environment["libtorch"] = std::move(info).value();
  built.environment["device_requested"] = params.device;
  built.environment["device_used"] = device.value();
  built.environment["received"] = received.value().ToJson();
  return built;
}

namespace {

void Note(const SessionRequest& request, const std::string& note) {
  if (request.on_note) request.on_note(note);
}

// The environment, then the stage, for a plan about to run; `untouched` says what became of
// the folder when either is refused.
Status AttachStage(FileSystem& fsys, Runtime& runtime, RunPlan& plan, const char* untouched,
                   RunSession& session) {
  PILOT_TRY(CheckEnvironment(runtime, plan.params, plan.runs_dir, untouched));
  auto built = BuildStage(fsys, runtime, plan.params, plan.model_sha256, plan.runs_dir);
  if (!built.ok()) return built.error();
  plan.environment = std::move(built.value().environment);
  session.stage = std::move(built.value().stage);
  return {};
}

// An existing folder to finish: locked and checked by PrepareResume, then its stage on
// `device` (empty: the one it was begun with).
Result<RunSession> OpenExisting(FileSystem& fsys, Runtime& runtime, const fs::path& dir,
                                const std::optional<std::string>& device,
                                const std::vector<std::string>& command_line, const char* untouched) {
  auto setup = PrepareResume(fsys, dir);
  if (!setup.ok()) return setup.error();
  RunSession session;
  session.resume.emplace(std::move(setup).value());
  ResumeSetup& s = *session.resume;
  if (s.already_finished) {
    session.finished = true;
    return session;
  }
  if (device) s.plan.params.device = *device;
  PILOT_TRY(AttachStage(fsys, runtime, s.plan, untouched, session));
  s.plan.command_line = command_line;
  return session;
}

// A shard's folder exists (a resubmitted task): the same shard of the same manifest,
// parameters and model resumes, or, finished, is verified again; anything else is refused.
Result<RunSession> ContinueShard(FileSystem& fsys, Runtime& runtime, const SessionRequest& request,
                                 const RunPlan& plan, const fs::path& dir) {
  const std::string hint =
      "this folder is not the same shard's: give another --run-id or --runs-dir, or move it away";
  auto journal = LoadJournal(fsys, dir / kJournal, false);
  if (!journal.ok()) {
    return BadInput("exists but is not a shard pilot can continue: " + journal.error().what, dir.string(),
                    hint);
  }
  const JournalHeader& h = journal.value().header;
  if (!h.shard || !(*h.shard == *plan.shard)) {
    return BadInput("exists and holds " + (h.shard ? "shard " + ShardText(*h.shard) : std::string("a run")) +
                        ", not shard " + ShardText(*plan.shard),
                    dir.string(), hint);
  }
  for (auto [theirs, mine, what] : {std::tuple{h.manifest_sha256, plan.manifest.sha256(), "manifest"},
                                    std::tuple{h.params_sha256, Sha256Hex(plan.params_bytes), "parameters"},
                                    std::tuple{h.model_sha256, plan.model_sha256, "model"}}) {
    if (theirs != mine) {
      return BadInput(
          std::string("exists for another ") + what + " (sha256 " + theirs + "; this run's is " + mine + ")",
          dir.string(), hint);
    }
  }
  auto lock = fsys.LinkStat(dir / kLockFile);
  auto tags = fsys.LinkStat(dir / kTagManifest);
  if (lock.ok() && !lock.value().exists && tags.ok() && tags.value().exists) {
    Note(request,
         "shard " + ShardText(*plan.shard) + " is already finished in " + dir.string() + "; verifying it");
    RunSession done;
    done.finished = true;
    done.resume.emplace();
    done.resume->run_dir = dir;
    done.resume->finished_verify = VerifyRunFolder(fsys, dir, VerifyOptions{});
    return done;
  }
  Note(request, "shard " + ShardText(*plan.shard) + " resumes its folder " + dir.string());
  return OpenExisting(fsys, runtime, dir, plan.params.device, request.run.command_line,
                      "the shard folder stays resumable");
}

// The plan of a new run or shard, with torchrun's LOCAL_RANK turned into this host's device.
Result<RunPlan> PlanNewRun(FileSystem& fsys, Runtime& runtime, const SessionRequest& request) {
  auto plan = BuildRunPlan(fsys, request.run);
  if (!plan.ok() || !request.local_rank) return plan;
  std::string& device = plan.value().params.device;
  auto backend = DeviceBackend(runtime, device, plan.value().runs_dir);
  if (!backend.ok()) return backend.error();
  if (backend.value() == "cuda" || backend.value() == "rocm") {
    device = backend.value() + ":" + std::to_string(*request.local_rank);
  }
  return plan;
}

}  // namespace

Result<RunSession> OpenRunSession(FileSystem& fsys, Runtime& runtime, const SessionRequest& request) {
  if (request.resume) {
    return OpenExisting(fsys, runtime, *request.resume, request.device, request.run.command_line,
                        "the run folder stays resumable");
  }
  auto plan = PlanNewRun(fsys, runtime, request);
  if (!plan.ok()) return plan.error();
  if (plan.value().shard) {
    const fs::path dir = plan.value().runs_dir / plan.value().run_id;
    if (auto st = fsys.LinkStat(dir); st.ok() && st.value().exists) {
      if (!st.value().directory) {
        return BadInput(std::string(st.value().symlink ? "is a symlink" : "is not a folder") +
                            "; a shard's folder is never followed through a link",
                        dir.string(), "move it away, or give another --runs-dir");
      }
      return ContinueShard(fsys, runtime, request, plan.value(), dir);
    }
  }
  RunSession session;
  PILOT_TRY(AttachStage(fsys, runtime, plan.value(), "no run folder was created", session));
  session.plan = std::move(plan).value();
  return session;
}

Result<RunOutcome> RunToEnd(FileSystem& fsys, Clock& clock, RunSession& session, const RunControl& control) {
  if (session.finished || !session.stage) {
    return WorkFailed("the session has no stage to run: it was already finished",
                      session.resume ? session.resume->run_dir.string() : std::string("run session"));
  }
  if (session.resume) return ResumeRun(fsys, clock, *session.resume, *session.stage, control);
  return ExecuteRun(fsys, clock, *session.plan, *session.stage, control);
}

}  // namespace pilot
