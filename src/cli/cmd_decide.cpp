// `pilot decide RUN_DIR`: proposes go / fix-env / revise-config from the evidence, and records
// the person's decision with reasons beside the payload.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/clock.h"
#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/paths.h"
#include "pilot/verdict/decide.h"

namespace pilot::cli {
namespace {

struct DecideCliOptions {
  Common common;
  std::string dir, doctor, compare, sweep, plan, calibration, inputs_root, decision,
      choose = "cheapest", expect, expect_sweep, expect_calibration, load, expect_load;
  std::vector<std::string> reasons;
  bool no_excerpts = false;
  std::size_t per_category = 2;
  std::optional<std::uint64_t> seed;
};

// Ctrl-C (or SIGTERM) by phase: while decide reads, nothing is written and it stops at once,
// saying so; once it holds the folder's lock it stops before its first write; once it writes,
// the decision is finished first (docs/security.md, "A decision interrupted").
std::atomic<int> g_phase{static_cast<int>(DecidePhase::kReading)};
std::atomic<bool> g_stop{false};

void Say(const char* text) { [[maybe_unused]] auto w = ::write(STDERR_FILENO, text, std::strlen(text)); }

void OnDecideSignal(int) {
  switch (static_cast<DecidePhase>(g_phase.load())) {
    case DecidePhase::kReading:
      Say("\npilot: interrupted while reading: nothing was recorded; the folder is as it was\n");
      ::_exit(Code(ExitCode::kInterrupted));
    case DecidePhase::kRecovering:
      g_stop = true;
      Say("\npilot: an interrupted decide is being finished or undone first, then pilot stops\n");
      return;
    case DecidePhase::kLocked:
      g_stop = true;
      Say("\npilot: stopping before anything is written\n");
      return;
    case DecidePhase::kWriting:
    case DecidePhase::kRecorded:
      g_stop = true;
      Say("\npilot: the decision is being written; it is finished first, then pilot stops\n");
      return;
  }
}

void InstallDecideHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnDecideSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// The options as the library's request: the evidence resolved, the fingerprints checked.
Result<DecideOptions> RequestFrom(const DecideCliOptions& o, const std::vector<std::string>& argv) {
  DecideOptions d;
  auto path = [](const std::string& s) {
    return s.empty() ? std::nullopt : std::optional<std::filesystem::path>(s);
  };
  d.doctor = path(o.doctor);
  d.compare = path(o.compare);
  if (!o.sweep.empty()) {
    auto sweep = ResolveGivenFolder(RealFileSystem(), o.sweep, "a sweep folder");
    if (!sweep.ok()) return sweep.error();
    d.sweep = sweep.value();
  }
  if (!o.load.empty()) {
    auto load = ResolveGivenFolder(RealFileSystem(), o.load, "a load folder");
    if (!load.ok()) return load.error();
    d.load = load.value();
  }
  if (!o.calibration.empty()) {
    auto calibration = ResolveGivenFolder(RealFileSystem(), o.calibration, "a calibration folder");
    if (!calibration.ok()) return calibration.error();
    d.calibration = calibration.value();
  }
  for (auto [given, into, option] :
       {std::tuple{&o.expect, &d.expect, "--expect"},
        std::tuple{&o.expect_sweep, &d.expect_sweep, "--expect-sweep"},
        std::tuple{&o.expect_load, &d.expect_load, "--expect-load"},
        std::tuple{&o.expect_calibration, &d.expect_calibration, "--expect-calibration"}}) {
    if (given->empty()) continue;
    if (!IsSha256Hex(*given)) {
      return BadInput(std::string(option) + " takes a fingerprint: 64 lower-case hex digits", option,
                      "the one the command that wrote the folder printed");
    }
    *into = *given;
  }
  d.plan = path(o.plan);
  d.inputs_root = path(o.inputs_root);
  d.plan_choice = o.choose;
  d.excerpts = !o.no_excerpts;
  d.per_category = o.per_category;
  d.seed = o.seed;
  if (!o.decision.empty()) d.decision = o.decision;
  d.reasons = o.reasons;
  for (const auto& a : argv) d.command_line += (d.command_line.empty() ? "" : " ") + a;
  if (!d.decision && !o.reasons.empty()) {
    return BadInput(
        "--reason is recorded with a decision", "--reason",
        "add --decision go|fix-env|revise-config|measure-first, or leave out --reason for a proposal");
  }
  d.on_phase = [](DecidePhase phase) {
    g_phase = static_cast<int>(phase);
    // Test hook: PILOT_TEST_DECIDE_PAUSE=reading|locked|writing waits 3 s as that phase begins
    // (announced on stderr), so that a test can interrupt decide there.
    static const char* names[] = {"reading", "recovering", "locked", "writing", "recorded"};
    const char* pause = std::getenv("PILOT_TEST_DECIDE_PAUSE");
    if (pause && std::strcmp(pause, names[static_cast<int>(phase)]) == 0) {
      std::fprintf(stderr, "pilot: test: paused as %s begins\n", pause);
      std::fflush(stderr);
      ::sleep(3);
    }
  };
  d.should_stop = [] { return g_stop.load(); };
  return d;
}

// The outcome printed (as JSON with --json): the exit code.
int PrintDecideOutcome(const DecideOutcome& out, const DecideCliOptions& o) {
  for (const auto& note : out.notes) std::fprintf(stderr, "pilot: note: %s\n", EscapeTerminal(note).c_str());
  if (out.recorded && g_stop) {
    std::fprintf(stderr,
                 "pilot: note: interrupted while the decision was written; it was recorded in full first\n");
  }
  if (out.failed_verification) {
    const int code = Code(ExitCode::kVerifyFailed);
    if (o.common.json) {
      nlohmann::ordered_json j = VerifyResultToJson(o.dir, *out.failed_verification);
      j["exit_code"] = code;
      PrintJson(j);
    } else {
      PrintFindings(out.failed_verification->findings,
                    "verify of " + o.dir + ": FAILED (no decision proposed or recorded)");
    }
    return code;
  }
  if (o.common.json) {
    nlohmann::ordered_json j;
    j["ok"] = true;
    j["exit_code"] = 0;
    j["folder"] = o.dir;
    j["proposal"] = out.proposal;
    j["facts"] = out.facts;
    j["evidence"] = out.evidence;
    j["recorded"] = out.recorded;
    if (out.recorded) {
      j["decision"] = o.decision;
      j["entry"] = out.entry;
      j["written"] = out.written;
      j["previous_fingerprint"] = out.previous_fingerprint;
    }
    j["fingerprint"] = out.fingerprint;
    PrintJson(j);
    return 0;
  }
  std::printf("proposal: %s\n", out.proposal.c_str());
  for (const auto& f : out.facts) {
    std::printf("  [%s] %s\n        from %s\n", f["points_to"].get<std::string>().c_str(),
                f["fact"].get<std::string>().c_str(), f["from"].get<std::string>().c_str());
  }
  if (!out.recorded) {
    std::printf(
        "nothing written. To record it: pilot decide %s --decision %s --reason \"...\" (with the same "
        "evidence "
        "options)\n",
        o.dir.c_str(), out.proposal.c_str());
    return 0;
  }
  std::printf("recorded decision %s as entry %zu in %s/decisions.jsonl%s\n", o.decision.c_str(), out.entry,
              o.dir.c_str(), o.decision != out.proposal ? " (it overrides the proposal)" : "");
  for (const auto& w : out.written) std::printf("  wrote %s\n", w.c_str());
  std::printf("tagmanifest-sha256.txt updated; the payload is untouched\n");
  std::printf("fingerprint: %s (was %s)\n", out.fingerprint.c_str(), out.previous_fingerprint.c_str());
  return 0;
}

int Execute(const DecideCliOptions& o, const std::vector<std::string>& argv) {
  ApplyLogLevel(o.common);
  auto dir = ResolveGivenFolder(RealFileSystem(), o.dir, "a finished run (or merged) folder");
  if (!dir.ok()) return ReportError(dir.error(), o.common);
  auto request = RequestFrom(o, argv);
  if (!request.ok()) return ReportError(request.error(), o.common);
  InstallDecideHandlers();
  Result<DecideOutcome> outcome = Decide(CliFileSystem(), SystemClock(), dir.value(), request.value());
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintDecideOutcome(outcome.value(), o);
}

}  // namespace

void AddDecideCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  auto o = std::make_shared<DecideCliOptions>();
  CLI::App* cmd = app.add_subcommand("decide",
                                     "Propose go / fix-env / revise-config / measure-first from the "
                                     "evidence; record the person's decision with reasons");
  cmd->add_option("RUN_DIR", o->dir, "A finished run (or merged) folder")->required();
  cmd->add_option(
         "--decision", o->decision,
         "Record this decision (go, fix-env, revise-config, measure-first); without it, only propose")
      ->check(CLI::IsMember({"go", "fix-env", "revise-config", "measure-first"}));
  cmd->add_option("--reason", o->reasons, "Why (repeatable; required with --decision)");
  cmd->add_option("--doctor", o->doctor,
                  "`pilot doctor --json` output (environment evidence, unmet requires)");
  cmd->add_option("--compare", o->compare, "compare.json from `pilot compare --out`");
  cmd->add_option("--sweep", o->sweep, "A sweep folder (its limits against the run's batch size)");
  cmd->add_option("--plan", o->plan, "The JSON `pilot plan --out` wrote");
  cmd->add_option(
      "--load", o->load,
      "A load folder (`pilot load`, in process or --target): verified in full; its SLO verdict is "
      "evidence");
  cmd->add_option("--expect-load", o->expect_load,
                  "The --load folder's fingerprint as noted; another is refused");
  cmd->add_option(
      "--expect", o->expect,
      "RUN_DIR's fingerprint as noted when it was written; another one is refused (exit 1) before "
      "anything is proposed or recorded");
  cmd->add_option("--expect-sweep", o->expect_sweep,
                  "The --sweep folder's fingerprint as noted; another is refused");
  cmd->add_option(
      "--calibration", o->calibration,
      "A calibration folder (`pilot calibrate`): verified in full; its record, and its doctor report "
      "unless --doctor is given, are evidence");
  cmd->add_option("--expect-calibration", o->expect_calibration,
                  "The --calibration folder's fingerprint as noted when it was exported; another is refused");
  cmd->add_option("--choose", o->choose, "Which plan decision.md names: cheapest (default) or fastest")
      ->check(CLI::IsMember({"cheapest", "fastest"}));
  cmd->add_option("--inputs-root", o->inputs_root,
                  "Where the inputs are for the spot check (default: the run's)");
  cmd->add_flag("--no-excerpts", o->no_excerpts, "No spot-check table: quote no input in decision.md");
  cmd->add_option("--per-category", o->per_category,
                  "Accepted items sampled per category for the spot check (default 2)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--seed", o->seed, "The spot check's sampling seed (default: the run's seed)");
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Without --decision: prints the proposal and the facts behind it, each with its file; writes nothing.\n"
      "fix-env: a doctor check failed or `requires` is unmet. revise-config: acceptance unmet, rejections\n"
      "the manifest does not expect, a comparison beyond tolerance, a sweep limit at or below the run's\n"
      "batch size, or no rental plan fits. measure-first: the plan's rate or fit is assumed or measured\n"
      "on another card, a sweep, plan or calibration covers another manifest, or no doctor ran on the\n"
      "plan's card class, or a load test was interrupted or ran another manifest. A load that missed its "
      "SLO\n"
      "at every rate is revise-config. go: none of these (a comparison of several changes is a warning).\n"
      "With --decision and --reason: verifies the folder, copies each evidence file beside it\n"
      "(decision-N-<kind>.json, with its sha256), appends entry N to decisions.jsonl, regenerates\n"
      "decision.md (spot check, accepted, still to fix, plan, reasons), and updates tagmanifest-sha256.txt\n"
      "under the folder's lock; prints the new fingerprint. Exit 0; 1: the folder fails verification;\n"
      "2: bad input (a missing or foreign evidence file, no --reason).");
  cmd->callback([o, &exit_code, argv] { exit_code = Execute(*o, argv); });
}

}  // namespace pilot::cli
