#include "pilot/verdict/decide.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "pilot/bag.h"
#include "pilot/escape.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_file.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/load/load_files.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/run_lock.h"
#include "pilot/run_record.h"
#include "pilot/sweep/sweep_files.h"
#include "pilot/utf8.h"
#include "pilot/verdict/rental_plan.h"

namespace pilot {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

bool IsDecision(const std::string& name) {
  return name == kDecisionGo || name == kDecisionFixEnv || name == kDecisionReviseConfig ||
         name == kDecisionMeasureFirst;
}

namespace {

constexpr std::size_t kMaxRejectedShown = 200;
constexpr std::size_t kExcerptBytes = 160;
constexpr std::uint64_t kExcerptPinCheckBytes = 64ull << 20;
constexpr std::uint64_t kDecisionsFileBytes = 16ull << 20;  // decisions.jsonl, decision.md (verify's cap)

// A cost or a duration for a person: two decimals, never an exponent.
std::string Money(const nlohmann::json& v) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v.get<double>());
  return buf;
}

// One piece of evidence: the bytes read (what is copied, and hashed), parsed.
struct Evidence {
  std::string kind;  // doctor | compare | sweep | plan
  std::string source;
  std::string bytes;
  nlohmann::json doc;
  std::string sha256;
  std::string note;  // sweep: the folder's fingerprint
  // sweep: the manifest its folder's run.json records (verified with the folder); empty if none.
  std::string manifest_sha256;
};

Result<Evidence> ReadEvidence(FileSystem& fsys, const std::string& kind, const fs::path& file) {
  Evidence e;
  e.kind = kind;
  e.source = file.string();
  auto text = ReadCapped(fsys, file, kEvidenceBytes, kind + " evidence");
  if (!text.ok()) return text.error();
  e.bytes = std::move(text.value());
  auto doc = ParseJson(e.bytes, file.string());
  if (!doc.ok()) return doc.error();
  e.doc = std::move(doc.value());
  e.sha256 = Sha256Hex(e.bytes);
  if (!e.doc.is_object()) return BadInput("not a JSON object", file.string());
  return e;
}

struct Facts {
  ojson list = ojson::array();
  // Facts quote untrusted files: control bytes escaped, bounded, before they reach a terminal or a page.
  void Add(const std::string& fact, const std::string& from, const char* points_to) {
    list.push_back({{"fact", EscapeTerminal(TruncateUtf8(fact, 1000))},
                    {"from", EscapeTerminal(TruncateUtf8(from, 500))},
                    {"points_to", points_to}});
  }
  bool Any(const char* decision) const {
    return std::any_of(list.begin(), list.end(), [&](const ojson& f) { return f["points_to"] == decision; });
  }
};

// Evidence must agree with itself: a document edited by hand (a verdict flipped, a cost made
// negative) is refused, naming what contradicts what, before any fact is drawn from it.
Error Inconsistent(const Evidence& e, const std::string& what) {
  return BadInput("the " + e.kind + " evidence contradicts itself: " + what, e.source,
                  "give the file pilot wrote, unedited");
}

bool FiniteNumber(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()); }
// Two figures pilot derived the same way: equal within rounding (a relative 1e-9).
bool SameFigure(double a, double b) {
  // Nothing is the same figure as an infinity (which would pass the relative test below).
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}
// A document's figure and one derived from others: a finite number, the same within rounding.
bool SameJsonFigure(const nlohmann::json& v, double want) {
  return FiniteNumber(v) && SameFigure(v.get<double>(), want);
}

// A comparison's counts: they add up, and fit its verdict and tolerance.
Status CheckCompareItems(const Evidence& e) {
  const nlohmann::json& items = MemberOrNull(e.doc, "items");
  const nlohmann::json &total = MemberOrNull(items, "total"), &agree = MemberOrNull(items, "agree"),
                       &differ = MemberOrNull(items, "differ");
  if (!total.is_number_unsigned() || !agree.is_number_unsigned() || !differ.is_number_unsigned()) {
    return Inconsistent(e, "items.total, items.agree and items.differ must be counts");
  }
  if (agree.get<std::uint64_t>() + differ.get<std::uint64_t>() != total.get<std::uint64_t>()) {
    return Inconsistent(e, "items.agree + items.differ is not items.total");
  }
  const nlohmann::json& within = MemberOrNull(e.doc, "within_tolerance");
  const nlohmann::json& verdict = MemberOrNull(e.doc, "verdict");
  if (!within.is_boolean() || !(verdict == "agree" || verdict == "differ")) {
    return Inconsistent(e, "within_tolerance must be true or false, and verdict agree or differ");
  }
  const bool none_differ = differ.get<std::uint64_t>() == 0;
  if (within.get<bool>() != none_differ || (verdict == "agree") != none_differ) {
    return Inconsistent(e, "verdict " + JsonValueText(verdict) + " (within_tolerance " +
                               JsonValueText(within) + ") with " + JsonValueText(differ) +
                               " item(s) that differ");
  }
  const nlohmann::json& listed = MemberOrNull(e.doc, "differences");
  if (!listed.is_array() || listed.size() > differ.get<std::uint64_t>() ||
      MemberOrNull(e.doc, "differences_listed") != listed.size()) {
    return Inconsistent(e, "the differences listed do not match items.differ and differences_listed");
  }
  const nlohmann::json& changes = MemberOrNull(e.doc, "changes");
  if (!changes.is_array() || !MemberOrNull(e.doc, "one_change").is_boolean() ||
      MemberOrNull(e.doc, "one_change").get<bool>() != (changes.size() <= 1)) {
    return Inconsistent(e, "one_change does not match the changes listed");
  }
  const std::uint64_t n = total.get<std::uint64_t>(), agreeing = agree.get<std::uint64_t>();
  const nlohmann::json& tolerance = MemberOrNull(e.doc, "tolerance");
  if (!FiniteNumber(tolerance) || tolerance.get<double>() < 0) {
    return Inconsistent(e, "tolerance " + JsonValueText(tolerance) + " is not a finite number of 0 or more");
  }
  // Counts of items that share something with B: between the items that agree and all of them
  // (an item that agrees has the same status and the same category or reason).
  for (const char* k : {"same_status", "same_category_or_reason", "both_accepted"}) {
    const nlohmann::json& v = MemberOrNull(items, k);
    if (v.is_null()) continue;
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > n ||
        (std::string(k) != "both_accepted" && v.get<std::uint64_t>() < agreeing)) {
      return Inconsistent(e, std::string("items.") + k + " " + JsonValueText(v) + " does not fit " +
                                 std::to_string(agreeing) + " agreeing of " + std::to_string(n));
    }
  }
  const nlohmann::json& agreement = MemberOrNull(items, "agreement");
  if (!agreement.is_null() &&
      (!FiniteNumber(agreement) || n == 0 ||
       std::fabs(agreement.get<double>() - static_cast<double>(agreeing) / static_cast<double>(n)) > 1e-9)) {
    return Inconsistent(e, "items.agreement " + JsonValueText(agreement) + " is not agree / total");
  }
  const nlohmann::json& kinds = MemberOrNull(items, "differences_by_kind");
  if (!kinds.is_null()) {
    std::uint64_t sum = 0;
    bool counts = kinds.is_object();
    if (counts) {
      for (const auto& [k, v] : kinds.items()) {
        counts = counts && v.is_number_unsigned() && v.get<std::uint64_t>() <= n;
        if (counts) sum += v.get<std::uint64_t>();
      }
    }
    if (!counts || sum != differ.get<std::uint64_t>()) {
      return Inconsistent(e, "items.differences_by_kind does not add up to items.differ");
    }
  }
  // Within tolerance, no difference measured may exceed it.
  for (const char* k : {"max_confidence_difference", "max_vector_difference", "mean_confidence_difference"}) {
    const nlohmann::json& v = MemberOrNull(items, k);
    if (v.is_null()) continue;
    if (!FiniteNumber(v) || v.get<double>() < 0 ||
        (none_differ && v.get<double>() > tolerance.get<double>())) {
      return Inconsistent(e, std::string("items.") + k + " " + JsonValueText(v) +
                                 " does not fit a verdict of " + JsonValueText(verdict) + " at tolerance " +
                                 JsonValueText(tolerance));
    }
  }
  return {};
}

// Its quality section agrees with itself and with the items compared (checked first).
Status CheckCompareQuality(const Evidence& e) {
  const nlohmann::json& items = MemberOrNull(e.doc, "items");
  const std::uint64_t n = MemberOrNull(items, "total").get<std::uint64_t>();
  const nlohmann::json& quality = MemberOrNull(e.doc, "quality");
  for (const char* k : {"accuracy_a", "accuracy_b"}) {
    const nlohmann::json& v = MemberOrNull(quality, k);
    if (!v.is_null() && (!FiniteNumber(v) || v.get<double>() < 0 || v.get<double>() > 1)) {
      return Inconsistent(
          e, std::string("quality.") + k + " " + JsonValueText(v) + " is not a share from 0 to 1");
    }
  }
  // The quality section agrees with itself and with the items compared.
  const nlohmann::json &acc_a = MemberOrNull(quality, "accuracy_a"),
                       &acc_b = MemberOrNull(quality, "accuracy_b"),
                       &delta = MemberOrNull(quality, "accuracy_delta");
  if (!acc_a.is_null() && !acc_b.is_null()
          ? !FiniteNumber(delta) ||
                !SameFigure(delta.get<double>(), acc_b.get<double>() - acc_a.get<double>())
          : !delta.is_null()) {
    return Inconsistent(e,
                        "quality.accuracy_delta " + JsonValueText(delta) + " is not accuracy_b - accuracy_a");
  }
  for (const char* k :
       {"labelled", "accepted_a", "accepted_b", "expected_rejections_met_a", "expected_rejections_met_b"}) {
    const nlohmann::json& v = MemberOrNull(quality, k);
    if (!v.is_null() && (!v.is_number_unsigned() || v.get<std::uint64_t>() > n)) {
      return Inconsistent(e, std::string("quality.") + k + " " + JsonValueText(v) +
                                 " is not a count of at most items.total " + std::to_string(n));
    }
  }
  // Every item with the same status: as many accepted on each side; with the same category
  // (or reason) too: the same accuracy on the labelled items.
  if (MemberOrNull(items, "same_status") == n && !MemberOrNull(quality, "accepted_a").is_null() &&
      MemberOrNull(quality, "accepted_a") != MemberOrNull(quality, "accepted_b")) {
    return Inconsistent(e, "every item has the same status in both runs, yet quality.accepted_a " +
                               JsonValueText(MemberOrNull(quality, "accepted_a")) + " is not accepted_b " +
                               JsonValueText(MemberOrNull(quality, "accepted_b")));
  }
  if (MemberOrNull(items, "same_status") == n && MemberOrNull(items, "same_category_or_reason") == n &&
      !acc_a.is_null() && !acc_b.is_null() && !SameFigure(acc_a.get<double>(), acc_b.get<double>())) {
    return Inconsistent(e, "every item has the same outcome in both runs, yet quality.accuracy_a " +
                               JsonValueText(acc_a) + " is not accuracy_b " + JsonValueText(acc_b));
  }
  return {};
}

// Each performance figure's ratio is its own b / a.
Status CheckComparePerformance(const Evidence& e) {
  const nlohmann::json& performance = MemberOrNull(e.doc, "performance");
  if (performance.is_object()) {
    for (const auto& [name, figure] : performance.items()) {
      if (!figure.is_object() || !figure.contains("b_over_a")) continue;
      const nlohmann::json &a = MemberOrNull(figure, "a"), &b = MemberOrNull(figure, "b"),
                           &ratio = MemberOrNull(figure, "b_over_a");
      const bool defined = FiniteNumber(a) && FiniteNumber(b) && a.get<double>() > 0;
      if (defined
              ? !FiniteNumber(ratio) || !SameFigure(ratio.get<double>(), b.get<double>() / a.get<double>())
              : !ratio.is_null()) {
        return Inconsistent(e, "performance." + TruncateUtf8(EscapeTerminal(name), 64) + ".b_over_a " +
                                   JsonValueText(ratio) + " is not b / a");
      }
    }
  }
  return {};
}

Status CheckCompareConsistent(const Evidence& e) {
  PILOT_TRY(CheckCompareItems(e));
  PILOT_TRY(CheckCompareQuality(e));
  return CheckComparePerformance(e);
}

// What every plan row is checked against: the basis's figures and the cards' classes.
struct PlanBasis {
  const nlohmann::json& rate;  // basis.items_per_s_per_card
  const nlohmann::json& scaling;
  const nlohmann::json& corpus_items;
  const nlohmann::json& measured_class;
  std::map<std::string, nlohmann::json> card_class;
  double factor = 1;  // projection.factor: the corpus' tokens per item over the pilot's (1 by items)
  int format = 1;     // the plan's format_version: 3 gives each row its cost per million
  std::optional<double> corpus_tokens;  // by tokens: corpus items x projection.corpus.mean_tokens
  double copy_off_hours = 0;            // format 3: output.copy_off_hours, in every row's needed hours
};

