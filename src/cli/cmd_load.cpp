// `pilot load`: the pilot's stage behind the service's queue and dynamic batcher, driven at a
// rate or a concurrency, into a load folder (docs/load.md).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/torch_loader.h"
#include "pilot/clock.h"
#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/load/load_run.h"
#include "pilot/run_lock.h"
#include "pilot/verify.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct LoadOptions {
  Common common;
  std::string params = std::string(kDefaultParamsPath);
  std::string manifest, device, out, runs_dir = "runs";
  double rate = 0, duration_s = 0;
  std::size_t concurrency = 0;
  std::uint64_t requests = 0, seed = 1;
  bool ladder = false, peak = false;
  std::string arrivals = "poisson";
  int max_steps = 12;
  // --target
  std::string target, api, served_model, api_key_env, cacert;
  std::uint64_t max_tokens = 0;
  std::size_t max_in_flight = 256;
  bool no_stream = false;
  std::vector<std::string> argv;
  CLI::Option *rate_option = nullptr, *concurrency_option = nullptr, *duration_option = nullptr,
              *requests_option = nullptr;
};

Result<ArrivalProcess> ParseArrivals(const std::string& text) {
  ArrivalProcess p;
  if (text == "poisson") return p;
  if (text == "constant") {
    p.kind = ArrivalKind::kConstant;
    return p;
  }
  if (text.rfind("gamma:", 0) == 0) {
    const std::string k = text.substr(6);
    char* end = nullptr;
    const double shape = k.empty() ? 0 : std::strtod(k.c_str(), &end);
    if (!k.empty() && end && *end == '\0' && shape > 0 && shape <= 100) {
      p.kind = ArrivalKind::kGamma;
      p.shape = shape;
      return p;
    }
  }
  return BadInput(
      "'" + EscapeTerminal(text.substr(0, 40)) + "' is not poisson, constant or gamma:K (0 < K <= 100)",
      "--arrivals");
}

