// The generation output kind: a completion per prompt, decoded by pilot's own loop under the
// parameters' `generation` (docs/generation.md). The completion lives in the record itself
// (text, token ids, finish reason, timings), so the bag's manifest covers it and verify checks
// each one against the run's settings.
#include <algorithm>
#include <cmath>

#include "pilot/escape.h"
#include "pilot/json_util.h"
#include "pilot/output_kind.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/utf8.h"

namespace pilot {

namespace {

// sampling.h's kNearTieMargin, as the report states it (records sits below the engine).
constexpr const char* kNearTieMarginText = "1e-4";

// What is wrong with a completion against the run's rules (max_new_tokens, vocab), or nullopt.
// The stage's output and a record read back are held to the same rules.
std::optional<std::string> Fault(const Completion& c, std::uint64_t max_new_tokens, std::uint64_t vocab) {
  if (c.ids.empty()) return "a completion without a token";
  if (max_new_tokens > 0 && c.ids.size() > max_new_tokens) {
    return std::to_string(c.ids.size()) + " completion tokens, more than generation.max_new_tokens " +
           std::to_string(max_new_tokens);
  }
  if (!IsFinishReason(c.finish_reason))
    return "finish_reason '" + KeyForMessage(c.finish_reason) + "' is not stop, eos or length";
  if (c.finish_reason == "length" && c.ids.size() != max_new_tokens) {
    return "finish_reason length after " + std::to_string(c.ids.size()) + " tokens, not max_new_tokens " +
           std::to_string(max_new_tokens);
  }
  for (std::size_t k = 0; k < c.ids.size(); ++k) {
    if (c.ids[k] < 0 || (vocab > 0 && static_cast<std::uint64_t>(c.ids[k]) >= vocab)) {
      return "completion token " + std::to_string(k) + " (" + std::to_string(c.ids[k]) +
             ") is outside the model's vocabulary of " + std::to_string(vocab);
    }
  }
  if (c.text.size() > kMaxCompletionBytes) {
    return "a completion of " + std::to_string(c.text.size()) + " bytes, more than " +
           std::to_string(kMaxCompletionBytes);
  }
  if (!CheckUtf8(c.text).valid) return "a completion that is not valid UTF-8";
  for (double ms : {c.ttft_ms, c.prefill_ms, c.decode_ms, c.tpot_ms.value_or(0), c.slot_steps.value_or(0)}) {
    if (!std::isfinite(ms) || ms < 0) return "a timing or slot share that is not a number at or above 0";
  }
  // Each decode step adds slots / live sequences, at least 1 and at most the slots (kMaxSlots).
  if (c.slot_steps) {
    const double steps = static_cast<double>(c.ids.size() - 1);
    if (*c.slot_steps < steps * (1 - 1e-9) || *c.slot_steps > steps * 65536.0 + 1e-9)
      return "slot_steps " + std::to_string(*c.slot_steps) + " is not between its " +
             std::to_string(c.ids.size() - 1) + " decode steps and 65536 times them";
  }
  for (std::size_t k = 0; k < c.near_tie_steps.size(); ++k) {
    if (c.near_tie_steps[k] >= c.ids.size() || (k > 0 && c.near_tie_steps[k] <= c.near_tie_steps[k - 1]))
      return "near_tie_steps that are not rising steps of the completion";
  }
  return std::nullopt;
}

std::optional<OutputRejection> Judge(const ItemOutput& out, const OutputRules& rules,
                                     ResultRecord& accepted) {
  if (!out.completion)
    return OutputRejection{std::string(reason::kInvalidOutput), "the stage gave no completion"};
  if (auto fault = Fault(*out.completion, rules.max_new_tokens, rules.vocab)) {
    return OutputRejection{std::string(reason::kInvalidOutput), *fault};
  }
  accepted.completion = *out.completion;
  return std::nullopt;
}

void PlanFields(const OutputRules& rules, nlohmann::ordered_json& plan) {
  plan["max_new_tokens"] = rules.max_new_tokens;
  plan["vocab"] = rules.vocab;
}

nlohmann::ordered_json Percentiles(double p50, double p90, double p99) {
  return {{"p50", p50}, {"p90", p90}, {"p99", p99}};
}

void ReportJson(const Report& r, nlohmann::ordered_json& report) {
  const GenerationFigures& g = r.generation;
  report["generation"] = {
      {"completions", g.items},
      {"prompt_tokens", g.prompt_tokens},
      {"completion_tokens", g.completion_tokens},
      {"finish_reasons", g.finish_reasons},
      {"prefill_ms", g.prefill_ms},
      {"decode_ms", g.decode_ms},
      {"prefill_tokens_per_s", g.prefill_tokens_per_s()},
      {"decode_tokens_per_s", g.decode_tokens_per_s()},
      {"ttft_ms", Percentiles(g.ttft_p50, g.ttft_p90, g.ttft_p99)},
      {"tpot_ms", Percentiles(g.tpot_p50, g.tpot_p90, g.tpot_p99)},
      {"tpot_samples", g.tpot_samples},
      {"slot_occupancy", g.occupancy() ? nlohmann::ordered_json(*g.occupancy()) : nlohmann::ordered_json()},
      {"near_ties", {{"steps", g.near_tie_steps}, {"completions", g.near_tie_completions}}},
      {"exact_match",
       {{"labelled", r.labelled},
        {"matched", r.correct},
        {"rate", r.labelled ? nlohmann::ordered_json(r.accuracy()) : nlohmann::ordered_json()}}},
      {"kv_cache",
       {{"largest_batch_bytes", g.kv_cache_bytes_max},
        {"measured_peak", r.device_peak_mb ? "device_peak_memory_mb" : "peak_rss_mb"},
        {"measured_peak_mb", r.device_peak_mb ? *r.device_peak_mb : r.peak_rss_mb}}}};
}

void ReportMarkdown(const Report& r, std::ostream& md) {
  const GenerationFigures& g = r.generation;
  md << "## Generation\n\n"
     << g.items << " completions: " << g.prompt_tokens << " prompt tokens, " << g.completion_tokens
     << " completion tokens.";
  for (const auto& [reason, n] : g.finish_reasons) md << " " << reason << ": " << n << ".";
  md << "\n\n| figure | p50 | p90 | p99 |\n|---|---:|---:|---:|\n"
     << "| time to first token (ms) | " << FixedDecimals(g.ttft_p50, 2) << " | "
     << FixedDecimals(g.ttft_p90, 2) << " | " << FixedDecimals(g.ttft_p99, 2) << " |\n"
     << "| time per output token (ms, " << g.tpot_samples << " completions) | "
     << FixedDecimals(g.tpot_p50, 3) << " | " << FixedDecimals(g.tpot_p90, 3) << " | "
     << FixedDecimals(g.tpot_p99, 3) << " |\n\n"
     << "Prefill " << FixedDecimals(g.prefill_tokens_per_s(), 1) << " tokens/s, decode "
     << FixedDecimals(g.decode_tokens_per_s(), 1) << " tokens/s (the model's own time).";
  if (g.occupancy())
    md << " Slot occupancy while decoding: " << FixedDecimals(100.0 * *g.occupancy(), 1) << "%.";
  md << "\n\n";
  if (g.near_tie_steps > 0) {
    md << "Near-ties: " << g.near_tie_steps << " steps in " << g.near_tie_completions
       << " completions were decided within " << kNearTieMarginText
       << "; another batch size or device may choose otherwise there (docs/generation.md).\n\n";
  }
  if (r.labelled) {
    md << "Exact match: " << r.correct << " of " << r.labelled << " labelled prompts ("
       << FixedDecimals(100.0 * r.accuracy(), 1) << "%).\n\n";
  }
  md << "KV cache: the largest batch allocated " << FixedDecimals(g.kv_cache_bytes_max / 1048576.0, 3)
     << " MiB (predicted from the model's shape); measured peak "
     << (r.device_peak_mb ? "device memory " + FixedDecimals(*r.device_peak_mb, 1)
                          : "RSS " + FixedDecimals(r.peak_rss_mb, 1))
     << " MB, the model and everything else included.\n\n";
}

std::optional<std::string> CheckAccepted(const ResultRecord& r, const AcceptedRules& rules) {
  if (!r.completion) return "accepted without a completion";
  if (!r.tokens) return "accepted without the prompt's tokens";
  const Completion& c = *r.completion;
  if (auto fault = Fault(c, rules.max_new_tokens, rules.vocab)) return *fault;
  // Decoding stops at the first end-of-sequence or stop id: none before the last token, and
  // an eos finish ends on one.
  auto in = [](const std::vector<std::int64_t>* list, std::int64_t id) {
    return list && std::find(list->begin(), list->end(), id) != list->end();
  };
  for (std::size_t k = 0; k + 1 < c.ids.size(); ++k) {
    if (in(rules.eos_token_ids, c.ids[k]) || in(rules.stop_token_ids, c.ids[k])) {
      return "completion token " + std::to_string(k) + " (" + std::to_string(c.ids[k]) +
             ") ends a sequence, yet " + std::to_string(c.ids.size() - k - 1) + " tokens follow it";
    }
  }
  const bool eos_last = in(rules.eos_token_ids, c.ids.back());
  if ((c.finish_reason == "eos") != eos_last) {
    return "finish_reason " + c.finish_reason + " but the last token (" + std::to_string(c.ids.back()) +
           ") " + (eos_last ? "is" : "is not") + " an end-of-sequence id of the model";
  }
  if (in(rules.stop_token_ids, c.ids.back()) && c.finish_reason != "stop" && !eos_last) {
    return "the last token (" + std::to_string(c.ids.back()) + ") is a stop id, but finish_reason is " +
           c.finish_reason;
  }
  return std::nullopt;
}

// Two runs' completions: the same text is the same outcome; the figures count exact agreement
// and agreement token by token.
class Comparison : public OutputComparison {
 public:
  std::string Shown(const ResultRecord& r) const override {
    return r.completion ? "'" + EscapeTerminal(TruncateUtf8(r.completion->text, 60)) + "'"
                        : "(no completion)";
  }

