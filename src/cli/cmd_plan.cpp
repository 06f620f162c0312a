// `pilot plan --from DIR (--corpus-items N | --corpus-manifest F) --prices F`: cards x
// period x lots for the full corpus, projected from a pilot's measurement (rental_plan.h).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>

#include "cli/cli.h"
#include "cli/session.h"
#include "pilot/destination.h"
#include "pilot/escape.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/load/load_files.h"
#include "pilot/paths.h"
#include "pilot/verdict/rental_plan.h"
#include "pilot/verdict/service_plan.h"

namespace pilot::cli {
namespace {

namespace fs = std::filesystem;

struct PlanOptions {
  Common common;
  std::string from, corpus_items, corpus_manifest, prices, out, tokenizer;
  std::optional<std::string> expect;
  std::optional<double> allowance_hours, assume_scaling, headroom, time_resolution, copy_off;
  bool all = false;
  // A service, from a load folder.
  std::optional<double> rate, replica_memory_gb;
  std::string measured_on;
};

std::string Hours(double h) {
  char buf[64];
  std::snprintf(buf, sizeof buf, h >= 1e7 ? "%.3g" : "%.2f", h);
  return buf;
}

// Bytes for a person: 1000-based units, as a disk is sold.
std::string Bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) {
    b /= 1000;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

std::string MixText(const LengthMix& m) {
  if (!m.known()) return "unknown (inputs not found)";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu of %zu inputs sized, mean %.0f bytes%s", m.sized, m.items,
                m.mean_bytes(), m.missing ? " (some missing)" : "");
  return buf;
}

void PrintPlan(const RentalPlan& plan, const nlohmann::ordered_json& doc, bool all) {
  const PlanRequest& q = plan.request;
  const Measurement& b = q.basis;
  const std::string cur = q.prices.currency;
  for (const auto& w : plan.warnings) {
    if (q.prices.example && w.find("EXAMPLE") != std::string::npos) std::printf("WARNING: %s\n\n", w.c_str());
  }
  std::printf("basis: %s folder %s\n", b.folder_kind.c_str(), b.folder.c_str());
  std::printf("  measured on %s (%s): %zu items, %.3g items/s per card, peak %.1f MB (%s)\n",
              b.device.c_str(), DeviceClassName(b.device_class), b.items, b.items_per_s_per_card,
              b.peak_memory_mb, b.memory_basis == "device" ? "device allocator" : "resident memory, RSS");
  if (!b.device_name.empty())
    std::printf("  the device, as its doctor names it: %s\n", EscapeTerminal(b.device_name).c_str());
  if (!b.peak_note.empty()) std::printf("  peak: %s\n", b.peak_note.c_str());
  std::printf("  rate: %s\n", b.throughput_basis.c_str());
  std::printf("  pilot's inputs: %s\n", MixText(b.mix).c_str());
  std::printf("corpus: %zu items%s%s; its inputs: %s\n", q.corpus.items,
              q.corpus.manifest.empty() ? "" : " from ", q.corpus.manifest.c_str(),
              MixText(q.corpus.mix).c_str());
  std::printf(
      "allowance: %.1f h (install, checks, export) on top of compute; headroom: %.0f%% of a card kept free\n",
      q.allowance_hours, q.headroom * 100);
  if (q.tokens) {
    const TokenProjection& t = *q.tokens;
    std::printf(
        "projected by tokens (%s, max_length %zu): the corpus averages %.1f tokens an item over %zu "
        "tokenized of %zu, the pilot %.1f over %zu: x%.3f the pilot's time per item\n",
        EscapeTerminal(t.tokenizer_file).c_str(), t.max_length, t.corpus.mean_tokens(), t.corpus.sampled,
        t.corpus.items, t.pilot.mean_tokens(), t.pilot.sampled, t.factor());
  } else {
    std::printf("projected by items%s\n", q.by_items_why.empty()
                                              ? " (the stage takes no tokenizer)"
                                              : " (a warning below says why not by tokens)");
  }
  const OutputProjection& out = plan.output;
  if (out.corpus_bytes) {
    std::printf(
        "outputs: %.0f bytes an item as stored (%s over %zu items), %s for the corpus; copied off at %g MB/s "
        "in %s h, in every plan's needed hours\n",
        *out.bytes_per_item, Bytes(static_cast<double>(*b.output_bytes)).c_str(), b.items,
        Bytes(*out.corpus_bytes).c_str(), q.copy_off_mb_per_s, Hours(out.copy_off_hours).c_str());
  } else {
    std::printf("outputs: unknown (a sweep keeps none): copying them off is not in the needed hours\n");
  }
  if (q.assume_scaling)
    std::printf("assumed scaling: x%g on cards of another class (not measured)\n", *q.assume_scaling);
  std::printf("prices: %s (%s)\n", q.prices.file.c_str(), cur.c_str());
  const bool by_tokens = q.tokens.has_value();
  std::printf("picks: %s\n", PickRule(q.time_resolution_hours).c_str());
  std::size_t hidden = 0;
  for (const CardVerdict& v : plan.cards) {
    std::printf("\n%s [%s]%s: fit %s — %s\n", v.card.c_str(), v.device_class.c_str(),
                v.stand_in ? " (STAND-IN)" : "", v.fit.c_str(), EscapeTerminal(v.note).c_str());
    // By default, the card's own cheapest and fastest plans that fit; --all: every row.
    const PlanPicks own = PickPlans(plan, v.card);
    bool header = false;
    std::size_t rows_of_card = 0, shown = 0;
    for (std::size_t i = 0; i < plan.rows.size(); ++i) {
      const PlanRow& r = plan.rows[i];
      if (r.card != v.card) continue;
      ++rows_of_card;
      // The plan's own picks are shown too: a card's fastest within its own quickest can differ.
      if (!all && own.cheapest != i && own.fastest != i && plan.cheapest != i && plan.fastest != i) continue;
      ++shown;
      if (!header) {
        std::printf("  %6s %4s %5s %12s %12s %8s %14s %13s%s\n", "period", "lots", "cards", "compute h",
                    "needed h*", "covers", ("cost " + cur).c_str(), "per M items",
                    by_tokens ? "  per M tokens" : "");
        header = true;
      }
      std::string mark;
      if (!all) {
        if (own.cheapest == i) mark += "  card's cheapest";
        if (own.fastest == i) mark += own.cheapest == i ? " and fastest" : "  card's fastest";
      }
      if (plan.cheapest == i) mark += "  <- cheapest";
      if (plan.fastest == i) mark += "  <- fastest";
      char tokens[32] = "";
      if (by_tokens && r.cost_per_million_tokens)
        std::snprintf(tokens, sizeof tokens, " %13.4g", *r.cost_per_million_tokens);
      std::printf("  %5dd %4d %5d %12s %12s %8s %14.2f %13.4g%s%s%s\n", r.period_days, r.lots, r.cards,
                  Hours(r.compute_hours).c_str(), Hours(r.needed_hours).c_str(),
                  r.period_suffices ? "yes" : "no", r.cost, r.cost_per_million_items, tokens,
                  r.rate_basis == "assumed" ? "  (assumed rate)" : "", mark.c_str());
    }
    if (!all && rows_of_card > 0 && shown == 0) std::printf("  no plan of this card fits\n");
    hidden += rows_of_card - shown;
  }
  std::printf("\n* needed h = compute + copy-off %s h + allowance %.1f h\n",
              Hours(out.copy_off_hours).c_str(), q.allowance_hours);
  if (hidden > 0) {
    std::printf(
        "\n%zu more rows (every period and lot count): --all shows them; the plan document "
        "(--out, --json) always holds them\n",
        hidden);
  }
  std::printf("\n");
  auto line = [&](const char* what, const std::optional<std::size_t>& i) {
    if (!i) return;
    const PlanRow& r = plan.rows[*i];
    char tokens[64] = "";
    if (r.cost_per_million_tokens)
      std::snprintf(tokens, sizeof tokens, ", %.4g per million tokens", *r.cost_per_million_tokens);
    std::printf(
        "%s: %s, %d lot(s) = %d card(s), %d days: %s h needed, %.2f %s (%.4g per million items%s; "
        "fit %s%s)\n",
        what, r.card.c_str(), r.lots, r.cards, r.period_days, Hours(r.needed_hours).c_str(), r.cost,
        cur.c_str(), r.cost_per_million_items, tokens, r.fit.c_str(),
        r.rate_basis == "assumed" ? ", assumed rate" : "");
  };
  line("cheapest", plan.cheapest);
  line("fastest", plan.fastest);
  if (!plan.any_fits()) std::printf("no plan fits\n");
  for (const auto& w : plan.warnings) std::printf("warning: %s\n", EscapeTerminal(w).c_str());
  for (const auto& c : doc["caveats"]) std::printf("note: %s\n", c.get<std::string>().c_str());
}

// --out resolved once (paths.h): a new file, in an existing folder outside every pilot folder.
Result<fs::path> PlanOut(FileSystem& fsys, const std::string& given) {
  auto out = ResolveDestination(fsys, given, "--out", Destination::kNew);
  if (!out.ok()) return out.error();
  auto st = fsys.LinkStat(out.value());
  if (!st.ok()) return st.error();
  if (st.value().exists) {
    return BadInput("--out exists (a plan is never overwritten)", given,
                    "give a new file name, or remove it first");
  }
  auto dir = fsys.LinkStat(out.value().parent_path());
  if (!dir.ok()) return dir.error();
  if (!dir.value().directory) {
    return BadInput("--out's folder does not exist", given, "create the folder first, or give another path");
  }
  return out;
}

Result<RentalPlan> MakePlan(const PlanOptions& o) {
  FileSystem& fsys = CliFileSystem();
  PlanRequest q;
  auto prices = LoadPrices(fsys, o.prices);
  if (!prices.ok()) return prices.error();
  q.prices = std::move(prices).value();
  if (!o.corpus_items.empty()) {
    q.corpus.items = static_cast<std::size_t>(std::stoull(o.corpus_items));  // CountValidator: <= 18 digits
    if (q.corpus.items == 0) return BadInput("the corpus has no item", "--corpus-items", "give N >= 1");
  } else {
    auto corpus = ReadCorpusManifest(fsys, o.corpus_manifest);
    if (!corpus.ok()) return corpus.error();
    q.corpus = std::move(corpus).value();
  }
  if (o.allowance_hours) q.allowance_hours = *o.allowance_hours;
  if (o.headroom) q.headroom = *o.headroom;
  if (o.time_resolution) q.time_resolution_hours = *o.time_resolution;
  if (o.copy_off) q.copy_off_mb_per_s = *o.copy_off;
  q.assume_scaling = o.assume_scaling;
  auto from = ResolveGivenFolder(fsys, o.from, "a finished run, merged, sweep or calibration folder");
  if (!from.ok()) return from.error();
  auto basis = ReadMeasurement(fsys, from.value(), o.expect);
  if (!basis.ok()) return basis.error();
  q.basis = std::move(basis).value();
  std::optional<fs::path> tokenizer;
  if (!o.tokenizer.empty()) tokenizer = fs::path(o.tokenizer);
  auto progress = [&o](std::size_t done, std::size_t total) {
    if (!o.common.quiet && !o.common.json)
      std::fprintf(stderr, "plan: tokenizing the corpus: %zu/%zu items\n", done, total);
  };
  PILOT_TRY(ProjectByTokens(fsys, from.value(), tokenizer, q, progress));
  return BuildRentalPlan(q);
}

void PrintServicePlan(const ServicePlan& plan) {
  const ServicePlanRequest& q = plan.request;
  const ServiceBasis& b = q.basis;
  for (const auto& w : plan.warnings) std::printf("WARNING: %s\n", EscapeTerminal(w).c_str());
  std::printf("basis: load folder %s (%s)\n", EscapeTerminal(b.folder).c_str(),
              EscapeTerminal(b.search).c_str());
  if (!(b.rate_per_replica > 0)) {
    std::printf("  no rate met the SLO (%s)\n", EscapeTerminal(b.slo).c_str());
    std::printf("no plan: there is no rate per replica to plan with\n");
    return;
  }
  const std::string where = b.target.empty()
                                ? "on " + b.device + (b.device_name.empty() ? "" : " (" + b.device_name + ")")
                                : "against " + b.target;
  std::printf("  measured %s: %s requests/s per replica, %s\n", EscapeTerminal(where).c_str(),
              FixedDecimals(b.rate_per_replica, 1).c_str(), EscapeTerminal(b.rate_basis).c_str());
  std::printf("  SLO: %s\n", EscapeTerminal(b.slo).c_str());
  if (q.replica_memory_gb) {
    std::printf("  one replica's memory: %s GB, as stated (--replica-memory-gb)\n",
                FixedDecimals(*q.replica_memory_gb, 2).c_str());
  } else if (b.memory_mb) {
    std::printf("  one replica's memory: %s MB (%s peak)\n", FixedDecimals(*b.memory_mb, 1).c_str(),
                EscapeTerminal(b.memory_basis).c_str());
  } else {
    std::printf(
        "  one replica's memory: not measured (one replica per card; --replica-memory-gb states it)\n");
  }
  std::printf("to serve %s requests/s:\n", FixedDecimals(q.rate, 1).c_str());
  std::printf("  %-24s %6s %9s %9s %6s %5s %12s %16s\n", "card", "period", "replicas", "per card", "cards",
              "lots", ("cost " + q.prices.currency).c_str(), "per 1M requests");
  for (std::size_t k = 0; k < plan.rows.size(); ++k) {
    const ServicePlanRow& r = plan.rows[k];
    if (!r.fits) {
      std::printf("  %-24s %5dd %9zu   does not fit: %s\n", EscapeTerminal(r.card).c_str(), r.period_days,
                  r.replicas, r.why.c_str());
      continue;
    }
    std::printf("  %-24s %5dd %9zu %9s %6zu %5zu %12s %16s%s%s\n",
                EscapeTerminal(r.card + (r.stand_in ? " (STAND-IN)" : "")).c_str(), r.period_days, r.replicas,
                (std::to_string(r.per_card) + (r.fit_known ? "" : "?")).c_str(), r.cards, r.lots,
                FixedDecimals(r.cost, 2).c_str(), FixedDecimals(r.cost_per_million, 4).c_str(),
                r.assumed ? "  (rate assumed)" : "", plan.cheapest == k ? "  <- cheapest per request" : "");
  }
  if (plan.cheapest) {
    const ServicePlanRow& c = plan.rows[*plan.cheapest];
    std::printf(
        "cheapest: %zu lot(s) of %s for %d days (%zu replica(s)), %s %s, %s %s per million requests\n",
        c.lots, EscapeTerminal(c.card).c_str(), c.period_days, c.replicas, FixedDecimals(c.cost, 2).c_str(),
        q.prices.currency.c_str(), FixedDecimals(c.cost_per_million, 4).c_str(), q.prices.currency.c_str());
  } else {
    std::printf("no plan: nothing fits (see the warnings)\n");
  }
}

int ExecuteService(const PlanOptions& o) {
  FileSystem& fsys = CliFileSystem();
  std::optional<fs::path> out;
  if (!o.out.empty()) {
    auto resolved = PlanOut(fsys, o.out);
    if (!resolved.ok()) return ReportError(resolved.error(), o.common);
    out = resolved.value();
  }
  if (!o.corpus_items.empty() || !o.corpus_manifest.empty() || !o.tokenizer.empty() || o.allowance_hours ||
      o.time_resolution || o.copy_off) {
    return ReportError(
        BadInput("--rate plans a service: --corpus-items, --corpus-manifest, --tokenizer, "
                 "--allowance-hours, --time-resolution and --copy-off-mb-per-s plan a batch corpus",
                 "--rate"),
        o.common);
  }
  ServicePlanRequest q;
  auto prices = LoadPrices(fsys, o.prices);
  if (!prices.ok()) return ReportError(prices.error(), o.common);
  q.prices = std::move(prices).value();
  if (!o.measured_on.empty() && std::none_of(q.prices.cards.begin(), q.prices.cards.end(),
                                             [&](const CardType& c) { return c.name == o.measured_on; })) {
    return ReportError(
        BadInput("no card of the price file is named '" + ValueForMessage(o.measured_on, 64) + "'",
                 "--measured-on", "give a card's `name` from " + o.prices),
        o.common);
  }
  auto from = ResolveGivenFolder(fsys, o.from, "a finished load folder");
  if (!from.ok()) return ReportError(from.error(), o.common);
  auto basis = ReadServiceBasis(fsys, from.value(), o.expect);
  if (!basis.ok()) return ReportError(basis.error(), o.common);
  q.basis = std::move(basis).value();
  q.rate = *o.rate;
  if (o.headroom) q.headroom = *o.headroom;
  q.replica_memory_gb = o.replica_memory_gb;
  q.assume_scaling = o.assume_scaling;
  q.measured_on = o.measured_on;
  auto plan = BuildServicePlan(q);
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  const nlohmann::ordered_json doc = ServicePlanToJson(plan.value());
  if (out) {
    if (Status st = fsys.WriteFileAtomic(*out, PrettyJson(doc)); !st.ok())
      return ReportError(st.error(), o.common);
  }
  const int code = Code(plan.value().any_fits() ? ExitCode::kOk : ExitCode::kAcceptanceFailed);
  if (o.common.json) {
    PrintJson(doc);
    return code;
  }
  PrintServicePlan(plan.value());
  if (!o.expect) {
    std::printf(
        "note: the --from folder's fingerprint was not checked against one noted earlier (--expect FP): "
        "a copy re-hashed after its figures were edited would verify too\n");
  }
  if (out) std::printf("plan written to %s\n", o.out.c_str());
  return code;
}

int Execute(const PlanOptions& o) {
  ApplyLogLevel(o.common);
  if (o.rate) return ExecuteService(o);
  if (!o.replica_memory_gb && o.measured_on.empty()) {
    // A load folder plans a service, with --rate.
    auto kind = ReadFolderKind(CliFileSystem(), o.from);
    if (kind.ok() && kind.value().kind == kFolderKindLoad) {
      return ReportError(
          BadInput("a load folder plans a service: give --rate R, the requests per second to serve", o.from,
                   "docs/load.md, 'From a load test to a plan'"),
          o.common);
    }
  } else {
    return ReportError(
        BadInput("--replica-memory-gb and --measured-on plan a service, with --rate", "--rate"), o.common);
  }
  if (o.corpus_items.empty() && o.corpus_manifest.empty())
    return ReportError(BadInput("give --corpus-items N or --corpus-manifest F", "pilot plan"), o.common);
  std::optional<fs::path> out;
  if (!o.out.empty()) {
    auto resolved = PlanOut(CliFileSystem(), o.out);
    if (!resolved.ok()) return ReportError(resolved.error(), o.common);
    out = resolved.value();
  }
  auto plan = MakePlan(o);
  if (!plan.ok()) return ReportError(plan.error(), o.common);
  const RentalPlan& p = plan.value();
  const nlohmann::ordered_json doc = RentalPlanToJson(p);
  if (out) {
    if (Status st = CliFileSystem().WriteFileAtomic(*out, PrettyJson(doc)); !st.ok()) {
      return ReportError(st.error(), o.common);
    }
  }
  const int code = Code(p.any_fits() ? ExitCode::kOk : ExitCode::kAcceptanceFailed);
  if (o.common.json) {
    PrintJson(doc);
    return code;
  }
  PrintPlan(p, doc, o.all);
  if (!o.expect) {
    std::printf(
        "note: the --from folder's fingerprint was not checked against one noted earlier (--expect FP): "
        "a copy re-hashed after its figures were edited would verify too\n");
  }
  if (!o.out.empty()) std::printf("plan written to %s (for pilot decide --plan)\n", o.out.c_str());
  return code;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Project cards x period (3/7/30 days) x lots (1-10) for the full corpus from a pilot's measurement");
  cmd->add_option(
         "--from", o->from,
         "A finished run, shard, merged, sweep or calibration folder (verified first, a calibration's "
         "pilot and sweep too); or a load folder, with --rate")
      ->required();
  auto* items = cmd->add_option("--corpus-items", o->corpus_items, "The full corpus' item count")
                    ->check(CountValidator());
  auto* manifest =
      cmd->add_option("--corpus-manifest", o->corpus_manifest,
                      "The full corpus' manifest (its item count; its inputs' bytes where present)");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "The tokenizer file a tokenized run used, where it is not at the path the run found it "
                  "(its sha256 must be the run's pin)");
  items->excludes(manifest);
  manifest->excludes(items);
  cmd->add_option("--prices", o->prices,
                  "Price file: card types, memory, cards per lot, lot price per period")
      ->required();
  cmd->add_option("--allowance-hours", o->allowance_hours,
                  "Hours added to compute for install, checks and export (default 8)");
  cmd->add_option("--assume-scaling", o->assume_scaling,
                  "Take F x the measured rate (items/s; with --rate, requests/s a replica) on cards not "
                  "measured (an assumption)");
  cmd->add_option("--headroom", o->headroom,
                  "Share of a card's memory kept free when judging fit (default 0.1)");
  cmd->add_option("--time-resolution", o->time_resolution,
                  "Hours within which needed times are not told apart: the fastest plan is the cheapest of "
                  "those needing at most the quickest's hours + H (default 0.1; 0 compares exactly)");
  cmd->add_option("--copy-off-mb-per-s", o->copy_off,
                  "The rate, in MB/s (10^6 bytes), at which the outputs are copied off the rented machine: "
                  "the corpus' outputs at it are in every plan's needed hours (default 100)");
  cmd->add_flag("--all", o->all,
                "Print every row (each period and lot count) of each card, not just its cheapest and fastest "
                "that fit");
  cmd->add_option("--out", o->out,
                  "Write the plan document (JSON, for pilot decide --plan) to this new file");
  cmd->add_option(
         "--expect", o->expect,
         "The --from folder's fingerprint as noted when it was written: another one is refused, so that "
         "figures edited into a re-hashed copy are never planned on")
      ->check(CLI::Validator(
          [](std::string& v) {
            if (v.empty()) return EmptyValueMessage(v);
            return IsSha256Hex(v) ? std::string()
                                  : std::string("takes a fingerprint: 64 lower-case hex digits");
          },
          "FINGERPRINT"));
  cmd->add_option(
         "--rate", o->rate,
         "With a load folder: the requests per second the service must serve at its SLO (a service's "
         "plan: replicas, cards, cost per million requests)")
      ->check(CLI::Range(1e-6, 1e9));
  cmd->add_option(
         "--replica-memory-gb", o->replica_memory_gb,
         "With --rate: one replica's memory in GB, stated (else the load's measured peak; none over HTTP)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option(
      "--measured-on", o->measured_on,
      "With --rate: the price file's card the load measured (a service over HTTP, whose card pilot "
      "cannot see)");
  AddCommonOptions(*cmd, o->common);
  cmd->footer(
      "cost = lot price x lots: a lot of several cards (a B200 lot is 2) is priced once. One worker per "
      "card\n"
      "(a shard per card: pilot run --shard I/N); cards neither spread one program nor pool memory. A plan "
      "fits\n"
      "when the model fits one card (or fit is unknown: CPU figures say nothing of a card's memory) and the\n"
      "period covers compute + copying the outputs off + allowance. A measurement on another device class "
      "than a card is refused\n"
      "unless --assume-scaling is given. Exit 0: some plan fits; 4: none does; 2: bad input.\n"
      "With a load folder and --rate R: replicas = R over the highest rate one replica met the SLO at; as "
      "many\n"
      "replicas share a card as its memory (less the headroom) holds; each card and period's cost and cost "
      "per\n"
      "million requests served at R (docs/load.md, 'From a load test to a plan').");
  cmd->callback([o, &exit_code] { exit_code = Execute(*o); });
}

}  // namespace pilot::cli
