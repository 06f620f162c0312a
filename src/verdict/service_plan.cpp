// A service's plan from a load folder (service_plan.h).
#include "pilot/verdict/service_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/json_util.h"
#include "pilot/load/load_files.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

std::string Num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string SloText(const json& slo) {
  std::string bounds;
  for (const char* key : {"e2e_ms", "ttft_ms", "tpot_ms"}) {
    if (auto v = NumberAt(slo, key))
      bounds += std::string(bounds.empty() ? "" : ", ") + key + " <= " + Num(*v, 2);
  }
  return "p" + Num(NumberAt(slo, "percentile").value_or(0) * 100, 1) + " " + bounds + " at " +
         Num(NumberAt(slo, "confidence").value_or(0) * 100, 1) + "% confidence";
}

}  // namespace

Result<ServiceBasis> ReadServiceBasis(FileSystem& fsys, const fs::path& dir,
                                      const std::optional<std::string>& expect) {
  auto kind = OpenPilotFolder(fsys, dir, "plan from", "folder", "give a finished load folder (pilot load)");
  if (!kind.ok()) return kind.error();
  if (kind.value().kind != kFolderKindLoad)
    return BadInput("is a " + kind.value().kind + " folder, not a load folder", dir.string(),
                    "--rate plans a service from a load folder; leave it out to plan a batch corpus");
  VerifyOptions options;
  options.expect_fingerprint = expect;
  auto verified = VerifyFolder(fsys, dir, options);
  if (!verified.ok()) return verified.error();
  if (!verified.value().ok()) {
    const Finding& f = verified.value().findings.front();
    return BadInput("the folder fails verification with " + std::to_string(verified.value().findings.size()) +
                        " finding(s), the first: [" + f.check + "] " + ValueForMessage(f.where, 120) + ": " +
                        ValueForMessage(f.what, 200),
                    dir.string(),
                    "run `pilot verify " + dir.string() + "`; plan from a folder that verifies");
  }
  auto read = [&](const char* name) -> Result<json> {
    auto text = ReadInsideFolder(fsys, dir, name, kMaxLoadSummaryBytes);
    if (!text.ok()) return text.error();
    return ParseJson(text.value(), (dir / name).string());
  };
  auto summary = read(kLoadSummary);
  if (!summary.ok()) return summary.error();
  auto record = read(kRunRecord);
  if (!record.ok()) return record.error();
  auto environment = read(kEnvironmentFile);
  const json& s = summary.value();
  const json& rec = record.value();
  const std::string where = (dir / kLoadSummary).string();
  if (!s.is_object() || !rec.is_object()) return BadInput("is not a JSON object", where);
  ServiceBasis b;
  b.folder = dir.string();
  b.fingerprint = verified.value().fingerprint;
  b.manifest_sha256 = StringAt(rec, "manifest_sha256").value_or("");
  if (MemberOrNull(s, "interrupted") != false)
    return BadInput("the load was interrupted: it has no verdict to plan from", dir.string(),
                    "run `pilot load` again to its end");
  b.search = StringAt(s, "search").value_or("single");
  const json& stage = MemberOrNull(s, "stage");
  b.device = StringAt(stage, "device").value_or("");
  if (b.device == "remote") {
    b.target = StringAt(stage, "url").value_or("");
  } else {
    b.device_class = ParseDeviceClass(b.device.substr(0, b.device.find(':')));
    if (environment.ok()) {
      const json& env = environment.value();
      if (b.device_class == DeviceClass::kCpu) {
        b.device_name = StringAt(MemberOrNull(env, "host"), "cpu_model").value_or("");
      } else {
        const json& gpus = MemberOrNull(MemberOrNull(env, "libtorch"), "gpus");
        if (gpus.is_array() && !gpus.empty()) b.device_name = StringAt(gpus[0], "name").value_or("");
      }
    }
  }
  b.slo = SloText(MemberOrNull(MemberOrNull(s, "service"), "slo"));
  const json& verdict = MemberOrNull(s, "verdict");
  const json& steps = MemberOrNull(s, "steps");
  const json& first = steps.is_array() && !steps.empty() ? steps[0] : MemberOrNull(s, "no step");
  const bool first_met = MemberOrNull(MemberOrNull(first, "figures"), "slo_met") == true;
  auto from_first = [&](const std::string& why) {
    if (StringAt(first, "mode") == std::optional<std::string>("rate")) {
      b.rate_per_replica = NumberAt(first, "rate").value_or(0);
      b.rate_basis = "the one rate run, which met the SLO (a higher one may meet it too: --find-peak)";
    } else {
      b.rate_per_replica = NumberAt(MemberOrNull(first, "figures"), "achieved_per_s").value_or(0);
      b.rate_basis = why;
    }
  };
  if (b.search != "single") {
    if (auto peak = NumberAt(verdict, "peak_rate")) {
      b.rate_per_replica = *peak;
      b.rate_basis = "the highest rate that met the SLO (" + b.search + ")";
    } else if (first_met) {
      from_first("the synchronous step's achieved rate (one client), the only step that met the SLO");
    }
  } else if (first_met) {
    from_first("the rate its clients achieved, meeting the SLO (a higher one may meet it too: --find-peak)");
  }
  if (!std::isfinite(b.rate_per_replica) || b.rate_per_replica < 0) b.rate_per_replica = 0;
  const json& memory = MemberOrNull(s, "memory");
  // Below a megabyte is no replica's memory (a damaged figure): not measured, then.
  if (auto dev = NumberAt(memory, "peak_device_mb"); dev && *dev >= 1 && *dev < 1e9) {
    b.memory_mb = *dev;
    b.memory_basis = "device";
  } else if (auto rss = NumberAt(memory, "peak_rss_mb"); rss && *rss >= 1 && *rss < 1e9) {
    b.memory_mb = *rss;
    b.memory_basis = "rss";
  }
  return b;
}

