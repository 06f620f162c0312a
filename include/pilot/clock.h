// The clock seam: wall time for records and a monotonic clock for durations.
#pragma once

#include <string>

namespace pilot {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::string UtcNowIso() = 0;      // 2026-11-29T19:10:36Z
  virtual std::string UtcNowCompact() = 0;  // 20261129T191036Z (for run ids)
  virtual double MonotonicSeconds() = 0;
};

Clock& SystemClock();

}  // namespace pilot
