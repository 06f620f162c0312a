// Facts about the host received: OS, CPU, memory, and this process's peak RSS.
#pragma once

#include <nlohmann/json.hpp>

namespace pilot {

nlohmann::ordered_json HostInfo();
double PeakRssMegabytes();

}  // namespace pilot
