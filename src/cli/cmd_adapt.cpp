// `pilot adapt`: the adaptation (fine-tuning) pilot; `pilot resume` and `pilot status` of its
// folder come here too.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/torch_loader.h"
#include "pilot/adapt/adapt.h"
#include "pilot/adapt/adapt_params.h"
#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/host.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/params.h"
#include "pilot/run.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct AdaptOptions {
  Common common;
  std::string params = std::string(kDefaultAdaptParamsPath);
  std::string runs_dir = "runs";
  std::string run_id;
  std::string device;
  std::uint64_t stop_after = 0;
  std::vector<std::string> argv;
};

constexpr ExitCode ExitCodeFor(AdaptVerdict verdict) {
  switch (verdict) {
    case AdaptVerdict::kPassed:
      return ExitCode::kOk;
    case AdaptVerdict::kVerifyFailed:
      return ExitCode::kVerifyFailed;
    case AdaptVerdict::kAcceptanceFailed:
      return ExitCode::kAcceptanceFailed;
    case AdaptVerdict::kInterrupted:
      return ExitCode::kInterrupted;
  }
  return ExitCode::kVerifyFailed;  // unreachable
}

AdaptControl MakeAdaptControl(const Common& common, std::uint64_t stop_after) {
  AdaptControl control;
  control.should_stop = InterruptRequested;
  control.stop_after_steps = stop_after;
  if (!common.quiet && !common.json && ::isatty(STDERR_FILENO)) {
    auto last = std::make_shared<double>(0);
    control.on_progress = [last](const AdaptProgress& p) {
      const double now = SystemClock().MonotonicSeconds();
      if (now - *last < 0.2 && p.phase == "training") return;
      *last = now;
      std::fprintf(stderr, "\r\033[Kpilot: adapt %s: step %llu/%llu, loss %.4f, %.1f steps/s",
                   p.phase.c_str(), static_cast<unsigned long long>(p.step),
                   static_cast<unsigned long long>(p.total), p.loss, p.steps_per_second);
      if (p.eval_accuracy) std::fprintf(stderr, ", eval %.1f%%\n", 100.0 * *p.eval_accuracy);
      std::fflush(stderr);
    };
  }
  // Test hooks: PILOT_TEST_STEP_DELAY_MS=N sleeps after each step; PILOT_TEST_KILL_IN_CHECKPOINT=K
  // SIGKILLs the process half-way through writing its Kth checkpoint (temp file begun, not renamed).
  if (const char* ms = std::getenv("PILOT_TEST_STEP_DELAY_MS"); ms && std::atol(ms) > 0) {
    auto inner = control.on_progress;
    std::chrono::milliseconds delay(std::atol(ms));
    control.on_progress = [inner, delay](const AdaptProgress& p) {
      if (inner) inner(p);
      std::this_thread::sleep_for(delay);
    };
  }
  if (const char* k = std::getenv("PILOT_TEST_KILL_IN_CHECKPOINT"); k && std::atol(k) > 0) {
    auto count = std::make_shared<long>(0);
    const long kill_at = std::atol(k);
    control.on_checkpoint_piece = [count, kill_at](std::uint64_t) {
      if (++*count == kill_at) ::kill(::getpid(), SIGKILL);
    };
  }
  return control;
}

Result<std::unique_ptr<AdaptTrainer>> MakeTrainer() {
  auto torch = Torch();
  if (!torch.ok()) return torch.error();
  return torch.value()->make_adapt_trainer();
}

