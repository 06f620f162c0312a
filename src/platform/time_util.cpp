#include <time.h>

#include <chrono>
#include <ctime>

#include "pilot/clock.h"

namespace pilot {
namespace {

std::string FormatUtc(bool compact) {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  if (compact) {
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  } else {
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  return buf;
}

class RealClock : public Clock {
 public:
  std::string UtcNowIso() override { return FormatUtc(false); }
  std::string UtcNowCompact() override { return FormatUtc(true); }
  double UnixSeconds() override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  double MonotonicSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

void Clock::SleepUntilMonotonic(double seconds) {
  // steady_clock is CLOCK_MONOTONIC on Linux: the same time line as MonotonicSeconds.
  if (!(seconds > 0)) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
  if (ts.tv_nsec < 0) ts.tv_nsec = 0;
  (void)::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: the caller looks again
}

Clock& SystemClock() {
  static RealClock clock;
  return clock;
}

}  // namespace pilot