  Result<std::optional<OutputDifference>> Compare(const ResultRecord& a, const ResultRecord& b,
                                                  bool& same_outcome) override {
    if (!a.completion || !b.completion) return std::optional<OutputDifference>();
    const Completion &ca = *a.completion, &cb = *b.completion;
    const std::size_t n = std::min(ca.ids.size(), cb.ids.size());
    std::size_t agree = 0;
    while (agree < n && ca.ids[agree] == cb.ids[agree]) ++agree;
    tokens_compared_ += std::max(ca.ids.size(), cb.ids.size());
    tokens_agreeing_ += agree;
    if (ca.ids.size() != cb.ids.size()) {
      const std::size_t d =
          ca.ids.size() > cb.ids.size() ? ca.ids.size() - cb.ids.size() : cb.ids.size() - ca.ids.size();
      ++length_differs_;
      length_diff_sum_ += d;
      length_diff_max_ = std::max<std::uint64_t>(length_diff_max_, d);
    }
    if (ca.ids == cb.ids && ca.text == cb.text) {
      same_outcome = true;
      ++identical_;
      return std::optional<OutputDifference>();
    }
    // Diverging first at a step that either run decided within the near-tie margin: rounding
    // alone may explain it, and it is counted apart.
    auto tie_at = [agree](const Completion& c) {
      return std::binary_search(c.near_tie_steps.begin(), c.near_tie_steps.end(), agree);
    };
    const bool near_tie = agree < n && (tie_at(ca) || tie_at(cb));
    if (near_tie) ++near_tie_divergences_;
    return std::optional<OutputDifference>(OutputDifference{
        near_tie ? "completion_near_tie" : "completion",
        Shown(a) + " (" + std::to_string(ca.ids.size()) + " tokens, " + ca.finish_reason + ")",
        Shown(b) + " (" + std::to_string(cb.ids.size()) + " tokens, " + cb.finish_reason + "; first " +
            std::to_string(agree) + " agree)"});
  }