// The --target options: the URL checked, the API named, the key's variable set (never echoed).
Result<HttpTargetSpec> TargetFrom(const LoadOptions& o) {
  HttpTargetSpec t;
  auto url = CheckTargetUrl(o.target);
  if (!url.ok()) return url.error();
  t.url = url.value();
  if (o.api.empty())
    return BadInput("--target needs --api: embeddings, completions or chat", "--api",
                    "the OpenAI-compatible endpoint the requests go to (docs/load.md)");
  t.api = *OpenAiApiFromName(o.api);
  if (!o.device.empty())
    return BadInput("--device does not apply to --target: the service is remote", "--device");
  if (o.served_model.size() > 256)
    return BadInput("--served-model is longer than 256 characters", "--served-model");
  t.model = o.served_model;
  t.stream = !o.no_stream && t.api != OpenAiApi::kEmbeddings;
  if (t.api == OpenAiApi::kEmbeddings && (o.no_stream || o.max_tokens > 0))
    return BadInput("--no-stream and --max-tokens apply to completions and chat", "--api embeddings");
  t.max_tokens = o.max_tokens;  // 0: the parameters' generation.max_new_tokens, else 16
  t.max_in_flight = o.max_in_flight;
  if (!o.cacert.empty()) {
    auto pem = ReadCapped(RealFileSystem(), o.cacert, kMaxCaFileBytes, "--cacert file");
    if (!pem.ok()) return pem.error();
    if (pem.value().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      return BadInput("holds no PEM certificate (-----BEGIN CERTIFICATE-----)", o.cacert,
                      "--cacert takes a PEM file");
    std::error_code ec;
    t.cacert_file = fs::absolute(o.cacert, ec).lexically_normal().string();
    t.cacert_sha256 = Sha256Hex(pem.value());
    t.cacert_pem = std::move(pem).value();
  }
  if (!o.api_key_env.empty()) {
    const std::string& name = o.api_key_env;
    const bool valid =
        name.size() <= 128 && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
        std::all_of(name.begin(), name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid) return BadInput("--api-key-env takes an environment variable's name", "--api-key-env");
    const char* key = std::getenv(name.c_str());
    if (!key || !*key)
      return BadInput("the variable " + name + " that --api-key-env names is unset or empty", "--api-key-env",
                      "export it with the service's key (the key is never written or printed)");
    if (std::strpbrk(key, "\r\n"))
      return BadInput("the variable " + name + " holds a line break: it is not a key", "--api-key-env");
    t.api_key_env = name;
  }
  return t;
}

Result<LoadRequest> RequestFrom(const LoadOptions& o) {
  LoadRequest r;
  r.run.params_file = o.params;
  if (!o.manifest.empty()) r.run.manifest = fs::path(o.manifest);
  if (!o.device.empty()) r.run.device = o.device;
  r.run.runs_dir = o.runs_dir.empty() ? fs::path("runs") : fs::path(o.runs_dir);
  r.run.command_line = o.argv;
  r.out = o.out;
  const bool has_rate = o.rate_option->count() > 0, has_conc = o.concurrency_option->count() > 0;
  const int modes = int(has_rate && !o.peak) + int(has_conc) + int(o.ladder) + int(o.peak);
  if (modes != 1) {
    return BadInput("give exactly one of --rate, --concurrency, --rate-ladder and --find-peak", "pilot load",
                    "--find-peak may take --rate as the rate its search starts from");
  }
  if (has_rate && o.ladder) return BadInput("--rate does not apply to --rate-ladder", "--rate");
  if (o.duration_option->count() == 0 && o.requests_option->count() == 0)
    return BadInput("give --duration or --requests (or both): how long each step issues requests",
                    "pilot load");
  auto arrivals = ParseArrivals(o.arrivals);
  if (!arrivals.ok()) return arrivals.error();
  r.step.arrivals = arrivals.value();
  r.step.seed = o.seed;
  r.step.duration_ms = o.duration_s * 1000.0;
  r.step.requests = o.requests;
  if (has_conc) {
    r.step.mode = LoadMode::kConcurrency;
    r.step.concurrency = o.concurrency;
  } else {
    r.step.mode = LoadMode::kRate;
    r.step.arrivals.rate = has_rate ? o.rate : 0;
  }
  r.search = o.ladder ? LoadSearch::kLadder : o.peak ? LoadSearch::kPeak : LoadSearch::kNone;
  r.max_steps = o.max_steps;
  if (!o.target.empty()) {
    auto target = TargetFrom(o);
    if (!target.ok()) return target.error();
    r.target = std::move(target).value();
    if (has_conc && o.concurrency > kMaxInFlight)
      return BadInput("--concurrency over a target is at most " + std::to_string(kMaxInFlight),
                      "--concurrency");
    if (!o.api_key_env.empty()) r.api_key = std::getenv(o.api_key_env.c_str());
  } else {
    for (auto [given, name] :
         {std::pair{!o.api.empty(), "--api"}, std::pair{!o.served_model.empty(), "--served-model"},
          std::pair{o.max_tokens > 0, "--max-tokens"}, std::pair{o.no_stream, "--no-stream"},
          std::pair{!o.api_key_env.empty(), "--api-key-env"}, std::pair{!o.cacert.empty(), "--cacert"}}) {
      if (given)
        return BadInput(std::string(name) + " applies to a service over HTTP", name, "add --target URL");
    }
  }
  return r;
}

std::string Ms(const nlohmann::ordered_json& j) { return FixedDecimals(j.get<double>(), 2); }

int PrintLoad(const LoadOutcome& out, const Common& common) {
  std::error_code ec;
  const std::string dir = fs::absolute(out.dir, ec).lexically_normal().string();
  int code = out.interrupted    ? Code(ExitCode::kInterrupted)
             : !out.verify.ok() ? Code(ExitCode::kVerifyFailed)
             : out.slo_met      ? Code(ExitCode::kOk)
                                : Code(ExitCode::kAcceptanceFailed);
  const auto& s = out.summary;
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = code == 0;
    j["exit_code"] = code;
    j["load_dir"] = dir;
    j["state"] = out.interrupted ? "interrupted" : "finished";
    j["load"] = s;
    j["verify"] = VerifyResultToJson(out.dir, out.verify);
    j["fingerprint"] = out.fingerprint;
    PrintJson(j);
    return code;
  }
  const bool remote = s["request"].contains("target");
  const std::string where = remote ? s["request"]["target"]["url"].get<std::string>() + " (" +
                                         s["request"]["target"]["api"].get<std::string>() + ", model " +
                                         s["request"]["target"]["model"].get<std::string>() + ")"
                                   : s["stage"]["device"].get<std::string>();
  std::printf("load %s %s %s: %s, %zu step(s)%s\n", s["load"].get<std::string>().c_str(),
              remote ? "against" : "on", EscapeTerminal(where).c_str(),
              s["search"].get<std::string>().c_str(), s["steps"].size(),
              out.interrupted ? ", interrupted" : "");
  const auto& cold = s["cold_start"];
  if (remote && cold.contains("first_request_ms")) {
    std::printf("  cold start: the first request alone %s ms (%s)\n", Ms(cold["first_request_ms"]).c_str(),
                cold["first_request_outcome"].get<std::string>().c_str());
  } else if (cold.contains("first_request_ms")) {
    std::printf("  cold start: model load %s ms, first request %s ms\n", Ms(cold["model_load_ms"]).c_str(),
                Ms(cold["first_request_ms"]).c_str());
  }
  for (const auto& step : s["steps"]) {
    const auto& f = step["figures"];
    std::string what = step["mode"] == "rate"
                           ? "rate " + FixedDecimals(step["rate"].get<double>(), 1) + "/s"
                           : "concurrency " + std::to_string(step["concurrency"].get<std::size_t>());
    std::printf(
        "  step %zu (%s): issued %zu = completed %zu + over capacity %zu + rejected %zu + timed out %zu + "
        "failed %zu; achieved %s/s, goodput %s/s; e2e p50 %s ms, p99 %s ms (of %zu)%s\n",
        step["step"].get<std::size_t>(), what.c_str(), f["issued"].get<std::size_t>(),
        f["completed"].get<std::size_t>(), f["over_capacity"].get<std::size_t>(),
        f["rejected"].get<std::size_t>(), f["timed_out"].get<std::size_t>(), f["failed"].get<std::size_t>(),
        FixedDecimals(f["achieved_per_s"].get<double>(), 1).c_str(),
        FixedDecimals(f["goodput_per_s"].get<double>(), 1).c_str(), Ms(f["e2e_ms"]["p50"]["ms"]).c_str(),
        Ms(f["e2e_ms"]["p99"]["ms"]).c_str(), f["e2e_ms"]["p99"]["count"].get<std::size_t>(),
        f["slo_met"].get<bool>() ? "; SLO met" : "; SLO missed");
    if (f.contains("ttft_ms")) {
      std::printf(
          "      TTFT p50 %s / p99 %s ms, TPOT p50 %s / p99 %s ms, ITL p99 %s ms, %s output tokens/s\n",
          Ms(f["ttft_ms"]["p50"]["ms"]).c_str(), Ms(f["ttft_ms"]["p99"]["ms"]).c_str(),
          Ms(f["tpot_ms"]["p50"]["ms"]).c_str(), Ms(f["tpot_ms"]["p99"]["ms"]).c_str(),
          Ms(f["itl_ms"]["p99"]["ms"]).c_str(),
          FixedDecimals(f["output_tokens_per_s"].get<double>(), 1).c_str());
    }
    if (!f["slo_met"].get<bool>() && f["more_needed"].is_number()) {
      std::printf(
          "      (the percentile cannot be shown met: %llu more requests, all within the SLO, would be "
          "needed)\n",
          static_cast<unsigned long long>(f["more_needed"].get<std::uint64_t>()));
    }
  }
  const auto& slo = s["service"]["slo"];
  std::string bounds;
  for (const char* key : {"e2e_ms", "ttft_ms", "tpot_ms"}) {
    if (slo.contains(key)) bounds += std::string(bounds.empty() ? "" : ", ") + key + " <= " + Ms(slo[key]);
  }
  std::printf("SLO (p%s: %s, at %s%% confidence): %s",
              FixedDecimals(slo["percentile"].get<double>() * 100, 1).c_str(), bounds.c_str(),
              FixedDecimals(slo["confidence"].get<double>() * 100, 1).c_str(),
              out.interrupted ? "no verdict (interrupted)"
              : out.slo_met   ? "met"
                              : "missed");
  if (s["verdict"].contains("peak_rate")) {
    const auto& peak = s["verdict"]["peak_rate"];
    std::printf("; the highest rate that met it: %s",
                peak.is_number() ? (FixedDecimals(peak.get<double>(), 1) + "/s").c_str() : "none");
  }
  std::printf("\n");
  if (!out.verify.ok()) PrintFindings(out.verify.findings);
  std::printf("load folder: %s (load.json, requests.csv, report.html)\n", dir.c_str());
  std::printf("fingerprint: %s\n", out.fingerprint.c_str());
  return code;
}

