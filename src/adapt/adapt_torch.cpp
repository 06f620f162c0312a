// The adaptation trainer (adapt.h) on libtorch: a TorchScript classifier trained in place
// through its own forward(), with torch::optim's Adam or SGD. A checkpoint (pilot's own plain
// format, below) holds every parameter, the optimiser's state, the CPU generator's state (and
// the device's, on a GPU) and the engine's cursor.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <type_traits>

#include "pilot/adapt/adapt.h"
#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/text_features.h"
#include "pilot/torch_stage.h"
#include "pilot/utf8.h"
#include "stage/torch_contract.h"

namespace pilot {
namespace {

constexpr const char* kCheckpointMagic = "pilot-adapt-checkpoint 1";
constexpr std::size_t kMaxCheckpointHeader = 1 << 20;

std::string Short(const std::string& text) { return EscapeTerminal(TruncateUtf8(text, 300)); }

std::optional<torch::Dtype> DtypeOf(const std::string& name) {
  if (name == "float32") return torch::kFloat32;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kFloat16;
  return std::nullopt;
}

class TorchAdaptTrainer final : public AdaptTrainer {
 public:
  Result<AdaptTrainerInfo> Load(const AdaptTrainerConfig& config) override {
    where_ = config.model.string();
    try {
      return LoadOrThrow(config);
    } catch (const std::exception& e) {
      return BadInput("cannot load the base model for training: " + Short(TorchErrorMessage(e)) + " (" +
                          LoadFailureContext(config.model) + ")",
                      where_,
                      std::string("the base model must be a TorchScript classifier (see docs/adapt.md); ") +
                          kLoadFailureHint);
    }
  }

  Result<std::vector<AdaptPrediction>> Predict(const std::vector<const std::string*>& texts) override {
    try {
      torch::NoGradGuard no_grad;
      module_.eval();
      torch::Tensor out = Forward(texts).to(torch::kCPU, torch::kFloat64);
      if (logits_) out = torch::softmax(out, 1);
      if (out.dim() != 2 || out.size(0) != static_cast<std::int64_t>(texts.size()) ||
          out.size(1) != static_cast<std::int64_t>(labels_.size())) {
        return WorkFailed("the model's output is not [batch, labels]", where_);
      }
      auto best = out.max(1);
      auto conf = std::get<0>(best).contiguous();
      auto idx = std::get<1>(best).contiguous();
      std::vector<AdaptPrediction> preds(texts.size());
      for (std::size_t i = 0; i < texts.size(); ++i) {
        preds[i].label = static_cast<int>(idx.data_ptr<std::int64_t>()[i]);
        preds[i].confidence = conf.data_ptr<double>()[i];
      }
      return preds;
    } catch (const std::exception& e) {
      return WorkFailed("the model failed on the evaluation items: " + Short(TorchErrorMessage(e)), where_);
    }
  }

  Result<double> Step(const std::vector<const std::string*>& texts,
                      const std::vector<std::int64_t>& labels) override {
    try {
      module_.train();
      optimiser_->zero_grad();
      torch::Tensor out = Forward(texts);
      torch::Tensor target = torch::tensor(labels, torch::kInt64).to(device_);
      torch::Tensor logp = logits_ ? torch::log_softmax(out.to(torch::kFloat32), 1)
                                   : torch::log(out.to(torch::kFloat32).clamp_min(1e-12));
      torch::Tensor loss = torch::nll_loss(logp, target);
      loss.backward();
      optimiser_->step();
      const double value = loss.item<double>();
      if (!std::isfinite(value)) {
        return WorkFailed("the training loss is not finite", where_,
                          "lower train.learning_rate, or check the labels");
      }
      return value;
    } catch (const std::exception& e) {
      const std::string what = Short(TorchErrorMessage(e));
      if (dtype_name_ != "float32") {
        return EnvironmentError(
            "libtorch cannot train this model in " + dtype_name_ + " on " + device_.str() + ": " + what,
            "train.dtype", "use float32, or a device and libtorch that support " + dtype_name_);
      }
      return WorkFailed("a training step failed: " + what, where_);
    }
  }

