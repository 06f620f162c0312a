// A load folder's files (load_run.h): load.json's figures, the request records as JSON Lines and
// CSV, report.html, and verify's and status's reading of them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "pilot/escape.h"
#include "pilot/json_util.h"
#include "pilot/load/load_run.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"

namespace pilot {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// The most bytes verify reads of load.json and run.json, and of one request line (32,768 gaps of
// a generator's tokens take about 330 KB).
constexpr std::uint64_t kMaxSummaryBytes = kMaxLoadSummaryBytes, kMaxRequestLineBytes = 1u << 20;

// A member that is a string, or "" (absent, or of another type: a hand-edited file).
std::string Str(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

const char* ArrivalsName(ArrivalKind kind) {
  return kind == ArrivalKind::kConstant ? "constant" : kind == ArrivalKind::kGamma ? "gamma" : "poisson";
}

void ArrivalsToJson(const ArrivalProcess& a, std::uint64_t seed, ojson& j) {
  j["arrivals"] = ArrivalsName(a.kind);
  if (a.kind == ArrivalKind::kGamma) j["gamma_shape"] = a.shape;
  j["seed"] = seed;
}

Status ArrivalsFromJson(const nlohmann::json& j, ArrivalProcess& a, std::uint64_t& seed,
                        const std::string& where) {
  const std::string kind = Str(j, "arrivals");
  if (kind == "constant") {
    a.kind = ArrivalKind::kConstant;
  } else if (kind == "gamma") {
    a.kind = ArrivalKind::kGamma;
    if (!j.contains("gamma_shape") || !j["gamma_shape"].is_number() || !(j["gamma_shape"].get<double>() > 0))
      return BadInput("gamma arrivals without a gamma_shape above 0", where);
    a.shape = j["gamma_shape"].get<double>();
  } else if (kind == "poisson") {
    a.kind = ArrivalKind::kPoisson;
  } else {
    return BadInput("arrivals that are not poisson, constant or gamma", where);
  }
  if (!j.contains("seed") || !j["seed"].is_number_unsigned()) return BadInput("no whole seed", where);
  seed = j["seed"].get<std::uint64_t>();
  return {};
}

const char* PercentileKey(double p) {
  if (p == 0.5) return "p50";
  if (p == 0.9) return "p90";
  if (p == 0.95) return "p95";
  if (p == 0.99) return "p99";
  return "p99.9";
}

ojson PercentilesJson(const std::vector<PercentileFigure>& ps) {
  ojson j = ojson::object();
  for (const PercentileFigure& p : ps) j[PercentileKey(p.percentile)] = {{"ms", p.ms}, {"count", p.count}};
  return j;
}

ojson OptionalNumber(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

}  // namespace

const char* LoadSearchName(LoadSearch search) {
  switch (search) {
    case LoadSearch::kLadder:
      return "rate-ladder";
    case LoadSearch::kPeak:
      return "find-peak";
    case LoadSearch::kNone:
      break;
  }
  return "single";
}

ojson LoadFiguresToJson(const LoadFigures& f) {
  ojson j = {{"issued", f.issued},
             {"completed", f.completed},
             {"over_capacity", f.over_capacity},
             {"rejected", f.rejected},
             {"timed_out", f.timed_out},
             {"failed", f.failed},
             {"offered_per_s", f.offered_per_s},
             {"achieved_per_s", f.achieved_per_s},
             {"within_slo", f.within_slo},
             {"goodput_per_s", f.goodput_per_s},
             {"slo_met", f.slo_met},
             {"more_needed", f.more_needed ? ojson(*f.more_needed) : ojson(nullptr)},
             {"percentile_bound_ms", OptionalNumber(f.percentile_bound_ms)},
             {"queue_wait_ms", PercentilesJson(f.queue_wait)},
             {"service_ms", PercentilesJson(f.service)},
             {"e2e_ms", PercentilesJson(f.end_to_end)}};
  if (!f.ttft.empty()) {
    j["output_tokens"] = f.output_tokens;
    j["output_tokens_per_s"] = f.output_tokens_per_s;
    j["ttft_ms"] = PercentilesJson(f.ttft);
    j["tpot_ms"] = PercentilesJson(f.tpot);
    j["itl_ms"] = PercentilesJson(f.itl);
  }
  return j;
}

bool BeyondCapacity(const LoadFigures& f) {
  if (f.over_capacity + f.timed_out > 0) return true;
  if (f.issued == 0) return false;
  const double to_serve =
      f.offered_per_s * static_cast<double>(f.issued - f.rejected) / static_cast<double>(f.issued);
  return f.achieved_per_s < 0.9 * to_serve;
}

ojson LoadRequestToJson(const LoadRequest& r) {
  ojson j = {{"search", LoadSearchName(r.search)}};
  if (r.step.mode == LoadMode::kRate) {
    j["mode"] = "rate";
    j["rate"] = r.step.arrivals.rate;  // 0: a ladder or a search from the synchronous rate
  } else {
    j["mode"] = "concurrency";
    j["concurrency"] = r.step.concurrency;
  }
  ArrivalsToJson(r.step.arrivals, r.step.seed, j);
  j["duration_s"] = r.step.duration_ms > 0 ? ojson(r.step.duration_ms / 1000.0) : ojson(nullptr);
  j["requests"] = r.step.requests > 0 ? ojson(r.step.requests) : ojson(nullptr);
  j["max_steps"] = r.max_steps;
  j["peak_precision"] = r.peak_precision;
  if (r.target) j["target"] = HttpTargetToJson(*r.target);
  return j;
}

Result<LoadRequest> LoadRequestFromJson(const nlohmann::json& j, const std::string& where) {
  LoadRequest r;
  if (!j.is_object()) return BadInput("no load request", where);
  const std::string search = Str(j, "search");
  if (search == "rate-ladder") {
    r.search = LoadSearch::kLadder;
  } else if (search == "find-peak") {
    r.search = LoadSearch::kPeak;
  } else if (search != "single") {
    return BadInput("a load request whose search is not single, rate-ladder or find-peak", where);
  }
  const std::string mode = Str(j, "mode");
  if (mode == "rate") {
    if (!j.contains("rate") || !j["rate"].is_number())
      return BadInput("a rate request without its rate", where);
    r.step.arrivals.rate = j["rate"].get<double>();
  } else if (mode == "concurrency") {
    r.step.mode = LoadMode::kConcurrency;
    if (!j.contains("concurrency") || !j["concurrency"].is_number_unsigned())
      return BadInput("a concurrency request without its concurrency", where);
    r.step.concurrency = j["concurrency"].get<std::size_t>();
  } else {
    return BadInput("a load request of an unknown mode", where);
  }
  PILOT_TRY(ArrivalsFromJson(j, r.step.arrivals, r.step.seed, where));
  if (!j.contains("max_steps") || !j["max_steps"].is_number_unsigned() ||
      j["max_steps"].get<std::uint64_t>() > 64 || !j.contains("peak_precision") ||
      !j["peak_precision"].is_number() || !(j["peak_precision"].get<double>() > 0))
    return BadInput("a load request without max_steps (at most 64) and peak_precision", where);
  r.max_steps = static_cast<int>(j["max_steps"].get<std::uint64_t>());
  r.peak_precision = j["peak_precision"].get<double>();
  if (j.contains("target")) {
    auto target = HttpTargetFromJson(j["target"], where);
    if (!target.ok()) return target.error();
    r.target = std::move(target).value();
  }
  return r;
}

ojson LoadStepToJson(const LoadStepRecord& s, std::size_t index) {
  ojson j = {{"step", index}};
  if (s.step.mode == LoadMode::kRate) {
    j["mode"] = "rate";
    j["rate"] = s.step.arrivals.rate;
    ArrivalsToJson(s.step.arrivals, s.step.seed, j);
  } else {
    j["mode"] = "concurrency";
    j["concurrency"] = s.step.concurrency;
  }
  j["interrupted"] = s.result.interrupted;
  j["issue_ms"] = s.result.issue_ms;
  j["duration_ms"] = s.result.duration_ms;
  if (s.result.client_cpu_ms) j["client_cpu_ms"] = std::round(*s.result.client_cpu_ms * 1000.0) / 1000.0;
  j["figures"] = LoadFiguresToJson(s.figures);
  return j;
}

ojson RequestToJson(const RequestRecord& r, std::size_t step, const std::string& item_id) {
  ojson j = {{"step", step},
             {"request", r.id},
             {"item", item_id},
             {"outcome", RequestOutcomeName(r.outcome)},
             {"arrived_ms", r.arrived_ms},
             {"started_ms", r.started_ms},
             {"finished_ms", r.finished_ms},
             {"batch", r.batch}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.resent > 0) j["resent"] = r.resent;
  if (r.outcome == RequestOutcome::kCompleted) j["output_tokens"] = r.output_tokens;
  if (r.ttft_ms) {
    j["ttft_ms"] = *r.ttft_ms;
    j["tpot_ms"] = OptionalNumber(r.tpot_ms);
    j["itl_ms"] = r.itl_ms;
  }
  return j;
}

Result<ParsedRequest> ParseRequestLine(std::string_view line, const std::string& where) {
  auto bad = [&](const std::string& what) { return BadInput("a request record " + what, where); };
  if (line.size() > kMaxRequestLineBytes) return bad("is longer than 1 MiB");
  auto parsed = ParseJson(line, where);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  if (!j.is_object()) return bad("is not a JSON object");
  auto whole = [&](const char* key, std::uint64_t most, std::uint64_t& out) -> Status {
    if (!j.contains(key) || !j[key].is_number_unsigned() || j[key].get<std::uint64_t>() > most)
      return bad(std::string("has no whole '") + key + "' of at most " + std::to_string(most));
    out = j[key].get<std::uint64_t>();
    return {};
  };
  auto number = [&](const char* key, double& out) -> Status {
    if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()) ||
        j[key].get<double>() < 0 || j[key].get<double>() > 1e12)
      return bad(std::string("has no finite '") + key + "' in 0..1e12");
    out = j[key].get<double>();
    return {};
  };
  ParsedRequest p;
  RequestRecord& r = p.record;
  std::uint64_t v = 0;
  PILOT_TRY(whole("step", 1u << 10, v));
  p.step = static_cast<std::size_t>(v);
  PILOT_TRY(whole("request", kMaxStepRequests, r.id));
  PILOT_TRY(whole("batch", kMaxServiceBatch, v));
  r.batch = static_cast<std::size_t>(v);
  if (!j.contains("item") || !j["item"].is_string() || j["item"].get<std::string>().empty() ||
      j["item"].get<std::string>().size() > 4096)
    return bad("has no 'item' id");
  p.item_id = j["item"].get<std::string>();
  if (!j.contains("outcome") || !j["outcome"].is_string()) return bad("has no 'outcome'");
  auto outcome = RequestOutcomeFromName(j["outcome"].get<std::string>());
  if (!outcome)
    return bad("has an unknown outcome '" + ValueForMessage(j["outcome"].get<std::string>(), 40) + "'");
  r.outcome = *outcome;
  PILOT_TRY(number("arrived_ms", r.arrived_ms));
  PILOT_TRY(number("started_ms", r.started_ms));
  PILOT_TRY(number("finished_ms", r.finished_ms));
  if (!(r.arrived_ms <= r.started_ms && r.started_ms <= r.finished_ms))
    return bad("has times out of order (arrived, started, finished)");
  if (j.contains("reason")) {
    if (!j["reason"].is_string() || j["reason"].get<std::string>().size() > 64)
      return bad("has a bad 'reason'");
    r.reason = j["reason"].get<std::string>();
  }
  if (j.contains("resent")) {
    PILOT_TRY(whole("resent", 16, v));
    if (v == 0) return bad("has a 'resent' of 0 (left out when it was sent once)");
    r.resent = static_cast<std::uint32_t>(v);
  }
  if ((r.outcome == RequestOutcome::kRejected || r.outcome == RequestOutcome::kFailed) && r.reason.empty())
    return bad("is " + std::string(RequestOutcomeName(r.outcome)) + " with no reason");
  if (r.outcome == RequestOutcome::kCompleted) {
    PILOT_TRY(whole("output_tokens", kMaxCompletionIds, r.output_tokens));
    if (r.batch == 0) return bad("is completed in a batch of 0");
  }
  if (j.contains("ttft_ms")) {
    double t = 0;
    PILOT_TRY(number("ttft_ms", t));
    r.ttft_ms = t;
    if (!j.contains("tpot_ms") || !j.contains("itl_ms") || !j["itl_ms"].is_array() ||
        j["itl_ms"].size() > kMaxCompletionIds)
      return bad("has ttft_ms without tpot_ms and itl_ms");
    if (!j["tpot_ms"].is_null()) {
      PILOT_TRY(number("tpot_ms", t));
      r.tpot_ms = t;
    }
    for (const auto& gap : j["itl_ms"]) {
      if (!gap.is_number() || !std::isfinite(gap.get<double>()) || gap.get<double>() < 0)
        return bad("has an itl_ms gap that is not a finite number of at least 0");
      r.itl_ms.push_back(gap.get<double>());
    }
    if (r.tpot_ms.has_value() != !r.itl_ms.empty()) return bad("has tpot_ms and itl_ms that disagree");
  }
  return p;
}

