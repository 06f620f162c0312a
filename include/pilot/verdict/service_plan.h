// `pilot plan --from LOAD --rate R` (docs/load.md, "From a load test to a plan"): the replicas a
// service needs to serve R requests per second at its SLO, from the highest rate one replica met
// it at in a load folder; how many replicas share a card where the measured (or stated) memory
// allows; and, for each card and rental period of the price file, the cards, lots, cost and cost
// per million requests.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/verdict/rental_plan.h"

namespace pilot {

// What a load folder measured of one replica.
struct ServiceBasis {
  std::string folder, fingerprint;
  std::string search;                       // single | rate-ladder | find-peak
  std::string device;                       // as recorded: cpu, cuda:0, ... or remote (a target)
  std::optional<DeviceClass> device_class;  // unknown for a target
  std::string device_name;                  // the GPU's or CPU's name, where recorded
  std::string target;                       // a target's URL
  double rate_per_replica = 0;              // requests/s that met the SLO (0: none did)
  std::string rate_basis;                   // where it comes from, for a person
  std::optional<double> memory_mb;          // one replica's peak, where measured
  std::string memory_basis;                 // device | rss
  std::string slo;                          // the SLO, for a person
  std::string manifest_sha256;
};

// Verifies the folder in full (refused, exit 2, with its first findings when it fails; with
// `expect`, another fingerprint is refused) and reads its basis. An interrupted load is refused.
Result<ServiceBasis> ReadServiceBasis(FileSystem& fs, const std::filesystem::path& dir,
                                      const std::optional<std::string>& expect);

struct ServicePlanRequest {
  ServiceBasis basis;
  PriceList prices;
  double rate = 0;                          // requests/s to serve
  double headroom = kDefaultHeadroom;       // share of a card's memory kept free
  std::optional<double> replica_memory_gb;  // one replica's memory, stated (over the measured)
  std::optional<double> assume_scaling;     // F x the rate on cards not measured
  std::string measured_on;                  // a target's card: a price-file card's name
};

struct ServicePlanRow {
  std::string card;
  int period_days = 0;
  std::size_t replicas = 0, per_card = 0, cards = 0, lots = 0;
  double rate_per_replica = 0;  // measured, or assumed (x assume_scaling)
  bool assumed = false;         // the rate is assumed: measured on another card or device class
  bool stand_in = false;        // the price file's row stands in for a card (a CPU, in a test)
  bool fits = true;             // a replica fits a card's memory (less the headroom), or fit is unknown
  std::string why;              // not fitting: why
  bool fit_known = false;
  double cost = 0;              // lots x the period's lot price
  double cost_per_million = 0;  // cost over the requests served in the period at `rate`
};

// The most replicas a plan counts; a rate needing more fits no card.
inline constexpr double kMaxServiceReplicas = 1e9;

struct ServicePlan {
  ServicePlanRequest request;
  std::vector<ServicePlanRow> rows;     // every card and period offered
  std::optional<std::size_t> cheapest;  // the fitting row of least cost per million
  std::vector<std::string> warnings;
  bool any_fits() const { return cheapest.has_value(); }
};

// Exit 2 for a rate not above 0 or beyond 10^9, or a stated memory not above 0; no row when no
// rate met the SLO (a warning says so).
Result<ServicePlan> BuildServicePlan(const ServicePlanRequest& request);
nlohmann::ordered_json ServicePlanToJson(const ServicePlan& plan);

}  // namespace pilot