  // The checkpoint is pilot's own plain format, never a TorchScript archive (whose loading
  // runs code the archive carries): a magic line, one JSON header line naming each tensor
  // (name, dtype, shape, bytes), then the tensors' raw bytes in that order. Loading derives
  // every expected name, dtype and shape from the model itself and checks the header and the
  // sizes against them before any byte is used.
  Result<std::string> SaveCheckpoint(const std::string& cursor) override {
    try {
      std::vector<std::pair<std::string, torch::Tensor>> blobs;
      nlohmann::json steps = nlohmann::json::array();
      for (std::size_t i = 0; i < params_.size(); ++i)
        blobs.emplace_back("p" + std::to_string(i), params_[i].second);
      for (std::size_t j = 0; j < train_.size(); ++j) {
        auto& state = optimiser_->state();
        auto it = state.find(StateKey(state, train_[j]));
        if (it == state.end()) {
          steps.push_back(-1);
          continue;
        }
        if (adam_) {
          auto& st = static_cast<torch::optim::AdamParamState&>(*it->second);
          steps.push_back(st.step());
          blobs.emplace_back("adam" + std::to_string(j) + ".exp_avg", st.exp_avg());
          blobs.emplace_back("adam" + std::to_string(j) + ".exp_avg_sq", st.exp_avg_sq());
        } else {
          auto& st = static_cast<torch::optim::SGDParamState&>(*it->second);
          steps.push_back(0);
          blobs.emplace_back("sgd" + std::to_string(j) + ".momentum_buffer", st.momentum_buffer());
        }
      }
      blobs.emplace_back("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
      if (device_.is_cuda()) {
        at::Generator gen = at::globalContext().defaultGenerator(device_);
        blobs.emplace_back("rng_device", gen.get_state());
      }
      nlohmann::json header{{"cursor", cursor}, {"optimiser", adam_ ? "adam" : "sgd"}, {"steps", steps}};
      header["tensors"] = nlohmann::json::array();
      std::string data;
      for (auto& [name, t] : blobs) {
        torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
        const std::size_t n = static_cast<std::size_t>(c.numel()) * c.element_size();
        header["tensors"].push_back({{"name", name},
                                     {"dtype", std::string(c10::toString(c.scalar_type()))},
                                     {"shape", c.sizes().vec()},
                                     {"bytes", n}});
        data.append(static_cast<const char*>(c.data_ptr()), n);
      }
      return std::string(kCheckpointMagic) + "\n" + header.dump() + "\n" + data;
    } catch (const std::exception& e) {
      return WorkFailed("cannot serialise the checkpoint: " + Short(TorchErrorMessage(e)), where_);
    }
  }

  Result<std::string> LoadCheckpoint(std::string_view bytes) override {
    try {
      return LoadOrThrow(bytes);
    } catch (const std::exception& e) {
      return BadInput("cannot restore the checkpoint: " + Short(TorchErrorMessage(e)), "checkpoint",
                      "it was damaged, or written for another model");
    }
  }

  std::uint64_t CheckpointBytesLimit() override {
    std::uint64_t values = 0;
    for (const auto& [name, t] : params_) values += static_cast<std::uint64_t>(t.numel()) * t.element_size();
    return kMaxCheckpointHeader + 4 * values + (1u << 20);
  }

  Result<std::string> SaveModel() override {
    try {
      // Saved as loaded: no parameter marked for gradients.
      std::vector<bool> grad;
      for (auto& [name, t] : params_) {
        grad.push_back(t.requires_grad());
        t.set_requires_grad(false);
      }
      module_.eval();
      std::ostringstream os;
      module_.save(os);
      for (std::size_t i = 0; i < params_.size(); ++i) params_[i].second.set_requires_grad(grad[i]);
      return os.str();
    } catch (const std::exception& e) {
      return WorkFailed("cannot serialise the adapted model: " + Short(TorchErrorMessage(e)), where_);
    }
  }

  std::string ParametersDigest() override {
    std::vector<std::pair<std::string, torch::Tensor>> sorted;
    for (const auto& [name, t] : params_) {
      if (trainable_.count(name)) sorted.emplace_back(name, t);
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Sha256Stream hash;
    for (const auto& [name, t] : sorted) {
      torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
      hash.Update(name);
      hash.Update(std::string_view("\0", 1));
      hash.Update(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()));
    }
    return hash.Finish();
  }

 private:
  template <typename Map>
  static typename Map::key_type StateKey(const Map&, const torch::Tensor& p) {
    using Key = typename Map::key_type;
    if constexpr (std::is_same_v<Key,
                                 std::string>) {  // libtorch 1.x keys its state by the impl's address as text
      std::ostringstream os;
      os << p.unsafeGetTensorImpl();
      return os.str();
    } else {
      return static_cast<Key>(p.unsafeGetTensorImpl());
    }
  }

  Result<std::string> LoadOrThrow(std::string_view bytes) {
    const std::string where = "checkpoint";
    const std::string magic = std::string(kCheckpointMagic) + "\n";
    if (bytes.substr(0, magic.size()) != magic) return BadInput("not a checkpoint this pilot writes", where);
    bytes.remove_prefix(magic.size());
    const std::size_t nl = bytes.substr(0, kMaxCheckpointHeader).find('\n');
    if (nl == std::string_view::npos)
      return BadInput("the checkpoint's header is missing or too long", where);
    auto parsed = ParseJson(bytes.substr(0, nl), where);
    if (!parsed.ok()) return parsed.error();
    bytes.remove_prefix(nl + 1);
    const nlohmann::json& h = parsed.value();
    auto cursor = StringAt(h, "cursor");
    auto optimiser = StringAt(h, "optimiser");
    if (!cursor || cursor->size() > 4096 || !optimiser || *optimiser != (adam_ ? "adam" : "sgd") ||
        !h.contains("steps") || !h["steps"].is_array() || h["steps"].size() != train_.size() ||
        !h.contains("tensors") || !h["tensors"].is_array()) {
      return BadInput("the checkpoint's header is not one this model and optimiser write", where);
    }
    // What this model would have written, given which parameters have optimiser state.
    struct Want {
      std::string name;
      torch::Tensor like;  // dtype and shape
    };
    std::vector<Want> want;
    for (std::size_t i = 0; i < params_.size(); ++i)
      want.push_back({"p" + std::to_string(i), params_[i].second});
    std::vector<std::int64_t> steps;
    for (std::size_t j = 0; j < train_.size(); ++j) {
      const auto& v = h["steps"][j];
      if (!v.is_number_integer() || v.get<std::int64_t>() < -1 ||
          v.get<std::int64_t>() > (std::int64_t{1} << 40)) {
        return BadInput("the checkpoint's optimiser steps are malformed", where);
      }
      steps.push_back(v.get<std::int64_t>());
      if (steps.back() < 0) continue;
      if (adam_) {
        want.push_back({"adam" + std::to_string(j) + ".exp_avg", train_[j]});
        want.push_back({"adam" + std::to_string(j) + ".exp_avg_sq", train_[j]});
      } else {
        want.push_back({"sgd" + std::to_string(j) + ".momentum_buffer", train_[j]});
      }
    }
    want.push_back({"rng_cpu", at::detail::getDefaultCPUGenerator().get_state()});
    if (device_.is_cuda()) {
      at::Generator gen = at::globalContext().defaultGenerator(device_);
      want.push_back({"rng_device", gen.get_state()});
    }
    const auto& tensors = h["tensors"];
    if (tensors.size() != want.size())
      return BadInput("the checkpoint holds other tensors than this model's", where);
    std::vector<torch::Tensor> got;
    std::size_t at = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      const torch::Tensor& like = want[k].like;
      const std::size_t n = static_cast<std::size_t>(like.numel()) * like.element_size();
      const auto& t = tensors[k];
      if (StringAt(t, "name") != want[k].name ||
          StringAt(t, "dtype") != std::string(c10::toString(like.scalar_type())) || !t.contains("shape") ||
          t["shape"] != nlohmann::json(like.sizes().vec()) || UnsignedAt(t, "bytes") != n) {
        return BadInput(
            "the checkpoint's tensor '" + want[k].name + "' is missing or of another dtype or shape", where,
            "it was written for another model");
      }
      if (bytes.size() - at < n) return BadInput("the checkpoint is shorter than its header says", where);
      torch::Tensor c = torch::empty(like.sizes(), torch::TensorOptions().dtype(like.scalar_type()));
      std::memcpy(c.data_ptr(), bytes.data() + at, n);
      at += n;
      got.push_back(std::move(c));
    }
    if (at != bytes.size()) return BadInput("the checkpoint has bytes beyond its tensors", where);

    torch::NoGradGuard no_grad;
    std::size_t k = 0;
    for (auto& [name, t] : params_) t.copy_(got[k++]);
    auto& state = optimiser_->state();
    for (std::size_t j = 0; j < train_.size(); ++j) {
      auto key = StateKey(state, train_[j]);
      state.erase(key);
      if (steps[j] < 0) continue;
      if (adam_) {
        auto st = std::make_unique<torch::optim::AdamParamState>();
        st->step(steps[j]);
        st->exp_avg(got[k++].to(device_));
        st->exp_avg_sq(got[k++].to(device_));
        state[key] = std::move(st);
      } else {
        auto st = std::make_unique<torch::optim::SGDParamState>();
        st->momentum_buffer(got[k++].to(device_));
        state[key] = std::move(st);
      }
    }
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    cpu.set_state(got[k++]);
    if (device_.is_cuda()) {
      at::Generator gen = at::globalContext().defaultGenerator(device_);
      gen.set_state(got[k++]);
    }
    return *cursor;
  }

