// The adaptation pilot (`pilot adapt`): a short fine-tuning of a pinned TorchScript
// classifier on a labelled training manifest, evaluated on a labelled evaluation manifest
// before and after, with checkpoints that a new process resumes to the same bits.
//
// The engine here is torch-free: it owns the folder (a bag of kind `adapt`, see
// adapt_records.h), the prechecks and accounting, the data order, the journal, checkpoint
// files and their pruning, and the reports. The model and optimiser live behind
// AdaptTrainer, which the torch module implements (src/adapt/adapt_torch.cpp) and tests fake.
//
// Determinism: the data order of epoch e is a Fisher-Yates permutation of the used training
// items drawn from a SplitMix64 stream seeded with (seed, e), so the data-order cursor is a
// function of the step alone; the trainer's checkpoint carries the parameters, the
// optimiser's state and every torch RNG state. On the CPU with the same `threads`, a run
// killed at any instant and resumed ends with the same parameter bytes as one that was not.
//
// Durability: the journal's header comes first; a checkpoint file is written to a temporary
// name, fsynced and renamed before its journal record is appended and fsynced; a pruned
// record is journaled before the files it names are removed. A resume continues from the
// last journaled checkpoint and removes checkpoint files the journal does not keep.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/adapt/adapt_params.h"
#include "pilot/adapt/adapt_records.h"
#include "pilot/clock.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/run_lock.h"
#include "pilot/run_session.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct AdaptTrainerConfig {
  std::filesystem::path model;
  std::string device;  // as resolved: "cpu", "cuda"
  std::string dtype = "float32";
  std::vector<std::string> trainable;  // empty: all parameters
  std::string optimiser = "adam";
  double learning_rate = 1e-3, momentum = 0, weight_decay = 0;
  int threads = 1;
  std::uint64_t seed = 0;
};

struct AdaptTrainerInfo {
  std::vector<std::string> labels;     // the model's, in output order
  std::vector<std::string> trainable;  // parameter names, in the model's order
  std::uint64_t trainable_values = 0;  // their element count
  std::string libtorch;                // version
};

struct AdaptPrediction {
  int label = -1;  // index into AdaptTrainerInfo::labels
  double confidence = 0;
};

// One model and its optimiser. Errors: kBadInput for the model or a checkpoint at fault,
// kEnvironment for what the device or libtorch cannot do, kWorkFailed otherwise.
class AdaptTrainer {
 public:
  virtual ~AdaptTrainer() = default;
  virtual Result<AdaptTrainerInfo> Load(const AdaptTrainerConfig& config) = 0;
  // Inference (no gradient) on the current parameters.
  virtual Result<std::vector<AdaptPrediction>> Predict(const std::vector<const std::string*>& texts) = 0;
  // One optimiser step on a batch; the batch's mean training loss.
  virtual Result<double> Step(const std::vector<const std::string*>& texts,
                              const std::vector<std::int64_t>& labels) = 0;
  // The parameters, the optimiser's state, the RNG states and `cursor` (opaque to the trainer).
  virtual Result<std::string> SaveCheckpoint(const std::string& cursor) = 0;
  // Restores what SaveCheckpoint wrote; returns its cursor. The bytes come from a folder that
  // may be hostile: parsing them never runs code they carry, and anything that is not exactly
  // what this model and optimiser would write is refused.
  virtual Result<std::string> LoadCheckpoint(std::string_view bytes) = 0;
  // The most bytes a checkpoint of this model can take: a resume refuses to read more.
  virtual std::uint64_t CheckpointBytesLimit() = 0;
  // The model as a TorchScript file, with the current parameters.
  virtual Result<std::string> SaveModel() = 0;
  // sha256 of the trainable parameters' bytes, in name order.
  virtual std::string ParametersDigest() = 0;
};
using AdaptTrainerFactory = std::function<std::unique_ptr<AdaptTrainer>()>;

