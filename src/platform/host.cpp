#include "pilot/host.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sstream>
#include <string>

namespace pilot {
namespace {

// A host file (/proc, /etc) through the seam; an unreadable one reads as empty.
std::string ReadHostFile(FileSystem& fs, const char* file) {
  auto text = fs.ReadFile(file, 4u << 20);
  return text.ok() ? std::move(text).value() : std::string();
}

std::string FirstMatch(FileSystem& fs, const char* file, const std::string& key) {
  std::istringstream in(ReadHostFile(fs, file));
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

std::string OsPrettyName(FileSystem& fs) {
  std::istringstream in(ReadHostFile(fs, "/etc/os-release"));
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

nlohmann::ordered_json HostInfo(FileSystem& fs) {
  nlohmann::ordered_json j;
  struct utsname u {};
  uname(&u);
  j["os"] = OsPrettyName(fs);
  j["kernel"] = std::string(u.sysname) + " " + u.release;
  j["machine"] = u.machine;
  j["cpu_model"] = FirstMatch(fs, "/proc/cpuinfo", "model name");
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

double ThreadCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_THREAD, &ru);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

std::uint64_t AvailableMemoryBytes(FileSystem& fs) {
  auto text = fs.ReadFile("/proc/meminfo", 1 << 16);
  if (!text.ok()) return 0;
  std::istringstream in(text.value());
  std::string key, unit;
  unsigned long long kb = 0;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb > (~0ull >> 10) ? ~0ull : kb << 10;
  }
  return 0;
}

double CurrentRssMegabytes(FileSystem& fs) {
  // /proc/self/statm: "size resident shared ..." in pages.
  auto text = fs.ReadFile("/proc/self/statm", 4096);
  if (!text.ok()) return 0;
  std::istringstream in(text.value());
  unsigned long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / (1024.0 * 1024.0);
}

}  // namespace pilot
