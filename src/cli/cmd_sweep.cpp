// `pilot sweep`: batch tuning per length group into a sweep folder, one child process per
// cell (`pilot sweep-cell`, internal), and `pilot resume` of an interrupted sweep.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/torch_loader.h"
#include "pilot/clock.h"
#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/paths.h"
#include "pilot/plan.h"
#include "pilot/process.h"
#include "pilot/run_lock.h"
#include "pilot/sweep/sweep_run.h"
#include "pilot/utf8.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  Common common;
  std::string params = std::string(kDefaultParamsPath);
  std::string manifest;
  std::string device;
  std::string out;
  std::string runs_dir = "runs";
  int groups = 3;
  std::string batch_sizes = "1,2,4,8,16,32,64";
  int repeats = 2;
  double latency_budget_ms = 0;
  double max_memory_mb = 0;
  double max_ttft_ms = 0, max_tpot_ms = 0;
  CLI::Option* ttft_option = nullptr;
  CLI::Option* tpot_option = nullptr;
  std::vector<std::string> argv;
  const CLI::Option* latency_option = nullptr;
  const CLI::Option* memory_option = nullptr;
};

std::string Tail(FileSystem& fsys, const fs::path& file) {
  auto text = fsys.ReadFile(file, 1 << 20);
  if (!text.ok()) return "";
  std::string t = text.value();
  if (t.size() > 1500) t = t.substr(t.size() - 1500);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return EscapeTerminal(TruncateUtf8(t, 1500));
}

