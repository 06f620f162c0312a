#include "pilot/sweep/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "pilot/escape.h"
#include "pilot/json_util.h"
#include "pilot/params.h"

namespace pilot {

namespace {

using J = nlohmann::ordered_json;

double Num(const J& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}
std::string Str(const J& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}
std::string Count(const J& j, const char* key, SweepRendering rendering) {
  // Only a whole number >= 0 is a count: a float (1e300, -2.5) is never converted. Parsed
  // JSON holds it unsigned, the summary built in memory signed: both are counts, except in
  // the rendering of the versions that took only the unsigned (kBlankSignedCounts).
  if (!j.contains(key)) return "";
  const J& v = j[key];
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (rendering == SweepRendering::kBlankSignedCounts) return "";
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return std::to_string(v.get<std::int64_t>());
  return "";
}

const J& Arr(const J& j, const char* key) {
  static const J empty = J::array();
  return j.contains(key) && j[key].is_array() ? j[key] : empty;
}

const J* GroupOf(const J& summary, std::uint64_t g) {
  for (const auto& e : Arr(summary, "groups")) {
    if (e.contains("group") && e["group"] == g) return &e;
  }
  return nullptr;
}

const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};

// One chart: `value` of each cell against log2(batch size), a line per group, limits as red
// crosses at the limit cell's own value.
std::string Chart(const J& summary, const char* title, const char* unit, double (*value)(const J&),
                  SweepRendering rendering) {
  const auto count = [rendering](const J& j, const char* key) { return Count(j, key, rendering); };
  const double w = 580, h = 300, left = 64, right = 170, top = 34, bottom = 44;
  const double pw = w - left - right, ph = h - top - bottom;
  const auto& cells = Arr(summary, "cells");
  std::vector<int> sizes;
  for (const auto& s : Arr(summary["settings"], "batch_sizes")) sizes.push_back(s.get<int>());
  double max_x = sizes.empty() ? 1 : std::log2(std::max(1, sizes.back()));
  if (max_x <= 0) max_x = 1;
  double max_y = 0;
  for (const auto& c : cells) max_y = std::max(max_y, value(c));
  if (max_y <= 0) max_y = 1;
  max_y *= 1.1;
  auto X = [&](double b) { return left + pw * std::log2(std::max(1.0, b)) / max_x; };
  auto Y = [&](double v) { return top + ph - ph * v / max_y; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"" << w << "\" height=\"" << h
    << "\" viewBox=\"0 0 " << w << ' ' << h << "\"><title>" << EscapeHtml(title) << "</title>"
    << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"#ffffff\"/>"
    << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << EscapeHtml(title)
    << "</text>";
  // Axes, ticks and grid.
  s << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\"" << top + ph
    << "\" stroke=\"#333\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
    << top + ph << "\" stroke=\"#333\"/>";
  for (int b : sizes) {
    s << "<line x1=\"" << X(b) << "\" y1=\"" << top << "\" x2=\"" << X(b) << "\" y2=\"" << top + ph
      << "\" stroke=\"#eee\"/><text x=\"" << X(b) << "\" y=\"" << top + ph + 16
      << "\" font-size=\"11\" text-anchor=\"middle\">" << b << "</text>";
  }
  for (int k = 0; k <= 4; ++k) {
    double v = max_y * k / 4;
    s << "<text x=\"" << left - 6 << "\" y=\"" << Y(v) + 4 << "\" font-size=\"11\" text-anchor=\"end\">"
      << FixedDecimals(v, v < 10 ? 1 : 0) << "</text><line x1=\"" << left << "\" y1=\"" << Y(v) << "\" x2=\""
      << left + pw << "\" y2=\"" << Y(v) << "\" stroke=\"#eee\"/>";
  }
  s << "<text x=\"" << left + pw / 2 << "\" y=\"" << h - 8
    << "\" font-size=\"12\" text-anchor=\"middle\">batch size</text>"
    << "<text x=\"14\" y=\"" << top + ph / 2
    << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << top + ph / 2 << ")\">"
    << EscapeHtml(unit) << "</text>";
  // One line per group.
  std::size_t gi = 0;
  for (const auto& g : Arr(summary, "groups")) {
    const std::uint64_t number = g["group"].get<std::uint64_t>();
    const char* colour = kColours[gi++ % (sizeof kColours / sizeof kColours[0])];
    std::string points;
    for (const auto& c : cells) {
      if (c["group"] != number) continue;
      const double x = X(Num(c, "batch_size")), y = Y(value(c));
      if (Str(c, "limit").empty()) {
        points += FixedDecimals(x, 1) + "," + FixedDecimals(y, 1) + " ";
        s << "<circle cx=\"" << FixedDecimals(x, 1) << "\" cy=\"" << FixedDecimals(y, 1)
          << "\" r=\"3\" fill=\"" << colour << "\"/>";
      } else {
        s << "<g stroke=\"#d62728\" stroke-width=\"2.5\"><line x1=\"" << x - 6 << "\" y1=\"" << y - 6
          << "\" x2=\"" << x + 6 << "\" y2=\"" << y + 6 << "\"/><line x1=\"" << x - 6 << "\" y1=\"" << y + 6
          << "\" x2=\"" << x + 6 << "\" y2=\"" << y - 6 << "\"/></g><text x=\""
          << (x > left + pw * 0.7 ? x - 8 : x + 8) << "\" y=\"" << y - 8
          << "\" font-size=\"10\" fill=\"#d62728\" text-anchor=\"" << (x > left + pw * 0.7 ? "end" : "start")
          << "\">limit: " << EscapeHtml(Str(c, "limit")) << "</text>";
      }
    }
    if (!points.empty()) {
      s << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"" << points
        << "\"/>";
    }
    const double ly = top + 14 + 18 * static_cast<double>(gi - 1);
    s << "<line x1=\"" << left + pw + 12 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 32 << "\" y2=\""
      << ly << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/><text x=\"" << left + pw + 36 << "\" y=\""
      << ly + 4 << "\" font-size=\"11\">group " << number << " (" << count(g, "min_length") << "–"
      << count(g, "max_length") << ")</text>";
  }
  const double ly = top + 14 + 18 * static_cast<double>(gi);
  s << "<g stroke=\"#d62728\" stroke-width=\"2\"><line x1=\"" << left + pw + 16 << "\" y1=\"" << ly - 5
    << "\" x2=\"" << left + pw + 26 << "\" y2=\"" << ly + 5 << "\"/><line x1=\"" << left + pw + 16
    << "\" y1=\"" << ly + 5 << "\" x2=\"" << left + pw + 26 << "\" y2=\"" << ly - 5 << "\"/></g><text x=\""
    << left + pw + 36 << "\" y=\"" << ly + 4 << "\" font-size=\"11\">limit reached</text>";
  s << "</svg>";
  return s.str();
}

double ItemsPerSecond(const J& c) { return Num(c, "items_per_second"); }

// A tokenized stage's sweep: its cells carry tokens, padded_tokens and tokens_per_second.
bool Tokenized(const J& summary) {
  for (const auto& c : Arr(summary, "cells"))
    if (c.contains("padded_tokens")) return true;
  return false;
}
std::string Percent(const J& c, const char* key) {
  return c.contains(key) && c[key].is_number() ? FixedDecimals(100.0 * c[key].get<double>(), 1) : "";
}
double PeakMemory(const J& c) {
  return c.contains("peak_device_mb") && c["peak_device_mb"].is_number() ? c["peak_device_mb"].get<double>()
                                                                         : Num(c, "peak_rss_mb");
}

std::string Latency(const J& c, const char* p) {
  return c.contains("latency_ms") && c["latency_ms"].contains(p)
             ? FixedDecimals(c["latency_ms"][p].get<double>(), 2)
             : "";
}

}  // namespace

std::string SweepCsv(const J& summary, SweepRendering rendering) {
  const auto count = [rendering](const J& j, const char* key) { return Count(j, key, rendering); };
  const bool tokenized = Tokenized(summary);
  std::ostringstream s;
  s << "group,min_length,max_length,group_items,batch_size,cycled,repeats,batches,completed,failed,wall_"
       "seconds,"
       "items_per_second,p50_ms,p90_ms,p95_ms,p99_ms,rss_after_load_mb,peak_rss_mb,peak_device_mb,limit,"
       "equivalence_findings,error"
    << (tokenized ? ",tokens,padded_tokens,tokens_per_second,padding_waste_percent" : "") << "\n";
  for (const auto& c : Arr(summary, "cells")) {
    const J* g = GroupOf(summary, c["group"].get<std::uint64_t>());
    s << count(c, "group") << ',' << (g ? count(*g, "min_length") : "") << ','
      << (g ? count(*g, "max_length") : "") << ',' << count(c, "group_items") << ',' << count(c, "batch_size")
      << ',' << (c.value("cycled", false) ? "yes" : "no") << ',' << count(c, "repeats") << ','
      << count(c, "batches") << ',' << count(c, "completed") << ',' << count(c, "failed") << ','
      << FixedDecimals(Num(c, "wall_seconds"), 6) << ',' << FixedDecimals(Num(c, "items_per_second"), 1)
      << ',' << Latency(c, "p50") << ',' << Latency(c, "p90") << ',' << Latency(c, "p95") << ','
      << Latency(c, "p99") << ',' << FixedDecimals(Num(c, "rss_after_load_mb"), 1) << ','
      << FixedDecimals(Num(c, "peak_rss_mb"), 1) << ','
      << (c.contains("peak_device_mb") && c["peak_device_mb"].is_number()
              ? FixedDecimals(c["peak_device_mb"].get<double>(), 1)
              : "")
      << ',' << EscapeCsv(Str(c, "limit")) << ',' << count(c, "equivalence_findings") << ','
      << EscapeCsv(Str(c, "error"));
    if (tokenized) {
      s << ',' << (c.contains("tokens") ? count(c, "tokens") : "") << ','
        << (c.contains("padded_tokens") ? count(c, "padded_tokens") : "") << ','
        << (c.contains("tokens_per_second") ? FixedDecimals(Num(c, "tokens_per_second"), 1) : "") << ','
        << Percent(c, "padding_waste");
    }
    s << '\n';
  }
  return s.str();
}

std::string SweepMarkdown(const J& summary, SweepRendering rendering) {
  const auto count = [rendering](const J& j, const char* key) { return Count(j, key, rendering); };
  std::ostringstream s;
  const J& on = summary["measured_on"];
  s << "# Sweep " << EscapeMarkdown(Str(summary, "run_id")) << "\n\n";
  s << "Stage `" << EscapeMarkdown(Str(summary["stage"], "kind")) << "` ("
    << EscapeMarkdown(Str(summary["stage"], "output")) << "), model sha256 `"
    << Str(summary["stage"], "model_sha256") << "`, measured on **" << EscapeMarkdown(Str(on, "device"))
    << "**: " << EscapeMarkdown(Str(on, "note")) << ". Memory: " << EscapeMarkdown(Str(on, "memory"))
    << ".\n\n";
  const J& f = summary["footprint"];
  if (f.contains("weights_mb") && f["weights_mb"].is_number()) {
    s << "Model as loaded: " << FixedDecimals(f["weights_mb"].get<double>(), 2)
      << " MB of weights and buffers (" << count(f, "parameters") << " parameter and " << count(f, "buffers")
      << " buffer tensors); the process held " << FixedDecimals(Num(f, "rss_after_load_mb"), 1)
      << " MB resident once it was loaded.\n\n";
  }
  const J& st = summary["settings"];
  s << "Groups by input length in **" << EscapeMarkdown(Str(summary, "measure")) << "**"
    << (Str(summary, "measure") != "features" ? ""
        : Tokenized(summary)                  ? " (the stage's own measure: tokens, special tokens included)"
                                              : " (the stage's own measure: hashed n-grams)")
    << "; " << count(summary, "excluded")
    << " item(s) rejected by the prechecks were left out. Each cell ran one warm-up batch, then "
    << count(st, "repeats") << " timed pass(es) over its group. Latency is per batch.";
  if (st.contains("latency_budget_ms") && st["latency_budget_ms"].is_number()) {
    s << " Latency budget (p95): " << FixedDecimals(st["latency_budget_ms"].get<double>(), 2) << " ms.";
  }
  if (st.contains("max_memory_mb") && st["max_memory_mb"].is_number()) {
    s << " Memory cap: " << FixedDecimals(st["max_memory_mb"].get<double>(), 0) << " MB.";
  }
  s << "\n\n| group | lengths | items |\n|---|---|---|\n";
  for (const auto& g : Arr(summary, "groups")) {
    s << "| " << count(g, "group") << " | " << count(g, "min_length") << "–" << count(g, "max_length")
      << " | " << count(g, "items") << " |\n";
  }
  s << "\n## Cells\n\n| group | batch | items/s | p50 ms | p95 ms | p99 ms | peak MB | completed | failed | "
       "limit | "
       "differs from batch 1 |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : Arr(summary, "cells")) {
    s << "| " << count(c, "group") << " | " << count(c, "batch_size")
      << (c.value("cycled", false) ? " (cycled)" : "") << " | "
      << FixedDecimals(Num(c, "items_per_second"), 0) << " | " << Latency(c, "p50") << " | "
      << Latency(c, "p95") << " | " << Latency(c, "p99") << " | " << FixedDecimals(PeakMemory(c), 1) << " | "
      << count(c, "completed") << " | " << count(c, "failed") << " | "
      << (Str(c, "limit").empty()
              ? ""
              : "**" + EscapeMarkdown(Str(c, "limit")) + "**: " + EscapeMarkdown(Str(c, "error")))
      << " | " << count(c, "equivalence_findings") << " |\n";
  }
  if (Tokenized(summary)) {
    s << "\n## Tokens\n\nEach batch is padded to its longest text; the padding is the share of the "
         "padded tensors that no text filled, which the model computes over all the same.\n\n"
         "| group | batch | tokens/s | tokens | padded tokens | padding % |\n|---|---|---|---|---|---|\n";
    for (const auto& c : Arr(summary, "cells")) {
      if (!c.contains("padded_tokens")) continue;
      s << "| " << count(c, "group") << " | " << count(c, "batch_size") << " | "
        << FixedDecimals(Num(c, "tokens_per_second"), 0) << " | " << count(c, "tokens") << " | "
        << count(c, "padded_tokens") << " | " << Percent(c, "padding_waste") << " |\n";
    }
  }
  bool generates = false;
  for (const auto& c : Arr(summary, "cells")) generates = generates || c.contains(kGenerationParamsKey);
  if (generates) {
    s << "\n## Generation\n\nEach cell decodes its group's prompts "
      << count(summary["stage"], "max_new_tokens") << " new tokens at most, `batch` sequences at once ("
      << EscapeMarkdown(Str(summary["stage"], "batching"))
      << " batching). Time to first token runs from a prompt's prefill to its first token.\n\n"
         "| group | batch | completion tokens/s | TTFT p50 / p99 ms | TPOT p50 / p99 ms | KV cache MiB | "
         "slot occupancy % |\n|---|---|---|---|---|---|---|\n";
    for (const auto& c : Arr(summary, "cells")) {
      if (!c.contains(kGenerationParamsKey)) continue;
      const J& g = c[kGenerationParamsKey];
      s << "| " << count(c, "group") << " | " << count(c, "batch_size") << " | "
        << FixedDecimals(Num(g, "completion_tokens_per_second"), 0) << " | "
        << FixedDecimals(Num(g["ttft_ms"], "p50"), 2) << " / " << FixedDecimals(Num(g["ttft_ms"], "p99"), 2)
        << " | " << FixedDecimals(Num(g["tpot_ms"], "p50"), 3) << " / "
        << FixedDecimals(Num(g["tpot_ms"], "p99"), 3) << " | "
        << FixedDecimals(Num(g, "kv_cache_bytes") / 1048576.0, 3) << " | "
        << (g["slot_occupancy"].is_number() ? Percent(g, "slot_occupancy") : std::string("-")) << " |\n";
    }
  }
  bool any_cycled = false;
  for (const auto& c : Arr(summary, "cells")) any_cycled = any_cycled || c.value("cycled", false);
  if (any_cycled) {
    s << "\n(cycled): the batch size exceeds the group's item count; each batch was filled by cycling the "
         "group's "
         "items.\n";
  }
  if (!Arr(summary, "not_run").empty()) {
    s << "\nNot run:";
    for (const auto& n : Arr(summary, "not_run")) {
      s << " group " << count(n, "group") << " batch " << count(n, "batch_size") << " ("
        << EscapeMarkdown(Str(n, "reason")) << ");";
    }
    s << "\n";
  }
  const std::string findings = count(summary["equivalence"], "findings");
  s << "\n## Equivalence with batch 1\n\n";
  if (findings == "0") {
    s << "Every item's outcome at every batch size equals its outcome at batch 1, in order (confidence "
         "within "
      << summary["tolerances"]["confidence"].get<double>() << ", vectors within "
      << summary["tolerances"]["vector"].get<double>() << ").\n";
  } else {
    s << "**" << findings
      << " finding(s)**: batching changed these results.\n\n| group | batch | position | id | what |\n"
         "|---|---|---|---|---|\n";
    for (const auto& e : Arr(summary, "findings")) {
      s << "| " << count(e, "group") << " | " << count(e, "batch_size") << " | " << count(e, "position")
        << " | " << EscapeMarkdown(Str(e, "id")) << " | " << EscapeMarkdown(Str(e, "what")) << " |\n";
    }
  }
  s << "\n## Recommendation\n\nPer group, the largest batch size measured below its first limit (within the "
       "latency budget and the memory cap), and, beside it, the size that measured the highest "
       "throughput.\n\n"
       "| group | lengths | batch size | why | peak MB | fastest |\n|---|---|---|---|---|---|\n";
  for (const auto& r : Arr(summary, "recommendation")) {
    s << "| " << count(r, "group") << " | " << count(r, "min_length") << "–" << count(r, "max_length")
      << " | " << (r.contains("batch_size") && r["batch_size"].is_number() ? count(r, "batch_size") : "none")
      << " | " << EscapeMarkdown(Str(r, "why")) << " | "
      << (r.contains("peak_memory_mb") && r["peak_memory_mb"].is_number()
              ? FixedDecimals(r["peak_memory_mb"].get<double>(), 1)
              : "")
      << " | "
      << (r.contains("fastest_batch_size") && r["fastest_batch_size"].is_number()
              ? "batch " + count(r, "fastest_batch_size") + ", " +
                    FixedDecimals(Num(r, "fastest_items_per_second"), 0) + " items/s"
              : "")
      << " |\n";
  }
  // Format 2: the fastest size against the repeats' noise.
  bool noise_header = false;
  for (const auto& r : Arr(summary, "recommendation")) {
    if (!r.contains("noise") || !r["noise"].is_string()) continue;
    if (!noise_header) s << "\nThe fastest size against the repeats' noise:\n\n";
    noise_header = true;
    s << "- group " << count(r, "group") << ": " << EscapeMarkdown(r["noise"].get<std::string>()) << "\n";
  }
  const J& head = summary["headroom"];
  s << "\n## Headroom per card (" << FixedDecimals(Num(head, "reserve") * 100, 0) << "% reserved)\n\n"
    << EscapeMarkdown(Str(head, "basis")) << ".\n\n| card | usable MB |";
  for (const auto& r : Arr(summary, "recommendation")) s << " group " << count(r, "group") << " |";
  s << "\n|---|---|";
  for (std::size_t k = 0; k < Arr(summary, "recommendation").size(); ++k) s << "---|";
  s << "\n";
  for (const auto& card : Arr(head, "cards")) {
    s << "| " << FixedDecimals(Num(card, "card_gb"), 0) << " GB | "
      << FixedDecimals(Num(card, "usable_mb"), 0) << " |";
    for (const auto& r : Arr(summary, "recommendation")) {
      std::string cell = " n/a |";
      for (const auto& g : Arr(card, "groups")) {
        if (g["group"] == r["group"]) {
          const J& fits = g.contains("fits") ? g["fits"] : J();
          cell = fits.is_null() ? " unknown on a GPU |"
                 : fits == true ? " fits, " + FixedDecimals(Num(g, "headroom_mb") / 1024.0, 1) + " GB free |"
                                : " **does not fit** |";
        }
      }
      s << cell;
    }
    s << "\n";
  }
  if (summary.contains("generator_headroom") && summary["generator_headroom"].is_object()) {
    const J& gh = summary["generator_headroom"];
    s << "\n## Sequences that fit per card, by context\n\nThe KV cache at "
      << FixedDecimals(Num(gh, "kv_factor"), 2) << " x " << count(gh, "kv_bytes_per_token")
      << " bytes a position, beside a measured overhead of " << FixedDecimals(Num(gh, "overhead_mb"), 1)
      << " MB: " << EscapeMarkdown(Str(gh, "basis")) << ".\n\n| context | KV MiB / sequence |";
    for (double gb : kCardSizesGb) s << " " << FixedDecimals(gb, 0) << " GB |";
    s << "\n|---|---|";
    for (std::size_t k = 0; k < std::size(kCardSizesGb); ++k) s << "---|";
    s << "\n";
    for (const auto& row : Arr(gh, "contexts")) {
      s << "| " << count(row, "context") << " | " << FixedDecimals(Num(row, "kv_mb_per_sequence"), 2) << " |";
      for (const auto& card : Arr(row, "cards")) {
        s << (card["sequences"].is_number() ? " " + count(card, "sequences") + " |"
                                            : std::string(" unknown on a GPU |"));
      }
      s << "\n";
    }
  }
  return s.str();
}