// One plan row: its figures follow from the basis, and a row that fits is a candidate for the
// cheapest and the fastest pick.
Status CheckPlanRow(const Evidence& e, const nlohmann::json& r, const PlanBasis& b,
                    std::optional<double>& cheapest_cost, std::optional<double>& fastest_hours) {
  const nlohmann::json& cost = MemberOrNull(r, "cost");
  if (!FiniteNumber(cost) || cost.get<double>() < 0) {
    return Inconsistent(e,
                        "a plan row's cost " + JsonValueText(cost) + " is not a finite amount of 0 or more");
  }
  const nlohmann::json &lots = MemberOrNull(r, "lots"), &cards = MemberOrNull(r, "cards"),
                       &days = MemberOrNull(r, "period_days");
  if (!lots.is_number_unsigned() || lots.get<std::uint64_t>() < 1 ||
      lots.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxLots) || !cards.is_number_unsigned() ||
      cards.get<std::uint64_t>() < lots.get<std::uint64_t>() ||
      cards.get<std::uint64_t>() > lots.get<std::uint64_t>() * static_cast<std::uint64_t>(kMaxCardsPerLot) ||
      !(days == 3 || days == 7 || days == 30) || !MemberOrNull(r, "fits").is_boolean()) {
    return Inconsistent(e, "a plan row's lots, cards, period_days or fits are not what pilot writes");
  }
  for (const char* k : {"compute_hours", "needed_hours"}) {
    const nlohmann::json& h = MemberOrNull(r, k);  // null: no finite figure (a rate of zero)
    if (!h.is_null() && (!FiniteNumber(h) || h.get<double>() < 0)) {
      return Inconsistent(
          e, std::string("a plan row's ") + k + " " + JsonValueText(h) + " is negative or not finite");
    }
  }
  const nlohmann::json &row_rate = MemberOrNull(r, "items_per_s_per_card"),
                       &rate_basis = MemberOrNull(r, "rate_basis");
  const bool assumed = rate_basis == "assumed";
  if (!(assumed || rate_basis == "measured") ||
      (assumed && (!FiniteNumber(b.scaling) || b.scaling.get<double>() <= 0))) {
    return Inconsistent(e, "a plan row's rate_basis " + JsonValueText(rate_basis) +
                               " is not measured, or assumed with a positive basis.assume_scaling");
  }
  const auto listed_class = MemberOrNull(r, "card").is_string()
                                ? b.card_class.find(MemberOrNull(r, "card").get<std::string>())
                                : b.card_class.end();
  if (listed_class == b.card_class.end() || !b.measured_class.is_string() ||
      assumed != (listed_class->second != b.measured_class)) {
    return Inconsistent(e, "a plan row's rate_basis " + JsonValueText(rate_basis) +
                               " does not follow from its card " + JsonValueText(MemberOrNull(r, "card")) +
                               " (listed in cards with its class) and the measured class " +
                               JsonValueText(b.measured_class));
  }
  const double want_rate = b.rate.get<double>() * (assumed ? b.scaling.get<double>() : 1.0);
  if (!FiniteNumber(row_rate) || !SameFigure(row_rate.get<double>(), want_rate)) {
    return Inconsistent(e, "a plan row's items_per_s_per_card " + JsonValueText(row_rate) +
                               " is not the basis's rate" + (assumed ? " times its assume_scaling" : ""));
  }
  // needed = compute + the allowance, and the period suffices exactly when it holds that.
  const nlohmann::json &compute = MemberOrNull(r, "compute_hours"),
                       &needed_h = MemberOrNull(r, "needed_hours");
  const double want_hours = static_cast<double>(b.corpus_items.get<std::uint64_t>()) * b.factor /
                            (want_rate * static_cast<double>(cards.get<std::uint64_t>())) / 3600.0;
  if (!FiniteNumber(compute) || !SameFigure(compute.get<double>(), want_hours)) {
    return Inconsistent(e, "a plan row's compute_hours " + JsonValueText(compute) +
                               " is not corpus.items x projection.factor / (" + "its rate x " +
                               JsonValueText(cards) +
                               " cards) / 3600 = " + JsonValueText(nlohmann::json(want_hours)));
  }
  const nlohmann::json& allowance = MemberOrNull(e.doc, "allowance_hours");
  if (!MemberOrNull(r, "period_suffices").is_boolean())
    return Inconsistent(e, "a plan row's period_suffices is not true or false");
  if (FiniteNumber(compute) && FiniteNumber(needed_h)) {
    const double c = compute.get<double>(), n = needed_h.get<double>();
    const double tolerance = 1e-6 * std::max(1.0, n);
    if (b.format >= 3 && !SameJsonFigure(MemberOrNull(r, "copy_off_hours"), b.copy_off_hours)) {
      return Inconsistent(
          e, "a plan row's copy_off_hours " + JsonValueText(MemberOrNull(r, "copy_off_hours")) +
                 " is not output.copy_off_hours " + JsonValueText(nlohmann::json(b.copy_off_hours)));
    }
    if (n + tolerance < c || (FiniteNumber(allowance) &&
                              std::fabs(n - (c + b.copy_off_hours + allowance.get<double>())) > tolerance)) {
      return Inconsistent(e, "a plan row needs " + JsonValueText(needed_h) + " h, not its compute_hours " +
                                 JsonValueText(compute) + (b.format >= 3 ? " plus its copy_off_hours" : "") +
                                 " plus the allowance " + JsonValueText(allowance));
    }
    const double period = static_cast<double>(days.get<std::uint64_t>()) * 24.0;
    if (MemberOrNull(r, "period_suffices").get<bool>() ? n > period + tolerance : n < period - tolerance) {
      return Inconsistent(e, "a plan row needs " + JsonValueText(needed_h) + " h of its " +
                                 JsonValueText(days) + " days, yet period_suffices says " +
                                 JsonValueText(MemberOrNull(r, "period_suffices")));
    }
  } else if (!compute.is_null() || !needed_h.is_null()) {
    return Inconsistent(e, "a plan row gives one of compute_hours and needed_hours but not the other");
  }
  // Format 3: the cost per million items, and per million tokens where the plan projects by
  // tokens (null by items), follow from the cost and the corpus.
  if (b.format >= 3) {
    const double items = static_cast<double>(b.corpus_items.get<std::uint64_t>());
    const nlohmann::json &per_item = MemberOrNull(r, "cost_per_million_items"),
                         &per_token = MemberOrNull(r, "cost_per_million_tokens");
    if (items <= 0 || !FiniteNumber(per_item) ||
        !SameFigure(per_item.get<double>(), cost.get<double>() * 1e6 / items)) {
      return Inconsistent(e, "a plan row's cost_per_million_items " + JsonValueText(per_item) +
                                 " is not its cost " + JsonValueText(cost) + " x 1e6 / corpus.items");
    }
    const bool per_token_ok =
        b.corpus_tokens ? *b.corpus_tokens > 0 && FiniteNumber(per_token) &&
                              SameFigure(per_token.get<double>(), cost.get<double>() * 1e6 / *b.corpus_tokens)
                        : per_token.is_null();
    if (!per_token_ok) {
      return Inconsistent(
          e, "a plan row's cost_per_million_tokens " + JsonValueText(per_token) +
                 (b.corpus_tokens ? " is not its cost x 1e6 / (corpus.items x the corpus' mean tokens)"
                                  : " is given, though the plan projects by items"));
    }
  }
  // A row fits only when the card fits (or its fit is unknown) and the period suffices.
  const bool may_fit = MemberOrNull(r, "fit") != "no" && MemberOrNull(r, "period_suffices") == true;
  if (MemberOrNull(r, "fits").get<bool>() && !may_fit) {
    return Inconsistent(e, "a row fits though its card does not (fit " +
                               JsonValueText(MemberOrNull(r, "fit")) + ") or its period does not suffice");
  }
  if (!MemberOrNull(r, "fits").get<bool>()) return {};
  const nlohmann::json& rate = MemberOrNull(r, "items_per_s_per_card");
  if (!FiniteNumber(rate) || rate.get<double>() <= 0) {
    return Inconsistent(e, "a row that fits has a rate of " + JsonValueText(rate) + " items/s per card");
  }
  const nlohmann::json& needed = MemberOrNull(r, "needed_hours");
  if (!FiniteNumber(needed) || needed.get<double>() < 0 ||
      needed.get<double>() > static_cast<double>(days.get<std::uint64_t>()) * 24.0 + 1e-6) {
    return Inconsistent(e, "a row that fits needs " + JsonValueText(needed) + " h, more than its " +
                               JsonValueText(days) + " days (or no finite figure)");
  }
  if (!cheapest_cost || cost.get<double>() < *cheapest_cost) cheapest_cost = cost.get<double>();
  if (!fastest_hours || needed.get<double>() < *fastest_hours) fastest_hours = needed.get<double>();
  return {};
}

// A projection's token mix (projection.pilot or .corpus): its counts add up, and its mean is
// its tokens over the items it tokenized.
Status CheckTokenMix(const Evidence& e, const nlohmann::json& mix, const std::string& which) {
  auto count = [&](const char* k) -> std::optional<std::uint64_t> {
    const nlohmann::json& v = MemberOrNull(mix, k);
    if (v.is_null() && std::string(k) == "too_long_to_read") return 0;
    if (!v.is_number_unsigned()) return std::nullopt;
    return v.get<std::uint64_t>();
  };
  const auto items = count("items"), sampled = count("sampled"), encoded = count("encoded"),
             unread = count("unread"), too_long = count("too_long_to_read"), tokens = count("tokens");
  if (!items || !sampled || !encoded || !unread || !too_long || !tokens || *sampled == 0 ||
      *sampled > *items || *encoded > *sampled || *unread > *sampled || *too_long > *sampled ||
      *encoded + *unread + *too_long != *sampled) {
    return Inconsistent(e,
                        "projection." + which +
                            "'s counts (items, sampled, encoded, unread, too_long_to_read, tokens) are not "
                            "what pilot writes: the tokenized ones add up to sampled, at most items");
  }
  const nlohmann::json& mean = MemberOrNull(mix, "mean_tokens");
  if (!FiniteNumber(mean) ||
      !SameFigure(mean.get<double>(), static_cast<double>(*tokens) / static_cast<double>(*sampled))) {
    return Inconsistent(e, "projection." + which + ".mean_tokens " + JsonValueText(mean) +
                               " is not its tokens " + std::to_string(*tokens) + " over its " +
                               std::to_string(*sampled) + " items tokenized");
  }
  return {};
}

// The projection (format 2): by items with a factor of 1, or by tokens with the factor its
// two token mixes give. A format 1 plan has none and projects by items.
Result<double> PlanFactor(const Evidence& e) {
  const nlohmann::json& p = MemberOrNull(e.doc, "projection");
  const nlohmann::json& version = MemberOrNull(e.doc, "format_version");
  if (p.is_null() != (version != 2 && version != 3)) {
    return Inconsistent(e, "format_version " + JsonValueText(version) +
                               (p.is_null() ? " plans without a projection: a format 2 or 3 plan has one"
                                            : " has a projection, which only format 2 and 3 plans have"));
  }
  if (p.is_null()) return 1.0;
  const nlohmann::json &by = MemberOrNull(p, "by"), &factor = MemberOrNull(p, "factor");
  if (!FiniteNumber(factor) || factor.get<double>() <= 0 || factor.get<double>() > 1e6) {
    return Inconsistent(e, "projection.factor " + JsonValueText(factor) + " is not a positive figure");
  }
  if (by == "items") {
    if (factor.get<double>() != 1.0)
      return Inconsistent(e, "a projection by items has factor " + JsonValueText(factor) + ", not 1");
    return 1.0;
  }
  if (by != "tokens")
    return Inconsistent(e, "projection.by " + JsonValueText(by) + " is not items or tokens");
  PILOT_TRY(CheckTokenMix(e, MemberOrNull(p, "pilot"), "pilot"));
  PILOT_TRY(CheckTokenMix(e, MemberOrNull(p, "corpus"), "corpus"));
  if (MemberOrNull(MemberOrNull(p, "corpus"), "items") !=
      MemberOrNull(MemberOrNull(e.doc, "corpus"), "items")) {
    return Inconsistent(
        e, "projection.corpus.items " + JsonValueText(MemberOrNull(MemberOrNull(p, "corpus"), "items")) +
               " is not corpus.items " + JsonValueText(MemberOrNull(MemberOrNull(e.doc, "corpus"), "items")));
  }
  const nlohmann::json &corpus = MemberOrNull(MemberOrNull(p, "corpus"), "mean_tokens"),
                       &pilot = MemberOrNull(MemberOrNull(p, "pilot"), "mean_tokens");
  if (pilot.get<double>() <= 0 ||
      !SameFigure(factor.get<double>(), corpus.get<double>() / pilot.get<double>())) {
    return Inconsistent(e, "projection.factor " + JsonValueText(factor) + " is not the corpus' mean tokens " +
                               JsonValueText(corpus) + " over the pilot's " + JsonValueText(pilot));
  }
  return factor.get<double>();
}

// Format 3's output projection: the corpus' bytes follow from the measured bytes per item, and
// the copy-off hours from those bytes at the stated rate (0 when the bytes are unknown).
Result<double> PlanCopyOffHours(const Evidence& e, std::uint64_t corpus_items) {
  const nlohmann::json& o = MemberOrNull(e.doc, "output");
  const nlohmann::json &measured = MemberOrNull(o, "measured_bytes"),
                       &items = MemberOrNull(o, "measured_items"),
                       &per_item = MemberOrNull(o, "bytes_per_item"),
                       &corpus = MemberOrNull(o, "corpus_bytes"),
                       &rate = MemberOrNull(o, "copy_off_mb_per_s"),
                       &hours = MemberOrNull(o, "copy_off_hours");
  if (!o.is_object() || !FiniteNumber(rate) || rate.get<double>() <= 0 ||
      rate.get<double>() > kMaxCopyOffMBPerS || !FiniteNumber(hours) || hours.get<double>() < 0) {
    return Inconsistent(e,
                        "output is not what pilot writes: a copy_off_mb_per_s of 0-1e6 and copy_off_hours "
                        "of 0 or more");
  }
  if (measured.is_null()) {
    if (!per_item.is_null() || !corpus.is_null() || hours.get<double>() != 0) {
      return Inconsistent(e, "output.measured_bytes is unknown, yet it projects bytes or copy-off hours");
    }
    return 0.0;
  }
  if (!measured.is_number_unsigned() || !items.is_number_unsigned() || items.get<std::uint64_t>() == 0) {
    return Inconsistent(e, "output.measured_bytes " + JsonValueText(measured) + " over measured_items " +
                               JsonValueText(items) + " is not a count of bytes over a count of items");
  }
  const double want_per_item =
      static_cast<double>(measured.get<std::uint64_t>()) / static_cast<double>(items.get<std::uint64_t>());
  if (!SameJsonFigure(per_item, want_per_item)) {
    return Inconsistent(e, "output.bytes_per_item " + JsonValueText(per_item) + " is not measured_bytes " +
                               JsonValueText(measured) + " / measured_items " + JsonValueText(items));
  }
  const double want_corpus = want_per_item * static_cast<double>(corpus_items);
  if (!SameJsonFigure(corpus, want_corpus)) {
    return Inconsistent(
        e, "output.corpus_bytes " + JsonValueText(corpus) +
               " is not bytes_per_item x corpus.items = " + JsonValueText(nlohmann::json(want_corpus)));
  }
  const double want_hours = want_corpus / (rate.get<double>() * 1e6) / 3600.0;
  if (!SameJsonFigure(hours, want_hours)) {
    return Inconsistent(e, "output.copy_off_hours " + JsonValueText(hours) +
                               " is not corpus_bytes / (copy_off_mb_per_s x 1e6) / 3600 = " +
                               JsonValueText(nlohmann::json(want_hours)));
  }
  return want_hours;
}