struct AdaptPlan {
  AdaptParams params;
  std::filesystem::path params_file;  // absolute
  std::string params_bytes;
  std::filesystem::path runs_dir;
  std::string run_id;  // empty: generated
  std::vector<std::string> command_line;
  std::string device;  // resolved
  nlohmann::ordered_json environment;
};

struct AdaptProgress {
  std::uint64_t step = 0, total = 0;
  double loss = 0;
  double steps_per_second = 0;
  std::optional<double> eval_accuracy;  // at a checkpoint
  std::string phase;                    // "baseline", "training", "checkpoint", "finishing"
};

struct AdaptControl {
  std::function<bool()> should_stop;   // polled between steps
  std::uint64_t stop_after_steps = 0;  // test hook: stop as if interrupted after N steps in this session
  std::function<void(const AdaptProgress&)> on_progress;
  // Test hook: called once a checkpoint's first piece is in its temporary file, before the
  // rest, the fsync and the rename (the CLI's PILOT_TEST_KILL_IN_CHECKPOINT kills there).
  std::function<void(std::uint64_t step)> on_checkpoint_piece;
};

enum class AdaptVerdict { kPassed, kVerifyFailed, kAcceptanceFailed, kInterrupted };

struct AdaptOutcome {
  std::filesystem::path dir;
  std::string run_id;
  AdaptVerdict verdict = AdaptVerdict::kPassed;
  nlohmann::ordered_json report;  // when finished
  VerifyResult verify;
  std::string fingerprint;
  std::string adapted_sha256;
  AdaptProgress progress;
  std::vector<std::string> notes;
};

// `pilot adapt`'s options, before anything is read.
struct AdaptRequest {
  std::filesystem::path params_file;  // as given
  std::string device;                 // --device; empty: the parameters'
  std::filesystem::path runs_dir = "runs";
  std::string run_id;  // empty: generated
  std::vector<std::string> command_line;
};

// The adaptation's plan, every check done and nothing created: --device known, the parameter
// file read (at most limits::kParamsBytes) and parsed (adapt_params.h), the device resolved by
// `runtime`, and the environment received (the host, the runtime's libtorch, the device).
// Errors exit 2 naming the option, file or key, or 3 for a device this machine lacks.
Result<AdaptPlan> PlanAdapt(FileSystem& fs, Runtime& runtime, const AdaptRequest& request);

// Loads the model (exit 2/3 before any folder exists), creates the folder (exit 2 if it
// exists), prechecks, evaluates the base model, trains with checkpoints and finishes.
Result<AdaptOutcome> ExecuteAdapt(FileSystem& fs, Clock& clock, const AdaptPlan& plan, AdaptTrainer& trainer,
                                  const AdaptControl& control = {});

// Resumes an adaptation folder in a new process: locks it, checks the copies of parameters
// and manifests against the journal, re-hashes the base model, prechecks again (a different
// outcome: refused), checks every kept checkpoint against its journaled sha256 (a mismatch:
// refused, exit 2, naming it), restores the last one and continues. `device`: empty keeps
// the journaled one.
Result<AdaptOutcome> ResumeAdapt(FileSystem& fs, Clock& clock, const std::filesystem::path& dir,
                                 const std::string& device, const std::vector<std::string>& command_line,
                                 AdaptTrainer& trainer, const AdaptControl& control = {});

// The device an adaptation folder's journal names (for the caller to resolve before resuming).
Result<std::string> AdaptFolderDevice(FileSystem& fs, const std::filesystem::path& dir);

// `pilot status` of an adaptation folder: step of total, from the journal.
struct AdaptStatus {
  std::string state;  // running | interrupted | finished
  std::string run_id;
  std::uint64_t step = 0, total = 0;
  std::size_t checkpoints_kept = 0;
  std::optional<double> last_eval_accuracy;
  std::optional<long> writer_pid;
};
Result<AdaptStatus> ReadAdaptStatus(FileSystem& fs, const std::filesystem::path& dir);

// Registers kind `adapt` (folder_kind.h): its own record and verify checks (verify_adapt.cpp).
void RegisterAdaptFolderKind(FolderKindRegistry& registry);

}  // namespace pilot
