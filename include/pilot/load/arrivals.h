// The arrival process of a load test (`pilot load`, docs/load.md): when each
// request is issued, from a seed alone. Each gap is drawn from the counter-based generator of
// sampling.h keyed by the seed and the request's index, so a schedule is the same on every
// machine and a request's time does not depend on how many were drawn before it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pilot {

enum class ArrivalKind {
  kConstant,  // every gap 1 / rate
  kPoisson,   // exponential gaps, mean 1 / rate
  kGamma,     // gamma gaps of shape k and mean 1 / rate: k < 1 burstier than Poisson, k > 1 smoother
};

struct ArrivalProcess {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate = 1;   // requests per second, > 0
  double shape = 1;  // gamma's k, > 0 (k = 1 is Poisson)
};

// The gap (seconds) before request `index` (0-based) of the schedule keyed by `seed`.
double ArrivalGap(const ArrivalProcess& process, std::uint64_t seed, std::uint64_t index);

// Issue times, cumulated: request `index` at the sum of the gaps up to and including its own
// (the first request one gap after the start, as vLLM's and LoadGen's schedules do).
class ArrivalSchedule {
 public:
  ArrivalSchedule(ArrivalProcess process, std::uint64_t seed) : process_(process), seed_(seed) {}
  double Next();  // the next request's issue time, seconds from the start
  std::uint64_t issued() const { return index_; }

 private:
  ArrivalProcess process_;
  std::uint64_t seed_;
  std::uint64_t index_ = 0;
  double at_ = 0;
};

}  // namespace pilot
