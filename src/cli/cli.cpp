#include "cli/cli.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdio>
#include <iostream>
#include <map>

#include "pilot/build_info.h"
#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/json_util.h"
#include "pilot/utf8.h"

namespace pilot::cli {

void AddCommonOptions(CLI::App& cmd, Common& common) {
  cmd.add_flag("--json", common.json, "Print a machine-readable result on stdout; human text is suppressed");
  cmd.add_flag("-q,--quiet", common.quiet, "Log warnings and errors only");
}

void ApplyLogLevel(const Common& common) {
  spdlog::set_level(common.quiet || common.json ? spdlog::level::warn : spdlog::level::info);
}

void PrintJson(const nlohmann::ordered_json& doc) { std::cout << PrettyJson(doc) << std::flush; }

namespace {

// Text of an error for the terminal: every line escaped (a name from a hostile folder or
// parameter file cannot move the cursor or clear the screen), a line break kept only between
// lines, each continuation line indented so that none can pass for a line of pilot's own.
std::string ShownLines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  for (bool first = true;; first = false) {
    const std::size_t nl = text.find('\n', start);
    std::string line =
        EscapeTerminal(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (!first) out += "\n" + std::string(line.rfind("  ", 0) == 0 ? "" : "  ");
    out += line;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::string ShownError(const Error& error) {
  std::string s = ShownLines(error.what);
  if (!error.where.empty()) s += " (" + EscapeTerminal(error.where) + ")";
  if (!error.hint.empty()) s += " — " + ShownLines(error.hint);
  return s;
}

int ReportError(const Error& error, const Common& common) {
  std::cerr << "pilot: error: " << ShownError(error) << std::endl;
  if (common.json) {
    PrintJson({{"ok", false},
               {"exit_code", Code(ExitCodeFor(error.kind))},
               {"error", {{"what", error.what}, {"where", error.where}, {"hint", error.hint}}}});
  }
  return Code(ExitCodeFor(error.kind));
}

std::string EmptyValueMessage(const std::string& value) {
  return value.empty() ? "is empty: give a value, or leave the option out for its default" : "";
}

CLI::Validator CountValidator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (v.empty()) return EmptyValueMessage(v);
        bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string() : "must be a whole number, 0 or more";
      },
      "N>=0");
}

namespace {

// An option or argument given an empty value ('', say an unset $VAR in a script) is refused on
// every command, naming it: it is never a request for the default, nor a check skipped.
void RefuseEmptyValues(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* option : sub->get_options([](const CLI::Option*) { return true; })) {
      if (option->get_type_size_max() == 0) continue;  // a flag takes no value
      // Validators run in the order they were added: each one the option already has says
      // "is empty" first, so that '' gets the same words whatever else the option checks.
      for (int i = 0;; ++i) {
        CLI::Validator* existing = nullptr;
        try {
          existing = option->get_validator(i);
        } catch (const CLI::OptionNotFound&) {
          break;
        }
        CLI::Validator inner = *existing;
        existing->operation([inner](std::string& value) {
          std::string empty = EmptyValueMessage(value);
          return empty.empty() ? inner(value) : empty;
        });
      }
      option->check(CLI::Validator([](std::string& value) { return EmptyValueMessage(value); }, ""));
    }
    RefuseEmptyValues(*sub);
  }
}

// A parse error as every other error: `pilot: error: ...`, naming the option, with the command
// whose --help lists the options.
std::string FailureMessage(const CLI::App* app, const CLI::Error& e) {
  std::string command = "pilot";
  for (const CLI::App* sub : app->get_subcommands()) command += " " + sub->get_name();
  return "pilot: error: " + EscapeTerminal(TruncateUtf8(e.what(), 500)) + " — run `" + command +
         " --help` for the options\n";
}

// The log line's message, escaped for the terminal (escape.h): a log quotes names and text
// from files pilot does not trust.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = EscapeTerminal(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

