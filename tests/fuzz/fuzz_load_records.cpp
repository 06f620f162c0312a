// Fuzzes what verify reads of a load folder: the first byte picks the parser. 0: a line of
// data/requests.jsonl (ParseRequestLine); 1 or 2: the `service` of data/run.json (ParseService, a
// generator's when 2); 3: up to 64 request lines summarized (SummarizeLoad) as verify recomputes a
// step's figures.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "pilot/load/load_run.h"

namespace {

using namespace pilot;

void CheckRecord(const RequestRecord& r) {
  PILOT_FUZZ_CHECK(std::isfinite(r.arrived_ms) && std::isfinite(r.started_ms) &&
                   std::isfinite(r.finished_ms));
  PILOT_FUZZ_CHECK(r.arrived_ms >= 0 && r.arrived_ms <= r.started_ms && r.started_ms <= r.finished_ms);
  PILOT_FUZZ_CHECK(r.id <= kMaxStepRequests);
  PILOT_FUZZ_CHECK(r.tpot_ms.has_value() == !r.itl_ms.empty() || !r.ttft_ms);
  if (r.outcome == RequestOutcome::kRejected || r.outcome == RequestOutcome::kFailed)
    PILOT_FUZZ_CHECK(!r.reason.empty());
  for (double g : r.itl_ms) PILOT_FUZZ_CHECK(std::isfinite(g) && g >= 0);
}

void CheckPercentiles(const std::vector<PercentileFigure>& ps, std::size_t count) {
  for (const PercentileFigure& p : ps) {
    PILOT_FUZZ_CHECK(std::isfinite(p.ms));
    if (count) PILOT_FUZZ_CHECK(p.count == count);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 4;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (which == 0) {
    auto p = ParseRequestLine(text, "fuzz/requests.jsonl:1");
    if (!p.ok()) {
      PILOT_FUZZ_CHECK(p.error().kind == ErrorKind::kBadInput && !p.error().what.empty());
      return 0;
    }
    CheckRecord(p.value().record);
    PILOT_FUZZ_CHECK(!p.value().item_id.empty());
    // What verify reads is what a load writes: the record round-trips.
    const std::string line =
        nlohmann::json(RequestToJson(p.value().record, p.value().step, p.value().item_id)).dump();
    auto again = ParseRequestLine(line, "again");
    PILOT_FUZZ_CHECK(again.ok());
    PILOT_FUZZ_CHECK(
        nlohmann::json(RequestToJson(again.value().record, again.value().step, again.value().item_id))
            .dump() == line);
    return 0;
  }
  if (which == 1 || which == 2) {
    auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    auto s = ParseService(j, "fuzz/run.json", which == 2);
    if (!s.ok()) {
      PILOT_FUZZ_CHECK(s.error().kind == ErrorKind::kBadInput && !s.error().what.empty());
      return 0;
    }
    const ServiceSpec& v = s.value();
    PILOT_FUZZ_CHECK(v.batcher.max_batch >= 1 && v.batcher.max_batch <= kMaxServiceBatch);
    PILOT_FUZZ_CHECK(v.batcher.queue_bound >= 1 && v.batcher.queue_bound <= kMaxQueueBound);
    PILOT_FUZZ_CHECK(!v.batcher.grow_at_capacity || v.batcher.grow_bound >= v.batcher.queue_bound);
    PILOT_FUZZ_CHECK(v.batcher.max_wait_ms >= 0 && v.batcher.max_wait_ms <= kMaxServiceMs);
    PILOT_FUZZ_CHECK(v.batcher.deadline_ms >= 0 && v.batcher.deadline_ms <= kMaxServiceMs);
    PILOT_FUZZ_CHECK(v.slo.bound_ms > 0 || v.slo.ttft_ms > 0 || v.slo.tpot_ms > 0);
    PILOT_FUZZ_CHECK(v.slo.percentile >= 0.5 && v.slo.percentile <= 0.9999);
    PILOT_FUZZ_CHECK(v.slo.confidence >= 0.5 && v.slo.confidence <= 0.9999);
    if (which == 1) PILOT_FUZZ_CHECK(v.slo.ttft_ms == 0 && v.slo.tpot_ms == 0);
    auto again = ParseService(nlohmann::json(ServiceToJson(v)), "again", which == 2);
    PILOT_FUZZ_CHECK(again.ok());
    PILOT_FUZZ_CHECK(nlohmann::json(ServiceToJson(again.value())) == nlohmann::json(ServiceToJson(v)));
    return 0;
  }
  std::vector<RequestRecord> records;
  std::size_t start = 0;
  while (start < text.size() && records.size() < 64) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    auto p = ParseRequestLine(text.substr(start, nl - start), "fuzz");
    if (p.ok()) records.push_back(std::move(p.value().record));
    start = nl + 1;
  }
  double last_arrival = 0, last_end = 0;
  for (const RequestRecord& r : records) {
    last_arrival = std::max(last_arrival, r.arrived_ms);
    last_end = std::max(last_end, r.finished_ms);
  }
  const LoadFigures f = SummarizeLoad(records, last_arrival, last_end, LatencySlo{10, 5, 1, 0.9, 0.9});
  PILOT_FUZZ_CHECK(f.issued == records.size());
  PILOT_FUZZ_CHECK(f.completed + f.over_capacity + f.rejected + f.timed_out + f.failed == f.issued);
  PILOT_FUZZ_CHECK(f.within_slo <= f.completed);
  PILOT_FUZZ_CHECK(std::isfinite(f.offered_per_s) && std::isfinite(f.achieved_per_s) &&
                   std::isfinite(f.goodput_per_s));
  CheckPercentiles(f.end_to_end, f.completed);
  CheckPercentiles(f.queue_wait, f.completed);
  CheckPercentiles(f.itl, 0);
  // The figures as load.json holds them serialize (no NaN or infinity to refuse).
  (void)nlohmann::json(LoadFiguresToJson(f)).dump();
  return 0;
}