int PrintAdaptOutcome(const AdaptOutcome& out, const Common& common) {
  std::error_code ec;
  const std::string dir = fs::absolute(out.dir, ec).lexically_normal().string();
  for (const auto& note : out.notes) std::fprintf(stderr, "pilot: note: %s\n", EscapeTerminal(note).c_str());
  const int code = Code(ExitCodeFor(out.verdict));
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = out.verdict == AdaptVerdict::kPassed;
    j["exit_code"] = code;
    j["run_id"] = out.run_id;
    j["run_dir"] = dir;
    j["state"] = out.verdict == AdaptVerdict::kInterrupted ? "interrupted" : "finished";
    j["step"] = out.progress.step;
    j["total_steps"] = out.progress.total;
    if (out.verdict != AdaptVerdict::kInterrupted) {
      j["report"] = out.report;
      j["verify"] = VerifyResultToJson(out.dir, out.verify);
      j["adapted_model"] = {{"path", (fs::path(dir) / kAdaptModel).string()}, {"sha256", out.adapted_sha256}};
      j["fingerprint"] = out.fingerprint;
    }
    j["notes"] = out.notes;
    PrintJson(j);
    return code;
  }
  if (out.verdict == AdaptVerdict::kInterrupted) {
    std::fprintf(
        stderr,
        "pilot: interrupted: the last checkpoint is at step %llu of %llu; resume with:\n  pilot resume %s\n",
        static_cast<unsigned long long>(out.progress.step),
        static_cast<unsigned long long>(out.progress.total), dir.c_str());
    return code;
  }
  const nlohmann::ordered_json& r = out.report;
  auto num = [](const nlohmann::ordered_json& j, const char* a, const char* b) {
    return j.contains(a) && j[a].contains(b) && j[a][b].is_number() ? j[a][b].get<double>() : 0.0;
  };
  const auto& ev = r["evaluation"];
  std::printf(
      "adapt %s: %.0f training items (%.0f used, %.0f rejected); %.0f evaluation items (%.0f evaluated)\n",
      out.run_id.c_str(), num(r, "train", "items"), num(r, "train", "used"), num(r, "train", "rejected"),
      num(r, "eval", "items"), num(r, "eval", "evaluated"));
  std::printf("evaluation accuracy: base %.2f%% -> adapted %.2f%% (%+.2f points)\n",
              100.0 * num(ev, "base", "accuracy"), 100.0 * num(ev, "adapted", "accuracy"),
              100.0 * (ev.contains("gain") ? ev["gain"].get<double>() : 0.0));
  std::printf("training: %.0f steps in %.1f s (%.1f steps/s); loss %.4f -> %.4f\n",
              num(r, "training", "steps"), num(r, "training", "seconds"),
              num(r, "training", "steps_per_second"), num(r, "loss", "first"), num(r, "loss", "last"));
  std::printf(
      "checkpoints: %.0f written, %zu kept, %.0f pruned; %.0f bytes each, write %.1f ms mean (%.1f max)\n",
      num(r, "checkpoints", "written"), r["checkpoints"]["kept"].size(), num(r, "checkpoints", "pruned"),
      num(r, "checkpoints", "bytes"), num(r, "checkpoints", "mean_write_ms"),
      num(r, "checkpoints", "max_write_ms"));
  if (!out.verify.ok()) {
    PrintFindings(out.verify.findings);
  } else {
    std::printf(
        "verify: ok (every training and evaluation id accounted for exactly once; checkpoints and model "
        "match their hashes)\n");
  }
  for (const auto& c : r["acceptance"]["criteria"]) {
    if (!c["met"].get<bool>()) {
      std::printf("acceptance: %s not met (%.4f, needs %.4f)\n", c["name"].get<std::string>().c_str(),
                  c["value"].get<double>(), c["threshold"].get<double>());
    }
  }
  const std::string model = (fs::path(dir) / kAdaptModel).string();
  std::printf("adapted model: %s\n  sha256 %s\n", model.c_str(), out.adapted_sha256.c_str());
  std::printf(
      "  use it in `pilot run`: \"stage\": {\"kind\": \"torchscript-classifier\", \"model\": \"%s\", "
      "\"model_sha256\": \"%s\"}\n",
      model.c_str(), out.adapted_sha256.c_str());
  std::printf("folder: %s\n", dir.c_str());
  if (!out.fingerprint.empty()) {
    std::printf("fingerprint: %s  (check a copy with: pilot verify COPY --expect %s)\n",
                out.fingerprint.c_str(), out.fingerprint.c_str());
  }
  return code;
}

int Execute(const AdaptOptions& o) {
  ApplyLogLevel(o.common);
  if (Status st = CheckDefaultParams(o.params, kDefaultAdaptParamsPath); !st.ok())
    return ReportError(st.error(), o.common);
  AdaptRequest request;
  request.params_file = o.params;
  request.device = o.device;
  request.runs_dir = o.runs_dir;
  request.run_id = o.run_id;
  request.command_line = o.argv;
  auto plan = PlanAdapt(RealFileSystem(), TorchRuntime(), request);
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  auto trainer = MakeTrainer();
  if (!trainer.ok()) return ReportError(trainer.error(), o.common);
  InstallInterruptHandlers();
  auto outcome = ExecuteAdapt(CliFileSystem(), SystemClock(), plan.value(), *trainer.value(),
                              MakeAdaptControl(o.common, o.stop_after));
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintAdaptOutcome(outcome.value(), o.common);
}