  Result<AdaptTrainerInfo> LoadOrThrow(const AdaptTrainerConfig& config) {
    at::set_num_threads(config.threads);
    torch::manual_seed(config.seed);
    device_ = torch::Device(config.device);
    dtype_name_ = config.dtype;
    auto dtype = DtypeOf(config.dtype);
    if (!dtype) return BadInput("unknown dtype '" + Short(config.dtype) + "'", "train.dtype");
    module_ = torch::jit::load(config.model.string(), torch::kCPU);
    PILOT_TRY(ReadContract(ContractOfModule(module_)));
    module_.to(device_);
    if (*dtype != torch::kFloat32) ToFloatingDtype(module_, *dtype);
    // Every floating-point parameter, in the model's order; the chosen ones train.
    std::set<std::string> names;
    for (const auto& p : module_.named_parameters(true)) {
      params_.emplace_back(p.name, p.value);
      names.insert(p.name);
    }
    for (const auto& want : config.trainable) {
      if (!names.count(want)) {
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + Short(n);
        return BadInput("the model has no parameter '" + Short(want) + "'", "train.parameters",
                        "the model's parameters: " + known);
      }
    }
    std::vector<torch::Tensor> train;
    AdaptTrainerInfo info;
    for (auto& [name, t] : params_) {
      const bool on =
          config.trainable.empty() || std::count(config.trainable.begin(), config.trainable.end(), name);
      if (on && !t.is_floating_point()) {
        return BadInput("the parameter '" + Short(name) + "' is not floating-point and cannot train",
                        "train.parameters");
      }
      t.set_requires_grad(on);
      if (!on) continue;
      trainable_.insert(name);
      train.push_back(t);
      info.trainable.push_back(name);
      info.trainable_values += static_cast<std::uint64_t>(t.numel());
    }
    if (train.empty()) return BadInput("the model has no parameter to train", where_);
    train_ = train;
    adam_ = config.optimiser == "adam";
    if (config.optimiser == "adam") {
      optimiser_ = std::make_unique<torch::optim::Adam>(
          train, torch::optim::AdamOptions(config.learning_rate).weight_decay(config.weight_decay));
    } else if (config.optimiser == "sgd") {
      optimiser_ = std::make_unique<torch::optim::SGD>(train, torch::optim::SGDOptions(config.learning_rate)
                                                                  .momentum(config.momentum)
                                                                  .weight_decay(config.weight_decay));
    } else {
      return BadInput("unknown optimiser '" + Short(config.optimiser) + "'", "train.optimiser",
                      "use adam or sgd");
    }
    // A forward pass in the dtype on the device, so that what they cannot do is refused now.
    try {
      torch::NoGradGuard no_grad;
      module_.eval();
      std::string probe = "probe";
      (void)Forward({&probe});
    } catch (const std::exception& e) {
      if (*dtype != torch::kFloat32) {
        return EnvironmentError("libtorch cannot run this model in " + config.dtype + " on " + config.device +
                                    ": " + Short(TorchErrorMessage(e)),
                                "train.dtype",
                                "use float32, or a device and libtorch that support " + config.dtype);
      }
      throw;
    }
    info.labels = labels_;
    info.libtorch = TORCH_VERSION;
    return info;
  }