// One cell in a child `pilot sweep-cell`: its resident high-water mark (wait4) is the cell's
// own, and its death by a signal (the kernel's OOM killer sends SIGKILL) is a recorded limit.
Result<CellMeasure> RunCellInChild(const fs::path& dir, int group, int batch, int repeats) {
  FileSystem& fsys = RealFileSystem();
  const std::string stem = ".cell-g" + std::to_string(group) + "-b" + std::to_string(batch);
  const std::string out_name = stem + ".json", err_name = stem + ".stderr";
  const fs::path out = dir / out_name;
  const fs::path err = dir / err_name;
  for (const fs::path& p : {out, err}) (void)fsys.RemoveFile(p);
  // The cell is handed the sweep folder itself (a descriptor reached from the folder this
  // command pinned), never its path to look up again, and writes only a name inside it.
  auto dir_fd_or = OpenFolderForChild(dir);
  if (!dir_fd_or.ok()) return dir_fd_or.error();
  const int dir_fd = dir_fd_or.value();
  const std::string g = std::to_string(group), b = std::to_string(batch),
                    d = "/proc/self/fd/" + std::to_string(dir_fd);
  const int err_fd =
      ::openat(dir_fd, err_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (err_fd < 0) {
    const int e = errno;
    ::close(dir_fd);
    return WorkFailed(std::string("cannot create: ") + std::strerror(e), err.string());
  }
  // The child dies with the sweep (SIGKILL), in a process group of its own: a terminal's
  // Ctrl-C or a group SIGTERM is the sweep's to handle, which then stops the cell.
  ChildSpec child;
  child.args = {"pilot", "sweep-cell", d, "--group", g, "--batch-size", b, "--out", out_name, "--quiet"};
  child.err_fd = err_fd;
  child.pass_fd = dir_fd;  // handed down: SWEEP_DIR is /proc/self/fd/N
  child.death_signal = SIGKILL;
  auto pid = RealProcesses().Spawn(child);
  ::close(err_fd);
  ::close(dir_fd);
  if (!pid.ok()) return WorkFailed("cannot start the cell's process: " + pid.error().what, dir.string());
  auto interrupted = [&]() -> Error {
    (void)fsys.RemoveFile(out);
    (void)fsys.RemoveFile(err);
    return Error{ErrorKind::kInterrupted, "interrupted", "", ""};
  };
  // Stopped on an interrupt: the cell is not journaled and runs again on resume.
  auto waited = RealProcesses().Wait(pid.value(), [] { return InterruptRequested(); });
  if (!waited.ok()) return WorkFailed("lost the cell's process: " + waited.error().what, dir.string());
  if (!waited.value()) return interrupted();
  const ChildEnd& end = *waited.value();
  const double peak_rss = end.peak_rss_mb;
  if (InterruptRequested()) return interrupted();
  if (end.signal != 0) {
    const int sig = end.signal;
    (void)fsys.RemoveFile(out);
    (void)fsys.RemoveFile(err);
    CellMeasure m;
    m.group = group;
    m.batch_size = batch;
    m.repeats = repeats;
    m.peak_rss_mb = peak_rss;
    // SIGKILL from outside is what the kernel's out-of-memory killer sends; any other signal
    // is the stage crashing the process (a segfault in native code): a stage error.
    m.limit = sig == SIGKILL ? kLimitKilled : kLimitStageError;
    m.error =
        "the cell's process was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" +
        (sig == SIGKILL ? "; on a machine under memory pressure this is the kernel's out-of-memory killer"
                        : "");
    return m;
  }
  const int code = end.code;
  if (code != 0) {
    std::string tail = Tail(fsys, err);
    (void)fsys.RemoveFile(out);
    (void)fsys.RemoveFile(err);
    if (code == Code(ExitCode::kInterrupted)) return Error{ErrorKind::kInterrupted, "interrupted", "", ""};
    Error e = WorkFailed(
        "the cell's process failed (exit " + std::to_string(code) + ")" +
            (tail.empty() ? std::string() : ": " + tail),
        "group " + std::to_string(group) + ", batch " + std::to_string(batch),
        "the sweep folder stays resumable: fix the cause, then `pilot resume " + dir.string() + "`");
    if (code == Code(ExitCode::kBadInput)) e.kind = ErrorKind::kBadInput;
    if (code == Code(ExitCode::kEnvironment)) e.kind = ErrorKind::kEnvironment;
    return e;
  }
  auto text = fsys.ReadFile(out, limits::kSweepCellBytes);
  (void)fsys.RemoveFile(out);
  (void)fsys.RemoveFile(err);
  if (!text.ok()) return WorkFailed("the cell's process left no result: " + text.error().what, out.string());
  auto cell = CellFromJson(text.value(), out.string());
  if (!cell.ok()) return WorkFailed(cell.error().what, out.string());
  // The child's own high-water mark, taken right after the timed passes (wait4's also counts
  // writing the result out, which is pilot's cost, not the model's).
  return std::move(cell).value();
}

SweepControl MakeSweepControl(const Common& common) {
  SweepControl control;
  control.should_stop = InterruptRequested;
  control.on_ready = [] {
    ::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would make wait4 lose the cells
    InstallInterruptHandlers();
  };
  if (!common.quiet && !common.json) {
    control.on_progress = [](const std::string& line) { std::fprintf(stderr, "pilot: %s\n", line.c_str()); };
  }
  return control;
}

int PrintSweep(const SweepOutcome& out, const Common& common) {
  std::error_code ec;
  const std::string dir = fs::absolute(out.dir, ec).lexically_normal().string();
  int code = 0;
  if (out.interrupted) {
    code = Code(ExitCode::kInterrupted);
  } else if (!out.verify.ok() || out.findings > 0) {
    code = Code(ExitCode::kVerifyFailed);
  }
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = code == 0;
    j["exit_code"] = code;
    j["sweep_dir"] = dir;
    j["state"] = out.interrupted ? "interrupted" : "finished";
    if (!out.interrupted) {
      j["sweep"] = out.summary;
      j["verify"] = VerifyResultToJson(out.dir, out.verify);
      j["fingerprint"] = out.fingerprint;
    }
    PrintJson(j);
    return code;
  }
  if (out.interrupted) {
    std::fprintf(stderr, "pilot: interrupted: finished cells are kept; resume with:\n  pilot resume %s\n",
                 dir.c_str());
    return code;
  }
  const auto& s = out.summary;
  std::printf("sweep %s on %s: %zu cell(s) measured\n", s["run_id"].get<std::string>().c_str(),
              s["measured_on"]["device"].get<std::string>().c_str(), s["cells"].size());
  for (const auto& r : s["recommendation"]) {
    std::printf(
        "  group %llu (%s %llu-%llu): ", static_cast<unsigned long long>(r["group"].get<std::uint64_t>()),
        s["measure"].get<std::string>().c_str(),
        static_cast<unsigned long long>(r["min_length"].get<std::uint64_t>()),
        static_cast<unsigned long long>(r["max_length"].get<std::uint64_t>()));
    if (r["batch_size"].is_number()) {
      std::printf("batch %d — %s\n", r["batch_size"].get<int>(),
                  EscapeTerminal(r["why"].get<std::string>()).c_str());
    } else {
      std::printf("no batch size — %s\n", EscapeTerminal(r["why"].get<std::string>()).c_str());
    }
  }
  if (out.findings > 0) {
    std::printf("equivalence: FAILED: %zu outcome(s) differ from batch 1:\n", out.findings);
    for (const auto& f : s["findings"]) {
      std::printf("  group %d batch %d position %zu %s: %s\n", f["group"].get<int>(),
                  f["batch_size"].get<int>(), f["position"].get<std::size_t>(),
                  f["id"].get<std::string>().c_str(),
                  EscapeTerminal(TruncateUtf8(f["what"].get<std::string>(), 300)).c_str());
    }
  } else {
    std::printf("equivalence: every outcome at every batch size equals batch 1, in order\n");
  }
  std::printf("%s\n", s["measured_on"]["note"].get<std::string>().c_str());
  if (!out.verify.ok()) {
    PrintFindings(out.verify.findings);
  }
  std::printf("sweep folder: %s (sweep.md, report.html)\n", dir.c_str());
  std::printf("fingerprint: %s\n", out.fingerprint.c_str());
  return code;
}

