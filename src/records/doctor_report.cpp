#include "pilot/doctor.h"

namespace pilot {

bool DoctorReport::ok() const {
  for (const auto& c : checks) {
    if (c.required && c.status != kPass) return false;
  }
  return true;
}

nlohmann::ordered_json DoctorReport::ToJson() const {
  nlohmann::ordered_json j;
  j["ok"] = ok();
  auto arr = nlohmann::ordered_json::array();
  for (const auto& c : checks) {
    arr.push_back({{"name", c.name},
                   {"status", c.status},
                   {"required", c.required},
                   {"detail", c.detail},
                   {"data", c.data}});
  }
  j["checks"] = arr;
  return j;
}

}  // namespace pilot