Status CheckPlanConsistent(const Evidence& e) {
  const nlohmann::json& rows = MemberOrNull(e.doc, "plans");
  if (!rows.is_array() || rows.size() > 100000)
    return Inconsistent(e, "'plans' must be the list of plan rows");
  auto same_row = [](const nlohmann::json& a, const nlohmann::json& b) {
    return MemberOrNull(a, "card") == MemberOrNull(b, "card") &&
           MemberOrNull(a, "period_days") == MemberOrNull(b, "period_days") &&
           MemberOrNull(a, "lots") == MemberOrNull(b, "lots") &&
           MemberOrNull(a, "cost") == MemberOrNull(b, "cost");
  };
  // Every row's rate is the basis's (times the stated scaling where the card is of another
  // class), and its compute hours are the corpus at that rate on its cards.
  const nlohmann::json& basis_rate = MemberOrNull(MemberOrNull(e.doc, "basis"), "items_per_s_per_card");
  if (!FiniteNumber(basis_rate) || basis_rate.get<double>() <= 0) {
    return Inconsistent(
        e, "basis.items_per_s_per_card " + JsonValueText(basis_rate) + " is not a positive rate");
  }
  const nlohmann::json& scaling = MemberOrNull(MemberOrNull(e.doc, "basis"), "assume_scaling");
  const nlohmann::json& corpus_items = MemberOrNull(MemberOrNull(e.doc, "corpus"), "items");
  // The fingerprint is pilot's (64 lower-case hex digits) or null: another spelling of this
  // folder's would dodge the check against it.
  const nlohmann::json& basis_print = MemberOrNull(MemberOrNull(e.doc, "basis"), "fingerprint");
  if (!basis_print.is_null() && !(basis_print.is_string() && IsSha256Hex(basis_print.get<std::string>()))) {
    return Inconsistent(e, "basis.fingerprint " + JsonValueText(basis_print) +
                               " is not a fingerprint pilot writes (64 lower-case hex digits)");
  }
  const nlohmann::json& basis_manifest = MemberOrNull(MemberOrNull(e.doc, "basis"), "manifest_sha256");
  if (!basis_manifest.is_null() &&
      !(basis_manifest.is_string() && IsSha256Hex(basis_manifest.get<std::string>()))) {
    return Inconsistent(e, "basis.manifest_sha256 " + JsonValueText(basis_manifest) +
                               " is not a sha256 pilot writes (64 lower-case hex digits)");
  }
  // A card of the measured class is planned at the measured rate; only another class's rate
  // is an assumption (--assume-scaling).
  std::map<std::string, nlohmann::json> card_class;
  if (MemberOrNull(e.doc, "cards").is_array()) {
    for (const auto& c : MemberOrNull(e.doc, "cards")) {
      if (MemberOrNull(c, "card").is_string())
        card_class[MemberOrNull(c, "card").get<std::string>()] = MemberOrNull(c, "class");
    }
  }
  const nlohmann::json& measured_class = MemberOrNull(MemberOrNull(e.doc, "basis"), "device_class");
  if (!corpus_items.is_number_unsigned()) {
    return Inconsistent(e, "corpus.items " + JsonValueText(corpus_items) + " is not a count of items");
  }
  // A plan without format_version reads as format 1, as before format 2 (its projection, below).
  const nlohmann::json& version = MemberOrNull(e.doc, "format_version");
  if (!(version.is_null() || version == 1 || version == 2 || version == 3)) {
    return Inconsistent(
        e, "format_version " + JsonValueText(version) + " is not a plan format pilot reads (1-3)");
  }
  auto factor = PlanFactor(e);
  if (!factor.ok()) return factor.error();
  PlanBasis basis{
      basis_rate,   scaling, corpus_items, measured_class, std::move(card_class), factor.value(), 1,
      std::nullopt, 0};
  basis.format = version.is_null() ? 1 : version.get<int>();
  const nlohmann::json& projection = MemberOrNull(e.doc, "projection");
  if (MemberOrNull(projection, "by") == "tokens") {
    basis.corpus_tokens = static_cast<double>(corpus_items.get<std::uint64_t>()) *
                          MemberOrNull(MemberOrNull(projection, "corpus"), "mean_tokens").get<double>();
  }
  // Format 3: the fastest pick's resolution (0-24 h), stated in the document.
  double resolution = 0;
  if (basis.format >= 3) {
    const nlohmann::json& res = MemberOrNull(e.doc, "time_resolution_hours");
    if (!FiniteNumber(res) || res.get<double>() < 0 || res.get<double>() > kMaxTimeResolutionHours) {
      return Inconsistent(e, "time_resolution_hours " + JsonValueText(res) + " is not 0-24 hours");
    }
    resolution = res.get<double>();
    auto copy_off = PlanCopyOffHours(e, corpus_items.get<std::uint64_t>());
    if (!copy_off.ok()) return copy_off.error();
    basis.copy_off_hours = copy_off.value();
  }
  std::optional<double> cheapest_cost, fastest_hours;
  for (const auto& r : rows) PILOT_TRY(CheckPlanRow(e, r, basis, cheapest_cost, fastest_hours));
  for (const char* k : {"allowance_hours", "headroom"}) {
    const nlohmann::json& v = MemberOrNull(e.doc, k);
    if (!v.is_null() && (!FiniteNumber(v) || v.get<double>() < 0 ||
                         v.get<double>() > (std::string(k) == "headroom" ? 0.9 : 10000.0))) {
      return Inconsistent(e, std::string(k) + " " + JsonValueText(v) + " is outside what pilot plan takes");
    }
  }
  const bool fits = cheapest_cost.has_value();
  if (MemberOrNull(e.doc, "verdict") != (fits ? "fits" : "none_fits")) {
    return Inconsistent(e, "verdict " + JsonValueText(MemberOrNull(e.doc, "verdict")) +
                               (fits ? ", yet a row fits" : ", yet no row fits"));
  }
  for (const char* pick : {"cheapest", "fastest"}) {
    const nlohmann::json& chosen = MemberOrNull(e.doc, pick);
    if (!fits) {
      if (!chosen.is_null()) return Inconsistent(e, std::string(pick) + " names a plan although none fits");
      continue;
    }
    // The very row, every field of it: a pick edited apart from its row is refused.
    const bool listed = std::any_of(rows.begin(), rows.end(), [&](const nlohmann::json& r) {
      return MemberOrNull(r, "fits") == true && same_row(r, chosen) && r == chosen;
    });
    if (!listed) return Inconsistent(e, std::string(pick) + " is not one of the rows that fit");
  }
  // Figures within plan's own rounding (a relative 1e-9) are equal, as plan compares them: a
  // tie is then broken by cards and period, which are not checked again here.
  auto above = [](double a, double b) { return a - b > 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); };
  if (fits && above(MemberOrNull(MemberOrNull(e.doc, "cheapest"), "cost").get<double>(), *cheapest_cost)) {
    return Inconsistent(e, "cheapest costs more than another row that fits");
  }
  const nlohmann::json& fastest = MemberOrNull(e.doc, "fastest");
  if (fits && (!FiniteNumber(MemberOrNull(fastest, "needed_hours")) ||
               above(MemberOrNull(fastest, "needed_hours").get<double>(), *fastest_hours + resolution))) {
    return Inconsistent(e, resolution > 0 ? "fastest needs more hours than the quickest row that fits plus "
                                            "the plan's time_resolution_hours"
                                          : "fastest needs more hours than another row that fits");
  }
  // Format 3: of the rows within the resolution of the quickest, the fastest is the cheapest.
  if (fits && basis.format >= 3) {
    for (const auto& r : rows) {
      if (MemberOrNull(r, "fits") != true || !FiniteNumber(MemberOrNull(r, "needed_hours")) ||
          above(MemberOrNull(r, "needed_hours").get<double>(), *fastest_hours + resolution)) {
        continue;
      }
      if (above(MemberOrNull(fastest, "cost").get<double>(), MemberOrNull(r, "cost").get<double>())) {
        return Inconsistent(e,
                            "fastest costs more than another row that fits within the plan's "
                            "time_resolution_hours of the quickest");
      }
    }
  }
  return {};
}

Status CheckDoctorConsistent(const Evidence& e) {
  bool all_required_pass = true;
  for (const auto& c : MemberOrNull(e.doc, "checks")) {
    const nlohmann::json& status = MemberOrNull(c, "status");
    if (!(status == "pass" || status == "fail" || status == "could-not-run")) {
      return Inconsistent(
          e, "a check's status " + JsonValueText(status) + " is not pass, fail or could-not-run");
    }
    if (MemberOrNull(c, "required") == true && status != "pass") all_required_pass = false;
  }
  const nlohmann::json& ok = MemberOrNull(e.doc, "ok");
  if (!ok.is_null() && (!ok.is_boolean() || ok.get<bool>() != all_required_pass)) {
    return Inconsistent(e, "ok is " + JsonValueText(ok) +
                               (all_required_pass ? " though every required check passed"
                                                  : " though a required check did not pass"));
  }
  const nlohmann::json& code = MemberOrNull(e.doc, "exit_code");  // doctor exits 0 when ok, 3 otherwise
  if (!code.is_null() && code != (all_required_pass ? 0 : 3)) {
    return Inconsistent(e, "exit_code " + JsonValueText(code) +
                               (all_required_pass ? " though every required check passed"
                                                  : " though a required check did not pass"));
  }
  return {};
}

// What each kind of evidence must be before any fact is drawn from it: the document pilot
// writes, agreeing with itself. Called as each file is read, before the folder is touched.
Status CheckEvidence(const Evidence& e) {
  if (e.kind == "doctor") {
    const nlohmann::json& checks = MemberOrNull(e.doc, "checks");
    const bool shaped = checks.is_array() && !checks.empty() &&
                        std::all_of(checks.begin(), checks.end(), [](const nlohmann::json& c) {
                          return MemberOrNull(c, "name").is_string() &&
                                 MemberOrNull(c, "status").is_string() &&
                                 MemberOrNull(c, "required").is_boolean();
                        });
    if (!shaped) {
      return BadInput(
          "not a `pilot doctor --json` report (no list of checks, each with name, status and required)",
          e.source, "give the output of pilot doctor --json");
    }
    return CheckDoctorConsistent(e);
  }
  if (e.kind == "compare") {
    if (MemberOrNull(e.doc, "kind") != "pilot-compare") {
      return BadInput("not a comparison written by `pilot compare --out` (kind is not pilot-compare)",
                      e.source);
    }
    return CheckCompareConsistent(e);
  }
  if (e.kind == "plan") {
    if (MemberOrNull(e.doc, "kind") != "pilot-plan") {
      return BadInput("not a plan written by `pilot plan --out` (kind is not pilot-plan)", e.source);
    }
    return CheckPlanConsistent(e);
  }
  return {};
}

Status DoctorFacts(const Evidence& e, Facts& facts) {
  const nlohmann::json& checks = MemberOrNull(e.doc, "checks");
  std::size_t failed = 0;
  if (checks.is_array()) {
    for (const auto& c : checks) {
      const std::string status = JsonValueText(MemberOrNull(c, "status"));
      const bool required =
          MemberOrNull(c, "required").is_boolean() && MemberOrNull(c, "required").get<bool>();
      if (!required || status == "pass") continue;
      ++failed;
      std::string fact =
          "doctor check '" + TruncateUtf8(JsonValueText(MemberOrNull(c, "name")), 80) + "' " + status;
      const nlohmann::json& unmet = MemberOrNull(MemberOrNull(c, "data"), "unmet");
      if (unmet.is_array() && !unmet.empty())
        fact += ": unmet requires " + TruncateUtf8(JsonValueText(unmet), 300);
      else if (MemberOrNull(c, "detail").is_string())
        fact += ": " + TruncateUtf8(MemberOrNull(c, "detail").get<std::string>(), 300);
      facts.Add(EscapeTerminal(fact), e.source, kDecisionFixEnv);
    }
  }
  if (failed == 0) {
    facts.Add("every required doctor check passed (" + std::to_string(checks.size()) + " checks)", e.source,
              kDecisionGo);
  }
  return {};
}

