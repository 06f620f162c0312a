// The interactive service a load test drives (docs/load.md, "The service"): the parameters'
// `service` object read into the batcher's settings, the largest request and the SLO. All of it
// is recorded in the load folder.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "pilot/load/batcher.h"
#include "pilot/load/load_figures.h"
#include "pilot/status.h"

namespace pilot {

struct ServiceSpec {
  ServiceSettings batcher;
  // The largest request, in bytes of its input: a larger one is rejected `too_large` before it is
  // queued. 0: the parameters' limits.max_bytes alone.
  std::uint64_t max_request_bytes = 0;
  LatencySlo slo;
};

// Bounds on the settings (each refused beyond, naming the key).
inline constexpr std::uint64_t kMaxServiceBatch = 4096, kMaxQueueBound = 1u << 20;
inline constexpr double kMaxServiceMs = 3600000;  // an hour

// Reads `service` (exit 2 naming the key path and `source` on any unknown key, wrong type or value
// out of range). `slo` is required with at least one bound; `generates`: the stage generates
// (ttft_ms and tpot_ms apply to nothing else).
Result<ServiceSpec> ParseService(const nlohmann::json& obj, const std::string& source, bool generates);
nlohmann::ordered_json ServiceToJson(const ServiceSpec& spec);

}  // namespace pilot
