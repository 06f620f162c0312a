// The TorchScript stage kinds: a module that declares its own input contract (and labels,
// or dim) as attributes.
//   "torchscript-classifier": forward() returns [batch, labels] probabilities or logits.
//   "torchscript-embedding":  forward() returns [batch, dim] float vectors.
//
// Module attributes:
//   input_kind: str            "text" (forward(texts: List[str])) or "hashed_char_ngrams"
//                              (forward(ids: Tensor[int64], offsets: Tensor[int64]))
//   ngram_min, ngram_max, buckets, max_chars: int   for hashed_char_ngrams
//   classifier: labels: List[str] (the categories, in output column order);
//               output: str, "probabilities" (default) or "logits"
//   embedding:  dim: int (the vector length)
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "pilot/limits.h"
#include "pilot/text_features.h"
#include "pilot/torch_stage.h"
#include "pilot/utf8.h"
#include "torch_device.h"

namespace pilot {
namespace {

constexpr std::int64_t kMaxNgram = 16;
constexpr std::int64_t kMaxBuckets = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxChars = 1 << 20;

// c10 errors carry a C++ backtrace in what(); users need the message alone.
std::string Message(const std::exception& e) {
  if (const auto* c10e = dynamic_cast<const c10::Error*>(&e)) return c10e->what_without_backtrace();
  return e.what();
}

class TorchScriptStage : public Stage {
 public:
  static Result<std::unique_ptr<Stage>> Create(const StageConfig& config) {
    auto stage = std::unique_ptr<TorchScriptStage>(new TorchScriptStage());
    if (Status st = stage->Init(config); !st.ok()) return st.error();
    return std::unique_ptr<Stage>(std::move(stage));
  }

  const StageDescription& Describe() const override { return desc_; }
  std::optional<double> PeakDeviceMemoryMb() const override { return DevicePeakMemoryMb(device_); }

  // A failure of the forward pass fails the batch; the engine bisects it.
  BatchOutput Process(const std::vector<std::string_view>& texts) override { return Run(texts, nullptr); }

  // Hashed n-grams are computed here, on the engine's workers; the text contract has no
  // featurisation of its own (the model takes the strings).
  bool Prepare(std::string_view text, PreparedInput& out) const override {
    if (input_kind_ != "hashed_char_ngrams") return false;
    try {
      out.ids.clear();
      AppendNgramIds(text, contract_, out.ids);
      return true;
    } catch (const std::exception&) {  // out of memory: Process featurises it, or fails the batch
      out.ids.clear();
      return false;
    }
  }

  BatchOutput ProcessPrepared(const std::vector<std::string_view>& texts,
                              const std::vector<const PreparedInput*>& prepared) override {
    return Run(texts, prepared.size() == texts.size() ? &prepared : nullptr);
  }

 private:
  BatchOutput Run(const std::vector<std::string_view>& texts, const std::vector<const PreparedInput*>* prepared) {
    try {
      BatchOutput b;
      b.items = Forward(texts, prepared);
      return b;
    } catch (const std::exception& e) {
      std::string what = Message(e);
      return BatchOutput::Failed(what, what.find("out of memory") != std::string::npos);
    }
  }

  TorchScriptStage() : device_(torch::kCPU) {}