std::string SweepHtml(const J& summary, SweepRendering rendering) {
  const auto count = [rendering](const J& j, const char* key) { return Count(j, key, rendering); };
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pilot sweep "
    << EscapeHtml(Str(summary, "run_id"))
    << "</title><style>body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
       "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px "
       "8px;text-align:right}"
       "th{background:#f4f4f4}.limit{color:#d62728;font-weight:bold}.charts{display:flex;flex-wrap:wrap;gap:"
       "16px}"
       ".note{color:#555}</style></head><body>\n";
  const J& on = summary["measured_on"];
  s << "<h1>Sweep " << EscapeHtml(Str(summary, "run_id")) << "</h1><p>Stage <code>"
    << EscapeHtml(Str(summary["stage"], "kind")) << "</code>, measured on <b>"
    << EscapeHtml(Str(on, "device")) << "</b>: " << EscapeHtml(Str(on, "note"))
    << ".</p><p class=\"note\">Memory: " << EscapeHtml(Str(on, "memory")) << ". Groups by length in "
    << EscapeHtml(Str(summary, "measure"))
    << ". A red cross marks the batch size where a group reached its limit.</p>\n";
  s << "<div class=\"charts\">"
    << Chart(summary, "Throughput by batch size", "items/s", &ItemsPerSecond, rendering)
    << Chart(summary, "Peak memory by batch size", "MB", &PeakMemory, rendering) << "</div>\n";
  s << "<h2>Cells</h2><table><tr><th>group</th><th>batch</th><th>items/s</th><th>p50 ms</th><th>p95 ms</th>"
       "<th>p99 ms</th><th>peak "
       "MB</th><th>completed</th><th>failed</th><th>limit</th><th>differs</th></tr>\n";
  for (const auto& c : Arr(summary, "cells")) {
    s << "<tr><td>" << count(c, "group") << "</td><td>" << count(c, "batch_size")
      << (c.value("cycled", false) ? " (cycled)" : "") << "</td><td>"
      << FixedDecimals(Num(c, "items_per_second"), 0) << "</td><td>" << Latency(c, "p50") << "</td><td>"
      << Latency(c, "p95") << "</td><td>" << Latency(c, "p99") << "</td><td>"
      << FixedDecimals(PeakMemory(c), 1) << "</td><td>" << count(c, "completed") << "</td><td>"
      << count(c, "failed") << "</td><td class=\"limit\">" << EscapeHtml(Str(c, "limit")) << "</td><td>"
      << count(c, "equivalence_findings") << "</td></tr>\n";
  }
  if (Tokenized(summary)) {
    s << "</table><h2>Tokens</h2><table><tr><th>group</th><th>batch</th><th>tokens/s</th><th>tokens</th>"
         "<th>padded tokens</th><th>padding %</th></tr>\n";
    for (const auto& c : Arr(summary, "cells")) {
      if (!c.contains("padded_tokens")) continue;
      s << "<tr><td>" << count(c, "group") << "</td><td>" << count(c, "batch_size") << "</td><td>"
        << FixedDecimals(Num(c, "tokens_per_second"), 0) << "</td><td>" << count(c, "tokens") << "</td><td>"
        << count(c, "padded_tokens") << "</td><td>" << Percent(c, "padding_waste") << "</td></tr>\n";
    }
  }
  s << "</table><h2>Recommendation</h2><table><tr><th>group</th><th>lengths</th><th>batch "
       "size</th><th>why</th></tr>\n";
  for (const auto& r : Arr(summary, "recommendation")) {
    s << "<tr><td>" << count(r, "group") << "</td><td>" << count(r, "min_length") << "–"
      << count(r, "max_length") << "</td><td>"
      << (r["batch_size"].is_number() ? count(r, "batch_size") : "none") << "</td><td>"
      << EscapeHtml(Str(r, "why")) << "</td></tr>\n";
  }
  s << "</table><p>Equivalence with batch 1: " << count(summary["equivalence"], "findings")
    << " finding(s). The full figures are in sweep.json, sweep.csv and sweep.md beside this "
       "page.</p></body></html>\n";
  return s.str();
}

}  // namespace pilot
