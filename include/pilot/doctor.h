// `pilot doctor`: the environment received, checked before any work. Each check is pass,
// fail or could-not-run (with the reason), never conflated. Torch-free types; the checks
// themselves live in the torch stage library (src/stage/doctor.cpp).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pilot/params.h"

namespace pilot {

inline constexpr const char* kPass = "pass";
inline constexpr const char* kFail = "fail";
inline constexpr const char* kCouldNotRun = "could-not-run";

// Relative error (Frobenius norm of the difference over the reference's) allowed for a
// float32 matrix product and sum on a device against a float64 CPU reference. 1e-3 admits
// TF32 tensor-core arithmetic; an arithmetic fault is orders of magnitude larger.
inline constexpr double kComputeTolerance = 1e-3;
// Largest absolute difference allowed between a model's probabilities on a device and on
// the CPU for the same batch (and the top label must agree).
inline constexpr double kModelTolerance = 1e-3;
// stage.options.dtype: the model in that dtype on the device against float32 on the CPU.
// bfloat16 keeps 8 bits of mantissa (relative step 2^-8), float16 11 (2^-11); a score is a
// softmax over sums of many such weights.
inline constexpr double kBfloat16Tolerance = 5e-2;
inline constexpr double kFloat16Tolerance = 1e-2;

struct DoctorCheck {
  std::string name;
  std::string status;  // pass | fail | could-not-run
  std::string detail;
  bool required = true;  // counts toward the exit code
  nlohmann::ordered_json data = nlohmann::ordered_json::object();
};

struct DoctorOptions {
  std::optional<Params> params;             // the model check and `requires` need them
  std::string device = "auto";              // auto | cpu | cuda | rocm
  std::filesystem::path runs_dir = "runs";  // resolved as `run` resolves --runs-dir (paths.h)
  // Why `run` would refuse --runs-dir (a symlink loop, a file, inside a pilot folder): the
  // disk check then fails with it, never "writable".
  std::string runs_dir_refused;
  bool corrupt_reference = false;  // test seam: the compute check's reference is perturbed
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;  // every required check passed
  nlohmann::ordered_json ToJson() const;
};

}  // namespace pilot
