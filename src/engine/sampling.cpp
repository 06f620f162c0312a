#include "pilot/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

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
  // The candidates, by falling logit (ties to the lower id); -inf is never a candidate.
  std::size_t m = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (row[j] != -kInf) scratch[m++] = j;
  }
  const auto before = [row](std::size_t a, std::size_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  std::size_t keep = m;
  if (g.top_k > 0 && g.top_k < m) {
    keep = static_cast<std::size_t>(g.top_k);
    std::partial_sort(scratch, scratch + keep, scratch + m, before);
  } else if (g.top_p < 1) {
    std::sort(scratch, scratch + m, before);
  }
  // Softmax of logits / temperature over the kept, in double, from the largest (no overflow).
  const double top = static_cast<double>(row[best]) / g.temperature;
  thread_local std::vector<double> weight;
  weight.resize(keep);
  double total = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    weight[i] = std::exp(static_cast<double>(row[scratch[i]]) / g.temperature - top);
    total += weight[i];
  }
  if (g.top_p < 1) {  // sorted: the smallest prefix whose mass reaches top_p
    double mass = 0;
    std::size_t i = 0;
    while (i < keep) {
      mass += weight[i++];
      if (mass >= g.top_p * total) break;
    }
    keep = i;
    total = mass;
  }
  const double u = SamplingUniform(key, step) * total;
  double edge = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    const double next = edge + weight[i];
    if (u < next || i + 1 == keep) {
      out.id = static_cast<std::int64_t>(scratch[i]);
      out.near_tie =
          (i > 0 && u - edge < kNearTieMargin * total) || (i + 1 < keep && next - u < kNearTieMargin * total);
      return out;
    }
    edge = next;
  }
  return out;  // unreachable: keep >= 1
}

}  // namespace pilot
