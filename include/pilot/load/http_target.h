// `pilot load --target URL` (docs/load.md, "A service over HTTP"): the same steps as the
// in-process load, issued over HTTP to an OpenAI-compatible service by libcurl's multi interface
// on one thread. A request's arrival is its scheduled time whether or not the client could send
// it then; its answer, whole or streamed, becomes exactly one outcome (openai_api.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pilot/load/load_driver.h"
#include "pilot/load/openai_api.h"
#include "pilot/status.h"

namespace pilot {

struct HttpTargetSpec {
  std::string url;  // the base (scheme, host, port, a path prefix), without credentials, query or fragment
  OpenAiApi api = OpenAiApi::kCompletions;
  std::string model;  // the served model's name, sent in every request
  bool stream = true;
  std::uint64_t max_tokens = 16;
  std::size_t max_in_flight = 256;  // requests open at once; a rate's request beyond it fails
  std::string api_key_env;          // the variable holding a bearer token ("": none); never the key
  // --cacert: the certificates (PEM) the target's is verified against instead of the system's;
  // its path and sha256 are recorded, and the bytes read once are the ones used.
  std::string cacert_file, cacert_sha256, cacert_pem;
};

// The most bytes of a --cacert file.
inline constexpr std::size_t kMaxCaFileBytes = 1u << 20;

inline constexpr std::size_t kMaxInFlight = 4096;

// libcurl's version line (with its TLS library's), for the environment record.
std::string LibcurlVersion();
// A request's limit when the service sets no deadline: past it, the request timed out.
inline constexpr double kNoDeadlineLimitMs = 300000;
// After a stop, open requests get this long to end, then fail `interrupted`.
inline constexpr double kStopGraceMs = 10000;

// A --target URL checked: http or https, a host, no user name or password, query or fragment
// (exit 2 naming --target, without echoing credentials). Returns the base without a trailing '/'.
Result<std::string> CheckTargetUrl(const std::string& url);
// The URL of the API's endpoint under the base (a base ending in /v1 is not doubled).
std::string EndpointUrl(const std::string& base, const std::string& path);

// Asks GET <base>/v1/models within 10 s. A target that cannot be reached (no connection, a TLS
// failure, no HTTP answer) is exit 3 naming it. Returns the answer's status and the model ids
// listed (empty when the answer is not 200 or not a model list).
struct TargetProbe {
  long status = 0;
  std::vector<std::string> models;
};
Result<TargetProbe> ProbeTarget(const HttpTargetSpec& spec, const std::string& api_key);

// The target as recorded (run.json's request.load.target): never the key.
nlohmann::ordered_json HttpTargetToJson(const HttpTargetSpec& spec);
Result<HttpTargetSpec> HttpTargetFromJson(const nlohmann::json& j, const std::string& where);

// One step against the target: request k carries item k mod items (`texts`; a non-empty
// `rejection` rejects it at arrival, unsent). `deadline_ms` (0: kNoDeadlineLimitMs) bounds each
// request from its arrival. After `should_stop`, issuing ends and open requests get kStopGraceMs.
LoadStepResult RunHttpStep(const LoadStep& step, const HttpTargetSpec& spec, const std::string& api_key,
                           const std::vector<std::string>& texts, const std::vector<std::string>& rejection,
                           double deadline_ms, LoadClock& clock, const std::function<bool()>& should_stop,
                           const LoadTick& on_tick = nullptr);

}  // namespace pilot