// `pilot resume` of an adaptation folder: from its last checkpoint. `--device`: empty keeps the
// one the adaptation began on (another is refused).
int ResumeAdaptFolder(const ResumeArgs& args) {
  const std::string& dir = args.dir;
  const std::string& device = args.device;
  const Common& common = args.common;
  std::string resolved;
  if (!device.empty()) {
    auto torch = Torch();
    if (!torch.ok()) return ReportError(torch.error(), common);
    auto d = torch.value()->resolve_device(device);
    if (!d.ok()) return ReportError(d.error(), common);
    resolved = d.value();
  }
  auto trainer = MakeTrainer();
  if (!trainer.ok()) return ReportError(trainer.error(), common);
  InstallInterruptHandlers();
  auto outcome = ResumeAdapt(CliFileSystem(), SystemClock(), dir, resolved, args.argv, *trainer.value(),
                             MakeAdaptControl(common, args.stop_after));
  if (!outcome.ok()) return ReportError(outcome.error(), common);
  return PrintAdaptOutcome(outcome.value(), common);
}

// `pilot status` of an adaptation folder: its steps and checkpoints, not a run's items.
int PrintAdaptStatus(const std::string& dir, const Common& common) {
  auto st = ReadAdaptStatus(RealFileSystem(), dir);
  if (!st.ok()) return ReportError(st.error(), common);
  const AdaptStatus& s = st.value();
  if (common.json) {
    nlohmann::ordered_json j;
    j["folder_kind"] = kFolderKindAdapt;
    j["run_id"] = s.run_id;
    j["state"] = s.state;
    j["step"] = s.step;
    j["total_steps"] = s.total;
    j["checkpoints_kept"] = s.checkpoints_kept;
    j["last_eval_accuracy"] =
        s.last_eval_accuracy ? nlohmann::ordered_json(*s.last_eval_accuracy) : nlohmann::ordered_json();
    j["writer_pid"] = s.writer_pid ? nlohmann::ordered_json(*s.writer_pid) : nlohmann::ordered_json();
    PrintJson(j);
    return 0;
  }
  std::printf("adapt %s: %s%s\n", s.run_id.c_str(), s.state.c_str(),
              s.writer_pid ? (" (pid " + std::to_string(*s.writer_pid) + ")").c_str() : "");
  std::printf("  last checkpoint at step %llu of %llu; %zu checkpoint(s) kept\n",
              static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.total),
              s.checkpoints_kept);
  if (s.last_eval_accuracy)
    std::printf("  evaluation accuracy there: %.2f%%\n", 100.0 * *s.last_eval_accuracy);
  if (s.state == "interrupted") {
    std::error_code ec;
    std::printf("  resume with: pilot resume %s\n",
                fs::absolute(dir, ec).lexically_normal().string().c_str());
  }
  return 0;
}

}  // namespace

void AddAdaptCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  RegisterFolderCommands(kFolderKindAdapt, {ResumeAdaptFolder, PrintAdaptStatus});
  auto o = std::make_shared<AdaptOptions>();
  CLI::App* cmd = app.add_subcommand("adapt",
                                     "The adaptation pilot: fine-tune a pinned model on labelled data, with "
                                     "checkpoints that resume to the same bits");
  cmd->add_option("--params", o->params, "Adaptation parameter file")->capture_default_str();
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the adaptation folder")
      ->capture_default_str();
  cmd->add_option("--run-id", o->run_id, "Name of the folder (default: UTC time plus a random suffix)");
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the parameters' device)");
  cmd->add_option("--stop-after", o->stop_after, "Stop as if interrupted after N steps (a test of resume)")
      ->check(CountValidator());
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Reads the parameters (config/adapt.json is the example: base model and its sha256, labelled\n"
      "training and evaluation manifests, what trains, optimiser, batch, steps or epochs, seed, threads,\n"
      "checkpoint_every, keep_checkpoints, dtype, acceptance). Prechecks every item (a training item\n"
      "that fails is rejected with a reason, never silently dropped), evaluates the base model, trains,\n"
      "writes a checkpoint every checkpoint_every steps (temp, fsync, rename, then journaled with its\n"
      "sha256), keeps the last K and the best, and ends with data/model/adapted.pt, its model card and\n"
      "the reports in a BagIt folder of kind `adapt`. `pilot resume DIR` continues a killed one from\n"
      "its last checkpoint; on the CPU with the same threads, to the same parameter bytes.\n"
      "Exit: 0 finished and verified, 1 the self-check failed, 2 bad input, 3 environment,\n"
      "4 acceptance unmet, 5 a failure during work, 130 interrupted (resumable).");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
