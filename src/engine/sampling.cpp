#include "pilot/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "pilot/hash.h"

namespace pilot {

std::array<std::uint32_t, 4> Philox4x32(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{kM0} * c[0], p1 = std::uint64_t{kM1} * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

SamplingKey SamplingKeyFor(std::uint64_t seed, std::string_view item_id) {
  const std::string hex = Sha256Hex(item_id);
  return SamplingKey{seed, std::stoull(hex.substr(0, 16), nullptr, 16)};
}

double SamplingUniform(const SamplingKey& key, std::uint64_t step) {
  const auto lo = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
  const auto hi = [](std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); };
  const auto block =
      Philox4x32({lo(step), hi(step), lo(key.item), hi(key.item)}, {lo(key.seed), hi(key.seed)});
  const std::uint64_t bits = ((std::uint64_t{block[0]} << 32) | block[1]) >> 11;  // 53 bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

TokenChoice ChooseToken(const float* row, std::size_t n, const GenerationSettings& g, const SamplingKey& key,
                        std::uint64_t step, std::size_t* scratch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  TokenChoice out;
  // Greedy, and the check every row gets: a NaN or +inf is no choice at all.
  std::int64_t best = -1, second = -1;
  for (std::size_t j = 0; j < n; ++j) {
    const float v = row[j];
    if (std::isnan(v) || v == kInf) return TokenChoice{};
    if (v == -kInf) continue;
    if (best < 0 || v > row[best]) {
      second = best;
      best = static_cast<std::int64_t>(j);
    } else if (second < 0 || v > row[second]) {
      second = static_cast<std::int64_t>(j);
    }
  }
  if (best < 0) return TokenChoice{};
  if (g.temperature <= 0) {
    out.id = best;
    out.near_tie = second >= 0 && static_cast<double>(row[best]) - row[second] < kNearTieMargin;
    return out;
  }
  // The candidates; -inf is never one. Weights exp((logit - largest) / temperature), in double:
  // at most 1, never NaN however small the temperature.
  const double largest = row[best];
  const auto weight_of = [&](std::size_t j) {
    return std::exp((static_cast<double>(row[j]) - largest) / g.temperature);
  };
  std::size_t m = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (row[j] != -kInf) scratch[m++] = j;
  }
  const auto before = [row](std::size_t a, std::size_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  // A cut that rounding could move is a near-tie: the last kept logit and the first left out
  // within the margin.
  bool cut_tie = false;
  auto cut_at = [&](std::size_t keep) {  // scratch[0..keep) are the `keep` largest, in order
    if (keep >= m) return;
    const float out_best = row[*std::min_element(scratch + keep, scratch + m, before)];
    cut_tie = cut_tie || static_cast<double>(row[scratch[keep - 1]]) - out_best < kNearTieMargin;
  };
  std::size_t keep = m;
  if (g.top_k > 0 && g.top_k < m) {
    keep = static_cast<std::size_t>(g.top_k);
    std::partial_sort(scratch, scratch + keep, scratch + m, before);
    cut_at(keep);
  }
  double total = 0;
  for (std::size_t i = 0; i < keep; ++i) total += weight_of(scratch[i]);
  if (g.top_p < 1) {
    // The smallest set, by falling weight, whose mass reaches top_p of the kept mass: sorted a
    // growing prefix at a time (a flat distribution needs most of the vocabulary, a peaked one
    // a few tokens).
    const double want = g.top_p * total;
    std::size_t sorted = 0, chunk = 64;
    double mass = 0;
    std::size_t i = 0;
    bool reached = false;
    while (!reached) {
      const std::size_t upto = std::min(keep, sorted + chunk);
      if (upto > sorted) {
        if (upto < keep) std::nth_element(scratch + sorted, scratch + upto - 1, scratch + keep, before);
        std::sort(scratch + sorted, scratch + upto, before);
        sorted = upto;
      }
      while (i < sorted) {
        const double prev = mass;
        mass += weight_of(scratch[i++]);
        if (mass >= want) {
          reached = true;
          // The threshold within the margin of the mass on either side of the last kept token.
          cut_tie = cut_tie || mass - want < kNearTieMargin * total || want - prev < kNearTieMargin * total;
          break;
        }
      }
      if (sorted == keep) reached = true;
      chunk *= 4;
    }
    if (i < keep) cut_at(i);
    keep = i;
    total = mass;
  }
  // The draw walks the kept tokens in id order: which of two nearly equal logits sorts first
  // does not move any interval.
  std::sort(scratch, scratch + keep);
  const double u = SamplingUniform(key, step) * total;
  double edge = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    const double next = edge + weight_of(scratch[i]);
    if (u < next || i + 1 == keep) {
      out.id = static_cast<std::int64_t>(scratch[i]);
      out.near_tie = cut_tie || (i > 0 && u - edge < kNearTieMargin * total) ||
                     (i + 1 < keep && next - u < kNearTieMargin * total);
      return out;
    }
    edge = next;
  }
  return out;  // unreachable: keep >= 1
}

}  // namespace pilot
