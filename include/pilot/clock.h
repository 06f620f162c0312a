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
  virtual double UnixSeconds() = 0;  // wall time for journal records (seconds since the epoch)
  // Sleeps until MonotonicSeconds() reaches `seconds` (clock_nanosleep, TIMER_ABSTIME), or a
  // signal arrives: `pilot load`'s schedule. The default is the real clock's.
  virtual void SleepUntilMonotonic(double seconds);
  // Every method must be callable from several threads at once: the pipeline's writer stamps
  // batches while the model's thread times them.
};

Clock& SystemClock();

}  // namespace pilot