std::string RequestsCsv(const std::vector<LoadStepRecord>& steps, const std::vector<std::string>& item_ids) {
  std::ostringstream csv;
  csv << "step,request,item,outcome,reason,arrived_ms,queue_wait_ms,service_ms,e2e_ms,batch,output_tokens,"
         "ttft_ms,tpot_ms\n";
  char buf[64];
  auto num = [&](double v) {
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (const RequestRecord& r : steps[k].result.records) {
      const bool served = r.outcome == RequestOutcome::kCompleted || r.outcome == RequestOutcome::kFailed ||
                          (r.outcome == RequestOutcome::kRejected && r.batch > 0);
      csv << k << ',' << r.id << ',' << EscapeCsv(r.item < item_ids.size() ? item_ids[r.item] : "") << ','
          << RequestOutcomeName(r.outcome) << ',' << EscapeCsv(r.reason) << ',' << num(r.arrived_ms) << ','
          << (served ? num(r.queue_wait_ms()) : "") << ','
          << (served ? num(r.finished_ms - r.started_ms) : "") << ',' << num(r.end_to_end_ms()) << ','
          << r.batch << ',' << r.output_tokens << ',' << (r.ttft_ms ? num(*r.ttft_ms) : "") << ','
          << (r.tpot_ms ? num(*r.tpot_ms) : "") << '\n';
    }
  }
  return csv.str();
}

