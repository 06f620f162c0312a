#include "pilot/load/load_service.h"

#include "pilot/json_util.h"

namespace pilot {

namespace {
constexpr const char* kHint = "see docs/load.md, 'The service'";
}  // namespace

Result<ServiceSpec> ParseService(const nlohmann::json& obj, const std::string& source, bool generates) {
  const SettingsReader r(obj, "service", source, kHint);
  if (!obj.is_object()) {
    static const nlohmann::json kNone = nlohmann::json::object();
    return SettingsReader(kNone, "", source, kHint).Wrong("service", "must be an object");
  }
  PILOT_TRY(CheckKnownKeys(obj,
                           {"max_request_bytes", "max_batch", "max_wait_ms", "queue_bound", "at_capacity",
                            "grow_bound", "deadline_ms", "slo"},
                           "service", source, kHint));
  ServiceSpec s;
  PILOT_TRY(r.Whole("max_request_bytes", s.max_request_bytes, 1, 1000000000000ull));
  PILOT_TRY(r.Whole("max_batch", s.batcher.max_batch, 1, kMaxServiceBatch));
  PILOT_TRY(r.Number("max_wait_ms", s.batcher.max_wait_ms, 0, kMaxServiceMs));
  PILOT_TRY(r.Whole("queue_bound", s.batcher.queue_bound, 1, kMaxQueueBound));
  std::string at_capacity = "refuse";
  PILOT_TRY(r.OneOf("at_capacity", at_capacity, {"refuse", "grow"}));
  s.batcher.grow_at_capacity = at_capacity == "grow";
  if (s.batcher.grow_at_capacity) {
    if (!r.Has("grow_bound")) return r.Wrong("grow_bound", "is required with at_capacity \"grow\"");
    PILOT_TRY(r.Whole("grow_bound", s.batcher.grow_bound, 1, kMaxQueueBound));
    if (s.batcher.grow_bound < s.batcher.queue_bound)
      return r.Wrong("grow_bound", "must be at least queue_bound (the queue grows from it)");
  } else if (r.Has("grow_bound")) {
    return r.Wrong("grow_bound", "applies to at_capacity \"grow\" only");
  }
  PILOT_TRY(r.Number("deadline_ms", s.batcher.deadline_ms, 0, kMaxServiceMs));
  if (!r.Has("slo")) return r.Wrong("slo", "is required: the latency the service must meet");
  const nlohmann::json& slo = obj["slo"];
  const SettingsReader q(slo, "service.slo", source, kHint);
  if (!slo.is_object()) return r.Wrong("slo", "must be an object");
  PILOT_TRY(CheckKnownKeys(slo, {"percentile", "confidence", "e2e_ms", "ttft_ms", "tpot_ms"}, "service.slo",
                           source, kHint));
  PILOT_TRY(q.Number("percentile", s.slo.percentile, 0.5, 0.9999));
  PILOT_TRY(q.Number("confidence", s.slo.confidence, 0.5, 0.9999));
  PILOT_TRY(q.Number("e2e_ms", s.slo.bound_ms, 0, kMaxServiceMs, /*open_lo=*/true));
  for (const char* key : {"ttft_ms", "tpot_ms"}) {
    if (q.Has(key) && !generates) return q.Wrong(key, "applies to a stage that generates");
  }
  PILOT_TRY(q.Number("ttft_ms", s.slo.ttft_ms, 0, kMaxServiceMs, /*open_lo=*/true));
  PILOT_TRY(q.Number("tpot_ms", s.slo.tpot_ms, 0, kMaxServiceMs, /*open_lo=*/true));
  if (!(s.slo.bound_ms > 0) && !(s.slo.ttft_ms > 0) && !(s.slo.tpot_ms > 0))
    return q.Wrong("e2e_ms", generates ? "or ttft_ms or tpot_ms is required: a bound to meet"
                                       : "is required: the bound to meet");
  return s;
}

nlohmann::ordered_json ServiceToJson(const ServiceSpec& spec) {
  const ServiceSettings& b = spec.batcher;
  nlohmann::ordered_json slo = {{"percentile", spec.slo.percentile}, {"confidence", spec.slo.confidence}};
  if (spec.slo.bound_ms > 0) slo["e2e_ms"] = spec.slo.bound_ms;
  if (spec.slo.ttft_ms > 0) slo["ttft_ms"] = spec.slo.ttft_ms;
  if (spec.slo.tpot_ms > 0) slo["tpot_ms"] = spec.slo.tpot_ms;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (spec.max_request_bytes > 0)
    j["max_request_bytes"] = spec.max_request_bytes;  // absent: limits.max_bytes
  j.update(nlohmann::ordered_json{{"max_batch", b.max_batch},
                                  {"max_wait_ms", b.max_wait_ms},
                                  {"queue_bound", b.queue_bound},
                                  {"at_capacity", b.grow_at_capacity ? "grow" : "refuse"}});
  if (b.grow_at_capacity) j["grow_bound"] = b.grow_bound;
  j["deadline_ms"] = b.deadline_ms;
  j["slo"] = slo;
  return j;
}

}  // namespace pilot