  Status ReadContract(const ModelContract& c) {
    if (!c.labels || c.labels->empty() || c.labels->size() > kMaxAdaptLabels) {
      return BadInput("the model declares no labels (or more than " + std::to_string(kMaxAdaptLabels) + ")",
                      where_, "an adaptation trains a classifier: declare 'labels: List[str]' on the module");
    }
    std::set<std::string> seen;
    for (const auto& l : *c.labels) {
      if (l.empty() || l.size() > 128 || !CheckUtf8(l).valid || !seen.insert(l).second) {
        return BadInput("the model's labels must be distinct, non-empty UTF-8 of at most 128 bytes", where_);
      }
    }
    labels_ = *c.labels;
    if (c.output && *c.output != "logits" && *c.output != "probabilities") {
      return BadInput("unknown output '" + Short(*c.output) + "'", where_, "use 'probabilities' or 'logits'");
    }
    logits_ = c.output && *c.output == "logits";
    if (!c.input_kind) return BadInput("the model declares no input_kind", where_);
    text_input_ = *c.input_kind == "text";
    if (text_input_) return {};
    if (*c.input_kind != "hashed_char_ngrams") {
      return BadInput("unknown input_kind '" + Short(*c.input_kind) + "'", where_,
                      "use 'text' or 'hashed_char_ngrams'");
    }
    if (!c.ngram_min || !c.ngram_max || !c.buckets || !c.max_chars || *c.ngram_min < 1 ||
        *c.ngram_max < *c.ngram_min || *c.ngram_max > kMaxNgram || *c.buckets < 1 ||
        *c.buckets > kMaxBuckets || *c.max_chars < 1 || *c.max_chars > kMaxChars) {
      return BadInput("the model's n-gram contract is missing or out of range", where_,
                      "fix the model's contract");
    }
    contract_.ngram_min = static_cast<int>(*c.ngram_min);
    contract_.ngram_max = static_cast<int>(*c.ngram_max);
    contract_.buckets = *c.buckets;
    contract_.max_chars = static_cast<int>(*c.max_chars);
    return {};
  }

