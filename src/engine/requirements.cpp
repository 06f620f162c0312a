#include "pilot/requirements.h"

#include <cstdio>

namespace pilot {

nlohmann::ordered_json Received::ToJson() const {
  return {{"backend", backend},
          {"device_count", device_count},
          {"min_device_memory_mb", min_device_memory_mb},
          {"libtorch_version", libtorch_version},
          {"free_disk_mb", free_disk_mb}};
}

std::vector<std::string> UnmetRequirements(const Requires& req, const Received& got) {
  std::vector<std::string> unmet;
  char buf[256];
  if (req.backend && *req.backend != got.backend) {
    unmet.push_back("backend: " + *req.backend + " required, " + got.backend + " received");
  }
  if (req.min_device_count && got.device_count < *req.min_device_count) {
    unmet.push_back("min_device_count: " + std::to_string(*req.min_device_count) + " required, " +
                    std::to_string(got.device_count) + " GPU(s) visible");
  }
  if (req.min_device_memory_mb &&
      (got.device_count == 0 || got.min_device_memory_mb < *req.min_device_memory_mb)) {
    std::snprintf(buf, sizeof buf, "min_device_memory_mb: %.0f MB required, %s", *req.min_device_memory_mb,
                  got.device_count == 0 ? "no GPU visible"
                                        : (std::to_string(static_cast<long>(got.min_device_memory_mb)) +
                                           " MB on the smallest GPU")
                                              .c_str());
    unmet.push_back(buf);
  }
  if (req.min_libtorch_version) {
    auto want = ParseVersion(*req.min_libtorch_version);
    auto have = ParseVersion(got.libtorch_version);
    if (!want || !have || *have < *want) {
      unmet.push_back("min_libtorch_version: " + *req.min_libtorch_version + " required, " +
                      got.libtorch_version + " received");
    }
  }
  if (req.min_free_disk_mb && got.free_disk_mb < *req.min_free_disk_mb) {
    std::snprintf(buf, sizeof buf,
                  "min_free_disk_mb: %.0f MB required, %.0f MB free under the runs directory",
                  *req.min_free_disk_mb, got.free_disk_mb);
    unmet.push_back(buf);
  }
  return unmet;
}

double FreeDiskMegabytes(FileSystem& fs, const std::filesystem::path& dir) {
  auto bytes = fs.FreeBytes(dir);
  if (!bytes.ok()) return -1;
  return static_cast<double>(bytes.value()) / (1024.0 * 1024.0);
}

}  // namespace pilot
