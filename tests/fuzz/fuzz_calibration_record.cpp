// Fuzzes ReadCalibrationRecord (a calibration folder's data/run.json, copied back from a rented
// machine) and DoctorDeviceName (the device name read from its doctor report): every outcome is
// a record inside the documented bounds or bad input naming the file; never a throw or a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/memory_fs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  const std::string text(reinterpret_cast<const char*>(data), size);
  MemoryFileSystem fsys;
  PILOT_FUZZ_CHECK(fsys.CreateDirectories("cal/data").ok());
  PILOT_FUZZ_CHECK(fsys.WriteFileAtomic("cal/data/run.json", text).ok());
  auto r = ReadCalibrationRecord(fsys, "cal");
  if (!r.ok()) {
    PILOT_FUZZ_CHECK(r.error().kind == ErrorKind::kBadInput);
    PILOT_FUZZ_CHECK(r.error().where.find("cal/data/run.json") != std::string::npos);
  } else {
    const CalibrationRecord& c = r.value();
    PILOT_FUZZ_CHECK(c.state == "finished");
    PILOT_FUZZ_CHECK(c.device_class == "cpu" || c.device_class == "cuda" || c.device_class == "rocm");
    PILOT_FUZZ_CHECK(c.device_name.size() <= kMaxDeviceNameChars);
    for (const std::string* d :
         {&c.doctor_sha256, &c.pilot_fingerprint, &c.sweep_fingerprint, &c.manifest_sha256})
      PILOT_FUZZ_CHECK(IsSha256Hex(*d));
    for (int code : {c.doctor_exit, c.pilot_exit, c.sweep_exit}) PILOT_FUZZ_CHECK(code >= 0 && code <= 255);
  }
  // The same bytes as a doctor report: its device name is short printable text, or none.
  auto doc = ParseJson(text, "doctor.json");
  if (doc.ok()) {
    for (const char* device : {"cpu", "cuda", "cuda:0", "cuda:3", "cuda:99999999999"}) {
      const std::string name = DoctorDeviceName(doc.value(), device);
      PILOT_FUZZ_CHECK(name.size() <= kMaxDeviceNameChars);
    }
  }
  return 0;
}