// `results` and `accepted`: this folder's own counts, which a comparison that names this folder
// (by fingerprint) as one of its runs must give for that side.
Status CompareFacts(const Evidence& e, const std::string& manifest_sha256, const std::string& fingerprint,
                    std::uint64_t results, const nlohmann::json& accepted, Facts& facts) {
  if (MemberOrNull(e.doc, "manifest_sha256") != manifest_sha256) {
    return BadInput("the comparison is over another manifest (" +
                        TruncateUtf8(JsonValueText(MemberOrNull(e.doc, "manifest_sha256")), 64) +
                        ") than this run's (" + manifest_sha256 + ")",
                    e.source, "compare runs over this run's manifest");
  }
  for (const char* side : {"a", "b"}) {
    if (MemberOrNull(MemberOrNull(e.doc, side), "fingerprint") != fingerprint) continue;
    const std::string accepted_key = std::string("accepted_") + side;
    const nlohmann::json& side_accepted = MemberOrNull(MemberOrNull(e.doc, "quality"), accepted_key.c_str());
    if (MemberOrNull(MemberOrNull(e.doc, "items"), "total") != results ||
        (!side_accepted.is_null() && side_accepted != accepted)) {
      return Inconsistent(e, std::string("its run ") + side + " is this folder, yet it counts " +
                                 JsonValueText(MemberOrNull(MemberOrNull(e.doc, "items"), "total")) +
                                 " items and " + JsonValueText(side_accepted) +
                                 " accepted where this folder holds " + std::to_string(results) +
                                 " results and " + JsonValueText(accepted) + " accepted");
    }
  }
  if (MemberOrNull(MemberOrNull(e.doc, "a"), "fingerprint") != fingerprint &&
      MemberOrNull(MemberOrNull(e.doc, "b"), "fingerprint") != fingerprint) {
    facts.Add(
        "warning: neither run of the comparison is this folder (by fingerprint): it speaks of other runs "
        "over the same manifest",
        e.source, "note");
  }
  const nlohmann::json& within = MemberOrNull(e.doc, "within_tolerance");
  const std::string summary = TruncateUtf8(JsonValueText(MemberOrNull(e.doc, "change_summary")), 300);
  const nlohmann::json& items = MemberOrNull(e.doc, "items");
  if (within.is_boolean() && within.get<bool>()) {
    facts.Add("the comparison agrees within tolerance (" + JsonValueText(MemberOrNull(items, "agree")) + "/" +
                  JsonValueText(MemberOrNull(items, "total")) + " items; " + summary + ")",
              e.source, kDecisionGo);
  } else {
    facts.Add("the comparison differs beyond tolerance: " + JsonValueText(MemberOrNull(items, "differ")) +
                  " of " + JsonValueText(MemberOrNull(items, "total")) + " items (" + summary + ")",
              e.source, kDecisionReviseConfig);
  }
  if (MemberOrNull(e.doc, "one_change") == false) {
    facts.Add("warning: the comparison changed several things at once (" + summary +
                  "): its outcome cannot be put down to one change",
              e.source, "note");
  }
  return {};
}

// `here`: this folder's own measurement (a run or shard folder), which a plan measured on this
// folder (by fingerprint) must have planned from.
Status PlanFacts(const Evidence& e, const std::string& fingerprint, const std::optional<Measurement>& here,
                 Facts& facts) {
  const nlohmann::json& basis_print = MemberOrNull(MemberOrNull(e.doc, "basis"), "fingerprint");
  if (basis_print == fingerprint && here) {
    const nlohmann::json &rate = MemberOrNull(MemberOrNull(e.doc, "basis"), "items_per_s_per_card"),
                         &peak = MemberOrNull(MemberOrNull(e.doc, "basis"), "peak_memory_mb");
    if (!FiniteNumber(rate) || !SameFigure(rate.get<double>(), here->items_per_s_per_card) ||
        !FiniteNumber(peak) || !SameFigure(peak.get<double>(), here->peak_memory_mb)) {
      return Inconsistent(e, "its basis is this folder, yet it plans from " + JsonValueText(rate) +
                                 " items/s per card and " + JsonValueText(peak) +
                                 " MB where this folder measured " +
                                 JsonValueText(nlohmann::json(here->items_per_s_per_card)) + " and " +
                                 JsonValueText(nlohmann::json(here->peak_memory_mb)));
    }
    const nlohmann::json& manifest = MemberOrNull(MemberOrNull(e.doc, "basis"), "manifest_sha256");
    if (manifest.is_string() && manifest != here->manifest_sha256) {
      return Inconsistent(e, "its basis is this folder, yet it names manifest " +
                                 TruncateUtf8(manifest.get<std::string>(), 64) +
                                 " where this folder measured " + here->manifest_sha256);
    }
    // A format 3 plan's outputs are this folder's, as stored.
    const nlohmann::json& bytes = MemberOrNull(MemberOrNull(e.doc, "output"), "measured_bytes");
    if (MemberOrNull(e.doc, "format_version") == 3 && here->output_bytes && bytes != *here->output_bytes) {
      return Inconsistent(e, "its basis is this folder, yet it plans from " + JsonValueText(bytes) +
                                 " bytes of outputs where this folder holds " +
                                 std::to_string(*here->output_bytes));
    }
  }
  const bool calibrated_here =
      MemberOrNull(MemberOrNull(e.doc, "basis"), "calibration_pilot_fingerprint") == fingerprint;
  if (calibrated_here) {
    facts.Add("the plan was measured by the calibration whose pilot this folder is (fingerprint " +
                  fingerprint + ")",
              e.source, "note");
  } else if (basis_print != fingerprint) {
    facts.Add("warning: the plan was measured on another folder (fingerprint " +
                  TruncateUtf8(JsonValueText(basis_print), 64) +
                  "), not this one: it speaks of that folder's figures",
              e.source, "note");
  }
  if (MemberOrNull(e.doc, "verdict") == "fits") {
    const nlohmann::json& c = MemberOrNull(e.doc, "cheapest");
    facts.Add("a rental plan fits: cheapest " + JsonValueText(MemberOrNull(c, "lots")) + " lot(s) of " +
                  TruncateUtf8(JsonValueText(MemberOrNull(c, "card")), 64) + " for " +
                  JsonValueText(MemberOrNull(c, "period_days")) + " days at " +
                  Money(MemberOrNull(c, "cost")) + " " +
                  TruncateUtf8(JsonValueText(MemberOrNull(MemberOrNull(e.doc, "prices"), "currency")), 16) +
                  ", for a corpus of " + JsonValueText(MemberOrNull(MemberOrNull(e.doc, "corpus"), "items")) +
                  " items",
              e.source, kDecisionGo);
    if (MemberOrNull(MemberOrNull(e.doc, "prices"), "example") == true) {
      facts.Add("warning: the price file is an example with made-up prices", e.source, "note");
    }
  } else {
    facts.Add("no rental plan fits the corpus in the offered periods and lots", e.source,
              kDecisionReviseConfig);
  }
  return {};
}

// The device class a doctor report's checks ran on: "compute on DEVICE" names it (cpu, cuda:0;
// a ROCm build names its device cuda, and its libtorch check says ROCm is available).
std::set<std::string> DoctorClasses(const nlohmann::json& doctor) {
  std::set<std::string> classes;
  bool rocm = false;
  const nlohmann::json& checks = MemberOrNull(doctor, "checks");
  if (!checks.is_array()) return classes;
  for (const auto& c : checks) {
    if (MemberOrNull(c, "name") == "libtorch")
      rocm = MemberOrNull(MemberOrNull(c, "data"), "rocm_available") == true;
  }
  for (const auto& c : checks) {
    const nlohmann::json& name = MemberOrNull(c, "name");
    if (!name.is_string() || MemberOrNull(c, "status") != "pass") continue;
    const std::string n = name.get<std::string>();
    if (n.rfind("compute on ", 0) != 0) continue;
    const std::string device = n.substr(11);
    if (device == "cpu") classes.insert("cpu");
    if (device.rfind("cuda", 0) == 0) classes.insert(rocm ? "rocm" : "cuda");
  }
  return classes;
}

// What the plan's chosen row rests on: a rate or fit not measured on its card class, a basis
// of another manifest, no doctor run on that class. Each is a reason to measure on the card
// before renting for the period.
void PlanBasisFacts(const Evidence& e, const std::string& choice, const std::string& fingerprint,
                    const std::string& manifest_sha256, const std::vector<Evidence>& evidence, Facts& facts) {
  const nlohmann::json& row = MemberOrNull(e.doc, choice.c_str());
  if (!row.is_object()) return;
  const nlohmann::json& basis = MemberOrNull(e.doc, "basis");
  const std::string card = TruncateUtf8(JsonValueText(MemberOrNull(row, "card")), 64);
  std::string card_class;
  bool measured_card = false, stand_in = false;
  for (const auto& c : MemberOrNull(e.doc, "cards")) {
    if (MemberOrNull(c, "card") == MemberOrNull(row, "card") && MemberOrNull(c, "class").is_string()) {
      card_class = MemberOrNull(c, "class").get<std::string>();
      measured_card = MemberOrNull(c, "measured_card") == true;
      stand_in = MemberOrNull(c, "stand_in") == true;
    }
  }
  const std::string measured = TruncateUtf8(JsonValueText(MemberOrNull(basis, "device_class")), 16);
  auto add = [&](const std::string& fact) {
    facts.Add(fact + ": measure on one " + card + " first", e.source, kDecisionMeasureFirst);
  };
  if (MemberOrNull(row, "rate_basis") == "assumed") {
    add("the " + choice + " plan's rate on " + card + " (" + card_class + ") is assumed: " + measured +
        " items/s x " + JsonValueText(MemberOrNull(basis, "assume_scaling")) +
        " (--assume-scaling), not measured");
  }
  if (MemberOrNull(row, "fit") == "unknown") {
    add("whether the model fits one " + card + " is unknown: the peak memory was measured on " + measured +
        (MemberOrNull(basis, "memory_basis") == "rss" ? " as resident memory (RSS)" : ""));
  }
  // A calibration names the device it measured: a card its price row does not name (`match`) was
  // not measured, only its class was.
  const nlohmann::json& device_name = MemberOrNull(basis, "device_name");
  if (device_name.is_string() && !measured_card && MemberOrNull(row, "rate_basis") == "measured") {
    add("the " + choice + " plan's rate on " + card + " was measured on " +
        TruncateUtf8(device_name.get<std::string>(), 128) +
        ", another card of its class (no 'match' of the card's price row names it)");
  }
  if (stand_in) {
    facts.Add("warning: the " + choice + " plan's card " + card +
                  " is a stand-in row of the price file: the plan shows the procedure, not a rental",
              e.source, "note");
  }
  const nlohmann::json& basis_manifest = MemberOrNull(basis, "manifest_sha256");
  if (basis_manifest.is_string() ? basis_manifest != manifest_sha256
                                 : MemberOrNull(basis, "fingerprint") != fingerprint) {
    add(basis_manifest.is_string()
            ? "the plan's basis measured another manifest (" +
                  TruncateUtf8(basis_manifest.get<std::string>(), 64) + ") than this run's (" +
                  manifest_sha256 + ")"
            : "the plan's basis is another folder and does not say which manifest it measured (no "
              "basis.manifest_sha256: a plan before format 3)");
  }
  if (card_class.empty()) return;
  std::set<std::string> doctor_classes;
  bool doctor = false;
  for (const Evidence& d : evidence) {
    if (d.kind != "doctor") continue;
    doctor = true;
    for (const auto& c : DoctorClasses(d.doc)) doctor_classes.insert(c);
  }
  if (!doctor_classes.count(card_class)) {
    std::string ran;
    for (const auto& c : doctor_classes) ran += (ran.empty() ? "" : ", ") + c;
    add(doctor ? "the doctor ran on " + (ran.empty() ? std::string("no device") : ran) +
                     ", not on the plan's card class " + card_class
               : "no doctor report (--doctor) from a " + card_class + " card, the plan's card class");
  }
}

// A calibration folder: whether this folder is its pilot (or at least of its manifest), on which
// device it measured, and whether a plan among the evidence was projected from it (or its pilot).
void CalibrationFacts(const Evidence& e, const CalibrationRecord& c,
                      const std::string& calibration_fingerprint, const std::string& fingerprint,
                      const std::string& manifest_sha256, const std::vector<Evidence>& evidence,
                      Facts& facts) {
  const std::string on =
      (c.device_name.empty() ? c.device : TruncateUtf8(c.device_name, 128) + " (" + c.device + ")") +
      ", class " + c.device_class;
  if (c.pilot_fingerprint == fingerprint) {
    facts.Add("this folder is the pilot of the calibration (fingerprint " + calibration_fingerprint +
                  "), measured on " + on,
              e.source, "note");
  } else if (c.manifest_sha256 != manifest_sha256) {
    facts.Add("the calibration measured another manifest (" + c.manifest_sha256 + ") than this run's (" +
                  manifest_sha256 + "): calibrate with this run's manifest first",
              e.source, kDecisionMeasureFirst);
  } else {
    facts.Add("warning: the calibration's pilot is another folder (fingerprint " + c.pilot_fingerprint +
                  ") of this run's manifest, measured on " + on,
              e.source, "note");
  }
  for (const Evidence& p : evidence) {
    if (p.kind != "plan") continue;
    // From the calibration, or from its pilot (a plan from the pilot folder alone), is its own.
    const nlohmann::json& basis_print = MemberOrNull(MemberOrNull(p.doc, "basis"), "fingerprint");
    if (basis_print != calibration_fingerprint && basis_print != c.pilot_fingerprint) {
      facts.Add("warning: the plan was projected from another folder (fingerprint " +
                    TruncateUtf8(JsonValueText(basis_print), 64) + ") than this calibration or its pilot",
                p.source, "note");
    }
  }
}

void SweepFacts(const Evidence& e, const RecordedSettings& run, const std::string& manifest_sha256,
                Facts& facts) {
  if (e.manifest_sha256 != manifest_sha256) {
    facts.Add("the sweep measured another manifest (" +
                  (e.manifest_sha256.empty() ? std::string("none recorded") : e.manifest_sha256) +
                  ") than this run's (" + manifest_sha256 +
                  "): its rates and limits speak of other inputs; sweep this run's manifest first",
              e.source, kDecisionMeasureFirst);
  }
  const nlohmann::json batch = run.batch_size ? nlohmann::json(*run.batch_size) : nlohmann::json();
  const bool batch_plan = !run.batch_plan.is_null();
  const nlohmann::json& rec = MemberOrNull(e.doc, "recommendation");
  std::size_t below = 0;
  if (rec.is_array() && run.batch_size && !batch_plan) {
    for (const auto& g : rec) {
      const nlohmann::json& limit = MemberOrNull(g, "limit_batch_size");
      const nlohmann::json& size = MemberOrNull(g, "batch_size");
      if (!limit.is_number_unsigned()) continue;
      if (limit.get<std::uint64_t>() <= batch.get<std::uint64_t>()) {
        ++below;
        facts.Add(
            "sweep group " + JsonValueText(MemberOrNull(g, "group")) + " (lengths " +
                JsonValueText(MemberOrNull(g, "min_length")) + "-" +
                JsonValueText(MemberOrNull(g, "max_length")) + ") reached a limit (" +
                TruncateUtf8(JsonValueText(MemberOrNull(g, "limit")), 120) + ") at batch size " +
                JsonValueText(limit) + ", at or below the run's batch size " + JsonValueText(batch) +
                "; the sweep recommends " +
                (size.is_null() ? std::string("none (no size ran without a limit)") : JsonValueText(size)),
            e.source, kDecisionReviseConfig);
      }
    }
  }
  if (below == 0) {
    facts.Add(batch_plan ? std::string("the run used a batch plan per length group")
                         : "no sweep limit at or below the run's batch size " + JsonValueText(batch),
              e.source, kDecisionGo);
  }
}