int Dispatch(int argc, char** argv) {
  auto logger = spdlog::stderr_color_st("pilot");
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("pilot: %^%l%$: %*");
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);

  CLI::App app{
      "pilot: a harness for GPU pilot runs. Runs a pinned manifest of inputs through a libtorch\n"
      "stage, writes a fresh run folder (a BagIt bag) and verifies that every manifest id is\n"
      "accounted for exactly once.\n\n"
      "Exit codes: 0 ok, 1 verification failed, 2 bad input, 3 environment lacks what is asked,\n"
      "4 acceptance criteria not met, 5 failure during work (the folder stays resumable),\n"
      "130 interrupted."};
  app.name("pilot");
  app.set_version_flag("--version",
                       std::string("pilot ") + build::kVersion + " (" + build::kSourceRevision + ")");
  app.require_subcommand(1);
  int exit_code = 0;
  const std::vector<std::string> args(argv, argv + argc);
  AddRunCommand(app, exit_code, args);
  AddResumeCommand(app, exit_code, args);
  AddStatusCommand(app, exit_code);
  AddDoctorCommand(app, exit_code);
  AddVerifyCommand(app, exit_code);
  AddManifestCommand(app, exit_code);
  AddSweepCommand(app, exit_code, args);
  AddLoadCommand(app, exit_code, args);
  AddMergeCommand(app, exit_code, args);
  AddExportCommand(app, exit_code);
  AddCompareCommand(app, exit_code);
  AddCalibrateCommand(app, exit_code, args);
  AddPlanCommand(app, exit_code);
  AddDecideCommand(app, exit_code, args);
  AddAdaptCommand(app, exit_code, args);
  RefuseEmptyValues(app);
  app.failure_message(FailureMessage);
  // CLI11 reads an unknown word as a stray argument ("A subcommand is required"): name it.
  auto known = [&](const std::string& name) {
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      if (sub->check_name(name)) return true;
    }
    return false;
  };
  // `--out=` with nothing after the '=': CLI11 would take the next word as the value (even an
  // option: `--out= --json` made a folder named --json). Refused as every empty value is.
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") break;
    if (arg.size() > 3 && arg.substr(0, 2) == "--" && arg.back() == '=' && arg.find('=') == arg.size() - 1) {
      const std::string command = argc > 1 && known(argv[1]) ? std::string(" ") + argv[1] : std::string();
      std::fprintf(stderr, "pilot: error: %s: %s — run `pilot%s --help` for the options\n",
                   EscapeTerminal(TruncateUtf8(arg.substr(0, arg.size() - 1), 100)).c_str(),
                   EmptyValueMessage("").c_str(), command.c_str());
      return Code(ExitCode::kBadInput);
    }
  }
  // `--out --json`: an option that takes a value, followed by an option of pilot. CLI11 would
  // take the option's name as the value (a folder named --json); a forgotten value is refused
  // instead, naming both.
  if (argc > 2 && known(argv[1])) {
    CLI::App* sub = app.get_subcommand(argv[1]);
    // An option of `app` (or `-h`/`--help`), named as it is written on a command line.
    auto option_of = [](CLI::App* of, std::string_view word) -> const CLI::Option* {
      if (word.size() < 2 || word[0] != '-' || word == "--") return nullptr;
      const std::string name(word.substr(0, word.find('=')));
      for (const CLI::Option* option : of->get_options([](const CLI::Option*) { return true; })) {
        if ((!option->get_lnames().empty() || !option->get_snames().empty()) && option->check_name(name))
          return option;
      }
      if (name == "-h" || name == "--help") return of->get_help_ptr();
      return nullptr;
    };
    // The word after a value-taking option is refused when it is an option of any command
    // (`compare --out --params`: a mistake, whichever command the option belongs to).
    auto any_option = [&](std::string_view word) {
      for (CLI::App* any : app.get_subcommands([](CLI::App*) { return true; })) {
        if (option_of(any, word) != nullptr) return true;
      }
      return option_of(&app, word) != nullptr;
    };
    for (int i = 2; i + 1 < argc; ++i) {
      const std::string_view arg(argv[i]);
      if (arg == "--") break;
      const CLI::Option* option = arg.find('=') == std::string_view::npos ? option_of(sub, arg) : nullptr;
      if (option == nullptr || option->get_expected_max() == 0) continue;  // a flag takes no value
      if (any_option(argv[i + 1])) {
        std::fprintf(
            stderr,
            "pilot: error: %s: needs a value, but is followed by the option %s — give the value right after "
            "%s; run `pilot %s --help` for the options\n",
            EscapeTerminal(TruncateUtf8(arg, 100)).c_str(),
            EscapeTerminal(TruncateUtf8(argv[i + 1], 100)).c_str(),
            EscapeTerminal(TruncateUtf8(arg, 100)).c_str(), argv[1]);
        return Code(ExitCode::kBadInput);
      }
      ++i;  // the value
    }
  }
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
    std::fprintf(stderr, "pilot: error: unknown command '%s' (argv) — run `pilot --help` for the commands\n",
                 EscapeTerminal(TruncateUtf8(argv[1], 100)).c_str());
    return Code(ExitCode::kBadInput);
  }
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
    return Code(ExitCode::kBadInput);
  }
  return exit_code;
}

}  // namespace

namespace {
std::map<std::string, FolderCommands, std::less<>>& FolderCommandTable() {
  static std::map<std::string, FolderCommands, std::less<>> table;
  return table;
}
}  // namespace

void RegisterFolderCommands(const std::string& kind, FolderCommands commands) {
  FolderCommandTable()[kind] = std::move(commands);
}

const FolderCommands* FindFolderCommands(std::string_view kind) {
  auto it = FolderCommandTable().find(kind);
  return it == FolderCommandTable().end() ? nullptr : &it->second;
}

int Main(int argc, char** argv) {
  // Before pilot opens anything: the folders a parent handed down ("/proc/self/fd/N").
  NoteHandedDownFolders();
  // Merging or verifying many shards keeps a file open per shard: the soft limit on open
  // files is raised to the hard one (often 1024 against 4096 or more).
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  // The one place where anything unexpected ends: a clear message and a documented exit
  // code, never std::terminate. Library code returns errors as values; reaching here is a
  // defect in pilot, reported as bad input because no folder was trusted with it.
  try {
    return Dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "pilot: error: out of memory — an input is far larger than it should be\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pilot: error: unexpected failure: %s — please report this as a bug in pilot\n",
                 TruncateUtf8(e.what(), 500).c_str());
  } catch (...) {
    std::fprintf(stderr, "pilot: error: unexpected failure — please report this as a bug in pilot\n");
  }
  return Code(ExitCode::kBadInput);
}

}  // namespace pilot::cli
