#include "pilot/adapt/adapt_records.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "pilot/adapt/adapt_params.h"
#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/reasons.h"
#include "pilot/utf8.h"

namespace pilot {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::uint64_t kMaxCount = 1ull << 48;  // any count or offset pilot writes is far below
constexpr std::size_t kMaxLabelBytes = 128;
constexpr std::uint64_t kMaxSeed = 9007199254740991ull;
constexpr const char* kJournalHint =
    "the adaptation folder is damaged and cannot be resumed; start a new `pilot adapt`";
constexpr const char* kAccountingHint = "the adaptation folder is damaged or was altered";

// Field readers of a record pilot wrote: each throws a message naming the key, which the
// public FromJson functions catch and turn into an Error (nothing escapes them).
[[noreturn]] void Fail(const std::string& what) { throw std::runtime_error(what); }

void Keys(const json& j, std::initializer_list<const char*> allowed) {
  if (!j.is_object()) Fail("is not a JSON object");
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      Fail("has unknown key '" + KeyForMessage(key) + "'");
    }
  }
}

const json& At(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) Fail(std::string("has no '") + key + "'");
  return *it;
}

std::string Str(const json& j, const char* key) {
  const json& v = At(j, key);
  if (!v.is_string()) Fail(std::string("has a '") + key + "' that is not a string");
  return v.get<std::string>();
}