  Status Init(const StageConfig& config) {
    const std::string where = config.model.string();
    const bool classifies = config.kind == kTorchScriptClassifier;
    desc_.output = classifies ? OutputKind::kClassification : OutputKind::kEmbedding;
    for (const auto& [key, value] : config.options.items()) {
      if (key != "min_confidence" || !classifies) {
        return BadInput("unknown stage option 'stage.options." + key + "'", "stage.options",
                        classifies ? "the torchscript-classifier takes: min_confidence"
                                   : "the torchscript-embedding takes no options");
      }
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1) {
        return BadInput("'stage.options.min_confidence' must be a number in [0, 1]", "stage.options");
      }
      desc_.min_confidence = value.get<double>();
    }
    if (config.threads > 0) at::set_num_threads(config.threads);
    at::manual_seed(config.seed);
    device_ = torch::Device(config.device);
    ResetDevicePeakMemory(device_);
    try {
      module_ = torch::jit::load(config.model.string(), device_);
      module_.eval();
    } catch (const std::exception& e) {
      return BadInput("cannot load the TorchScript model: " + Message(e), where,
                      "give a file saved with torch.jit.save / torch::jit::Module::save");
    }
    auto missing = [&](const std::string& attr, const char* type) {
      return BadInput("the model has no '" + attr + "' attribute of type " + type, where,
                      "declare it on the module before saving (see the README, 'The stage and bringing your own model')");
    };
    try {
      if (classifies) {
        if (Status st = ReadLabels(where, missing); !st.ok()) return st;
      } else {
        if (!module_.hasattr("dim")) return missing("dim", "int");
        std::int64_t dim = module_.attr("dim").toInt();
        if (dim < 1 || dim > static_cast<std::int64_t>(limits::kEmbeddingDim)) {
          return BadInput("the model's dim " + std::to_string(dim) + " is outside 1.." +
                              std::to_string(limits::kEmbeddingDim),
                          where, "fix the model's 'dim' attribute");
        }
        desc_.dim = static_cast<std::size_t>(dim);
      }
      if (!module_.hasattr("input_kind")) return missing("input_kind", "str");
      input_kind_ = module_.attr("input_kind").toStringRef();
      if (module_.hasattr("output")) logits_ = module_.attr("output").toStringRef() == "logits";
      if (input_kind_ == "hashed_char_ngrams") {
        for (auto [name, dest] : {std::pair{"ngram_min", &ngram_min_}, std::pair{"ngram_max", &ngram_max_},
                                  std::pair{"max_chars", &max_chars_}}) {
          if (!module_.hasattr(name)) return missing(name, "int");
          *dest = module_.attr(name).toInt();
        }
        if (!module_.hasattr("buckets")) return missing("buckets", "int");
        contract_.buckets = module_.attr("buckets").toInt();
        contract_.ngram_min = static_cast<int>(std::clamp<std::int64_t>(ngram_min_, 0, kMaxNgram + 1));
        contract_.ngram_max = static_cast<int>(std::clamp<std::int64_t>(ngram_max_, 0, kMaxNgram + 1));
        contract_.max_chars = static_cast<int>(std::clamp<std::int64_t>(max_chars_, 0, kMaxChars + 1));
        // Checked before any narrowing: buckets = 2^32 would become 0 as a 32-bit modulus.
        if (ngram_min_ < 1 || ngram_max_ < ngram_min_ || ngram_max_ > kMaxNgram || contract_.buckets < 1 ||
            contract_.buckets > kMaxBuckets || max_chars_ < 1 || max_chars_ > kMaxChars) {
          return BadInput("the model's n-gram contract is out of range (need 1 <= ngram_min <= ngram_max <= " +
                              std::to_string(kMaxNgram) + ", 1 <= buckets <= " + std::to_string(kMaxBuckets) +
                              ", 1 <= max_chars <= " + std::to_string(kMaxChars) + ")",
                          where, "fix the model's attributes");
        }
      } else if (input_kind_ != "text") {
        return BadInput("unknown input_kind '" + input_kind_ + "'", where, "use 'text' or 'hashed_char_ngrams'");
      }
    } catch (const std::exception& e) {
      return BadInput("the model's attributes are malformed: " + Message(e), where);
    }
    desc_.kind = config.kind;
    desc_.model_sha256 = config.model_sha256;
    desc_.device = config.device;
    desc_.details["input_kind"] = input_kind_;
    if (classifies) desc_.details["output"] = logits_ ? "logits" : "probabilities";
    if (!classifies) desc_.details["dim"] = desc_.dim;
    if (input_kind_ == "hashed_char_ngrams") {
      desc_.details["ngram_min"] = contract_.ngram_min;
      desc_.details["ngram_max"] = contract_.ngram_max;
      desc_.details["buckets"] = contract_.buckets;
      desc_.details["max_chars"] = contract_.max_chars;
    }
    // Warm up: TorchScript's profiling executor optimises the graph over its first calls.
    // Time them apart so that item latencies describe the steady state a full run sees.
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2; ++i) {
      auto out = Process({std::string_view("warm up")});
      std::string error = !out.ok ? out.error : out.items.size() != 1 ? "no output" : out.items[0].error;
      if (!out.ok || out.items.size() != 1 || !out.items[0].ok) {
        return BadInput("the model fails on a warm-up input: " + error, where,
                        "check the model's forward() against its declared input_kind");
      }
    }
    desc_.details["warmup_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {};
  }