// A load folder's verdict: the service met its SLO at some rate (go), or at none (revise-config);
// a load of another manifest, or an interrupted one, is measure-first.
void LoadFacts(const Evidence& e, const std::string& manifest_sha256, Facts& facts) {
  if (e.manifest_sha256 != manifest_sha256) {
    facts.Add("the load ran another manifest (" +
                  (e.manifest_sha256.empty() ? std::string("none recorded") : e.manifest_sha256) +
                  ") than this run's (" + manifest_sha256 +
                  "): its latencies speak of other inputs; load this run's manifest first",
              e.source, kDecisionMeasureFirst);
  }
  const nlohmann::json& slo = MemberOrNull(MemberOrNull(e.doc, "service"), "slo");
  std::string bounds;
  for (const char* key : {"e2e_ms", "ttft_ms", "tpot_ms"}) {
    const nlohmann::json& v = MemberOrNull(slo, key);
    if (v.is_number() && std::isfinite(v.get<double>()))
      bounds += std::string(bounds.empty() ? "" : ", ") + key + " <= " + FixedDecimals(v.get<double>(), 2);
  }
  auto share = [&](const char* key) {
    const nlohmann::json& v = MemberOrNull(slo, key);
    return v.is_number() && std::isfinite(v.get<double>()) ? FixedDecimals(v.get<double>() * 100, 1) + "%"
                                                           : JsonValueText(v);
  };
  const std::string text =
      "p" + share("percentile") + " " + bounds + " at " + share("confidence") + " confidence";
  const nlohmann::json& target = MemberOrNull(MemberOrNull(e.doc, "request"), "target");
  const std::string what =
      target.is_object() ? "the service at " + TruncateUtf8(JsonValueText(MemberOrNull(target, "url")), 200)
                         : "the stage";
  if (MemberOrNull(e.doc, "interrupted") == true) {
    facts.Add(
        "the load test was interrupted: it holds no verdict on the SLO (" + text + "); run it to its end",
        e.source, kDecisionMeasureFirst);
    return;
  }
  const nlohmann::json& verdict = MemberOrNull(e.doc, "verdict");
  const nlohmann::json& peak = MemberOrNull(verdict, "peak_rate");
  if (MemberOrNull(verdict, "slo_met") == true) {
    facts.Add(what + " met its SLO (" + text + ")" +
                  (peak.is_number() && std::isfinite(peak.get<double>())
                       ? " at up to " + FixedDecimals(peak.get<double>(), 1) + " requests/s"
                       : std::string()) +
                  " in the load test (" + JsonValueText(MemberOrNull(e.doc, "search")) + ")",
              e.source, kDecisionGo);
  } else {
    facts.Add(what + " missed its SLO (" + text + ") at every rate the load test tried (" +
                  JsonValueText(MemberOrNull(e.doc, "search")) +
                  "): change the service or the SLO, then load again",
              e.source, kDecisionReviseConfig);
  }
}

// Text for one cell or line of decision.md: escaped for Markdown (escape.h).
std::string Cell(const std::string& text) { return EscapeMarkdown(text); }

// A value of an untrusted document, fit for one cell or line of decision.md.
std::string C(const nlohmann::json& v) { return Cell(TruncateUtf8(JsonValueText(v), 600)); }

std::string Excerpt(FileSystem& fsys, const fs::path& root, const ManifestItem& item) {
  // Opened once, never leaving the inputs' folder; checked against its pin and quoted from the
  // same descriptor, so that what is quoted is what was checked.
  BeneathOpen opened = fsys.OpenBeneath(root, item.path);
  switch (opened.failure) {
    case BeneathOpen::Failure::kNone:
      break;
    case BeneathOpen::Failure::kOutside:
      return "(not shown: the path leaves the inputs' folder)";
    case BeneathOpen::Failure::kMissing:
      return "(not shown: the input is missing under " + Cell(root.string()) + ")";
    case BeneathOpen::Failure::kNotRegular:
      return "(not shown: not a regular file)";
    case BeneathOpen::Failure::kUnreadable:
      return "(not shown: unreadable)";
  }
  ReadableFile& in = *opened.file;
  const std::uint64_t size = in.size();
  // Nothing is quoted that is not checked against its pin first.
  if (size > kExcerptPinCheckBytes)
    return "(not shown: " + std::to_string(size) + " bytes, too large to check against its pin here)";
  auto sha = Sha256Of(in);
  if (!sha.ok()) return "(not shown: unreadable)";
  if (sha.value() != item.sha256)
    return "(not shown: the input changed since the run; its sha256 differs from the pin)";
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, kExcerptBytes * 2)), '\0');
  if (!ReadExactAt(in, 0, head.data(), head.size()).ok()) return "(not shown: unreadable)";
  const bool binary =
      head.find('\0') != std::string::npos ||
      !CheckUtf8(TruncateUtf8(head, head.size() >= kExcerptBytes * 2 ? head.size() - 4 : head.size())).valid;
  if (binary) return "(binary, " + std::to_string(size) + " bytes)";
  std::string text = TruncateUtf8(head, kExcerptBytes);
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.find_first_not_of(' ') == std::string::npos)
    return "(empty or only whitespace, " + std::to_string(size) + " bytes)";
  return Cell(text);
}

struct Spot {
  std::string id, outcome;
  std::size_t position = 0;
  std::string excerpt;
};

std::string StagedToJson(const DecideCommit& s) {
  ojson j;
  j["kind"] = "pilot-decide-commit";
  j["entry"] = s.entry;
  j["fingerprint_before"] = s.before;
  ojson files = ojson::array();
  for (const auto& [name, sha] : s.files) files.push_back({{"file", name}, {"sha256", sha}});
  j["files"] = files;
  return JsonLine(j) + "\n";
}