Result<ServicePlan> BuildServicePlan(const ServicePlanRequest& q) {
  if (!(q.rate > 0) || q.rate > 1e9)
    return BadInput("--rate must be above 0 and at most 10^9 requests/s", "--rate");
  if (q.replica_memory_gb && !(*q.replica_memory_gb > 0 && *q.replica_memory_gb < 1e6))
    return BadInput("--replica-memory-gb must be above 0", "--replica-memory-gb");
  if (!(q.headroom >= 0 && q.headroom < 1)) return BadInput("--headroom must be in [0, 1)", "--headroom");
  if (q.assume_scaling && !(*q.assume_scaling >= 1e-3 && *q.assume_scaling <= 1000))
    return BadInput("--assume-scaling must be in 0.001..1000", "--assume-scaling");
  if (q.replica_memory_gb && *q.replica_memory_gb < 1e-3)
    return BadInput("--replica-memory-gb must be at least 0.001 (1 MB)", "--replica-memory-gb");
  ServicePlan plan;
  plan.request = q;
  const ServiceBasis& b = q.basis;
  if (q.prices.example)
    plan.warnings.push_back("EXAMPLE prices: every cost here is made up (the price file says so)");
  if (!q.measured_on.empty() && std::none_of(q.prices.cards.begin(), q.prices.cards.end(),
                                             [&](const CardType& c) { return c.name == q.measured_on; })) {
    return BadInput("no card of the price file is named '" + ValueForMessage(q.measured_on, 64) + "'",
                    "--measured-on", "give a card's `name` from " + q.prices.file);
  }
  if (!q.measured_on.empty() && b.device_class) {
    return BadInput("--measured-on names the card of a load over HTTP; this load ran in pilot on " +
                        ValueForMessage(b.device, 32) + ", which it measured itself",
                    "--measured-on", "leave it out; --assume-scaling F plans other cards at F x the rate");
  }
  if (!(b.rate_per_replica > 0)) {
    plan.warnings.push_back(
        "no rate of the load folder met the SLO: there is no rate per replica to plan with");
    return plan;
  }
  const bool remote = b.device == "remote";
  if (!remote && !b.device_class)
    plan.warnings.push_back("the load's device is of no class pilot knows: no card is the one measured");
  if (remote && q.measured_on.empty())
    plan.warnings.push_back(
        "the load ran against a service over HTTP, whose card pilot cannot see: give --measured-on CARD to "
        "say "
        "which card of the price file it ran on");
  std::optional<double> memory_mb = b.memory_mb;
  if (q.replica_memory_gb) memory_mb = *q.replica_memory_gb * 1024.0;
  for (const CardType& card : q.prices.cards) {
    const bool measured = !q.measured_on.empty() ? card.name == q.measured_on
                          : !b.device_class
                              ? false
                              : card.device_class == *b.device_class && CardMatches(card, b.device_name);
    if (!measured && !q.assume_scaling) continue;
    ServicePlanRow row;
    row.card = card.name;
    row.assumed = !measured;
    row.stand_in = card.stand_in;
    row.rate_per_replica = measured ? b.rate_per_replica : b.rate_per_replica * *q.assume_scaling;
    // Counted in double and bounded before any integer: a tiny rate cannot overflow a count.
    const double replicas = std::max(1.0, std::ceil(q.rate / row.rate_per_replica - 1e-9));
    // A CPU measurement says nothing of a card's memory unless it is the card; a stated memory does.
    row.fit_known = memory_mb.has_value() && (q.replica_memory_gb || measured);
    row.per_card = 1;
    if (row.fit_known) {
      const double room_mb = card.memory_gb * 1024.0 * (1.0 - q.headroom);  // MB of 2^20 bytes, as measured
      row.fits = *memory_mb <= room_mb;
      row.per_card =
          row.fits ? static_cast<std::size_t>(std::clamp(std::floor(room_mb / *memory_mb), 1.0, 1e6)) : 0;
      if (!row.fits) row.why = "one replica is over the card's memory less the headroom";
    }
    if (!(replicas <= kMaxServiceReplicas)) {
      row.fits = false;
      row.why = "the rate needs more than 10^9 replicas";
    }
    row.replicas = static_cast<std::size_t>(std::min(replicas, kMaxServiceReplicas));
    if (row.fits) {
      row.cards = (row.replicas + row.per_card - 1) / row.per_card;
      row.lots = (row.cards + static_cast<std::size_t>(card.cards_per_lot) - 1) /
                 static_cast<std::size_t>(card.cards_per_lot);
    }
    for (const auto& [days, price] : card.lot_price) {
      ServicePlanRow r = row;
      r.period_days = days;
      if (r.fits) {
        r.cost = price * static_cast<double>(r.lots);
        r.cost_per_million = r.cost / (q.rate * days * 86400.0) * 1e6;
      }
      plan.rows.push_back(r);
    }
  }
  for (std::size_t k = 0; k < plan.rows.size(); ++k) {
    const ServicePlanRow& r = plan.rows[k];
    if (r.fits && (!plan.cheapest || r.cost_per_million < plan.rows[*plan.cheapest].cost_per_million))
      plan.cheapest = k;
  }
  if (std::any_of(plan.rows.begin(), plan.rows.end(),
                  [](const ServicePlanRow& r) { return r.fits && r.per_card > 1 && r.replicas > 1; })) {
    plan.warnings.push_back(
        "rows with several replicas per card pack them by memory alone: each replica's rate was measured "
        "with the "
        "card to itself, and packed replicas share its compute; run a load with them packed before relying "
        "on it");
  }
  if (plan.rows.empty())
    plan.warnings.push_back("no card of the price file is the one measured (" +
                            (remote ? std::string("a service over HTTP") : b.device) +
                            (b.device_name.empty() ? "" : ", " + b.device_name) +
                            "): give --measured-on CARD, or --assume-scaling F for the rate on other cards");
  return plan;
}