int Execute(const SweepOptions& o) {
  ApplyLogLevel(o.common);
  if (Status st = CheckDefaultParams(o.params); !st.ok()) return ReportError(st.error(), o.common);
  SweepSettings settings;
  settings.groups = o.groups;
  settings.repeats = o.repeats;
  auto sizes = ParseBatchSizes(o.batch_sizes);
  if (!sizes.ok()) return ReportError(sizes.error(), o.common);
  settings.batch_sizes = sizes.value();
  if (o.latency_option && o.latency_option->count() > 0) settings.latency_budget_ms = o.latency_budget_ms;
  if (o.memory_option && o.memory_option->count() > 0) settings.max_memory_mb = o.max_memory_mb;
  if (o.ttft_option && o.ttft_option->count() > 0) settings.max_ttft_ms = o.max_ttft_ms;
  if (o.tpot_option && o.tpot_option->count() > 0) settings.max_tpot_ms = o.max_tpot_ms;
  if (Status st = CheckSweepSettings(settings); !st.ok()) return ReportError(st.error(), o.common);
  SweepRequest request;
  request.run.params_file = o.params;
  if (!o.manifest.empty()) request.run.manifest = fs::path(o.manifest);
  if (!o.device.empty()) request.run.device = o.device;
  request.run.runs_dir = o.runs_dir.empty() ? fs::path("runs") : fs::path(o.runs_dir);
  request.run.command_line = o.argv;
  request.settings = settings;
  request.out = o.out;
  auto outcome = RunSweep(RealFileSystem(), SystemClock(), TorchRuntime(), request, RunCellInChild,
                          MakeSweepControl(o.common));
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintSweep(outcome.value(), o.common);
}

// --- the cell process -----------------------------------------------------------------------

struct CellOptions {
  Common common;
  std::string dir, out;
  int group = 0, batch = 0;
};

// Test hook: PILOT_TEST_SWEEP_KILL_CELL=G:B makes the cell process of group G, batch B kill
// itself with SIGKILL, as the kernel's OOM killer would.
void MaybeKillForTest(int group, int batch) {
  const char* v = std::getenv("PILOT_TEST_SWEEP_KILL_CELL");
  if (v && std::string(v) == std::to_string(group) + ":" + std::to_string(batch)) ::kill(::getpid(), SIGKILL);
}

int ExecuteCell(const CellOptions& o) {
  ApplyLogLevel(o.common);
  // --out is the cell's own file in the sweep folder, written from the folder pinned here, and
  // only for the sweep that started this process (it holds the folder's lock).
  const std::string cell_file =
      ".cell-g" + std::to_string(o.group) + "-b" + std::to_string(o.batch) + ".json";
  if (o.out != cell_file) {
    return ReportError(BadInput("must be " + cell_file + ", the cell's file in the sweep folder", "--out"),
                       o.common);
  }
  auto resolved = ResolveGivenFolder(RealFileSystem(), o.dir, "a sweep folder");
  if (!resolved.ok()) return ReportError(resolved.error(), o.common);
  const fs::path dir = resolved.value();
  if (auto holder = LockHolder(RealFileSystem(), dir); !holder || *holder != static_cast<long>(::getppid())) {
    return ReportError(
        BadInput("is not a sweep being run by the process that started this cell (sweep-cell is "
                 "pilot sweep's own)",
                 dir.string(), "run `pilot sweep`, or `pilot resume` the sweep folder"),
        o.common);
  }
  auto record = ReadSweepRecord(RealFileSystem(), dir);
  if (!record.ok()) return ReportError(record.error(), o.common);
  const SweepRecord& r = record.value();
  auto plan = BuildRunPlan(RealFileSystem(), RequestFromSweepRecord(r, dir));
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  if (plan.value().manifest.sha256() != r.manifest_sha256 || plan.value().model_sha256 != r.model_sha256 ||
      Sha256Hex(plan.value().params_bytes) != r.params_sha256) {
    return ReportError(BadInput("the manifest, parameters or model changed since the sweep started",
                                dir.string(), "restore them, then `pilot resume` the sweep"),
                       o.common);
  }
  auto built = BuildStage(RealFileSystem(), TorchRuntime(), plan.value().params, plan.value().model_sha256,
                          plan.value().runs_dir);
  if (!built.ok()) return ReportError(built.error(), o.common);
  Stage& stage = *built.value().stage;
  auto inputs = LoadCellInputs(RealFileSystem(), dir, plan.value(), stage, o.group);
  if (!inputs.ok()) return ReportError(inputs.error(), o.common);
  MaybeKillForTest(o.group, o.batch);
  const double rss_after_load = CurrentRssMegabytes(RealFileSystem());
  CellMeasure m = RunCell(SystemClock(), stage, inputs.value().ids, inputs.value().texts, o.group, o.batch,
                          r.settings.repeats);
  m.rss_after_load_mb = rss_after_load;
  if (Status st = RealFileSystem().WriteFileAtomic(dir / o.out, PrettyJson(CellToJson(m))); !st.ok()) {
    return ReportError(st.error(), o.common);
  }
  return 0;
}

