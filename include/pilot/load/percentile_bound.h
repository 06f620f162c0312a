// How sure a latency percentile is, given the number of requests behind it (MLPerf LoadGen's
// early stopping; `pilot load`, docs/load.md). With n requests of
// which k exceeded a latency bound, the p-th percentile meets the bound with confidence c when
// P(Binomial(n, 1 - p) <= k) <= 1 - c: were 1 - p of all requests (or more) over the bound, so
// few of n would exceed it less than 1 - c of the time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pilot {

// P(Binomial(n, q) <= k), summed in log space (exact to about 1e-12 relative; O(k) terms).
double BinomialCdf(std::uint64_t k, std::uint64_t n, double q);

struct PercentileVerdict {
  bool met = false;
  // Not met: how many more requests, every one within the bound, would meet it (nullopt past
  // 2^40). 0 when met.
  std::optional<std::uint64_t> more_needed;
};
// `over` of `n` requests exceeded the bound; the p-th percentile (0 < p < 1) at confidence c
// (0 < c < 1).
PercentileVerdict EarlyStopping(std::uint64_t n, std::uint64_t over, double percentile, double confidence);

// The most of n requests that may exceed a bound while the p-th percentile still meets it at
// confidence c; nullopt when even none may (n is too small to tell).
std::optional<std::uint64_t> AllowedOver(std::uint64_t n, double percentile, double confidence);

// A bound on the p-th percentile that holds with confidence c: the latency exceeded by at most
// AllowedOver(n) of the n measured (`latencies`, any order). nullopt when n is too small.
std::optional<double> PercentileUpperBound(std::vector<double> latencies, double percentile,
                                           double confidence);

}  // namespace pilot
