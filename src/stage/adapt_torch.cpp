// The adaptation trainer (adapt.h) on libtorch: a TorchScript classifier trained in place
// through its own forward(), with torch::optim's Adam or SGD. A checkpoint is a
// torch::serialize archive of every parameter, the optimiser's state, the CPU generator's
// state (and the device's, on a GPU) and the engine's cursor.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "pilot/adapt.h"
#include "pilot/hash.h"
#include "pilot/limits.h"
#include "pilot/text_features.h"
#include "pilot/torch_stage.h"
#include "pilot/utf8.h"
#include "torch_contract.h"

namespace pilot {
namespace {

constexpr std::int64_t kMaxNgram = 16;
constexpr std::int64_t kMaxBuckets = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxChars = 1 << 20;
constexpr const char* kCheckpointTag = "pilot_adapt_checkpoint";
constexpr std::int64_t kCheckpointFormat = 1;

std::string Short(const std::string& text) { return EscapeControl(TruncateUtf8(text, 300)); }

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
      return BadInput("cannot load the base model for training: " + Short(TorchErrorMessage(e)), where_,
                      "the base model must be a TorchScript classifier (see the README, 'The adaptation pilot')");
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

  Result<double> Step(const std::vector<const std::string*>& texts, const std::vector<std::int64_t>& labels) override {
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
        return WorkFailed("the training loss is not finite", where_, "lower train.learning_rate, or check the labels");
      }
      return value;
    } catch (const std::exception& e) {
      const std::string what = Short(TorchErrorMessage(e));
      if (dtype_name_ != "float32") {
        return EnvironmentError("libtorch cannot train this model in " + dtype_name_ + " on " + device_.str() + ": " +
                                    what,
                                "train.dtype", "use float32, or a device and libtorch that support " + dtype_name_);
      }
      return WorkFailed("a training step failed: " + what, where_);
    }
  }

  Result<std::string> SaveCheckpoint(const std::string& cursor) override {
    try {
      torch::serialize::OutputArchive archive;
      archive.write(kCheckpointTag, torch::tensor({kCheckpointFormat}, torch::kInt64));
      for (std::size_t i = 0; i < params_.size(); ++i) {
        archive.write("p" + std::to_string(i), params_[i].second.detach().to(torch::kCPU));
      }
      torch::serialize::OutputArchive optimiser;
      optimiser_->save(optimiser);
      archive.write("optimiser", optimiser);
      archive.write("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
      if (device_.is_cuda()) {
        at::Generator gen = at::globalContext().defaultGenerator(device_);
        archive.write("rng_device", gen.get_state());
      }
      torch::Tensor c = torch::empty({static_cast<std::int64_t>(cursor.size())}, torch::kUInt8);
      std::copy(cursor.begin(), cursor.end(), reinterpret_cast<char*>(c.data_ptr<std::uint8_t>()));
      archive.write("cursor", c);
      std::ostringstream os;
      archive.save_to(os);
      return os.str();
    } catch (const std::exception& e) {
      return WorkFailed("cannot serialise the checkpoint: " + Short(TorchErrorMessage(e)), where_);
    }
  }

  Result<std::string> LoadCheckpoint(std::string_view bytes) override {
    try {
      torch::serialize::InputArchive archive;
      // Every tensor onto the training device, so that the optimiser's state sits beside its
      // parameters; the generator states and the cursor are read back on the CPU.
      archive.load_from(bytes.data(), bytes.size(), device_);
      torch::Tensor tag;
      if (!archive.try_read(kCheckpointTag, tag) || tag.numel() != 1 || tag.scalar_type() != torch::kInt64 ||
          tag.item<std::int64_t>() != kCheckpointFormat) {
        return BadInput("not a checkpoint this pilot wrote (format " + std::to_string(kCheckpointFormat) + ")", "checkpoint");
      }
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < params_.size(); ++i) {
        torch::Tensor t;
        if (!archive.try_read("p" + std::to_string(i), t) || t.sizes() != params_[i].second.sizes() ||
            t.scalar_type() != params_[i].second.scalar_type()) {
          return BadInput("the checkpoint's parameter '" + params_[i].first + "' is missing or of another shape",
                          "checkpoint", "it was written for another model");
        }
        params_[i].second.copy_(t);
      }
      torch::serialize::InputArchive optimiser;
      archive.read("optimiser", optimiser);
      optimiser_->load(optimiser);
      torch::Tensor rng;
      archive.read("rng_cpu", rng);
      at::Generator cpu = at::detail::getDefaultCPUGenerator();
      cpu.set_state(rng.to(torch::kCPU));
      if (device_.is_cuda()) {
        torch::Tensor dev;
        archive.read("rng_device", dev);
        at::Generator gen = at::globalContext().defaultGenerator(device_);
        gen.set_state(dev.to(torch::kCPU));
      }
      torch::Tensor c;
      archive.read("cursor", c);
      if (c.scalar_type() != torch::kUInt8 || c.dim() != 1 || c.numel() > 4096) {
        return BadInput("the checkpoint's cursor is malformed", "checkpoint");
      }
      c = c.to(torch::kCPU).contiguous();
      return std::string(reinterpret_cast<const char*>(c.data_ptr<std::uint8_t>()), static_cast<std::size_t>(c.numel()));
    } catch (const std::exception& e) {
      return BadInput("cannot read the checkpoint: " + Short(TorchErrorMessage(e)), "checkpoint",
                      "it was damaged, or written by another model");
    }
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
    if (*dtype != torch::kFloat32) module_.to(*dtype);
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
      const bool on = config.trainable.empty() || std::count(config.trainable.begin(), config.trainable.end(), name);
      if (on && !t.is_floating_point()) {
        return BadInput("the parameter '" + Short(name) + "' is not floating-point and cannot train", "train.parameters");
      }
      t.set_requires_grad(on);
      if (!on) continue;
      trainable_.insert(name);
      train.push_back(t);
      info.trainable.push_back(name);
      info.trainable_values += static_cast<std::uint64_t>(t.numel());
    }
    if (train.empty()) return BadInput("the model has no parameter to train", where_);
    if (config.optimiser == "adam") {
      optimiser_ = std::make_unique<torch::optim::Adam>(
          train, torch::optim::AdamOptions(config.learning_rate).weight_decay(config.weight_decay));
    } else if (config.optimiser == "sgd") {
      optimiser_ = std::make_unique<torch::optim::SGD>(
          train, torch::optim::SGDOptions(config.learning_rate).momentum(config.momentum).weight_decay(config.weight_decay));
    } else {
      return BadInput("unknown optimiser '" + Short(config.optimiser) + "'", "train.optimiser", "use adam or sgd");
    }
    // A forward pass in the dtype on the device, so that what they cannot do is refused now.
    try {
      torch::NoGradGuard no_grad;
      module_.eval();
      std::string probe = "probe";
      (void)Forward({&probe});
    } catch (const std::exception& e) {
      if (*dtype != torch::kFloat32) {
        return EnvironmentError("libtorch cannot run this model in " + config.dtype + " on " + config.device + ": " +
                                    Short(TorchErrorMessage(e)),
                                "train.dtype", "use float32, or a device and libtorch that support " + config.dtype);
      }
      throw;
    }
    info.labels = labels_;
    info.libtorch = TORCH_VERSION;
    return info;
  }

  Status ReadContract(const ModelContract& c) {
    if (!c.labels || c.labels->empty() || c.labels->size() > kMaxAdaptLabels) {
      return BadInput("the model declares no labels (or more than " + std::to_string(kMaxAdaptLabels) + ")", where_,
                      "an adaptation trains a classifier: declare 'labels: List[str]' on the module");
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
      return BadInput("unknown input_kind '" + Short(*c.input_kind) + "'", where_, "use 'text' or 'hashed_char_ngrams'");
    }
    if (!c.ngram_min || !c.ngram_max || !c.buckets || !c.max_chars || *c.ngram_min < 1 || *c.ngram_max < *c.ngram_min ||
        *c.ngram_max > kMaxNgram || *c.buckets < 1 || *c.buckets > kMaxBuckets || *c.max_chars < 1 ||
        *c.max_chars > kMaxChars) {
      return BadInput("the model's n-gram contract is missing or out of range", where_, "fix the model's contract");
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
      result = module_.forward({torch::tensor(ids, torch::kInt64).to(device_),
                                torch::tensor(offsets, torch::kInt64).to(device_)});
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
  std::vector<std::string> labels_;
  bool logits_ = false, text_input_ = false;
  NgramContract contract_;
};

}  // namespace

std::unique_ptr<AdaptTrainer> MakeTorchAdaptTrainer() { return std::make_unique<TorchAdaptTrainer>(); }

}  // namespace pilot
