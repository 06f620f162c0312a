#include "cli/cli.h"

#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "pilot/build_info.h"

namespace pilot::cli {

void AddCommonOptions(CLI::App& cmd, Common& common) {
  cmd.add_flag("--json", common.json, "Print a machine-readable result on stdout; human text is suppressed");
  cmd.add_flag("-q,--quiet", common.quiet, "Log warnings and errors only");
}

void ApplyLogLevel(const Common& common) {
  spdlog::set_level(common.quiet || common.json ? spdlog::level::warn : spdlog::level::info);
}

void PrintJson(const nlohmann::ordered_json& doc) { std::cout << doc.dump(2) << std::endl; }

int ReportError(const Error& error, const Common& common) {
  std::cerr << "pilot: error: " << error.ToString() << std::endl;
  if (common.json) {
    PrintJson({{"ok", false},
               {"exit_code", static_cast<int>(error.code)},
               {"error", {{"what", error.what}, {"where", error.where}, {"hint", error.hint}}}});
  }
  return static_cast<int>(error.code);
}

int Main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_st("pilot");
  logger->set_pattern("pilot: %^%l%$: %v");
  spdlog::set_default_logger(logger);

  CLI::App app{
      "pilot: a harness for GPU pilot runs. Runs a pinned manifest of inputs through a libtorch\n"
      "stage, writes a fresh run folder (a BagIt bag) and verifies that every manifest id is\n"
      "accounted for exactly once.\n\n"
      "Exit codes: 0 ok, 1 verification failed, 2 bad input, 3 environment lacks what is asked,\n"
      "4 acceptance criteria not met, 130 interrupted."};
  app.name("pilot");
  app.set_version_flag("--version", std::string("pilot ") + build::kVersion + " (" + build::kSourceRevision + ")");
  app.require_subcommand(1);
  int exit_code = 0;
  const std::vector<std::string> args(argv, argv + argc);
  AddRunCommand(app, exit_code, args);
  AddResumeCommand(app, exit_code, args);
  AddStatusCommand(app, exit_code);
  AddDoctorCommand(app, exit_code);
  AddVerifyCommand(app, exit_code);
  AddManifestCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(ExitCode::kBadInput);
  }
  return exit_code;
}

}  // namespace pilot::cli
