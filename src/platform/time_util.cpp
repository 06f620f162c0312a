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

Clock& SystemClock() {
  static RealClock clock;
  return clock;
}

}  // namespace pilot
