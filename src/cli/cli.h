// The command-line interface: parses, dispatches to one file per subcommand, prints.
// Holds no business logic. Errors are printed once, as `pilot: error: ...`.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/exit_codes.h"
#include "pilot/status.h"

namespace pilot::cli {

int Main(int argc, char** argv);

// Options every subcommand shares.
struct Common {
  bool json = false;
  bool quiet = false;
};
void AddCommonOptions(CLI::App& cmd, Common& common);
void ApplyLogLevel(const Common& common);

// `<what> (<where>) — <hint>`, each part escaped for the terminal (escape.h): what
// ReportError prints, and what other places that show an error use.
std::string ShownError(const Error& error);

// Prints `pilot: error: <what> (<where>) — <hint>` to stderr (and, with --json, an
// {"ok": false, "error": ...} object to stdout); returns the exit code.
int ReportError(const Error& error, const Common& common);

void PrintJson(const nlohmann::ordered_json& doc);

// What every command says of an option or argument given '' (the one validator,
// cli.cpp's RefuseEmptyValues, and the few validators that run before it): "" for a value.
std::string EmptyValueMessage(const std::string& value);

// Accepts a whole number >= 0 ("-1" would otherwise wrap to a huge unsigned count).
CLI::Validator CountValidator();

// Each subcommand registers itself; `exit_code` receives its result.
void AddRunCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddDoctorCommand(CLI::App& app, int& exit_code);
void AddResumeCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddStatusCommand(CLI::App& app, int& exit_code);
void AddVerifyCommand(CLI::App& app, int& exit_code);
void AddManifestCommand(CLI::App& app, int& exit_code);
void AddSweepCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddLoadCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);

void AddMergeCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddExportCommand(CLI::App& app, int& exit_code);
void AddCompareCommand(CLI::App& app, int& exit_code);
void AddPlanCommand(CLI::App& app, int& exit_code);
void AddDecideCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddAdaptCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);
void AddCalibrateCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv);

}  // namespace pilot::cli
namespace pilot {
struct MergeOutcome;
}
namespace pilot::cli {

// Prints a merge's outcome (summary or --json) and returns its exit code (cmd_merge.cpp);
// `run --workers` ends with it too.
int PrintMergeOutcome(const MergeOutcome& outcome, const Common& common);

// What `pilot resume` was given, for a folder kind's own resume.
struct ResumeArgs {
  std::string dir;     // resolved, its kind checked (CheckFolderKind)
  std::string device;  // --device; empty: the one the folder was begun on
  std::size_t stop_after = 0;
  Common common;
  std::vector<std::string> argv;
};

// How a workflow's folders resume and show their status on the command line. The workflow's
// command file registers its kind's when its commands are added (AddSweepCommand,
// AddAdaptCommand); `pilot resume` and `pilot status` look the folder's kind up here and name
// none. A kind without them is a run core kind: its results resume through the run session
// (run_session.h) and its status is ReadRunStatus's.
struct FolderCommands {
  std::function<int(const ResumeArgs&)> resume;
  std::function<int(const std::string& dir, const Common&)> status;
};
void RegisterFolderCommands(const std::string& kind, FolderCommands commands);
const FolderCommands* FindFolderCommands(std::string_view kind);  // null: none registered

}  // namespace pilot::cli