  template <typename Missing>
  Status ReadLabels(const std::string& where, Missing missing) {
    if (!module_.hasattr("labels")) return missing("labels", "List[str]");
    for (const auto& l : module_.attr("labels").toListRef()) desc_.labels.push_back(l.toStringRef());
    if (desc_.labels.empty()) return missing("labels", "List[str] (non-empty)");
    // Labels go into every result record: they must be text, short, and distinct.
    std::set<std::string> distinct;
    for (std::size_t i = 0; i < desc_.labels.size(); ++i) {
      const std::string& l = desc_.labels[i];
      if (l.empty() || l.size() > 256 || !CheckUtf8(l).valid ||
          std::any_of(l.begin(), l.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
        return BadInput("the model's label " + std::to_string(i) +
                            " is not 1-256 bytes of printable UTF-8 text",
                        where, "labels are categories written into every result record");
      }
      if (!distinct.insert(l).second) {
        return BadInput("the model's label " + std::to_string(i) + " appears twice", where, "labels must be distinct");
      }
    }
    return {};
  }

  std::vector<ItemOutput> Forward(const std::vector<std::string_view>& texts,
                                  const std::vector<const PreparedInput*>* prepared) {
    c10::InferenceMode guard;
    std::vector<torch::jit::IValue> inputs;
    std::vector<std::int64_t> ids;  // outlive forward(): from_blob does not copy on CPU
    std::vector<std::int64_t> offsets;
    if (input_kind_ == "text") {
      c10::List<std::string> list;
      for (auto t : texts) list.push_back(std::string(t));
      inputs.emplace_back(list);
    } else {
      for (std::size_t k = 0; k < texts.size(); ++k) {
        offsets.push_back(static_cast<std::int64_t>(ids.size()));
        if (prepared) {
          ids.insert(ids.end(), (*prepared)[k]->ids.begin(), (*prepared)[k]->ids.end());
        } else {
          AppendNgramIds(texts[k], contract_, ids);
        }
      }
      auto opts = torch::TensorOptions().dtype(torch::kInt64);
      inputs.emplace_back(torch::from_blob(ids.data(), {static_cast<std::int64_t>(ids.size())}, opts).to(device_));
      inputs.emplace_back(
          torch::from_blob(offsets.data(), {static_cast<std::int64_t>(offsets.size())}, opts).to(device_));
    }
    torch::jit::IValue result = module_.forward(inputs);
    if (!result.isTensor()) throw std::runtime_error("the model's forward() did not return a Tensor");
    const auto n = static_cast<std::int64_t>(texts.size());
    std::vector<ItemOutput> outputs(static_cast<std::size_t>(n));
    if (desc_.output == OutputKind::kEmbedding) {
      // float32 as the model computed it: the bits that go to vectors.npy.
      torch::Tensor out = result.toTensor().to(torch::kCPU, torch::kFloat32).contiguous();
      const auto d = static_cast<std::int64_t>(desc_.dim);
      if (out.dim() != 2 || out.size(0) != n || out.size(1) != d) {
        throw std::runtime_error("the model returned shape " + c10::str(out.sizes()) + ", expected [" +
                                 std::to_string(n) + ", " + std::to_string(d) + "]");
      }
      const float* all = out.data_ptr<float>();
      for (std::int64_t i = 0; i < n; ++i) {
        auto& o = outputs[static_cast<std::size_t>(i)];
        o.ok = true;
        o.vector.assign(all + i * d, all + (i + 1) * d);  // finiteness is the engine's check
      }
      return outputs;
    }
    torch::Tensor out = result.toTensor().to(torch::kCPU, torch::kFloat64);
    const auto l = static_cast<std::int64_t>(desc_.labels.size());
    if (out.dim() != 2 || out.size(0) != n || out.size(1) != l) {
      throw std::runtime_error("the model returned shape " + c10::str(out.sizes()) + ", expected [" +
                               std::to_string(n) + ", " + std::to_string(l) + "]");
    }
    if (logits_) out = torch::softmax(out, 1);
    auto [best, index] = out.max(1);
    auto scores = out.to(torch::kFloat32).contiguous();
    const float* all = scores.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i) {
      auto& o = outputs[static_cast<std::size_t>(i)];
      o.ok = true;
      o.label = desc_.labels[static_cast<std::size_t>(index[i].item<std::int64_t>())];
      o.confidence = best[i].item<double>();
      o.scores.assign(all + i * l, all + (i + 1) * l);
      // Whether these are probabilities is the engine's check (invalid_output), for every
      // stage kind alike; the stage reports what the model said.
    }
    return outputs;
  }

  torch::jit::Module module_;
  torch::Device device_;
  StageDescription desc_;
  std::string input_kind_;
  bool logits_ = false;
  NgramContract contract_;
  std::int64_t ngram_min_ = 1, ngram_max_ = 4, max_chars_ = 2048;
};

}  // namespace

void RegisterTorchStages(StageRegistry& registry) {
  registry.Register(kTorchScriptClassifier, &TorchScriptStage::Create);
  registry.Register(kTorchScriptEmbedding, &TorchScriptStage::Create);
}

}  // namespace pilot