// ---- report.html ----

namespace {

const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                                "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a"};

std::string Fmt(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string StepLabel(const ojson& s) {
  if (s.value("mode", "") == "rate") return Fmt(s.value("rate", 0.0), 1) + "/s";
  return "concurrency " + std::to_string(s.value("concurrency", 0));
}

}  // namespace

std::string LoadHtml(const ojson& summary, const std::vector<LoadStepRecord>& steps) {
  const double w = 640, h = 360, left = 60, right = 20, top = 20, bottom = 40;
  const double pw = w - left - right, ph = h - top - bottom;
  const ojson& slo = summary["service"]["slo"];
  const double bound = slo.contains("e2e_ms") ? slo["e2e_ms"].get<double>() : 0;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pilot load "
    << EscapeHtml(summary.value("load", ""))
    << "</title>\n<style>body{font-family:sans-serif;margin:2em;color:#222}"
    << "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
    << "th{background:#f4f4f4}.met{color:#2ca02c}.missed{color:#d62728}svg{background:#fff;border:1px solid "
       "#ddd}"
    << "</style></head><body>\n<h1>pilot load: " << EscapeHtml(summary.value("load", "")) << "</h1>\n";
  const ojson& verdict = summary["verdict"];
  const bool met = verdict.value("slo_met", false);
  o << "<p>Search: " << EscapeHtml(summary.value("search", "")) << ". SLO: p"
    << Fmt(slo.value("percentile", 0.99) * 100, 1) << " at " << Fmt(slo.value("confidence", 0.99) * 100, 1)
    << "% confidence";
  for (const char* key : {"e2e_ms", "ttft_ms", "tpot_ms"}) {
    if (slo.contains(key)) o << ", " << key << " &le; " << Fmt(slo[key].get<double>());
  }
  o << ". Verdict: <b class=\"" << (met ? "met\">met" : "missed\">missed") << "</b>";
  if (verdict.contains("peak_rate") && !verdict["peak_rate"].is_null())
    o << "; the highest rate that met it: " << Fmt(verdict["peak_rate"].get<double>(), 1) << " requests/s";
  o << ".</p>\n";
  // The latency CDF, one line per step.
  double xmax = 1;
  std::vector<std::vector<double>> e2e(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (const RequestRecord& r : steps[k].result.records) {
      if (r.outcome == RequestOutcome::kCompleted) e2e[k].push_back(r.end_to_end_ms());
    }
    std::sort(e2e[k].begin(), e2e[k].end());
    if (!e2e[k].empty()) xmax = std::max(xmax, e2e[k][e2e[k].size() * 99 / 100]);
  }
  if (bound > 0) xmax = std::max(xmax, bound * 1.1);
  auto axes = [&](const std::string& xlabel, const std::string& ylabel, double xm, double ym) {
    o << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\"" << top + ph
      << "\" stroke=\"#333\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << top + ph << "\" stroke=\"#333\"/>";
    for (int t = 0; t <= 4; ++t) {
      const double x = left + pw * t / 4, y = top + ph - ph * t / 4;
      o << "<text x=\"" << x << "\" y=\"" << top + ph + 15 << "\" font-size=\"11\" text-anchor=\"middle\">"
        << Fmt(xm * t / 4, 1) << "</text><text x=\"" << left - 5 << "\" y=\"" << y + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << Fmt(ym * t / 4, ym < 10 ? 2 : 0) << "</text>";
    }
    o << "<text x=\"" << left + pw / 2 << "\" y=\"" << h - 5 << "\" font-size=\"12\" text-anchor=\"middle\">"
      << xlabel << "</text><text x=\"12\" y=\"" << top + ph / 2
      << "\" font-size=\"12\" transform=\"rotate(-90 12 " << top + ph / 2 << ")\" text-anchor=\"middle\">"
      << ylabel << "</text>";
  };
  o << "<h2>End-to-end latency, cumulative (completed requests)</h2>\n<svg id=\"cdf\" width=\"" << w
    << "\" height=\"" << h << "\">";
  axes("end-to-end latency, ms", "fraction of requests", xmax, 1);
  if (bound > 0) {
    const double x = left + pw * std::min(1.0, bound / xmax);
    o << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << top + ph
      << "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>";
  }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto& v = e2e[k];
    if (v.empty()) continue;
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << kColours[k % 12] << "\" points=\"";
    const std::size_t n = v.size(), stride = std::max<std::size_t>(1, n / 200);
    for (std::size_t i = 0; i < n; i += stride) {
      const double x = left + pw * std::min(1.0, v[i] / xmax);
      const double y = top + ph - ph * static_cast<double>(i + 1) / static_cast<double>(n);
      o << Fmt(x, 1) << ',' << Fmt(y, 1) << ' ';
    }
    o << Fmt(left + pw * std::min(1.0, v.back() / xmax), 1) << ',' << Fmt(top, 1) << "\"/>";
  }
  o << "</svg>\n";
  // The rate-against-latency curve: p50 and p99 end to end against the achieved rate.
  double rmax = 1, lmax = 1;
  for (const LoadStepRecord& s : steps) {
    rmax = std::max(rmax, s.figures.achieved_per_s);
    if (s.figures.end_to_end.size() == 5) lmax = std::max(lmax, s.figures.end_to_end[3].ms);
  }
  if (bound > 0) lmax = std::max(lmax, bound * 1.1);
  rmax *= 1.05;
  o << "<h2>Latency against the achieved rate</h2>\n<svg id=\"rate\" width=\"" << w << "\" height=\"" << h
    << "\">";
  axes("achieved requests/s", "end-to-end latency, ms", rmax, lmax);
  if (bound > 0) {
    const double y = top + ph - ph * std::min(1.0, bound / lmax);
    o << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + pw << "\" y2=\"" << y
      << "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>";
  }
  for (int which : {0, 3}) {  // p50, p99
    std::vector<std::pair<double, double>> pts;
    for (const LoadStepRecord& s : steps) {
      if (s.figures.completed == 0) continue;
      pts.emplace_back(s.figures.achieved_per_s, s.figures.end_to_end[static_cast<std::size_t>(which)].ms);
    }
    std::sort(pts.begin(), pts.end());
    const char* colour = which == 0 ? "#1f77b4" : "#ff7f0e";
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << colour << "\" points=\"";
    for (const auto& [x, y] : pts)
      o << Fmt(left + pw * x / rmax, 1) << ',' << Fmt(top + ph - ph * std::min(1.0, y / lmax), 1) << ' ';
    o << "\"/>";
    for (const auto& [x, y] : pts) {
      o << "<circle r=\"4\" fill=\"" << colour << "\" cx=\"" << Fmt(left + pw * x / rmax, 1) << "\" cy=\""
        << Fmt(top + ph - ph * std::min(1.0, y / lmax), 1) << "\"/>";
    }
  }
  o << "<text x=\"" << left + 10 << "\" y=\"" << top + 12 << "\" font-size=\"12\" fill=\"#1f77b4\">p50</text>"
    << "<text x=\"" << left + 45 << "\" y=\"" << top + 12
    << "\" font-size=\"12\" fill=\"#ff7f0e\">p99</text>";
  o << "</svg>\n<h2>Steps</h2>\n<table><tr><th>step</th><th>offered</th><th>issued</th><th>completed</th>"
       "<th>over capacity</th><th>rejected</th><th>timed out</th><th>failed</th><th>achieved/s</th>"
       "<th>goodput/s</th><th>e2e p50 ms</th><th>e2e p99 ms (count)</th><th>SLO</th></tr>\n";
  for (std::size_t k = 0; k < steps.size() && k < summary["steps"].size(); ++k) {
    const LoadFigures& f = steps[k].figures;
    o << "<tr><td style=\"color:" << kColours[k % 12] << "\">" << k << "</td><td>"
      << EscapeHtml(StepLabel(summary["steps"][k])) << "</td><td>" << f.issued << "</td><td>" << f.completed
      << "</td><td>" << f.over_capacity << "</td><td>" << f.rejected << "</td><td>" << f.timed_out
      << "</td><td>" << f.failed << "</td><td>" << Fmt(f.achieved_per_s, 1) << "</td><td>"
      << Fmt(f.goodput_per_s, 1) << "</td><td>" << Fmt(f.end_to_end[0].ms) << "</td><td>"
      << Fmt(f.end_to_end[3].ms) << " (" << f.end_to_end[3].count << ")</td><td class=\""
      << (f.slo_met ? "met\">met" : "missed\">missed") << "</td></tr>\n";
  }
  o << "</table>\n<p>Each request's latency counts from its scheduled arrival; the figures and every "
       "request are in load.json, requests.jsonl and requests.csv beside this page.</p>\n</body></html>\n";
  return o.str();
}