int Execute(const LoadOptions& o) {
  ApplyLogLevel(o.common);
  if (Status st = CheckDefaultParams(o.params); !st.ok()) return ReportError(st.error(), o.common);
  auto request = RequestFrom(o);
  if (!request.ok()) return ReportError(request.error(), o.common);
  LoadControl control;
  control.should_stop = InterruptRequested;
  control.on_ready = [] { InstallInterruptHandlers(); };
  if (!o.common.quiet && !o.common.json) {
    control.on_progress = [](const std::string& line) { std::fprintf(stderr, "pilot: %s\n", line.c_str()); };
  }
  auto outcome = RunLoad(RealFileSystem(), SystemClock(), TorchRuntime(), request.value(), control);
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  return PrintLoad(outcome.value(), o.common);
}

int LoadStatusCommand(const std::string& dir, const Common& common) {
  auto st = ReadLoadStatus(RealFileSystem(), dir);
  if (!st.ok()) return ReportError(st.error(), common);
  const RunStatus& s = st.value();
  if (common.json) {
    PrintJson(RunStatusToJson(s));
    return 0;
  }
  std::printf("load %s: %s%s\n", EscapeTerminal(s.run_id).c_str(), s.state.c_str(),
              s.writer_pid ? (" (" + LockHolderText(*s.writer_pid) + ")").c_str() : "");
  if (s.state == "running") {
    std::printf("  its steps are written when it ends\n");
  } else if (s.done > 0) {
    std::printf(
        "  %zu step(s) measured (data/load.json)%s\n", s.done,
        s.state == "interrupted" ? "; interrupted, so no verdict: a load folder does not resume" : "");
  } else {
    std::printf(
        "  nothing measured: the process was stopped before the end (a load folder does not resume); "
        "run `pilot load` again\n");
  }
  return 0;
}