// A name a staged decision may place: the record, the page, its own evidence, the tag manifest.
bool IsStagedName(const std::string& name, std::size_t entry) {
  if (name == kDecisionsFile || name == kDecisionMarkdown || name == kTagManifest) return true;
  const std::string prefix = "decision-" + std::to_string(entry) + "-";
  if (name.rfind(prefix, 0) != 0 || name.size() > 64 || name.size() < prefix.size() + 6) return false;
  if (name.compare(name.size() - 5, 5, ".json") != 0) return false;
  const std::string kind = name.substr(prefix.size(), name.size() - prefix.size() - 5);
  return !kind.empty() && std::all_of(kind.begin(), kind.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// A name decide may leave in .decide-pending/: its commit record, a file it stages (of any
// entry: an uncommitted one does not say which), or the temp file of either that a stop left.
bool IsPendingName(const std::string& name) {
  std::string base = name;
  if (const auto t = name.rfind(".tmp-"); t != std::string::npos && t > 0) {
    const std::string digits = name.substr(t + 5);
    if (digits.empty() || digits.size() > 10 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    base = name.substr(0, t);
  }
  if (base == kDecideCommit) return true;
  if (base.rfind("decision-", 0) == 0) {
    const auto dash = base.find('-', 9);
    if (dash == std::string::npos || dash == 9 || dash > 9 + 7) return false;
    const std::string entry = base.substr(9, dash - 9);
    if (!std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    return IsStagedName(base, static_cast<std::size_t>(std::stoul(entry)));
  }
  return IsStagedName(base, 1);
}

}  // namespace

Result<DecideCommit> ParseDecideCommit(std::string_view text, const std::string& where) {
  auto doc = ParseJson(text, where, 8);
  if (!doc.ok()) return doc.error();
  const nlohmann::json& j = doc.value();
  DecideCommit s;
  auto entry = UnsignedAt(j, "entry");
  auto before = StringAt(j, "fingerprint_before");
  if (StringAt(j, "kind") != std::string("pilot-decide-commit") || !entry || *entry < 1 ||
      *entry > kMaxDecisions || !before || !IsSha256Hex(*before) || !MemberOrNull(j, "files").is_array() ||
      MemberOrNull(j, "files").empty() || MemberOrNull(j, "files").size() > 32) {
    return BadInput("not a decide commit record pilot wrote", where, "a damaged or hostile folder");
  }
  s.entry = static_cast<std::size_t>(*entry);
  s.before = *before;
  std::set<std::string> seen;
  for (const auto& f : MemberOrNull(j, "files")) {
    auto file = StringAt(f, "file");
    auto sha = StringAt(f, "sha256");
    if (!file || !sha || !IsSha256Hex(*sha) || !IsStagedName(*file, s.entry) || !seen.insert(*file).second) {
      return BadInput("a file of the decide commit record is not one decide writes", where,
                      "a damaged or hostile folder");
    }
    s.files.emplace_back(*file, *sha);
  }
  if (s.files.back().first != kTagManifest || !seen.count(kDecisionsFile)) {
    return BadInput("the decide commit record does not end with the tag manifest", where,
                    "a damaged or hostile folder");
  }
  return s;
}

namespace {

// Places each staged file over its name (RenameReplace: atomic, one at a time), the tag
// manifest last, then removes the staging folder. A file already placed (an earlier attempt
// was stopped after it) must hold the bytes staged. Runs to its end again after any stop.
// Checks every file of a committed decision before anything is moved: each one either staged
// (a regular file holding the bytes its record names) or already in place with them. Returns
// which ones are still staged. A staging folder damaged anywhere is refused, never applied in
// part.
Result<std::vector<bool>> CheckStaged(FileSystem& fsys, const fs::path& run_dir, const DecideCommit& staged) {
  const fs::path pending = run_dir / kDecidePending;
  std::vector<bool> staged_here(staged.files.size(), false);
  for (std::size_t i = 0; i < staged.files.size(); ++i) {
    const auto& [name, sha] = staged.files[i];
    const fs::path from = pending / name;
    auto st = fsys.LinkStat(from);
    if (!st.ok()) return st.error();
    const fs::path holder = st.value().exists ? from : run_dir / name;
    if (st.value().exists && !st.value().regular) {
      return BadInput("a staged file is not a regular file (a link, a folder, a FIFO?)", from.string(),
                      "a damaged or hostile folder: restore it from a copy");
    }
    // Where it goes: absent or a regular file (RenameReplace refuses anything else, and a
    // refusal after the first move would leave the decision half placed).
    auto dest = fsys.LinkStat(run_dir / name);
    if (!dest.ok()) return dest.error();
    if (dest.value().exists && !dest.value().regular) {
      return BadInput("is in the way of the staged decision: not a regular file (a link, a folder, a FIFO?)",
                      (run_dir / name).string(), "a damaged or hostile folder: restore it from a copy");
    }
    auto got = Sha256File(fsys, holder, /*follow_symlinks=*/false);
    if (!got.ok() || got.value() != sha) {
      return BadInput(st.value().exists ? "a staged file does not hold what its commit record says"
                                        : "neither staged nor in place with the bytes its commit record says",
                      holder.string(), "a damaged or hostile folder: restore it from a copy");
    }
    staged_here[i] = st.value().exists;
  }
  return staged_here;
}

// Places each staged file over its name (RenameReplace: atomic, one at a time), the tag
// manifest last, then removes the staging folder; CheckStaged first. Runs to its end again
// after any stop.
Status ApplyStaged(FileSystem& fsys, const fs::path& run_dir, const DecideCommit& staged) {
  auto staged_here = CheckStaged(fsys, run_dir, staged);
  if (!staged_here.ok()) return staged_here.error();
  const fs::path pending = run_dir / kDecidePending;
  for (std::size_t i = 0; i < staged.files.size(); ++i) {
    if (staged_here.value()[i]) {
      PILOT_TRY(fsys.RenameReplace(pending / staged.files[i].first, run_dir / staged.files[i].first));
    }
  }
  return fsys.RemoveTree(pending);
}

// What an interrupted decide left in .decide-pending/: nothing committed (nullopt: undo it) or
// a commit that fits the folder and whose every file checks out. Reads only.
Result<std::optional<DecideCommit>> ReadPending(FileSystem& fsys, const fs::path& dir) {
  const fs::path pending = dir / kDecidePending;
  auto pst = fsys.LinkStat(pending);
  if (!pst.ok()) return pst.error();
  if (!pst.value().directory) {
    return BadInput("is not a folder (a symlink?); pilot never follows one inside a run folder",
                    pending.string(),
                    "a damaged or hostile folder: remove it if no pilot is writing the folder");
  }
  // Only what decide itself leaves there: regular files of its own names. Anything else (a
  // folder, a link, a stranger's file) is refused before anything is moved or removed.
  auto names = fsys.ListDirectory(pending);
  if (!names.ok()) return names.error();
  if (names.value().size() > 64) {
    return BadInput("holds " + std::to_string(names.value().size()) + " names; decide stages at most a few",
                    pending.string(),
                    "a damaged or hostile folder: remove it by hand if no pilot is writing the folder");
  }
  for (const DirEntry& e : names.value()) {
    if (!e.stat.regular || !IsPendingName(e.name)) {
      return BadInput("holds " +
                          std::string(e.stat.directory ? "a folder"
                                      : e.stat.symlink ? "a symlink"
                                                       : "a file") +
                          " decide never stages: '" + ValueForMessage(e.name, 80) + "'",
                      pending.string(),
                      "a damaged or hostile folder: remove it by hand if no pilot is writing the folder");
    }
  }
  auto cst = fsys.LinkStat(pending / kDecideCommit);
  if (!cst.ok()) return cst.error();
  if (!cst.value().exists) return std::optional<DecideCommit>();
  if (!cst.value().regular) {
    return BadInput("is not a regular file (a symlink?); pilot never follows one inside a run folder",
                    (pending / kDecideCommit).string(),
                    "a damaged or hostile folder: restore it from a copy");
  }
  auto text = ReadCapped(fsys, pending / kDecideCommit, 64 << 10, "decide commit record");
  if (!text.ok()) return text.error();
  auto staged = ParseDecideCommit(text.value(), (pending / kDecideCommit).string());
  if (!staged.ok()) return staged.error();
  // The folder must be the one the decision was made on, or already carry its tag manifest.
  auto now = Sha256File(fsys, dir / kTagManifest, /*follow_symlinks=*/false);
  if (!now.ok()) return now.error();
  if (now.value() != staged.value().before && now.value() != staged.value().files.back().second) {
    return BadInput("the folder changed since the interrupted decide began (its fingerprint is " +
                        now.value() + ", the decide began on " + staged.value().before + ")",
                    pending.string(), "a damaged or hostile folder: restore it from a copy");
  }
  auto checked = CheckStaged(fsys, dir, staged.value());
  if (!checked.ok()) return checked.error();
  return std::optional<DecideCommit>(std::move(staged).value());
}

}  // namespace

Status CheckEvidenceDocument(const std::string& kind, std::string_view bytes, const std::string& where) {
  if (kind != "doctor" && kind != "compare" && kind != "plan")
    return BadInput("unknown evidence kind", where);
  Evidence e;
  e.kind = kind;
  e.source = where;
  auto doc = ParseJson(bytes, where);
  if (!doc.ok()) return doc.error();
  e.doc = std::move(doc.value());
  if (!e.doc.is_object()) return BadInput("not a JSON object", where);
  return CheckEvidence(e);
}

Result<std::optional<std::string>> RecoverInterruptedDecide(FileSystem& fsys, const fs::path& dir) {
  const fs::path pending = dir / kDecidePending;
  auto pst = fsys.LinkStat(pending);
  auto lst = fsys.LinkStat(dir / kLockFile);
  auto tst = fsys.LinkStat(dir / kTagManifest);
  if (!pst.ok()) return pst.error();
  if (!lst.ok()) return lst.error();
  if (!tst.ok()) return tst.error();
  const bool stale_lock = lst.value().exists && tst.value().exists;
  if (!pst.value().exists && !stale_lock) return std::optional<std::string>();
  if (auto holder = LockHolder(fsys, dir)) {
    return BadInput("the folder is being written by " + LockHolderText(*holder), dir.string(),
                    "wait for it to finish (pilot status)");
  }
  // Everything is checked before the lock is taken: a staging folder that is damaged or not
  // pilot's is refused with the folder left exactly as it was.
  if (pst.value().exists) {
    auto checked = ReadPending(fsys, dir);
    if (!checked.ok()) return checked.error();
  }
  auto lock = RunLock::Acquire(fsys, dir);
  if (!lock.ok()) return lock.error();
  std::string note;
  if (pst.value().exists) {
    auto pending_state = ReadPending(fsys, dir);  // again, under the lock
    if (!pending_state.ok()) return pending_state.error();
    if (!pending_state.value()) {
      PILOT_TRY(fsys.RemoveTree(pending));
      note = "an interrupted decide was undone: it had not committed, and nothing of it is recorded";
    } else {
      const DecideCommit& staged = *pending_state.value();
      PILOT_TRY(ApplyStaged(fsys, dir, staged));
      note = "an interrupted decide was finished: entry " + std::to_string(staged.entry) +
             " of decisions.jsonl is recorded";
    }
  } else {
    note = "removed the lock a process that is gone left on this finished folder";
  }
  lock.value().RemoveFile();
  return std::optional<std::string>(note);
}

namespace {

struct Recording {
  std::string previous;  // decisions.jsonl as it was
  std::size_t entries = 0, n = 0;
  ojson entry, ev;
  std::vector<std::pair<std::string, std::string>> files;  // name, contents
  const Evidence* plan = nullptr;
  std::string all;  // decisions.jsonl with this entry
};

// What `pilot decide` does, in order, over what its steps share: the request, the evidence,
// the folder's record and report, the facts, the spot check's sample and the outcome.
class Decider {
 public:
  Decider(FileSystem& fsys, Clock& clock, const fs::path& dir, const DecideOptions& o)
      : fsys_(fsys), clock_(clock), dir_(dir), o_(o) {}

  Result<DecideOutcome> Run() {
    PILOT_TRY(CheckRequest());
    PILOT_TRY(ReadAllEvidence());
    if (o_.on_phase) o_.on_phase(DecidePhase::kReading);
    if (Stopped()) return Interrupted("interrupted while reading: nothing was recorded");
    auto verified = PrepareFolder();
    if (!verified.ok()) return verified.error();
    if (!verified.value()) return std::move(out_);
    PILOT_TRY(ReadRecords());
    OwnFacts();
    PILOT_TRY(ScanResults());
    PILOT_TRY(EvidenceFacts());
    if (!o_.decision) return std::move(out_);
    Recording rec;
    PILOT_TRY(BuildEntry(rec));
    const std::string md = DecisionMarkdown(rec);
    PILOT_TRY(WriteStaged(rec, md));
    return std::move(out_);
  }

 private:
  bool Stopped() const { return o_.should_stop && o_.should_stop(); }
  Error Interrupted(const char* what) const {
    return Error{ErrorKind::kInterrupted, what, dir_.string(), "the folder is as it was"};
  }
  Error Halt() {
    if (lock_) lock_->RemoveFile();  // a finished folder holds no lock file
    return Interrupted("interrupted before anything was written: nothing was recorded");
  }

  // The options, then the folder: a finished run or merged folder of a kind this pilot reads.
  Status CheckRequest() {
    if (o_.decision && !IsDecision(*o_.decision)) {
      return BadInput("the decision must be go, fix-env, revise-config or measure-first", "--decision");
    }
    if (o_.decision) {
      if (o_.reasons.empty())
        return BadInput("a recorded decision needs its reasons", "--reason",
                        "give --reason TEXT (repeatable)");
      if (o_.reasons.size() > kMaxReasons)
        return BadInput("more than " + std::to_string(kMaxReasons) + " reasons", "--reason");
      for (const auto& r : o_.reasons) {
        if (r.find_first_not_of(" \t\r\n") == std::string::npos || r.size() > kMaxReasonBytes ||
            !CheckUtf8(r).valid) {
          return BadInput("each reason must be 1-" + std::to_string(kMaxReasonBytes) + " bytes of UTF-8 text",
                          "--reason");
        }
      }
    }
    if (o_.plan_choice != "cheapest" && o_.plan_choice != "fastest") {
      return BadInput("the plan choice must be cheapest or fastest", "--choose");
    }
    auto kind = OpenPilotFolder(fsys_, dir_, "decide", "run folder", "give a finished run folder");
    if (!kind.ok()) return kind.error();
    if (!IsWholeRunKind(kind.value().kind)) {
      return BadInput(
          "a " + kind.value().kind + " folder: a decision is recorded on a run (or merged) folder",
          dir_.string(),
          IsPartitionKind(kind.value().kind) ? "merge the shards first (pilot merge)"
                                             : "pass a sweep with --sweep DIR");
    }
    return {};
  }

  // A folder given as evidence (a sweep's, a load's): of its kind, verified in full (against
  // `expect` when given), its summary the evidence, and the manifest its verified run.json names.
  Status TakeFolder(const std::string& kind, const char* folder_kind, const char* summary,
                    const std::optional<fs::path>& dir, const std::optional<std::string>& expect) {
    if (!dir) return {};
    auto found = ReadFolderKind(fsys_, *dir);
    if (!found.ok() || found.value().kind != folder_kind)
      return BadInput("not a " + kind + " folder", dir->string(),
                      "give the folder `pilot " + kind + "` wrote");
    VerifyOptions options;
    options.expect_fingerprint = expect;
    auto verified = VerifyFolder(fsys_, *dir, options);
    if (!verified.ok()) return verified.error();
    if (!verified.value().ok()) {
      const Finding& f = verified.value().findings.front();
      return BadInput("the " + kind + " folder fails verification (" +
                          std::to_string(verified.value().findings.size()) + " findings; first: " + f.check +
                          " " + f.where + ": " + f.what + ")",
                      dir->string(), "pilot verify " + dir->string());
    }
    auto e = ReadEvidence(fsys_, kind, *dir / summary);
    if (!e.ok()) return e.error();
    e.value().source = dir->string();
    e.value().note = "the " + kind + " folder's fingerprint " + verified.value().fingerprint;
    if (auto text = ReadCapped(fsys_, *dir / kRunRecord, limits::kRunRecordBytes, kind + " run record");
        text.ok()) {
      if (auto run = ParseJson(text.value(), (*dir / kRunRecord).string()); run.ok()) {
        if (auto m = StringAt(run.value(), "manifest_sha256")) e.value().manifest_sha256 = *m;
      }
    }
    evidence_.push_back(std::move(e.value()));
    return {};
  }

  // Evidence first: a bad file is refused before anything else is read or locked.
  Status ReadAllEvidence() {
    auto take = [&](const char* k, const std::optional<fs::path>& file) -> Status {
      if (!file) return {};
      auto e = ReadEvidence(fsys_, k, *file);
      if (!e.ok()) return e.error();
      PILOT_TRY(CheckEvidence(e.value()));
      evidence_.push_back(std::move(e.value()));
      return {};
    };
    PILOT_TRY(take("doctor", o_.doctor));
    PILOT_TRY(take("compare", o_.compare));
    PILOT_TRY(take("plan", o_.plan));
    PILOT_TRY(TakeFolder("sweep", kFolderKindSweep, kSweepSummary, o_.sweep, o_.expect_sweep));
    if (o_.expect_sweep && !o_.sweep)
      return BadInput("--expect-sweep checks the --sweep folder: give --sweep DIR", "--expect-sweep");
    PILOT_TRY(TakeFolder("load", kFolderKindLoad, kLoadSummary, o_.load, o_.expect_load));
    if (o_.expect_load && !o_.load)
      return BadInput("--expect-load checks the --load folder: give --load DIR", "--expect-load");
    if (o_.expect_calibration && !o_.calibration) {
      return BadInput("--expect-calibration checks the --calibration folder: give --calibration DIR",
                      "--expect-calibration");
    }
    if (o_.calibration) PILOT_TRY(ReadCalibrationEvidence(*o_.calibration));
    return {};
  }

  // The first rented hour's folder as evidence: verified in full, nested folders and all (and
  // against --expect-calibration), then its record, and its doctor report unless --doctor gave
  // one.
  Status ReadCalibrationEvidence(const fs::path& dir) {
    // Recording into the calibration's own pilot would change the calibration's bag: refused.
    const std::string inside = dir_.lexically_relative(dir).string();
    if (!inside.empty() && inside != "." && inside.rfind("..", 0) != 0) {
      return BadInput("lies inside the --calibration folder, whose bag it would change", dir_.string(),
                      "export the calibration's pilot first (pilot export " +
                          (dir / kCalibrationPilot).string() + " DEST) and decide on that copy");
    }
    auto kind = ReadFolderKind(fsys_, dir);
    if (!kind.ok() || kind.value().kind != kFolderKindCalibration) {
      return BadInput("not a calibration folder", dir.string(), "give the folder `pilot calibrate` wrote");
    }
    VerifyOptions options;
    options.expect_fingerprint = o_.expect_calibration;
    auto verified = VerifyFolder(fsys_, dir, options);
    if (!verified.ok()) return verified.error();
    if (!verified.value().ok()) {
      const Finding& f = verified.value().findings.front();
      return BadInput("the calibration folder fails verification (" +
                          std::to_string(verified.value().findings.size()) + " findings; first: " + f.check +
                          " " + f.where + ": " + f.what + ")",
                      dir.string(), "pilot verify " + dir.string());
    }
    auto record = ReadCalibrationRecord(fsys_, dir);
    if (!record.ok()) return record.error();
    auto e = ReadEvidence(fsys_, "calibration", dir / kRunRecord);
    if (!e.ok()) return e.error();
    e.value().source = dir.string();
    e.value().note = "the calibration folder's fingerprint " + verified.value().fingerprint;
    e.value().manifest_sha256 = record.value().manifest_sha256;
    calibration_ = record.value();
    calibration_fingerprint_ = verified.value().fingerprint;
    evidence_.push_back(std::move(e.value()));
    if (o_.doctor) return {};
    auto doctor = ReadEvidence(fsys_, "doctor", dir / kCalibrationDoctor);
    if (!doctor.ok()) return doctor.error();
    PILOT_TRY(CheckEvidence(doctor.value()));
    doctor.value().note = "the doctor report of the calibration folder " + verified.value().fingerprint;
    evidence_.push_back(std::move(doctor.value()));
    return {};
  }

  // An interrupted decide finished or undone, the folder verified (false: it fails, in
  // out_.failed_verification), and, to record, its lock taken.
  Result<bool> PrepareFolder() {
    // A decide killed part-way is finished or undone first (and a stale lock removed): the folder
    // is then as before or as after that decide, never between.
    const bool may_recover = [&] {
      auto pending = fsys_.LinkStat(dir_ / kDecidePending);
      auto lock_file = fsys_.LinkStat(dir_ / kLockFile);
      return (pending.ok() && pending.value().exists) || (lock_file.ok() && lock_file.value().exists);
    }();
    if (may_recover && o_.on_phase)
      o_.on_phase(DecidePhase::kRecovering);  // it may write: a Ctrl-C waits for it
    auto recovered = RecoverInterruptedDecide(fsys_, dir_);
    if (may_recover && o_.on_phase) o_.on_phase(DecidePhase::kReading);
    if (!recovered.ok()) return recovered.error();
    if (recovered.value()) out_.notes.push_back(*recovered.value());
    if (auto holder = LockHolder(fsys_, dir_)) {
      return BadInput("the folder is being written by " + LockHolderText(*holder), dir_.string(),
                      "wait for it to finish (pilot status)");
    }
    VerifyOptions vo;
    vo.expect_fingerprint = o_.expect;
    auto verified = VerifyFolder(fsys_, dir_, vo);
    if (!verified.ok()) return verified.error();
    if (!verified.value().ok()) {
      out_.failed_verification = verified.value();
      return false;
    }
    out_.previous_fingerprint = verified.value().fingerprint;
    out_.fingerprint = out_.previous_fingerprint;
    // Recording holds the folder's lock from here; the tag manifest must still be the one just
    // verified (another decide, or a writer, may have come between).
    if (o_.decision) {
      auto acquired = RunLock::Acquire(fsys_, dir_);
      if (!acquired.ok()) return acquired.error();
      lock_.emplace(std::move(acquired.value()));
      if (o_.on_phase) o_.on_phase(DecidePhase::kLocked);
      auto now = Sha256File(fsys_, dir_ / kTagManifest, false);
      if (!now.ok()) return now.error();
      if (now.value() != out_.previous_fingerprint) {
        return BadInput(
            "the folder changed while it was verified (its fingerprint is now " + now.value() + ")",
            dir_.string(), "run the same decide again");
      }
    }
    return true;
  }

  Status ReadRecords() {
    // Read inside the folder, never through a link (the verify before read the same bytes).
    auto run_text = ReadInsideFolder(fsys_, dir_, kRunRecord, limits::kRunRecordBytes);
    if (!run_text.ok()) return run_text.error();
    auto record = ParseRunRecord(run_text.value(), (dir_ / kRunRecord).string());
    if (!record.ok()) return record.error();
    auto report_text = ReadInsideFolder(fsys_, dir_, kReportJson, limits::kReportBytes);
    if (!report_text.ok()) return report_text.error();
    auto report_doc = ParseJson(report_text.value(), (dir_ / kReportJson).string());
    if (!report_doc.ok()) return report_doc.error();
    auto report =
        RecordedReportFromJson(report_doc.value(), (dir_ / kReportJson).string(),
                               "the folder verified, so its report was edited and re-hashed: decide on "
                               "a folder written by pilot");
    if (!report.ok()) return report.error();
    report_file_ = (dir_ / kReportJson).string();
    results_file_ = (dir_ / kResults).string();
    run_text_ = std::move(run_text).value();
    record_ = std::move(record).value();
    report_ = std::move(report).value();
    report_doc_ = std::move(report_doc).value();
    return {};
  }

  void OwnFacts() {
    // The folder's own facts.
    if (!report_.acceptance_met) {
      std::string unmet;
      for (const RecordedCriterion& c : report_.criteria) {
        if (!c.met) {
          unmet += (unmet.empty() ? "" : ", ") + JsonValueText(nlohmann::json(c.name)) + " " +
                   JsonValueText(nlohmann::json(c.value)) + " against " +
                   JsonValueText(nlohmann::json(c.limit));
        }
      }
      facts_.Add("the acceptance criteria are not met: " + unmet, report_file_, kDecisionReviseConfig);
    } else if (!report_.criteria.empty()) {
      facts_.Add("every acceptance criterion is met (" + std::to_string(report_.criteria.size()) + ")",
                 report_file_, kDecisionGo);
    } else {
      facts_.Add("the parameters set no acceptance criteria: nothing was judged", report_file_, kDecisionGo);
    }
    // A label the labelled items expect that the model never gave (format 3 reports): accuracy
    // can hide a dead class. A warning; acceptance.min_recall_per_label makes it a criterion.
    const auto& never = report_.never_predicted;
    for (std::size_t i = 0; i < never.size() && i < kListedNeverPredicted; ++i) {
      facts_.Add("warning: the label '" + TruncateUtf8(never[i], 100) + "' is never predicted (0 of the " +
                     std::to_string(SupportOf(report_.per_label, never[i])) +
                     " labelled items that expect it; accuracy does not show it)",
                 report_file_, "note");
    }
    if (never.size() > kListedNeverPredicted) {
      facts_.Add("warning: " + std::to_string(never.size() - kListedNeverPredicted) +
                     " more labels are never predicted (quality.never_predicted)",
                 report_file_, "note");
    }
    if (!report_.expected_rejections_unmet.empty()) {
      facts_.Add("expected rejections not met: " +
                     TruncateUtf8(JsonValueText(nlohmann::json(report_.expected_rejections_unmet)), 400),
                 report_file_, kDecisionReviseConfig);
    }
  }

  Status ScanResults() {
    // Rejections the manifest did not expect, and the spot-check sample, in one pass over the
    // results (in manifest order: position k is manifest item k).
    const fs::path manifest_copy = dir_ / record_.manifest_copy;
    ManifestIndex index;
    auto source = ManifestSource::Open(fsys_, manifest_copy, &index);
    if (!source.ok()) return source.error();
    source_.emplace(std::move(source).value());
    auto lines = LineReader::Open(fsys_, dir_ / kResults, limits::kResultLineBytes, false);
    if (!lines.ok()) return lines.error();
    seed_ = o_.seed ? *o_.seed : record_.settings.seed.value_or(0);
    std::mt19937_64 rng(seed_);
    std::map<std::string, std::size_t> seen;
    std::size_t unexpected_count = 0;
    std::vector<std::string> unexpected;
    std::string line;
    for (;; ++position_) {
      if (position_ % 1024 == 0 && Stopped()) return Halt();
      auto next = lines.value().Next(line);
      if (!next.ok()) return next.error();
      if (!next.value()) break;
      auto parsed = ScanResultRecord(line, false);
      ResultRecord r;
      if (parsed) {
        r = std::move(*parsed);
      } else {
        auto full = ParseResultRecord(line, results_file_ + ":" + std::to_string(position_ + 1));
        if (!full.ok()) return full.error();
        r = std::move(full.value());
      }
      if (!r.accepted) {
        ++rejected_count_;
        if (!index.expected_rejection.count(position_)) {
          ++unexpected_count;
          if (unexpected.size() < 20) unexpected.push_back(r.id + " (" + r.reason + ")");
        }
        if (rejected_.size() < kMaxRejectedShown)
          rejected_.push_back({r.id, "rejected: " + r.reason, position_, ""});
        continue;
      }
      const std::string category = r.category.empty() ? std::string("(embedding)") : r.category;
      std::string outcome = r.category.empty() ? "accepted (vector)" : "accepted: " + r.category;
      if (!r.category.empty()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (%.3f)", r.confidence);
        outcome += buf;
      }
      auto& bucket = sample_[category];
      const std::size_t k = ++seen[category];
      if (bucket.size() < o_.per_category) {
        bucket.push_back({r.id, outcome, position_, ""});
      } else if (o_.per_category > 0) {
        const std::size_t j = std::uniform_int_distribution<std::size_t>(0, k - 1)(rng);
        if (j < o_.per_category) bucket[j] = {r.id, outcome, position_, ""};
      }
    }
    if (unexpected_count > 0) {
      std::string ids;
      for (const auto& u : unexpected) ids += (ids.empty() ? "" : ", ") + u;
      facts_.Add(std::to_string(unexpected_count) +
                     " item(s) rejected that the manifest does not expect to be: " + ids +
                     (unexpected_count > unexpected.size() ? ", …" : ""),
                 results_file_, kDecisionReviseConfig);
    } else {
      facts_.Add("every rejection (" + std::to_string(rejected_count_) + ") is one the manifest expects",
                 results_file_, kDecisionGo);
    }
    return {};
  }

  // The evidence's facts, then the proposal they point to.
  Status EvidenceFacts() {
    // This folder's own figures, as `pilot plan` reads them from a run or shard folder: read only
    // when a plan is among the evidence.
    std::optional<Measurement> here;
    const bool plan_given =
        std::any_of(evidence_.begin(), evidence_.end(), [](const Evidence& e) { return e.kind == "plan"; });
    if (plan_given && HasOwnJournalKind(record_.folder_kind)) {
      // plan reads run.json's document through its own reader (rental_plan.h), as for `pilot plan`.
      auto run = ParseJson(run_text_, (dir_ / kRunRecord).string());
      if (!run.ok()) return run.error();
      std::map<std::string, nlohmann::json> docs = {{kRunRecord, std::move(run).value()},
                                                    {kReportJson, report_doc_}};
      const fs::path env_file = dir_ / kEnvironmentFile;  // optional, as for plan
      if (auto env_text = ReadCapped(fsys_, env_file, limits::kRunRecordBytes, "environment");
          env_text.ok()) {
        if (auto env = ParseJson(env_text.value(), env_file.string()); env.ok())
          docs[kEnvironmentFile] = std::move(env).value();
      }
      auto measured = MeasurementFromDocuments(dir_.string(), record_.folder_kind, docs);
      if (measured.ok()) {
        here = std::move(measured).value();
        PILOT_TRY(MeasureOutputs(fsys_, dir_, *here));
      }
    }
    for (const Evidence& e : evidence_) {
      if (e.kind == "doctor") PILOT_TRY(DoctorFacts(e, facts_));
      if (e.kind == "compare") {
        PILOT_TRY(CompareFacts(e, record_.manifest_sha256, out_.previous_fingerprint, position_,
                               nlohmann::json(report_.accepted), facts_));
      }
      if (e.kind == "plan") {
        PILOT_TRY(PlanFacts(e, out_.previous_fingerprint, here, facts_));
        PlanBasisFacts(e, o_.plan_choice, out_.previous_fingerprint, record_.manifest_sha256, evidence_,
                       facts_);
      }
      if (e.kind == "sweep") SweepFacts(e, record_.settings, record_.manifest_sha256, facts_);
      if (e.kind == "load") LoadFacts(e, record_.manifest_sha256, facts_);
      if (e.kind == "calibration" && calibration_) {
        CalibrationFacts(e, *calibration_, calibration_fingerprint_, out_.previous_fingerprint,
                         record_.manifest_sha256, evidence_, facts_);
      }
    }
    out_.proposal = facts_.Any(kDecisionFixEnv)         ? kDecisionFixEnv
                    : facts_.Any(kDecisionReviseConfig) ? kDecisionReviseConfig
                    : facts_.Any(kDecisionMeasureFirst) ? kDecisionMeasureFirst
                                                        : kDecisionGo;
    out_.facts = facts_.list;
    for (const Evidence& e : evidence_) {
      out_.evidence.push_back({{"kind", e.kind}, {"source", e.source}, {"sha256", e.sha256}});
      if (!e.note.empty()) out_.evidence.back()["note"] = e.note;
    }
    return {};
  }

  // decisions.jsonl's new entry and the evidence files it names.
  Status BuildEntry(Recording& rec) {
    // Recording. The earlier entries are kept byte for byte.
    {
      auto st = fsys_.LinkStat(dir_ / kDecisionsFile);
      if (!st.ok()) return st.error();
      if (st.value().exists) {
        auto text = ReadCapped(fsys_, dir_ / kDecisionsFile, kDecisionsFileBytes, "decision record");
        if (!text.ok()) return text.error();
        rec.previous = std::move(text.value());
        rec.entries = static_cast<std::size_t>(std::count(rec.previous.begin(), rec.previous.end(), '\n'));
      }
    }
    if (rec.entries >= kMaxDecisions)
      return BadInput("the folder already holds " + std::to_string(rec.entries) + " decisions",
                      kDecisionsFile);
    rec.n = rec.entries + 1;
    out_.entry = rec.n;
    rec.entry["entry"] = rec.n;
    rec.entry["decided_at"] = clock_.UtcNowIso();
    rec.entry["decision"] = *o_.decision;
    rec.entry["proposal"] = out_.proposal;
    rec.entry["overrides_proposal"] = *o_.decision != out_.proposal;
    rec.entry["reasons"] = o_.reasons;
    rec.entry["facts"] = out_.facts;
    rec.ev = ojson::array();
    for (const Evidence& e : evidence_) {
      const std::string name = "decision-" + std::to_string(rec.n) + "-" + e.kind + ".json";
      ojson item = {{"kind", e.kind}, {"source", e.source}, {"file", name}, {"sha256", e.sha256}};
      if (!e.note.empty()) item["note"] = e.note;
      rec.ev.push_back(item);
      rec.files.emplace_back(name, e.bytes);
    }
    rec.entry["evidence"] = rec.ev;
    rec.entry["run"] = {{"run_id", record_.run_id},
                        {"folder_kind", record_.folder_kind},
                        {"manifest_sha256", record_.manifest_sha256},
                        {"fingerprint_before", out_.previous_fingerprint}};
    rec.plan = nullptr;
    for (const Evidence& e : evidence_) {
      if (e.kind == "plan") rec.plan = &e;
    }
    if (rec.plan) {
      rec.entry["plan_choice"] = o_.plan_choice;
      // The chosen row's own fields, typed: the evidence file holds the rest.
      const nlohmann::json& row = MemberOrNull(rec.plan->doc, o_.plan_choice.c_str());
      ojson chosen = ojson::object();
      for (const char* k : {"card", "fit", "rate_basis"}) {
        if (MemberOrNull(row, k).is_string())
          chosen[k] = TruncateUtf8(MemberOrNull(row, k).get<std::string>(), 64);
      }
      for (const char* k : {"period_days", "lots", "cards", "items_per_s_per_card", "compute_hours",
                            "needed_hours", "cost"}) {
        if (MemberOrNull(row, k).is_number() && std::isfinite(MemberOrNull(row, k).get<double>()))
          chosen[k] = MemberOrNull(row, k).get<double>();
      }
      rec.entry["plan"] = row.is_object() ? chosen : ojson();
    }
    rec.entry["command_line"] = o_.command_line;
    const std::string entry_line = JsonLine(rec.entry);
    // What verify will read back: the entry must pass its own check, the file its cap.
    if (auto back = ParseDecisionEntry(entry_line, kDecisionsFile); !back.ok()) {
      return BadInput("the decision entry would not read back: " + back.error().what, kDecisionsFile,
                      "shorten the reasons, or check the evidence files");
    }
    if (rec.previous.size() + entry_line.size() + 1 > kDecisionsFileBytes) {
      return BadInput(
          "decisions.jsonl would pass its cap of " + std::to_string(kDecisionsFileBytes >> 20) + " MiB",
          kDecisionsFile, "record this decision on an exported copy, or shorten the reasons");
    }
    rec.all = rec.previous + entry_line + "\n";
    return {};
  }

  // decision.md, from every entry (the latest first) and this call's spot check.
  std::string DecisionMarkdown(const Recording& rec) {
    std::string md = "# Decision record: run " + Cell(record_.run_id) + "\n\n";
    md +=
        "Kept beside the payload as tag files (decisions.jsonl, this file, decision-N-*.json), covered by "
        "tagmanifest-sha256.txt; `pilot verify` checks them. Earlier entries are never rewritten.\n\n";
    md += "## Entry " + std::to_string(rec.n) + ": **" + *o_.decision + "** (" +
          rec.entry["decided_at"].get<std::string>() + ")\n\n";
    md += "pilot proposed **" + out_.proposal + "**" +
          (*o_.decision != out_.proposal ? "; the person decided otherwise, for the reasons below" : "") +
          ".\n\n";
    md += "### Reasons\n\n";
    for (const auto& r : o_.reasons) md += "- " + Cell(r) + "\n";
    md += "\n### What is accepted\n\n";
    md += "- items: " + std::to_string(report_.total) + " = " + std::to_string(report_.accepted) +
          " accepted + " + std::to_string(report_.rejected) +
          " rejected (verified: every manifest id exactly once)\n";
    md += "- accuracy on labelled items: " + std::to_string(report_.correct) + "/" +
          std::to_string(report_.labelled) + "\n";
    md += "- verdict of the run: " + C(nlohmann::json(report_.verdict)) + "\n";
    for (const auto& f : facts_.list) {
      if (f["points_to"] == kDecisionGo)
        md += "- " + Cell(f["fact"].get<std::string>()) + " (" + Cell(f["from"].get<std::string>()) + ")\n";
    }
    md += "\n### What still needs fixing\n\n";
    std::size_t open = 0;
    for (const auto& f : facts_.list) {
      if (f["points_to"] == kDecisionGo) continue;
      ++open;
      md += "- [" + f["points_to"].get<std::string>() + "] " + Cell(f["fact"].get<std::string>()) + " (" +
            Cell(f["from"].get<std::string>()) + ")\n";
    }
    if (open == 0) md += "Nothing in the evidence given.\n";
    AppendPlan(rec, md);
    AppendEvidence(rec, md);
    AppendSpotCheck(md);
    AppendEarlierEntries(rec, md);
    return md;
  }

  void AppendPlan(const Recording& rec, std::string& md) const {
    md += "\n### Plan, projected time and cost\n\n";
    if (!rec.plan) {
      md += "No plan was given (`pilot plan --out F`, then `--plan F`).\n";
    } else {
      const nlohmann::json& chosen = MemberOrNull(rec.plan->doc, o_.plan_choice.c_str());
      if (chosen.is_null()) {
        md += "The plan has no fitting choice: " + C(MemberOrNull(rec.plan->doc, "verdict")) + ".\n";
      } else {
        md += "Chosen (" + o_.plan_choice + "): " + C(MemberOrNull(chosen, "lots")) + " lot(s) of " +
              C(MemberOrNull(chosen, "card")) + " (" + C(MemberOrNull(chosen, "cards")) + " cards) for " +
              C(MemberOrNull(chosen, "period_days")) + " days; projected compute " +
              Money(MemberOrNull(chosen, "compute_hours")) + " h, with the allowance " +
              Money(MemberOrNull(chosen, "needed_hours")) + " h; cost " +
              Money(MemberOrNull(chosen, "cost")) + " " +
              C(MemberOrNull(MemberOrNull(rec.plan->doc, "prices"), "currency")) + " (fit " +
              C(MemberOrNull(chosen, "fit")) + ", rate " + C(MemberOrNull(chosen, "rate_basis")) + ").\n";
      }
      const nlohmann::json& other =
          MemberOrNull(rec.plan->doc, o_.plan_choice == "cheapest" ? "fastest" : "cheapest");
      if (!other.is_null()) {
        md += "\nThe " + std::string(o_.plan_choice == "cheapest" ? "fastest" : "cheapest") + ": " +
              C(MemberOrNull(other, "lots")) + " lot(s) of " + C(MemberOrNull(other, "card")) + " for " +
              C(MemberOrNull(other, "period_days")) + " days, " + Money(MemberOrNull(other, "needed_hours")) +
              " h, cost " + Money(MemberOrNull(other, "cost")) + ".\n";
      }
      if (MemberOrNull(MemberOrNull(rec.plan->doc, "prices"), "example") == true) {
        md +=
            "\n> **The price file is an example with made-up prices.** Replace it with real quotes before "
            "renting.\n";
      }
      const nlohmann::json& b = MemberOrNull(rec.plan->doc, "basis");
      md += "\nBasis: the " + C(MemberOrNull(b, "folder_kind")) + " folder " + C(MemberOrNull(b, "folder")) +
            ", measured on " + C(MemberOrNull(b, "device")) + " over " + C(MemberOrNull(b, "items")) +
            " items: " + Money(MemberOrNull(b, "items_per_s_per_card")) + " items/s per card, peak " +
            Money(MemberOrNull(b, "peak_memory_mb")) + " MB (" + C(MemberOrNull(b, "memory_basis")) + ")" +
            (MemberOrNull(b, "assume_scaling").is_number()
                 ? "; ASSUMED scaling x" + C(MemberOrNull(b, "assume_scaling")) + " on other cards"
                 : std::string()) +
            "; corpus " + C(MemberOrNull(MemberOrNull(rec.plan->doc, "corpus"), "items")) +
            " items; allowance " + Money(MemberOrNull(rec.plan->doc, "allowance_hours")) + " h.\n";
      const nlohmann::json& projection = MemberOrNull(rec.plan->doc, "projection");
      if (MemberOrNull(projection, "by") == "tokens") {
        md += "Projected by tokens: the corpus averages " +
              Money(MemberOrNull(MemberOrNull(projection, "corpus"), "mean_tokens")) +
              " tokens an item, the pilot " +
              Money(MemberOrNull(MemberOrNull(projection, "pilot"), "mean_tokens")) + " (x" +
              Money(MemberOrNull(projection, "factor")) + " the pilot's time per item).\n";
      } else {
        md += "Projected by items.\n";
      }
      if (MemberOrNull(rec.plan->doc, "warnings").is_array()) {
        for (const auto& w : MemberOrNull(rec.plan->doc, "warnings"))
          md += "- " + Cell(TruncateUtf8(JsonValueText(w), 400)) + "\n";
      }
    }
  }

  void AppendEvidence(const Recording& rec, std::string& md) const {
    md += "\n### Evidence\n\n";
    md +=
        "- this folder, verified before recording; fingerprint before: `" + out_.previous_fingerprint + "`\n";
    for (const auto& e : rec.ev) {
      md += "- " + e["kind"].get<std::string>() + ": `" + e["file"].get<std::string>() + "` (sha256 `" +
            e["sha256"].get<std::string>() + "`), copied from " + Cell(e["source"].get<std::string>()) +
            (e.contains("note") ? "; " + Cell(e["note"].get<std::string>()) : std::string()) + "\n";
    }
  }

  void AppendSpotCheck(std::string& md) {
    md += "\n### Spot check\n\n";
    if (!o_.excerpts) {
      md += "Turned off (--no-excerpts): no input is quoted here.\n";
    } else {
      fs::path root = o_.inputs_root ? *o_.inputs_root : fs::path(record_.inputs_root);
      auto resolved = fsys_.Resolve(root);
      std::vector<Spot*> spots;
      for (auto& [c, bucket] : sample_) {
        std::sort(bucket.begin(), bucket.end(),
                  [](const Spot& a, const Spot& b) { return a.position < b.position; });
        for (auto& s : bucket) spots.push_back(&s);
      }
      for (auto& s : rejected_) spots.push_back(&s);
      std::map<std::size_t, Spot*> by_position;
      for (Spot* s : spots) by_position[s->position] = s;
      std::size_t k = 0;
      (void)source_->ForEach([&](const ManifestItem& item) -> Status {
        auto it = by_position.find(k++);
        if (it != by_position.end()) {
          it->second->excerpt =
              resolved.ok() ? Excerpt(fsys_, resolved.value(), item)
                            : "(not shown: the inputs' folder " + Cell(root.string()) + " is not there)";
        }
        return {};
      });
      md += "A seeded sample (seed " + std::to_string(seed_) + ") of " + std::to_string(o_.per_category) +
            " accepted item(s) per category and every rejected item" +
            (rejected_count_ > rejected_.size() ? " (the first " + std::to_string(rejected_.size()) + " of " +
                                                      std::to_string(rejected_count_) + ")"
                                                : std::string()) +
            ", each beside the start of its input (from " + Cell(root.string()) +
            "). A valid-looking output can still be wrong: read them.\n\n";
      md += "| id | outcome | input (excerpt) |\n|---|---|---|\n";
      for (Spot* s : spots) md += "| " + Cell(s->id) + " | " + Cell(s->outcome) + " | " + s->excerpt + " |\n";
    }
  }

  void AppendEarlierEntries(const Recording& rec, std::string& md) const {
    if (rec.entries > 0) {
      md += "\n## Earlier entries\n\n";
      std::size_t i = 0;
      std::string_view rest(rec.previous);
      while (!rest.empty()) {
        const auto nl = rest.find('\n');
        const std::string_view l = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        ++i;
        auto parsed = ParseJson(l, kDecisionsFile, 16);
        if (!parsed.ok()) continue;
        std::string reasons;
        if (MemberOrNull(parsed.value(), "reasons").is_array()) {
          for (const auto& r : MemberOrNull(parsed.value(), "reasons"))
            reasons += (reasons.empty() ? "" : "; ") + JsonValueText(r);
        }
        md += "- entry " + std::to_string(i) + ": **" + C(MemberOrNull(parsed.value(), "decision")) + "** (" +
              C(MemberOrNull(parsed.value(), "decided_at")) + "): " + Cell(TruncateUtf8(reasons, 600)) + "\n";
      }
    }
  }

  Status WriteStaged(Recording& rec, const std::string& md) {
    // Write the evidence, the record and the page, then the tag manifest last, each staged in
    // .decide-pending/ with a COMMIT record written after them all: a kill before COMMIT leaves
    // the folder as it was (the next decide or resume removes the staging folder), a kill after
    // it leaves a change the next decide or resume applies to the end (docs/security.md, "A decision
    // interrupted").
    for (const auto& [name, bytes] : rec.files) {
      auto st = fsys_.LinkStat(dir_ / name);
      if (!st.ok()) return st.error();
      if (st.value().exists)
        return BadInput("already exists: evidence is never overwritten", (dir_ / name).string());
    }
    auto tag_text = ReadCapped(fsys_, dir_ / kTagManifest, limits::kTagFileBytes, "tag manifest");
    if (!tag_text.ok()) return tag_text.error();
    auto tag_lines = ParseManifestLines(tag_text.value(), kTagManifest);
    if (!tag_lines.ok()) return tag_lines.error();
    rec.files.emplace_back(kDecisionsFile, rec.all);
    rec.files.emplace_back(kDecisionMarkdown, md);
    std::set<std::string> written;
    for (const auto& [name, bytes] : rec.files) written.insert(name);
    std::string tags;
    for (const ManifestLine& l : tag_lines.value()) {
      if (!written.count(l.path)) tags += l.sha256 + "  " + EncodeManifestPath(l.path) + "\n";
    }
    for (const auto& [name, bytes] : rec.files) tags += Sha256Hex(bytes) + "  " + name + "\n";
    rec.files.emplace_back(kTagManifest, tags);
    if (Stopped()) return Halt();
    if (o_.on_phase) o_.on_phase(DecidePhase::kWriting);
    DecideCommit staged;
    staged.entry = rec.n;
    staged.before = out_.previous_fingerprint;
    for (const auto& [name, bytes] : rec.files) staged.files.emplace_back(name, Sha256Hex(bytes));
    const fs::path pending = dir_ / kDecidePending;
    // A failed write before COMMIT takes the staging folder back: the folder is the one verified.
    auto roll_back = [&](const Error& e) -> Error {
      (void)fsys_.RemoveTree(pending);
      lock_->RemoveFile();
      Error out_error = e;
      out_error.hint =
          "nothing was recorded (the staged files were removed); free space and run the same decide again";
      return out_error;
    };
    if (Status st = fsys_.CreateDirectoryExclusive(pending); !st.ok()) return roll_back(st.error());
    for (const auto& [name, bytes] : rec.files) {
      if (Status st = fsys_.WriteFileAtomic(pending / name, bytes); !st.ok()) return roll_back(st.error());
    }
    if (Status st = fsys_.WriteFileAtomic(pending / kDecideCommit, StagedToJson(staged)); !st.ok()) {
      return roll_back(st.error());
    }
    // Committed: from here the change is applied to its end, now or by the next decide or resume.
    if (Status st = ApplyStaged(fsys_, dir_, staged); !st.ok()) {
      Error e = st.error();
      e.kind = ErrorKind::kWorkFailed;
      e.hint = "the decision is committed in " + std::string(kDecidePending) + "/: run `pilot decide " +
               dir_.string() + "` (or `pilot resume`) again to apply it to its end";
      return e;
    }
    for (const auto& [name, bytes] : rec.files) {
      if (name != kTagManifest) out_.written.push_back(name);
    }
    out_.fingerprint = Sha256Hex(tags);
    out_.recorded = true;
    lock_->RemoveFile();  // a finished folder holds no lock file, even one taken over from a dead process
    if (o_.on_phase) o_.on_phase(DecidePhase::kRecorded);
    return {};
  }

  FileSystem& fsys_;
  Clock& clock_;
  const fs::path& dir_;
  const DecideOptions& o_;
  std::vector<Evidence> evidence_;
  std::optional<CalibrationRecord> calibration_;  // --calibration's record, verified
  std::string calibration_fingerprint_;
  DecideOutcome out_;
  std::optional<RunLock> lock_;
  std::string run_text_;  // run.json as verified, for plan's reader when a plan is evidence
  nlohmann::json report_doc_;
  RecordedReport report_;
  RunRecord record_;
  std::string report_file_, results_file_;
  Facts facts_;
  std::optional<ManifestSource> source_;  // the manifest's copy, read again for the excerpts
  std::uint64_t seed_ = 0;
  std::map<std::string, std::vector<Spot>> sample_;  // category -> reservoir
  std::vector<Spot> rejected_;
  std::size_t rejected_count_ = 0, position_ = 0;
};

}  // namespace

Result<DecideOutcome> Decide(FileSystem& fsys, Clock& clock, const fs::path& run_dir,
                             const DecideOptions& o) {
  return Decider(fsys, clock, run_dir, o).Run();
}

}  // namespace pilot