// `pilot resume` of a sweep folder: its cells, not a run's items, on the device it measured.
int ResumeSweepCommand(const ResumeArgs& args) {
  if (!args.device.empty() || args.stop_after > 0) {
    return ReportError(BadInput("--device and --stop-after do not apply to a sweep folder", args.dir,
                                "a sweep resumes on the device it was measured on"),
                       args.common);
  }
  auto outcome = ResumeSweepFolder(RealFileSystem(), SystemClock(), TorchRuntime(), args.dir, args.argv,
                                   RunCellInChild, MakeSweepControl(args.common));
  if (!outcome.ok()) return ReportError(outcome.error(), args.common);
  return PrintSweep(outcome.value(), args.common);
}

}  // namespace

void AddSweepCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  RegisterFolderCommands(kFolderKindSweep, {ResumeSweepCommand, nullptr});
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Tune the batch size per input-length group: time, latency, peak memory and errors per cell");
  cmd->add_option("--params", o->params, "Parameter file")->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "Manifest to use instead of the one the parameters name");
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the parameters' device)");
  cmd->add_option("--groups", o->groups, "Length groups (1-16)")->capture_default_str();
  cmd->add_option("--batch-sizes", o->batch_sizes, "Batch sizes to try, increasing from 1")
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed passes over each group per cell (1-100)")
      ->capture_default_str();
  o->latency_option =
      cmd->add_option("--latency-budget-ms", o->latency_budget_ms,
                      "Stop a group's escalation once a cell's p95 batch latency exceeds this");
  o->memory_option = cmd->add_option("--max-memory-mb", o->max_memory_mb,
                                     "Stop a group's escalation once a cell's peak memory exceeds this");
  o->ttft_option = cmd->add_option(
      "--max-ttft-ms", o->max_ttft_ms,
      "A generator: stop a group's escalation once a cell's p99 time to first token exceeds this");
  o->tpot_option = cmd->add_option(
      "--max-tpot-ms", o->max_tpot_ms,
      "A generator: stop a group's escalation once a cell's p99 time per output token exceeds this");
  cmd->add_option("--out", o->out, "The sweep folder to create (default: RUNS_DIR/<id>-sweep)");
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the sweep folder")->capture_default_str();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Each cell (group x batch size) runs in its own pilot process: one warm-up batch, then --repeats\n"
      "timed passes. A group stops at its first limit (out of memory, stage error, a killed process,\n"
      "the latency budget, the memory cap, a generator's TTFT or TPOT budget); the other groups go on.\n"
      "A generator's groups are prompt lengths, its batch the sequences decoded at once; its cells give\n"
      "completion tokens/s, TTFT, TPOT and the KV cache, and sweep.md the sequences that fit per card\n"
      "by context (docs/generation.md). Every outcome is compared with batch 1. Exit 0 finished (limits are "
      "data), 1 an equivalence finding, 2 bad input,\n"
      "3 environment, 5 failure during work, 130 interrupted (resume with `pilot resume DIR`).");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });

  auto c = std::make_shared<CellOptions>();
  CLI::App* cell = app.add_subcommand("sweep-cell", "Internal: one cell of a sweep, run by `pilot sweep`");
  cell->group("");  // hidden from --help
  cell->add_option("SWEEP_DIR", c->dir)->required();
  cell->add_option("--group", c->group)->required()->check(CLI::Range(1, kMaxGroups));
  cell->add_option("--batch-size", c->batch)->required()->check(CLI::Range(1, kMaxBatchSize));
  cell->add_option("--out", c->out, "A file name inside SWEEP_DIR")->required();
  AddCommonOptions(*cell, c->common);
  cell->callback([c, &exit_code] { exit_code = ExecuteCell(*c); });
}

}  // namespace pilot::cli