  torch::Tensor Forward(const std::vector<const std::string*>& texts) {
    torch::jit::IValue result;
    if (text_input_) {
      c10::List<std::string> list;
      for (const auto* t : texts) list.push_back(*t);
      result = module_.forward({list});
    } else {
      std::vector<std::int64_t> ids, offsets;
      for (const auto* t : texts) {
        offsets.push_back(static_cast<std::int64_t>(ids.size()));
        AppendNgramIds(*t, contract_, ids);
      }
      result = module_.forward(
          {torch::tensor(ids, torch::kInt64).to(device_), torch::tensor(offsets, torch::kInt64).to(device_)});
    }
    if (!result.isTensor()) throw std::runtime_error("the model's forward() did not return a Tensor");
    return result.toTensor();
  }

  std::string where_;
  torch::jit::Module module_;
  torch::Device device_{torch::kCPU};
  std::string dtype_name_ = "float32";
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::set<std::string> trainable_;
  std::unique_ptr<torch::optim::Optimizer> optimiser_;
  std::vector<torch::Tensor> train_;  // the parameters the optimiser updates, in its order
  bool adam_ = true;
  std::vector<std::string> labels_;
  bool logits_ = false, text_input_ = false;
  NgramContract contract_;
};

}  // namespace

std::unique_ptr<AdaptTrainer> MakeTorchAdaptTrainer() { return std::make_unique<TorchAdaptTrainer>(); }

}  // namespace pilot