// ---- verify and status ----

namespace {

Result<nlohmann::json> ReadJsonInside(FileSystem& fsys, const fs::path& dir, const char* rel,
                                      std::uint64_t cap) {
  auto text = ReadInsideFolder(fsys, dir, rel, cap);
  if (!text.ok()) return text.error();
  return ParseJson(text.value(), (dir / rel).string());
}

// The step a load.json entry describes (its mode, rate, arrivals and seed, concurrency).
Result<LoadStep> StepFromJson(const nlohmann::json& s, const std::string& where) {
  LoadStep step;
  if (!s.is_object()) return BadInput("a step is not an object", where);
  const std::string mode = Str(s, "mode");
  if (mode == "rate") {
    step.mode = LoadMode::kRate;
    if (!s.contains("rate") || !s["rate"].is_number()) return BadInput("a rate step has no rate", where);
    step.arrivals.rate = s["rate"].get<double>();
    PILOT_TRY(ArrivalsFromJson(s, step.arrivals, step.seed, where));
  } else if (mode == "concurrency") {
    step.mode = LoadMode::kConcurrency;
    if (!s.contains("concurrency") || !s["concurrency"].is_number_unsigned())
      return BadInput("a concurrency step has no concurrency", where);
    step.concurrency = s["concurrency"].get<std::size_t>();
  } else {
    return BadInput("a step has an unknown mode", where);
  }
  return step;
}

// The steps against what was asked: every rate step's arrivals and seed the request's; one step
// at the request's rate or concurrency; a ladder's synchronous step, then its achieved rate
// doubled step by step, none after a step beyond capacity; a search's rates those LoadGen's kind
// of search picks from the steps' own verdicts (replayed here), all of them unless the load was
// interrupted or stopped by its records' size.
void CheckStepSequence(const LoadRequest& req, const nlohmann::json& sum, const std::vector<LoadStep>& steps,
                       const std::vector<LoadFigures>& figures,
                       const std::function<void(const std::string&, const std::string&)>& add) {
  const std::string where = kLoadSummary;
  const bool cut = (sum.contains("interrupted") && sum["interrupted"] == true) ||
                   (sum.contains("stopped_early") && sum["stopped_early"].is_string());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LoadStep& s = steps[k];
    if (s.mode == LoadMode::kRate && (s.arrivals.kind != req.step.arrivals.kind ||
                                      s.arrivals.shape != req.step.arrivals.shape || s.seed != req.step.seed))
      add(where + ": step " + std::to_string(k), "its arrivals or seed differ from the request's");
  }
  if (steps.empty()) return add(where, "has no step");
  if (req.search == LoadSearch::kNone) {
    const LoadStep& s = steps[0];
    if (steps.size() != 1 || s.mode != req.step.mode ||
        (s.mode == LoadMode::kRate ? s.arrivals.rate != req.step.arrivals.rate
                                   : s.concurrency != req.step.concurrency))
      add(where, "its steps are not the one step the request asked for");
    return;
  }
  if (steps[0].mode != LoadMode::kConcurrency || steps[0].concurrency != 1)
    return add(where + ": step 0",
               "is not the synchronous step (concurrency 1) a ladder or a search starts with");
  if (static_cast<int>(steps.size()) > std::max(1, req.max_steps))
    add(where, "has more steps than max_steps");
  const double r0 = figures[0].achieved_per_s;
  if (req.search == LoadSearch::kLadder) {
    double rate = r0;
    for (std::size_t k = 1; k < steps.size(); ++k, rate *= 2) {
      if (steps[k].mode != LoadMode::kRate || steps[k].arrivals.rate != rate)
        add(where + ": step " + std::to_string(k),
            "its rate is not the synchronous rate doubled " + std::to_string(k - 1) + " time(s)");
      if (k + 1 < steps.size() && BeyondCapacity(figures[k]))
        add(where + ": step " + std::to_string(k + 1),
            "follows a step beyond capacity, where the ladder stops");
    }
    return;
  }
  const double start =
      req.step.mode == LoadMode::kRate && req.step.arrivals.rate > 0 ? req.step.arrivals.rate : r0;
  if (!(r0 > 0)) {
    if (steps.size() > 1) add(where, "searches on from a synchronous step that served nothing");
    return;
  }
  std::size_t next = 1;
  bool differs = false, short_of = false;
  std::vector<RateTrial> trials;
  (void)FindPeakRate(
      start, req.peak_precision, req.max_steps - 1,
      [&](double rate) {
        if (next >= steps.size()) {
          short_of = true;
          return false;
        }
        if (steps[next].mode != LoadMode::kRate || steps[next].arrivals.rate != rate) differs = true;
        return figures[next++].slo_met;
      },
      trials);
  if (differs) add(where, "its rates are not those the search picks from its steps' verdicts");
  if (next < steps.size()) add(where, "has steps after the search's end");
  if (short_of && !cut)
    add(where, "its search ended early, neither interrupted nor stopped by its records' size");
}

}  // namespace