std::uint64_t CountOf(const json& v, const std::string& key, std::uint64_t lo, std::uint64_t hi) {
  // Checked before any conversion: 1e20 or -1.5 as an integer is undefined behaviour.
  if (!v.is_number_unsigned()) Fail("has a '" + key + "' that is not a whole number");
  std::uint64_t n = v.get<std::uint64_t>();
  if (n < lo || n > hi) Fail("has a '" + key + "' outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

std::uint64_t Count(const json& j, const char* key, std::uint64_t lo = 0, std::uint64_t hi = kMaxCount) {
  return CountOf(At(j, key), key, lo, hi);
}

double FiniteOf(const json& v, const std::string& key) {
  if (!v.is_number()) Fail("has a '" + key + "' that is not a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) Fail("has a '" + key + "' that is not finite");
  return d;
}

double Finite(const json& j, const char* key) { return FiniteOf(At(j, key), key); }

double NonNegative(const json& j, const char* key) {
  double d = Finite(j, key);
  if (d < 0) Fail(std::string("has a negative '") + key + "'");
  return d;
}

double UnitOf(const json& v, const std::string& key) {
  double d = FiniteOf(v, key);
  if (d < 0 || d > 1) Fail("has a '" + key + "' outside [0, 1]");
  return d;
}

std::string Sha(const json& j, const char* key) {
  std::string s = Str(j, key);
  if (!IsSha256Hex(s)) Fail(std::string("has a '") + key + "' that is not 64 lower-case hex digits");
  return s;
}

bool IsLabel(std::string_view s) { return !s.empty() && s.size() <= kMaxLabelBytes && CheckUtf8(s).valid; }

std::string LabelOf(const json& v, const std::string& key) {
  if (!v.is_string() || !IsLabel(v.get_ref<const std::string&>())) {
    Fail("has a '" + key + "' that is not a label (1-128 bytes of UTF-8)");
  }
  return v.get<std::string>();
}

std::string Label(const json& j, const char* key) { return LabelOf(At(j, key), key); }

std::string AbsolutePath(const json& j, const char* key) {
  std::string p = Str(j, key);
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string::npos) {
    Fail(std::string("has a '") + key + "' that is not an absolute path");
  }
  return p;
}

void Type(const json& j, const char* type) {
  if (Str(j, "type") != type) Fail(std::string("is not a ") + type + " record");
}

EvalSummary ReadEvalFields(const json& j) {
  Keys(j, {"correct", "total", "accuracy", "per_label"});
  EvalSummary e;
  e.total = Count(j, "total", 0, kMaxAdaptEvalItems);
  e.correct = Count(j, "correct", 0, e.total);
  double accuracy = UnitOf(At(j, "accuracy"), "accuracy");
  if (std::fabs(accuracy - e.accuracy()) > 1e-9) Fail("has an 'accuracy' that is not correct / total");
  const json& labels = At(j, "per_label");
  if (!labels.is_object()) Fail("has a 'per_label' that is not an object");
  if (labels.size() > kMaxAdaptLabels) Fail("has more than " + std::to_string(kMaxAdaptLabels) + " labels");
  std::size_t correct = 0, total = 0;
  for (const auto& [label, v] : labels.items()) {
    if (!IsLabel(label)) Fail("has a per-label key that is not a label (1-128 bytes of UTF-8)");
    Keys(v, {"correct", "total"});
    auto t = Count(v, "total", 0, e.total);
    auto c = Count(v, "correct", 0, t);
    correct += c;
    total += t;
    e.per_label[label] = {c, t};
  }
  if (correct != e.correct || total != e.total) Fail("has per-label counts that do not add up to its totals");
  return e;
}

// An evaluation inside a record: its faults named as the record's 'eval'.
EvalSummary ReadEval(const json& j) {
  try {
    return ReadEvalFields(j);
  } catch (const std::exception& ex) {
    Fail(std::string("has an 'eval' that ") + ex.what());
  }
}

const json& EvalAt(const json& j) {
  auto it = j.find("eval");
  if (it == j.end()) Fail("has no 'eval'");
  return *it;
}

AdaptJournalHeader ReadHeader(const json& j) {
  Keys(j, {"type",
           "version",
           "run_id",
           "params_sha256",
           "train_manifest_sha256",
           "eval_manifest_sha256",
           "base_model_sha256",
           "train_manifest_copy",
           "eval_manifest_copy",
           "train_accounting_sha256",
           "train_items",
           "train_used",
           "eval_items",
           "eval_used",
           "total_steps",
           "steps_per_epoch",
           "threads",
           "seed",
           "device",
           "dtype",
           "params_path",
           "base_model_path",
           "train_manifest_path",
           "eval_manifest_path",
           "started_at",
           "started_unix"});
  Type(j, "header");
  AdaptJournalHeader h;
  h.run_id = Str(j, "run_id");
  if (!IsValidItemId(h.run_id)) Fail("has a 'run_id' that is not 1-128 characters of [A-Za-z0-9._-]");
  h.params_sha256 = Sha(j, "params_sha256");
  h.train_manifest_sha256 = Sha(j, "train_manifest_sha256");
  h.eval_manifest_sha256 = Sha(j, "eval_manifest_sha256");
  h.base_model_sha256 = Sha(j, "base_model_sha256");
  h.train_accounting_sha256 = Sha(j, "train_accounting_sha256");
  // The header steers what a resume reads: nothing in it may point elsewhere.
  h.train_manifest_copy = Str(j, "train_manifest_copy");
  if (h.train_manifest_copy != std::string(kAdaptTrainManifest) + ".json" &&
      h.train_manifest_copy != std::string(kAdaptTrainManifest) + ".jsonl") {
    Fail(
        "has a 'train_manifest_copy' that is neither data/train-manifest.json nor data/train-manifest.jsonl");
  }
  h.eval_manifest_copy = Str(j, "eval_manifest_copy");
  if (h.eval_manifest_copy != std::string(kAdaptEvalManifest) + ".json" &&
      h.eval_manifest_copy != std::string(kAdaptEvalManifest) + ".jsonl") {
    Fail("has an 'eval_manifest_copy' that is neither data/eval-manifest.json nor data/eval-manifest.jsonl");
  }
  h.train_items = Count(j, "train_items");
  h.train_used = Count(j, "train_used", 0, h.train_items);
  h.eval_items = Count(j, "eval_items");
  h.eval_used = Count(j, "eval_used", 0, std::min<std::uint64_t>(h.eval_items, kMaxAdaptEvalItems));
  h.total_steps = Count(j, "total_steps", 1, kMaxAdaptSteps);
  h.steps_per_epoch = Count(j, "steps_per_epoch", 1);
  h.threads = static_cast<int>(Count(j, "threads", 1, kMaxAdaptThreads));
  h.seed = Count(j, "seed", 0, kMaxSeed);
  h.device = Str(j, "device");
  if (!IsKnownDevice(h.device))
    Fail("has a 'device' that is not one of auto, cpu, cuda, rocm, cuda:N, rocm:N");
  h.dtype = Str(j, "dtype");
  if (h.dtype != "float32" && h.dtype != "bfloat16" && h.dtype != "float16") {
    Fail("has a 'dtype' that is not one of float32, bfloat16, float16");
  }
  h.params_path = AbsolutePath(j, "params_path");
  h.base_model_path = AbsolutePath(j, "base_model_path");
  h.train_manifest_path = AbsolutePath(j, "train_manifest_path");
  h.eval_manifest_path = AbsolutePath(j, "eval_manifest_path");
  h.started_at = Str(j, "started_at");
  h.started_unix = NonNegative(j, "started_unix");
  return h;
}

AdaptBaseline ReadBaseline(const json& j) {
  Keys(j, {"type", "eval", "predictions", "confidences"});
  Type(j, "baseline");
  AdaptBaseline b;
  b.eval = ReadEval(EvalAt(j));
  const json& predictions = At(j, "predictions");
  const json& confidences = At(j, "confidences");
  if (!predictions.is_array() || !confidences.is_array())
    Fail("has 'predictions' or 'confidences' that are not arrays");
  if (predictions.size() != b.eval.total || confidences.size() != b.eval.total) {
    Fail("does not have one prediction and one confidence per evaluated item (" +
         std::to_string(b.eval.total) + ")");
  }
  b.predictions.reserve(predictions.size());
  for (const auto& p : predictions) b.predictions.push_back(LabelOf(p, "predictions"));
  b.confidences.reserve(confidences.size());
  for (const auto& c : confidences) b.confidences.push_back(UnitOf(c, "confidences"));
  return b;
}

AdaptCheckpointRecord ReadCheckpoint(const json& j) {
  Keys(j, {"type", "step", "epoch", "position", "file", "sha256", "bytes", "write_ms", "losses", "eval",
           "params_digest", "at_unix"});
  Type(j, "checkpoint");
  AdaptCheckpointRecord c;
  c.step = Count(j, "step", 1, kMaxAdaptSteps);
  c.epoch = Count(j, "epoch");
  c.position = Count(j, "position");
  c.file = Str(j, "file");
  if (c.file != CheckpointFileName(c.step)) Fail("has a 'file' that is not " + CheckpointFileName(c.step));
  c.sha256 = Sha(j, "sha256");
  c.bytes = Count(j, "bytes");
  c.write_ms = NonNegative(j, "write_ms");
  const json& losses = At(j, "losses");
  if (!losses.is_array()) Fail("has 'losses' that are not an array");
  if (losses.size() > c.step) Fail("has more losses than steps");
  c.losses.reserve(losses.size());
  for (const auto& l : losses) c.losses.push_back(FiniteOf(l, "losses"));
  c.eval = ReadEval(EvalAt(j));
  c.params_digest = Sha(j, "params_digest");
  c.at_unix = NonNegative(j, "at_unix");
  return c;
}

template <typename T, typename F>
Result<T> Catching(F read, const std::string& what, const std::string& where, const char* hint) {
  try {
    return read();
  } catch (const std::exception& e) {
    return BadInput(what + " " + e.what(), where, hint);
  }
}

}  // namespace

std::string CheckpointFileName(std::uint64_t step) {
  char name[48];
  std::snprintf(name, sizeof name, "step-%08llu.ckpt", static_cast<unsigned long long>(step));
  return std::string(kAdaptCheckpointDir) + "/" + name;
}

bool IsCheckpointFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "step-", kSuffix = ".ckpt";
  if (name.size() < kPrefix.size() + 8 + kSuffix.size() || name.size() > kPrefix.size() + 20 + kSuffix.size())
    return false;
  if (name.substr(0, kPrefix.size()) != kPrefix || name.substr(name.size() - kSuffix.size()) != kSuffix)
    return false;
  std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

ojson EvalSummary::ToJson() const {
  ojson j;
  j["correct"] = correct;
  j["total"] = total;
  j["accuracy"] = accuracy();
  ojson labels = ojson::object();
  for (const auto& [label, counts] : per_label)
    labels[label] = {{"correct", counts.first}, {"total", counts.second}};
  j["per_label"] = std::move(labels);
  return j;
}

Result<EvalSummary> EvalSummary::FromJson(const json& j, const std::string& where) {
  try {
    return ReadEvalFields(j);
  } catch (const std::exception& e) {
    return BadInput(std::string("the evaluation summary ") + e.what(), where, kJournalHint);
  }
}

ojson AdaptJournalHeader::ToJson() const {
  ojson j;
  j["type"] = "header";
  j["version"] = version;
  j["run_id"] = run_id;
  j["params_sha256"] = params_sha256;
  j["train_manifest_sha256"] = train_manifest_sha256;
  j["eval_manifest_sha256"] = eval_manifest_sha256;
  j["base_model_sha256"] = base_model_sha256;
  j["train_manifest_copy"] = train_manifest_copy;
  j["eval_manifest_copy"] = eval_manifest_copy;
  j["train_accounting_sha256"] = train_accounting_sha256;
  j["train_items"] = train_items;
  j["train_used"] = train_used;
  j["eval_items"] = eval_items;
  j["eval_used"] = eval_used;
  j["total_steps"] = total_steps;
  j["steps_per_epoch"] = steps_per_epoch;
  j["threads"] = threads;
  j["seed"] = seed;
  j["device"] = device;
  j["dtype"] = dtype;
  j["params_path"] = params_path;
  j["base_model_path"] = base_model_path;
  j["train_manifest_path"] = train_manifest_path;
  j["eval_manifest_path"] = eval_manifest_path;
  j["started_at"] = started_at;
  j["started_unix"] = started_unix;
  return j;
}

Result<AdaptJournalHeader> AdaptJournalHeader::FromJson(const json& j, const std::string& where) {
  // The version first: a newer pilot's header may differ in every other field.
  auto version = UnsignedAt(j, "version");
  if (!version || *version != static_cast<std::uint64_t>(kAdaptJournalVersion)) {
    std::string got = "(none)";
    if (j.is_object() && j.contains("version")) {
      got = KeyForMessage(j["version"].dump(-1, ' ', false, json::error_handler_t::replace));
    }
    return BadInput("the adaptation journal's format version " + got +
                        " is not one this pilot reads (version " + std::to_string(kAdaptJournalVersion) + ")",
                    where, "use the pilot that wrote this folder, or a newer one");
  }
  return Catching<AdaptJournalHeader>([&] { return ReadHeader(j); }, "the adaptation journal's header", where,
                                      kJournalHint);
}

ojson AdaptBaseline::ToJson() const {
  ojson j;
  j["type"] = "baseline";
  j["eval"] = eval.ToJson();
  j["predictions"] = predictions;
  j["confidences"] = confidences;
  return j;
}

Result<AdaptBaseline> AdaptBaseline::FromJson(const json& j, const std::string& where) {
  return Catching<AdaptBaseline>([&] { return ReadBaseline(j); }, "the baseline record", where, kJournalHint);
}

ojson AdaptCheckpointRecord::ToJson() const {
  ojson j;
  j["type"] = "checkpoint";
  j["step"] = step;
  j["epoch"] = epoch;
  j["position"] = position;
  j["file"] = file;
  j["sha256"] = sha256;
  j["bytes"] = bytes;
  j["write_ms"] = write_ms;
  j["losses"] = losses;
  j["eval"] = eval.ToJson();
  j["params_digest"] = params_digest;
  j["at_unix"] = at_unix;
  return j;
}

Result<AdaptCheckpointRecord> AdaptCheckpointRecord::FromJson(const json& j, const std::string& where) {
  return Catching<AdaptCheckpointRecord>([&] { return ReadCheckpoint(j); }, "the checkpoint record", where,
                                         kJournalHint);
}

ojson TrainAccountingLine::ToJson() const {
  if (status == "used") return ojson{{"id", id}, {"status", status}, {"label", label}};
  return ojson{{"id", id}, {"status", status}, {"reason", reason}, {"detail", detail}};
}

namespace {

// The shared fields of an accounting line; `ok_status` is "used" or "evaluated".
std::string ReadIdAndStatus(const json& j, const char* ok_status, std::string& id) {
  if (!j.is_object()) Fail("is not a JSON object");
  id = Str(j, "id");
  if (!IsValidItemId(id)) Fail("has an 'id' that is not 1-128 characters of [A-Za-z0-9._-]");
  std::string status = Str(j, "status");
  if (status != ok_status && status != "rejected") {
    Fail(std::string("has a 'status' that is neither '") + ok_status + "' nor 'rejected'");
  }
  return status;
}

void ReadRejection(const json& j, std::string& reason, std::string& detail) {
  Keys(j, {"id", "status", "reason", "detail"});
  reason = Str(j, "reason");
  if (!reason::IsKnown(reason)) Fail("has a 'reason' that is not a known reason code");
  detail = Str(j, "detail");
}

}  // namespace

Result<TrainAccountingLine> TrainAccountingLine::FromJson(const json& j, const std::string& where) {
  return Catching<TrainAccountingLine>(
      [&] {
        TrainAccountingLine l;
        l.status = ReadIdAndStatus(j, "used", l.id);
        if (l.status == "used") {
          Keys(j, {"id", "status", "label"});
          l.label = Label(j, "label");
        } else {
          ReadRejection(j, l.reason, l.detail);
        }
        return l;
      },
      "the training line", where, kAccountingHint);
}

ojson EvalAccountingLine::ToJson() const {
  if (status == "evaluated") {
    return ojson{{"id", id},
                 {"status", status},
                 {"expected", expected},
                 {"base", base},
                 {"base_confidence", base_confidence},
                 {"adapted", adapted},
                 {"adapted_confidence", adapted_confidence}};
  }
  return ojson{{"id", id}, {"status", status}, {"reason", reason}, {"detail", detail}};
}

Result<EvalAccountingLine> EvalAccountingLine::FromJson(const json& j, const std::string& where) {
  return Catching<EvalAccountingLine>(
      [&] {
        EvalAccountingLine l;
        l.status = ReadIdAndStatus(j, "evaluated", l.id);
        if (l.status == "evaluated") {
          Keys(j, {"id", "status", "expected", "base", "base_confidence", "adapted", "adapted_confidence"});
          l.expected = Label(j, "expected");
          l.base = Label(j, "base");
          l.base_confidence = UnitOf(At(j, "base_confidence"), "base_confidence");
          l.adapted = Label(j, "adapted");
          l.adapted_confidence = UnitOf(At(j, "adapted_confidence"), "adapted_confidence");
        } else {
          ReadRejection(j, l.reason, l.detail);
        }
        return l;
      },
      "the evaluation line", where, kAccountingHint);
}

}  // namespace pilot
