#include "pilot/host.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace pilot {
namespace {

std::string FirstMatch(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return {};
}

std::string OsPrettyName() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

}  // namespace

nlohmann::ordered_json HostInfo() {
  nlohmann::ordered_json j;
  struct utsname u {};
  uname(&u);
  j["os"] = OsPrettyName();
  j["kernel"] = std::string(u.sysname) + " " + u.release;
  j["machine"] = u.machine;
  j["cpu_model"] = FirstMatch("/proc/cpuinfo", "model name");
  j["cpu_count"] = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  j["memory_total_mb"] = static_cast<double>(pages) * page_size / (1024.0 * 1024.0);
  return j;
}

double PeakRssMegabytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

}  // namespace pilot
