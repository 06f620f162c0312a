// `pilot calibrate`: the first rented hour as one command. On the card it runs, each as a
// child process of this pilot: `pilot doctor --json`, the pilot (`pilot run`) and a sweep
// (`pilot sweep`), and assembles what they wrote into one folder of kind `calibration`:
//
//   data/run.json        the calibration's record: the device, its name and class, the doctor's
//                        verdict, each nested folder's fingerprint, the pins
//   data/doctor.json     the doctor's report, byte for byte
//   data/pilot/          the pilot's run folder (a bag of its own)
//   data/sweep/          the sweep folder (a bag of its own)
//   data/logs/           each step's stdout and stderr
//
// The folder is assembled in OUT.calibrating, which no pilot folder marks while the steps
// write into it, and renamed to OUT once its bag is finished: the one place pilot creates
// folders inside a folder that becomes a pilot folder, as `merge` assembles its shards.
// `verify` of a calibration folder verifies each nested folder in full too, and checks that
// its fingerprint is the one recorded; `plan --from` a calibration folder projects from the
// pilot's measurement on that card, named by the doctor's device name (a price file's
// `match`).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/process.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr const char* kFolderKindCalibration = "calibration";
inline constexpr int kCalibrationFormatVersion = 1;
inline constexpr const char* kCalibrationDoctor = "data/doctor.json";
inline constexpr const char* kCalibrationPilot = "data/pilot";
inline constexpr const char* kCalibrationSweep = "data/sweep";
inline constexpr const char* kCalibrationLogs = "data/logs";
inline constexpr std::size_t kMaxDeviceNameChars = 256;

struct CalibrationRequest {
  std::filesystem::path params;
  std::string device = "cuda";
  std::filesystem::path out;  // resolved (ResolveDestination, kNew); must not exist
  // The sweep's settings, as `pilot sweep` takes them (empty: its defaults).
  std::string batch_sizes, repeats, groups;
  std::vector<std::string> command_line;
  std::function<bool()> should_stop;                    // polled while a step runs
  std::function<void(const std::string&)> on_progress;  // a line per step
};

// One step's end: its exit code (128 + a signal), its seconds.
struct CalibrationStep {
  std::string name;  // doctor | pilot | sweep
  int exit_code = 0;
  double seconds = 0;
};

struct CalibrationRecord {
  std::string run_id, state, started_at, finished_at;
  std::string device, device_class, device_name;
  bool doctor_ok = false;
  int doctor_exit = 0, pilot_exit = 0, sweep_exit = 0;
  std::string doctor_sha256, pilot_fingerprint, sweep_fingerprint;
  std::string manifest_sha256, params_sha256, model_sha256;
};

struct CalibrationOutcome {
  std::filesystem::path dir;
  std::vector<CalibrationStep> steps;
  std::optional<CalibrationRecord> record;  // set when the folder was assembled
  std::string fingerprint;
  // The step that stopped the calibration (its folder left at OUT.calibrating), or empty.
  std::string stopped_at;
  // What calibrate exits with: 0; 3 when the doctor failed (nothing assembled); else the
  // pilot's or the sweep's own code when one ended otherwise than with success.
  int exit_code = 0;
};

// Runs the three steps and assembles the folder. An OUT or OUT.calibrating that exists is
// refused (bad input) before anything runs. A doctor that fails (exit 3), or a pilot or sweep
// that could not finish (an exit other than 0, or 4 for the pilot and 1 for the sweep: their
// folders are whole), stops it: OUT.calibrating is left with the logs, and the outcome says
// which step. An interrupt stops the running step (kInterrupted).
Result<CalibrationOutcome> Calibrate(FileSystem& fs, Processes& processes, Clock& clock,
                                     const CalibrationRequest& request);

// data/run.json of a calibration folder, read strictly (no link, capped; every key typed).
Result<CalibrationRecord> ReadCalibrationRecord(FileSystem& fs, const std::filesystem::path& dir);
// The device name a doctor report gives for `device` ("cpu": its host's CPU model; "cuda:N":
// that GPU's name), or empty when it names none.
std::string DoctorDeviceName(const nlohmann::json& doctor, const std::string& device);

void RegisterCalibrationFolderKind(FolderKindRegistry& registry);

}  // namespace pilot
