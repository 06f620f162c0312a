// What `run` and `resume` share: building the stage on the resolved device, describing the
// environment received, signal handling, the progress line, the test hooks, and printing
// an outcome.
#pragma once

#include <memory>
#include <string>

#include "cli/cli.h"
#include "pilot/fs.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/stage.h"

namespace pilot::cli {

struct BuiltStage {
  std::unique_ptr<Stage> stage;
  nlohmann::ordered_json environment;
};

// The parameters' `requires` and the device asked for against what this machine has:
// exit 3 listing every unmet requirement at once. Nothing is created; `untouched` tells
// the user what became of their folder (run: none was created; resume: it stays resumable).
Status CheckEnvironment(const Params& params, const std::filesystem::path& runs_dir, const char* untouched);

// A default parameter file (config/pilot.json, config/adapt.json) is relative to the folder
// pilot runs in: when it is the one asked for and it is not there, the error says how to
// point pilot at one's own parameters and runs folder.
Status CheckDefaultParams(const std::string& params, std::string_view default_path = kDefaultParamsPath);

// Resolves the device (exit 3 when absent), loads the model through the registry (exit 2),
// and checks that allowed_categories are labels of the model.
Result<BuiltStage> BuildStage(const Params& params, const std::string& model_sha256,
                              const std::filesystem::path& runs_dir);

// SIGINT/SIGTERM: the first asks the run to stop after the current batch; a second SIGINT
// exits at once (130). Both leave the folder resumable.
void InstallInterruptHandlers();
bool InterruptRequested();

// Signals, the live progress line (stderr on a TTY, unless --quiet/--json), the
// --stop-after option and the PILOT_TEST_BATCH_DELAY_MS test hook.
RunControl MakeRunControl(const Common& common, std::size_t stop_after);

// The file system the CLI writes through: the real one, or, when the environment variable
// PILOT_TEST_KILL_AFTER_WRITE=N is set (a test hook), one that SIGKILLs this process
// right after its Nth write, append, truncate or replacing rename; with
// PILOT_TEST_KILL_EVERY_STEP=1 as well, every folder made, removal, rename and lock counts.
FileSystem& CliFileSystem();

// Prints the outcome (summary, or --json) and returns the exit code. A finished run prints
// its fingerprint (the sha256 of tagmanifest-sha256.txt) for `verify --expect`.
int PrintOutcome(const RunOutcome& outcome, const Common& common);

// "  [check] where: what" per finding on stdout, after `heading` ("verify: FAILED with N
// finding(s):"); at most `most` of them, then how many more.
void PrintFindings(const std::vector<Finding>& findings, const std::string& heading = "verify: FAILED",
                   std::size_t most = static_cast<std::size_t>(-1));
// "acceptance: NAME not met ..." for each criterion of the report that was not met.
void PrintUnmetCriteria(const Report& report);

// `resume` of a folder that had already finished (only a stale lock was left and removed):
// prints its verification; 0 when it verifies, 1 otherwise.
int PrintAlreadyFinished(const ResumeSetup& setup, const Common& common);

}  // namespace pilot::cli
