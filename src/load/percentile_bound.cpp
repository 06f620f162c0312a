#include "pilot/load/percentile_bound.h"

#include <algorithm>
#include <cmath>

namespace pilot {

double BinomialCdf(std::uint64_t k, std::uint64_t n, double q) {
  if (k >= n || q <= 0) return 1;
  if (q >= 1) return 0;
  const double nd = static_cast<double>(n);
  const double lq = std::log(q), lp = std::log1p(-q), ln_fact = std::lgamma(nd + 1);
  auto log_term = [&](std::uint64_t i) {
    const double id = static_cast<double>(i);
    return ln_fact - std::lgamma(id + 1) - std::lgamma(nd - id + 1) + id * lq + (nd - id) * lp;
  };
  // The terms rise to the mode and fall after it. Below the mode the CDF is summed from k down,
  // its largest term first; above it, 1 less the upper tail, summed from k + 1 up. Either way the
  // sum stops once a term is below e^-60 of the first (about 1e-26: nothing a double keeps), so
  // a tail costs about its width in terms, not n.
  constexpr double kNegligible = -60;
  const auto mode = static_cast<std::uint64_t>(std::floor((nd + 1) * q));
  if (k < mode) {
    const double first = log_term(k);
    double sum = 0;
    for (std::uint64_t i = k + 1; i-- > 0;) {
      const double t = log_term(i) - first;
      if (t < kNegligible) break;
      sum += std::exp(t);
    }
    return std::min(1.0, std::exp(first + std::log(sum)));
  }
  const double first = log_term(k + 1);
  double sum = 0;
  for (std::uint64_t i = k + 1; i <= n; ++i) {
    const double t = log_term(i) - first;
    if (t < kNegligible) break;
    sum += std::exp(t);
  }
  return std::max(0.0, 1.0 - std::exp(first + std::log(sum)));
}

namespace {

bool Meets(std::uint64_t n, std::uint64_t over, double p, double c) {
  return over < n && BinomialCdf(over, n, 1 - p) <= 1 - c;
}

}  // namespace

PercentileVerdict EarlyStopping(std::uint64_t n, std::uint64_t over, double p, double c) {
  PercentileVerdict v;
  if (Meets(n, over, p, c)) {
    v.met = true;
    v.more_needed = 0;
    return v;
  }
  // The fewest added requests within the bound that meet it: doubled, then bisected (the
  // probability falls as passing requests are added).
  constexpr std::uint64_t kCap = std::uint64_t{1} << 40;
  std::uint64_t hi = 1;
  while (hi <= kCap && !Meets(n + hi, over, p, c)) hi *= 2;
  if (hi > kCap) return v;
  std::uint64_t lo = hi / 2;  // does not meet (or 0)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (Meets(n + mid, over, p, c) ? hi : lo) = mid;
  }
  v.more_needed = hi;
  return v;
}

std::optional<std::uint64_t> AllowedOver(std::uint64_t n, double p, double c) {
  if (!Meets(n, 0, p, c)) return std::nullopt;
  // lo meets; hi never does. With c >= 0.5 the bound lies below the expected count of overs,
  // n (1 - p), where the CDF is about one half: searched from there (or from n, all over).
  std::uint64_t lo = 0, hi = std::min<std::uint64_t>(
                            n, static_cast<std::uint64_t>(static_cast<double>(n) * (1 - p)) + 1);
  if (Meets(n, hi, p, c)) hi = n;
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (Meets(n, mid, p, c) ? lo : hi) = mid;
  }
  return lo;
}

std::optional<double> PercentileUpperBound(std::vector<double> latencies, double p, double c) {
  const auto allowed = AllowedOver(latencies.size(), p, c);
  if (!allowed) return std::nullopt;
  const std::size_t at = latencies.size() - 1 - static_cast<std::size_t>(*allowed);
  std::nth_element(latencies.begin(), latencies.begin() + static_cast<std::ptrdiff_t>(at), latencies.end());
  return latencies[at];
}

}  // namespace pilot
