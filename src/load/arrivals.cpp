#include "pilot/load/arrivals.h"

#include <cmath>
#include <limits>

#include "pilot/sampling.h"

namespace pilot {

namespace {

// The request's own stream: uniforms at counters (index, draw) under the seed, in (0, 1).
double Uniform(std::uint64_t seed, std::uint64_t index, std::uint32_t draw) {
  // The item half of the key holds the draw, so that the gap's several uniforms (gamma's
  // rejection) are each their own counter.
  const SamplingKey key{seed, (std::uint64_t{0x9e3779b9u} << 32) | draw};
  const double u = SamplingUniform(key, index);
  return u > 0 ? u : 0x1.0p-53;
}

// A standard normal by Box-Muller from two uniforms.
double Normal(std::uint64_t seed, std::uint64_t index, std::uint32_t draw) {
  const double u1 = Uniform(seed, index, draw), u2 = Uniform(seed, index, draw + 1);
  constexpr double kTwoPi = 6.283185307179586476925;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Gamma(shape, 1) by Marsaglia and Tsang (2000), with the boost for shape < 1; at most 64
// attempts (the acceptance rate is above 0.95: 64 failures has a probability below 1e-80).
double Gamma(double shape, std::uint64_t seed, std::uint64_t index) {
  double boost = 1;
  std::uint32_t draw = 0;
  if (shape < 1) {
    boost = std::pow(Uniform(seed, index, draw++), 1.0 / shape);
    shape += 1;
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (int attempt = 0; attempt < 64; ++attempt, draw += 3) {
    const double x = Normal(seed, index, draw);
    const double v = std::pow(1 + c * x, 3);
    if (v <= 0) continue;
    const double u = Uniform(seed, index, draw + 2);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * boost;
  }
  return shape * boost;  // the mean: never reached in practice
}

}  // namespace

double ArrivalGap(const ArrivalProcess& p, std::uint64_t seed, std::uint64_t index) {
  switch (p.kind) {
    case ArrivalKind::kConstant:
      return 1.0 / p.rate;
    case ArrivalKind::kPoisson:
      return -std::log(Uniform(seed, index, 0)) / p.rate;
    case ArrivalKind::kGamma:
      return Gamma(p.shape, seed, index) / (p.shape * p.rate);
  }
  return 1.0 / p.rate;
}

double ArrivalSchedule::Next() {
  at_ += ArrivalGap(process_, seed_, index_++);
  return at_;
}

}  // namespace pilot
