// Fuzzes ParseAdaptParams: an ok result holds only values inside the documented ranges, and
// exactly one of steps and epochs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/adapt/adapt_params.h"
#include "pilot/params.h"

namespace {

bool In(double v, double lo, double hi) { return !std::isnan(v) && v >= lo && v <= hi; }

bool InRange(const std::optional<double>& v, double lo, double hi) { return !v || In(*v, lo, hi); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  static const std::filesystem::path kBase = "/fuzz";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseAdaptParams(text, kBase, "fuzz/adapt.json");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    PILOT_FUZZ_CHECK(parsed.error().kind == ErrorKind::kBadInput);
    return 0;
  }
  const AdaptParams& p = parsed.value();
  for (const std::filesystem::path* path : {&p.base_model, &p.train_manifest, &p.eval_manifest}) {
    PILOT_FUZZ_CHECK(!path->empty() && path->is_absolute());
  }
  PILOT_FUZZ_CHECK(fuzz::IsLowerHex64(p.base_model_sha256));
  // Trainable parameter names: distinct, each 1-128 of [A-Za-z0-9._-] (an item id's alphabet).
  std::set<std::string> seen;
  for (const auto& name : p.trainable) {
    PILOT_FUZZ_CHECK(fuzz::IsItemId(name));
    PILOT_FUZZ_CHECK(seen.insert(name).second);
  }
  PILOT_FUZZ_CHECK(p.optimiser == "adam" || p.optimiser == "sgd");
  PILOT_FUZZ_CHECK(In(p.learning_rate, 0, 10) && p.learning_rate > 0);
  PILOT_FUZZ_CHECK(In(p.momentum, 0, 1) && p.momentum < 1);
  if (p.optimiser == "adam") PILOT_FUZZ_CHECK(p.momentum == 0);
  PILOT_FUZZ_CHECK(In(p.weight_decay, 0, 1));
  PILOT_FUZZ_CHECK(p.batch_size >= 1 && p.batch_size <= kMaxAdaptBatch);
  PILOT_FUZZ_CHECK(p.steps.has_value() != p.epochs.has_value());
  if (p.steps) PILOT_FUZZ_CHECK(*p.steps >= 1 && *p.steps <= kMaxAdaptSteps);
  if (p.epochs) PILOT_FUZZ_CHECK(*p.epochs >= 1 && *p.epochs <= 10000);
  PILOT_FUZZ_CHECK(p.seed <= 9007199254740991ull);
  PILOT_FUZZ_CHECK(p.threads >= 1 && p.threads <= kMaxAdaptThreads);
  PILOT_FUZZ_CHECK(p.checkpoint_every >= 1 && p.checkpoint_every <= kMaxAdaptSteps);
  PILOT_FUZZ_CHECK(p.keep_checkpoints >= 1 && p.keep_checkpoints <= kMaxKeepCheckpoints);
  PILOT_FUZZ_CHECK(p.dtype == "float32" || p.dtype == "bfloat16" || p.dtype == "float16");
  PILOT_FUZZ_CHECK(IsKnownDevice(p.device));
  PILOT_FUZZ_CHECK(p.max_bytes >= 1 && p.max_bytes <= (1ull << 30));
  PILOT_FUZZ_CHECK(InRange(p.acceptance.min_eval_accuracy, 0, 1));
  PILOT_FUZZ_CHECK(InRange(p.acceptance.min_gain, -1, 1));
  return 0;
}
