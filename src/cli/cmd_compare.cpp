// `pilot compare RUN_A RUN_B`: item agreement, quality, speed and memory of two runs over the
// same manifest, and what changed between them.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/destination.h"
#include "pilot/json_file.h"
#include "pilot/json_util.h"
#include "pilot/paths.h"
#include "pilot/utf8.h"
#include "pilot/verdict/compare.h"

namespace pilot::cli {
namespace {

// A tolerance past this agrees with anything: a typo, never a measurement.
constexpr double kMaxTolerance = 1e6;

struct CompareCliOptions {
  Common common;
  std::string a, b, out;
  double tolerance = CompareOptions{}.tolerance;
};

int Execute(const CompareCliOptions& o) {
  ApplyLogLevel(o.common);
  auto a = ResolveGivenFolder(RealFileSystem(), o.a, "a finished run or merged folder (RUN_A)");
  if (!a.ok()) return ReportError(a.error(), o.common);
  auto b = ResolveGivenFolder(RealFileSystem(), o.b, "a finished run or merged folder (RUN_B)");
  if (!b.ok()) return ReportError(b.error(), o.common);
  if (!o.out.empty()) {  // refused before the comparison, not after it
    auto out = ResolveDestination(RealFileSystem(), o.out, "--out", Destination::kFolder);
    if (!out.ok()) return ReportError(out.error(), o.common);
  }
  CompareOptions options;
  options.tolerance = o.tolerance;
  auto outcome = CompareRuns(CliFileSystem(), a.value(), b.value(), options);
  if (!outcome.ok()) return ReportError(outcome.error(), o.common);
  const CompareOutcome& out = outcome.value();
  if (!out.failed_verification.empty()) {
    const int code = Code(ExitCode::kVerifyFailed);
    if (o.common.json) {
      nlohmann::ordered_json j;
      j["ok"] = false;
      j["exit_code"] = code;
      j["failed_verification"] = nlohmann::ordered_json::array();
      for (const auto& [dir, v] : out.failed_verification)
        j["failed_verification"].push_back(VerifyResultToJson(dir, v));
      PrintJson(j);
    } else {
      for (const auto& [dir, v] : out.failed_verification) {
        PrintFindings(v.findings, "verify of " + dir + ": FAILED (nothing was compared)");
      }
    }
    return code;
  }
  const nlohmann::ordered_json& d = out.document;
  if (!o.out.empty()) {
    if (Status st = WriteCompare(CliFileSystem(), o.out, d); !st.ok())
      return ReportError(st.error(), o.common);
  }
  const int code = Code(out.within_tolerance ? ExitCode::kOk : ExitCode::kVerifyFailed);
  if (o.common.json) {
    nlohmann::ordered_json j = d;
    j["ok"] = out.within_tolerance;
    j["exit_code"] = code;
    if (!o.out.empty()) j["written"] = {o.out + "/compare.json", o.out + "/compare.md"};
    PrintJson(j);
    return code;
  }
  const auto& it = d["items"];
  std::printf("compare A %s (%s, %s) with B %s (%s, %s): same manifest %s\n",
              JsonValueText(d["a"]["folder"]).c_str(), JsonValueText(d["a"]["device"]).c_str(),
              JsonValueText(d["a"]["dtype"]).c_str(), JsonValueText(d["b"]["folder"]).c_str(),
              JsonValueText(d["b"]["device"]).c_str(), JsonValueText(d["b"]["dtype"]).c_str(),
              JsonValueText(d["manifest_sha256"]).substr(0, 12).c_str());
  std::printf("what changed: %s\n", JsonValueText(d["change_summary"]).c_str());
  for (const auto& c : d["changes"]) {
    std::printf("  %-28s %s -> %s  (%s)\n", JsonValueText(c["name"]).c_str(), JsonValueText(c["a"]).c_str(),
                JsonValueText(c["b"]).c_str(), JsonValueText(c["source"]).c_str());
  }
  for (const auto& w : d["warnings"]) std::printf("warning: %s\n", JsonValueText(w).c_str());
  std::printf("items: %s of %s agree (same status, same category or reason, within tolerance %s)\n",
              JsonValueText(it["agree"]).c_str(), JsonValueText(it["total"]).c_str(),
              JsonValueText(d["tolerance"]).c_str());
  if (it.contains("max_confidence_difference")) {
    std::printf("  confidence: max |A - B| %s, mean %s\n",
                JsonValueText(it["max_confidence_difference"]).c_str(),
                JsonValueText(it["mean_confidence_difference"]).c_str());
  } else {
    std::printf("  vectors: max |A - B| %s, cosine min %s, mean %s\n",
                JsonValueText(it["max_vector_difference"]).c_str(), JsonValueText(it["min_cosine"]).c_str(),
                JsonValueText(it["mean_cosine"]).c_str());
  }
  const auto& q = d["quality"];
  std::printf("quality: accuracy A %s, B %s (delta %s); expected rejections met A %s, B %s\n",
              JsonValueText(q["accuracy_a"]).c_str(), JsonValueText(q["accuracy_b"]).c_str(),
              JsonValueText(q["accuracy_delta"]).c_str(),
              JsonValueText(q["expected_rejections_met_a"]).c_str(),
              JsonValueText(q["expected_rejections_met_b"]).c_str());
  const auto& p = d["performance"];
  std::printf("B / A: throughput %s, latency p95 %s, peak RSS %s, device peak memory %s\n",
              JsonValueText(p["throughput_items_per_s"]["b_over_a"]).c_str(),
              JsonValueText(p["latency_p95_ms"]["b_over_a"]).c_str(),
              JsonValueText(p["peak_rss_mb"]["b_over_a"]).c_str(),
              JsonValueText(p["device_peak_memory_mb"]["b_over_a"]).c_str());
  if (!out.within_tolerance) {
    std::printf("differing items (%s):\n", JsonValueText(it["differ"]).c_str());
    std::size_t shown = 0;
    for (const auto& x : d["differences"]) {
      if (++shown > 50) {
        std::printf("  ... (%s listed in compare.json with --out, or --json)\n",
                    JsonValueText(d["differences_listed"]).c_str());
        break;
      }
      std::printf("  %s: %s %s -> %s\n", JsonValueText(x["id"]).c_str(), JsonValueText(x["what"]).c_str(),
                  JsonValueText(x["a"]).c_str(), JsonValueText(x["b"]).c_str());
    }
  }
  if (!o.out.empty()) std::printf("wrote %s/compare.json and %s/compare.md\n", o.out.c_str(), o.out.c_str());
  std::printf("verdict: %s\n",
              out.within_tolerance ? "the runs agree within tolerance" : "the runs differ beyond tolerance");
  return code;
}

}  // namespace

void AddCompareCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two runs over the same manifest: item agreement, quality, speed, memory, and what changed");
  cmd->add_option("RUN_A", o->a, "The reference run (or merged) folder")->required();
  cmd->add_option("RUN_B", o->b, "The changed run (or merged) folder")->required();
  cmd->add_option("--tolerance", o->tolerance,
                  "Largest |confidence A - B| (classifiers) or |element A - B| (embeddings) that agrees "
                  "(default 1e-3)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty()) return EmptyValueMessage(v);
            char* end = nullptr;
            const double d = std::strtod(v.c_str(), &end);
            const bool ok =
                end && *end == '\0' && !v.empty() && std::isfinite(d) && d >= 0 && d <= kMaxTolerance;
            return ok ? std::string() : "must be a finite number from 0 to 1e6";
          },
          "X"));
  cmd->add_option("--out", o->out,
                  "Write compare.json and compare.md into this folder (created; never overwritten)");
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "Both folders are verified in full first. Exit 0: every item agrees (same status, same category or\n"
      "reason, within the tolerance); 1: items differ (listed), or a folder fails verification; 2: the\n"
      "runs used different manifests (both sha256s named), or a folder is not a finished run or merged "
      "folder.\n"
      "What changed is read from each run's params.json, run.json (the effective device, dtype, batch size,\n"
      "threads, batch plan, model) and environment.json; more than one change is a warning: the rule is\n"
      "one change at a time, each with an equivalent quality check. `pilot decide --compare` takes "
      "compare.json.");
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