ojson ServicePlanToJson(const ServicePlan& plan) {
  const ServicePlanRequest& q = plan.request;
  const ServiceBasis& b = q.basis;
  ojson basis = {{"folder", b.folder},
                 {"folder_kind", kFolderKindLoad},
                 {"fingerprint", b.fingerprint},
                 {"search", b.search},
                 {"device", b.device},
                 {"device_name", b.device_name.empty() ? ojson() : ojson(b.device_name)},
                 {"target", b.target.empty() ? ojson() : ojson(b.target)},
                 {"rate_per_replica", b.rate_per_replica},
                 {"rate_basis", b.rate_basis},
                 {"memory_mb", b.memory_mb ? ojson(*b.memory_mb) : ojson()},
                 {"memory_basis", b.memory_basis.empty() ? ojson() : ojson(b.memory_basis)},
                 {"slo", b.slo},
                 {"manifest_sha256", b.manifest_sha256}};
  ojson rows = ojson::array();
  for (const ServicePlanRow& r : plan.rows) {
    rows.push_back({{"card", r.card},
                    {"period_days", r.period_days},
                    {"rate_per_replica", r.rate_per_replica},
                    {"assumed", r.assumed},
                    {"stand_in", r.stand_in},
                    {"replicas", r.replicas},
                    {"fits", r.fits},
                    {"why", r.why.empty() ? ojson() : ojson(r.why)},
                    {"fit_known", r.fit_known},
                    {"replicas_per_card", r.per_card},
                    {"cards", r.cards},
                    {"lots", r.lots},
                    {"cost", r.cost},
                    {"cost_per_million_requests", r.cost_per_million}});
  }
  ojson doc = {
      {"kind", "pilot-service-plan"},
      {"basis", basis},
      {"rate", q.rate},
      {"headroom", q.headroom},
      {"replica_memory_gb", q.replica_memory_gb ? ojson(*q.replica_memory_gb) : ojson()},
      {"assume_scaling", q.assume_scaling ? ojson(*q.assume_scaling) : ojson()},
      {"measured_on", q.measured_on.empty() ? ojson() : ojson(q.measured_on)},
      {"currency", q.prices.currency},
      {"prices", {{"file", q.prices.file}, {"sha256", q.prices.sha256}, {"example", q.prices.example}}},
      {"rows", rows},
      {"cheapest", plan.cheapest ? rows[*plan.cheapest] : ojson()},
      {"warnings", plan.warnings}};
  return doc;
}

}  // namespace pilot
