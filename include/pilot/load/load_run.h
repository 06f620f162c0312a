// `pilot load` (docs/load.md): the pilot's own stage behind the service's dynamic batcher and
// queue, driven at a rate or a concurrency, step by step (one step; a ladder from synchronous to
// saturation; or the search for the highest rate that meets the SLO), into a load folder: a
// BagIt bag of kind `load`.
//
// Layout: data/run.json (kind, request, pins, service, stage), data/params.json and the manifest
// copy, data/environment.json, data/load.json (cold start, every step's figures, the verdict),
// data/requests.jsonl and data/requests.csv (one line per issued request, every step), and
// data/report.html (the latency CDF and the rate-against-latency curve).
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/load/http_target.h"
#include "pilot/load/load_driver.h"
#include "pilot/load/load_figures.h"
#include "pilot/load/load_files.h"
#include "pilot/load/load_service.h"
#include "pilot/plan.h"
#include "pilot/run_session.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

// The most manifest items a load test cycles through (the first ones, in manifest order).
inline constexpr std::size_t kMaxLoadItems = 10000;

enum class LoadSearch {
  kNone,    // one step at --rate or --concurrency
  kLadder,  // synchronous, then its rate doubled, until the first step beyond capacity
  kPeak,    // the highest rate that meets the SLO (LoadGen's kind of search)
};
const char* LoadSearchName(LoadSearch search);  // single | rate-ladder | find-peak

struct LoadRequest {
  RunRequest run;             // params, manifest, device, runs dir, command line
  std::filesystem::path out;  // empty: RUNS_DIR/<run id>-load
  LoadSearch search = LoadSearch::kNone;
  LoadStep step;                // the first step (find-peak: its rate is the start when > 0)
  int max_steps = 12;           // a ladder's or a search's steps, the synchronous one included
  double peak_precision = 0.1;  // find-peak: the met and missed rates within this (relative)
  // --target: the requests go over HTTP to this service, and the parameters' stage is pinned and
  // recorded but not loaded. `api_key` (from the variable spec.api_key_env names) is never recorded.
  std::optional<HttpTargetSpec> target;
  std::string api_key;
};

struct LoadControl {
  std::function<bool()> should_stop;                    // polled while issuing
  std::function<void(const std::string&)> on_progress;  // a line after each step
  std::function<void()> on_ready;                       // the setup done, before the folder is made
};

struct LoadOutcome {
  std::filesystem::path dir;
  bool interrupted = false;
  bool slo_met = false;            // one step: its verdict; a ladder or a search: some rate met it
  nlohmann::ordered_json summary;  // load.json
  VerifyResult verify;
  std::string fingerprint;
};

// Sets up (the plan, the environment against `requires`, the stage on its device, the service
// from the parameters: exit 2 or 3 with nothing created), creates the folder, measures the cold
// start, runs the steps and finishes the bag. With a target: the target must answer (exit 3), and
// neither the stage nor `requires` is checked here (they are the service's).
Result<LoadOutcome> RunLoad(FileSystem& fs, Clock& clock, Runtime& runtime, const LoadRequest& request,
                            const LoadControl& control);

// One step as load.json and the records hold it.
struct LoadStepRecord {
  LoadStep step;
  LoadStepResult result;
  LoadFigures figures;
};
nlohmann::ordered_json LoadFiguresToJson(const LoadFigures& f);
// What was asked (run.json's request.load): the search, the first step, the most steps and the
// search's precision. Verify replays a ladder or a search from it.
nlohmann::ordered_json LoadRequestToJson(const LoadRequest& r);
Result<LoadRequest> LoadRequestFromJson(const nlohmann::json& j, const std::string& where);
// A ladder's stop: a request refused or timed out, or less than 0.9 of the requests to serve
// (those not rejected by their item's own reason) served at their offered rate.
bool BeyondCapacity(const LoadFigures& f);
nlohmann::ordered_json LoadStepToJson(const LoadStepRecord& s, std::size_t index);
// A request as one line of requests.jsonl (`item_id`: its manifest id).
nlohmann::ordered_json RequestToJson(const RequestRecord& r, std::size_t step, const std::string& item_id);
// Parses one line of requests.jsonl (exit 2 naming `where` on any missing or wrong field).
struct ParsedRequest {
  std::size_t step = 0;
  std::string item_id;
  RequestRecord record;
};
Result<ParsedRequest> ParseRequestLine(std::string_view line, const std::string& where);
std::string RequestsCsv(const std::vector<LoadStepRecord>& steps, const std::vector<std::string>& item_ids);
std::string LoadHtml(const nlohmann::ordered_json& summary, const std::vector<LoadStepRecord>& steps);

// Verify's checks of a load folder: the record and summary parse; every request line parses, each
// step's ids run 0..n-1 with one outcome each; each step's figures and the verdict recomputed from
// the records equal load.json's.
void CheckLoadFolder(FileSystem& fs, const std::filesystem::path& dir, std::vector<Finding>& findings);
Result<RunStatus> ReadLoadStatus(FileSystem& fs, const std::filesystem::path& dir);
void RegisterLoadFolderKind(FolderKindRegistry& registry);

}  // namespace pilot