void CheckLoadFolder(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
  auto add = [&](const std::string& where, const std::string& what) {
    findings.push_back({"load", where, what});
  };
  auto record = ReadJsonInside(fsys, dir, kRunRecord, kMaxSummaryBytes);
  if (!record.ok()) return add(kRunRecord, record.error().what);
  auto summary = ReadJsonInside(fsys, dir, kLoadSummary, kMaxSummaryBytes);
  if (!summary.ok()) return add(kLoadSummary, summary.error().what);
  const nlohmann::json& rec = record.value();
  const nlohmann::json& sum = summary.value();
  if (!rec.is_object() || !rec.contains("service") || !rec.contains("stage") || !rec["stage"].is_object())
    return add(kRunRecord, "has no service or stage");
  if (!rec["stage"].contains("generates") || !rec["stage"]["generates"].is_boolean())
    return add(kRunRecord, "its stage does not say whether it generates");
  const bool generates = rec["stage"]["generates"].get<bool>();
  auto service = ParseService(rec["service"], (dir / kRunRecord).string(), generates);
  if (!service.ok()) return add(kRunRecord, service.error().what);
  if (!sum.is_object() || !sum.contains("steps") || !sum["steps"].is_array() || !sum.contains("verdict") ||
      !sum["verdict"].is_object())
    return add(kLoadSummary, "has no steps or verdict");
  if (!sum.contains("service") || nlohmann::json(ServiceToJson(service.value())) != sum["service"])
    add(kLoadSummary, "its service differs from data/run.json's");
  // What plan and decide read beside the figures: typed, and the stage the record's.
  if (!sum.contains("interrupted") || !sum["interrupted"].is_boolean())
    add(kLoadSummary, "its interrupted is not true or false");
  if (!sum.contains("stage") || sum["stage"] != rec["stage"])
    add(kLoadSummary, "its stage differs from data/run.json's");
  if (sum.contains("memory") && !sum["memory"].is_null()) {
    const nlohmann::json& m = sum["memory"];
    auto megabytes = [&](const char* key, bool may_be_null) {
      if (!m.contains(key)) return false;
      const nlohmann::json& v = m[key];
      return (may_be_null && v.is_null()) ||
             (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0);
    };
    if (!m.is_object() || !megabytes("peak_rss_mb", false) || !megabytes("peak_device_mb", true))
      add(kLoadSummary, "its memory is not peak_rss_mb and peak_device_mb in MB");
  }
  if (!rec.contains("request") || !rec["request"].is_object()) return add(kRunRecord, "has no request");
  auto request =
      LoadRequestFromJson(rec["request"].contains("load") ? rec["request"]["load"] : nlohmann::json(),
                          (dir / kRunRecord).string());
  if (!request.ok()) return add(kRunRecord, request.error().what);
  if (!sum.contains("request") || sum["request"] != rec["request"]["load"])
    add(kLoadSummary, "its request differs from data/run.json's");
  const std::size_t n_steps = sum["steps"].size();
  if (n_steps > 1024) return add(kLoadSummary, "has more than 1024 steps");
  auto text = ReadInsideFolder(fsys, dir, kLoadRequests, kMaxLoadRequestsBytes);
  if (!text.ok()) return add(kLoadRequests, text.error().what);
  std::vector<std::vector<RequestRecord>> by_step(n_steps);
  std::size_t line_no = 0, bad_lines = 0;
  std::string_view rest = text.value();
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      add(kLoadRequests, "its last line has no newline (a torn write)");
      break;
    }
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    ++line_no;
    const std::string where = std::string(kLoadRequests) + ":" + std::to_string(line_no);
    auto parsed = ParseRequestLine(line, where);
    if (!parsed.ok()) {
      if (++bad_lines <= 5) add(where, parsed.error().what);
      continue;
    }
    ParsedRequest& p = parsed.value();
    if (p.step >= n_steps) {
      if (++bad_lines <= 5)
        add(where, "names step " + std::to_string(p.step) + ", which load.json does not have");
      continue;
    }
    auto& records = by_step[p.step];
    if (p.record.id != records.size()) {
      if (++bad_lines <= 5)
        add(where, "is request " + std::to_string(p.record.id) + " of step " + std::to_string(p.step) +
                       " where request " + std::to_string(records.size()) +
                       " was due (one line per request, in order)");
      continue;
    }
    records.push_back(std::move(p.record));
  }
  if (bad_lines > 5) add(kLoadRequests, std::to_string(bad_lines - 5) + " more bad line(s)");
  if (bad_lines > 0) return;
  bool any_met = false, all_parsed = true;
  std::optional<double> peak;
  std::vector<LoadStep> steps;
  std::vector<LoadFigures> figures;
  for (std::size_t k = 0; k < n_steps; ++k) {
    const nlohmann::json& s = sum["steps"][k];
    const std::string where = std::string(kLoadSummary) + ": step " + std::to_string(k);
    auto step = StepFromJson(s, where);
    if (!step.ok()) {
      add(where, step.error().what);
      all_parsed = false;
      continue;
    }
    if (!s.contains("issue_ms") || !s["issue_ms"].is_number() || !s.contains("duration_ms") ||
        !s["duration_ms"].is_number() || !s.contains("figures")) {
      add(where, "has no issue_ms, duration_ms or figures");
      all_parsed = false;
      continue;
    }
    const double issue_ms = s["issue_ms"].get<double>(), duration_ms = s["duration_ms"].get<double>();
    double last_arrival = 0, last_end = 0;
    for (const RequestRecord& r : by_step[k]) {
      last_arrival = std::max(last_arrival, r.arrived_ms);
      last_end = std::max(last_end, r.finished_ms);
    }
    if (last_arrival != issue_ms || last_end != duration_ms)
      add(where, "its issue_ms or duration_ms is not its requests' last arrival and last end");
    const LoadFigures f = SummarizeLoad(by_step[k], issue_ms, duration_ms, service.value().slo);
    if (nlohmann::json(LoadFiguresToJson(f)) != s["figures"]) {
      add(where, "its figures differ from those its " + std::to_string(by_step[k].size()) +
                     " request records give (issued " + std::to_string(f.issued) + " = completed " +
                     std::to_string(f.completed) + " + over_capacity " + std::to_string(f.over_capacity) +
                     " + rejected " + std::to_string(f.rejected) + " + timed_out " +
                     std::to_string(f.timed_out) + " + failed " + std::to_string(f.failed) + ")");
    }
    if (f.slo_met) {
      any_met = true;
      if (step.value().mode == LoadMode::kRate)
        peak = std::max(peak.value_or(0.0), step.value().arrivals.rate);
    }
    steps.push_back(step.value());
    figures.push_back(f);
  }
  if (all_parsed) CheckStepSequence(request.value(), sum, steps, figures, add);
  const nlohmann::json& v = sum["verdict"];
  const LoadSearch search = request.value().search;
  if (Str(sum, "search") != LoadSearchName(search))
    add(kLoadSummary, "its search differs from data/run.json's");
  // The verdict from the figures recomputed here, never from load.json's own.
  const bool want_met =
      search == LoadSearch::kNone ? !figures.empty() && all_parsed && figures[0].slo_met : any_met;
  if (!v.contains("slo_met") || v["slo_met"] != want_met)
    add(kLoadSummary,
        std::string("its verdict is not what its steps give (SLO ") + (want_met ? "met" : "missed") + ")");
  if (search != LoadSearch::kNone) {
    const nlohmann::json want_peak = peak ? nlohmann::json(*peak) : nlohmann::json(nullptr);
    if (!v.contains("peak_rate") || v["peak_rate"] != want_peak)
      add(kLoadSummary, "its peak_rate is not the highest rate of a step that met the SLO");
  }
}

