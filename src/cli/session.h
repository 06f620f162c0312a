// What `run` and `resume` share on the command line: signal handling, the progress line, the
// test hooks, and printing an outcome. The setup itself is the library's (run_session.h).
#pragma once

#include <memory>
#include <string>

#include "cli/cli.h"
#include "pilot/fs.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/run_session.h"
#include "pilot/stage.h"

namespace pilot::cli {

// A default parameter file (config/pilot.json, config/adapt.json) is relative to the folder
// pilot runs in: when it is the one asked for and it is not there, the error says how to
// point pilot at one's own parameters and runs folder.
Status CheckDefaultParams(const std::string& params, std::string_view default_path = kDefaultParamsPath);

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
// The labelled items' accuracy and expected rejections, and each label never predicted (a dead
// class accuracy hides), when the report has labelled items.
void PrintQuality(const Report& report);
// "acceptance: NAME not met ..." for each criterion of the report that was not met.
void PrintUnmetCriteria(const Report& report);

// The one library call that sets the session up (OpenRunSession), then RunToEnd, then the
// outcome printed: `run`, `run --shard` and `resume` end here. The setup's notes go to stderr.
int RunSessionToEnd(SessionRequest request, const Common& common, std::size_t stop_after);

// `resume` of a folder that had already finished (only a stale lock was left and removed):
// prints its verification; 0 when it verifies, 1 otherwise.
int PrintAlreadyFinished(const ResumeSetup& setup, const Common& common);

}  // namespace pilot::cli