  void Figures(std::size_t both_accepted, std::size_t, nlohmann::ordered_json& items) const override {
    items["identical_completions"] = identical_;
    items["exact_match_rate"] = both_accepted
                                    ? nlohmann::ordered_json(static_cast<double>(identical_) / both_accepted)
                                    : nlohmann::ordered_json();
    items["token_agreement"] = tokens_compared_
                                   ? nlohmann::ordered_json(static_cast<double>(tokens_agreeing_) /
                                                            static_cast<double>(tokens_compared_))
                                   : nlohmann::ordered_json();
    items["near_tie_divergences"] = near_tie_divergences_;
    items["length_differences"] = {
        {"completions", length_differs_},
        {"mean_tokens", length_differs_ ? nlohmann::ordered_json(static_cast<double>(length_diff_sum_) /
                                                                 static_cast<double>(length_differs_))
                                        : nlohmann::ordered_json()},
        {"max_tokens", length_diff_max_}};
  }

 private:
  std::size_t identical_ = 0, near_tie_divergences_ = 0, length_differs_ = 0;
  std::uint64_t length_diff_sum_ = 0, length_diff_max_ = 0;
  std::uint64_t tokens_compared_ = 0, tokens_agreeing_ = 0;
};

std::unique_ptr<OutputComparison> Compare(const ComparisonInputs&) { return std::make_unique<Comparison>(); }

const OutputKindSpec kGeneration{"generation",  /*labels=*/false, /*vectors=*/false, /*generates=*/true,
                                 Judge,         PlanFields,       ReportJson,        ReportMarkdown,
                                 CheckAccepted, Compare};

}  // namespace

const OutputKindSpec& GenerationOutput() { return kGeneration; }

}  // namespace pilot