int ResumeLoadCommand(const ResumeArgs& args) {
  return ReportError(
      BadInput("a load folder does not resume: its requests' times belong to the one run that made "
               "them",
               args.dir, "run `pilot load` again into a new folder"),
      args.common);
}

}  // namespace

void AddLoadCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& argv) {
  RegisterFolderCommands(kFolderKindLoad, {ResumeLoadCommand, LoadStatusCommand});
  auto o = std::make_shared<LoadOptions>();
  CLI::App* cmd = app.add_subcommand("load",
                                     "Drive the stage as an interactive service at a rate: queue wait, "
                                     "latency percentiles, the SLO verdict");
  cmd->add_option("--params", o->params, "Parameter file (its `service` object defines the service)")
      ->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "Manifest to use instead of the one the parameters name");
  cmd->add_option("--device", o->device,
                  "auto | cpu | cuda | rocm | cuda:N | rocm:N (default: the parameters' device)");
  o->rate_option =
      cmd->add_option("--rate", o->rate,
                      "Requests per second, open loop (with --find-peak: where the search starts)")
          ->check(CLI::Range(1e-3, 1e6));
  o->concurrency_option = cmd->add_option("--concurrency", o->concurrency,
                                          "Clients, each sending its next request when its last one ends")
                              ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--rate-ladder", o->ladder,
                "Synchronous first, then its rate doubled step by step until the first step beyond capacity");
  cmd->add_flag("--find-peak", o->peak,
                "Search for the highest rate that meets the SLO (every rate tried is a step)");
  o->duration_option = cmd->add_option("--duration", o->duration_s, "Seconds each step issues requests")
                           ->check(CLI::Range(1e-3, 86400.0));
  o->requests_option =
      cmd->add_option("--requests", o->requests, "Requests each step issues (at most 1048576)")
          ->check(CLI::Range(std::uint64_t{1}, kMaxStepRequests));
  cmd->add_option("--arrivals", o->arrivals, "poisson | constant | gamma:K (K < 1 burstier than Poisson)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "The arrival schedule's seed")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{9007199254740991ull}));
  cmd->add_option("--max-steps", o->max_steps, "Most steps of --rate-ladder or --find-peak (2-64)")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  cmd->add_option("--target", o->target,
                  "An OpenAI-compatible service's base URL (http:// or https://): the requests go to it over "
                  "HTTP instead of to the stage, which is pinned but not loaded");
  cmd->add_option("--api", o->api, "With --target: embeddings, completions or chat (/v1/chat/completions)")
      ->check(CLI::IsMember({"embeddings", "completions", "chat"}));
  cmd->add_option("--served-model", o->served_model,
                  "With --target: the model name sent (default: the one model GET /v1/models lists)");
  cmd->add_option(
         "--max-tokens", o->max_tokens,
         "With --target, completions and chat: max_tokens (default: generation.max_new_tokens, else 16)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{32768}));
  cmd->add_flag("--no-stream", o->no_stream,
                "With --target, completions and chat: whole answers (no TTFT or ITL) instead of a stream");
  cmd->add_option("--api-key-env", o->api_key_env,
                  "With --target: the environment variable holding a bearer token (sent, never recorded)");
  cmd->add_option("--cacert", o->cacert,
                  "With --target: a PEM file of the certificates an https:// target's is verified against "
                  "(default: the system's); its path and sha256 are recorded");
  cmd->add_option("--max-in-flight", o->max_in_flight,
                  "With --target and --rate: requests open at once; one more fails client_in_flight_bound")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, kMaxInFlight));
  cmd->add_option("--out", o->out, "The load folder to create (default: RUNS_DIR/<id>-load)");
  cmd->add_option("--runs-dir", o->runs_dir, "Folder that receives the load folder")->capture_default_str();
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Requests cycle through the manifest's items (the first 10000). Each ends completed, over_capacity,\n"
      "rejected (its reason), timed_out or failed; latency counts from its scheduled arrival. The SLO and\n"
      "the service (max batch, max wait, queue bound, behaviour at capacity, deadline) are the parameters'\n"
      "`service` (docs/load.md). Exit 0 SLO met (a search: some rate met it), 4 missed, 1 the folder does\n"
      "not verify, 2 bad input, 3 environment, 5 failure during work, 130 interrupted (the folder keeps\n"
      "what was measured; a load folder does not resume).");
  cmd->callback([o, &exit_code, &argv] {
    o->argv = argv;
    exit_code = Execute(*o);
  });
}

}  // namespace pilot::cli