Result<RunStatus> ReadLoadStatus(FileSystem& fsys, const fs::path& dir) {
  auto record = ReadJsonInside(fsys, dir, kRunRecord, kMaxSummaryBytes);
  if (!record.ok()) return record.error();
  RunStatus st;
  st.folder_kind = kFolderKindLoad;
  st.counts_cells = true;
  if (!record.value().is_object()) return BadInput("is not a JSON object", (dir / kRunRecord).string());
  st.run_id = Str(record.value(), "run_id");
  st.format_version = kJournalVersion;
  st.writer_pid = LockHolder(fsys, dir);
  const std::string state = Str(record.value(), "state");
  st.state = st.writer_pid ? "running" : state == "finished" ? "finished" : "interrupted";
  auto summary = ReadJsonInside(fsys, dir, kLoadSummary, kMaxSummaryBytes);
  if (summary.ok() && summary.value().is_object() && summary.value().contains("steps") &&
      summary.value()["steps"].is_array()) {
    st.done = st.total = summary.value()["steps"].size();
  }
  return st;
}

void RegisterLoadFolderKind(FolderKindRegistry& registry) {
  FolderKindSpec spec;
  spec.name = kFolderKindLoad;
  spec.min_format = spec.max_format = kLoadFormatVersion;
  spec.run_record = false;
  spec.markers = {kLoadSummary};
  spec.checks = CheckLoadFolder;
  spec.status = ReadLoadStatus;
  spec.checked = "a load folder: its record, every request against its step's figures and the verdict";
  registry.Register(std::move(spec));
}

}  // namespace pilot
