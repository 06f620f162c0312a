// The generator stage kinds (docs/generation.md): "torchscript-generator" (a TorchScript module
// whose forward is the step) and "aoti-generator" (a .pt2 package of the step, from
// scripts/export-generator.py). pilot owns the decode loop and the KV cache:
//
//   step(input_ids int64 [B, T], positions int64 [B, T], logits_at int64 [B],
//        k_cache [L, B, Hkv, C, D], v_cache [L, B, Hkv, C, D])
//     -> (logits float32 [B, V], new_k [L, B, Hkv, T, D], new_v [L, B, Hkv, T, D])
//
// Slot b's token t attends to the slot's cache entries j < positions[b, 0] and to the step's
// own tokens t' <= t; pilot writes new_k/new_v into its cache at positions[b, t]. Each slot has
// its own position and mask, so a slot can be refilled alone, and the model is a pure function
// (it exports with torch.export; it never mutates the cache).
//
// A call's prompts are decoded in `slots` slots (the batch size) over one cache. The prompts
// entering slots together are prefilled together (right-padded, each its own logits_at); then
// each step feeds every occupied slot its last token. A sequence that ends (an end-of-sequence
// id, a stop id or string, max_new_tokens) frees its slot: in-flight batching (the default)
// refills it at once with the next prompt, prefilled alone; static batching starts the next
// batch when the last sequence of this one ends. Each token is chosen by sampling.h: greedily,
// or drawn by the item's own key and step.
#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include "pilot/build_flavour.h"
#include "pilot/escape.h"
#include "pilot/host.h"
#include "pilot/model_contract.h"
#include "pilot/reasons.h"
#include "pilot/sampling.h"
#include "pilot/tokenizer.h"
#include "pilot/torch_stage.h"
#include "pilot/utf8.h"
#include "torch_contract.h"
#include "torch_device.h"
#include "torch_package.h"

#if defined(PILOT_HAVE_AOTI)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

namespace pilot {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Ms(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string GenText(std::string_view text, std::size_t max = 200) {
  return EscapeTerminal(TruncateUtf8(text, max));
}

// The contract's bounds: what a model may declare before pilot allocates anything by it.
constexpr std::int64_t kMaxLayers = 1024, kMaxKvHeads = 1024, kMaxHeadDim = 1 << 16, kMaxContext = 1 << 24;

std::optional<torch::Dtype> DtypeNamed(const std::string& name) {
  if (name == "float32") return torch::kFloat32;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kFloat16;
  return std::nullopt;
}

ModelContract GeneratorContractOfModule(const torch::jit::Module& m) {
  ModelContract c = ContractOfModule(m);
  for (auto [name, dest] :
       {std::pair{"generator_contract", &c.generator_contract}, std::pair{"layers", &c.layers},
        std::pair{"kv_heads", &c.kv_heads}, std::pair{"head_dim", &c.head_dim},
        std::pair{"context", &c.context}, std::pair{"vocab", &c.vocab}}) {
    if (m.hasattr(name)) *dest = m.attr(name).toInt();
  }
  if (m.hasattr("eos_token_ids")) {
    c.eos_token_ids.emplace();
    for (const auto& e : m.attr("eos_token_ids").toListRef()) c.eos_token_ids->push_back(e.toInt());
  }
  if (m.hasattr("kv_dtype")) c.kv_dtype = m.attr("kv_dtype").toStringRef();
  return c;
}

// One sequence being decoded in a slot of the batch.
struct Sequence {
  std::size_t input = 0;                     // its index among the call's inputs
  SamplingKey key;                           // its draws' stream (sampling.h)
  std::int64_t prompt_tokens = 0;            // its prompt's length
  std::vector<std::int64_t> ids;             // generated so far
  std::string bytes;                         // what the decoder gave so far (stop strings only)
  std::size_t byte_count = 0;                // its length, kept with or without stop strings
  std::string finish;                        // empty while it runs
  std::size_t text_end = std::string::npos;  // a stop string's start in the decoded text
  // admitted_ms and last_token_ms: from the window's start; ttft_ms: from admitted_ms.
  double prefill_ms = 0, decode_ms = 0, ttft_ms = 0, last_token_ms = 0, admitted_ms = 0;
  std::vector<double> token_ms;          // from the call's entry, one per token taken
  double slot_steps = 0;                 // its share of the decode steps' slots, idle ones included
  std::vector<std::uint64_t> near_ties;  // the steps decided within kNearTieMargin
};

class GeneratorStage : public Stage {
 public:
  static Result<std::unique_ptr<Stage>> Create(const StageConfig& config) {
    auto stage = std::unique_ptr<GeneratorStage>(new GeneratorStage());
    if (Status st = stage->Init(config); !st.ok()) return st.error();
    return std::unique_ptr<Stage>(std::move(stage));
  }

  const StageDescription& Describe() const override { return desc_; }
  std::optional<double> PeakDeviceMemoryMb() const override { return DevicePeakMemoryMb(device_); }
  std::optional<ModelFootprint> Footprint() const override { return footprint_; }

  BatchOutput Process(const std::vector<std::string_view>& texts) override { return Run(texts, nullptr); }

  // In-flight batching takes a window of this many batches per call, and refills its slots from
  // it; only the window's last sequences leave slots idle.
  static constexpr std::size_t kWindowBatches = 8;
  std::size_t InputsPerCall(std::size_t batch) const override {
    return gen_.batching == "static" ? batch : batch * kWindowBatches;
  }
  void SetConcurrency(std::size_t slots) override { slots_ = slots; }

  bool Prepare(std::string_view text, PreparedInput& out) const override {
    try {
      TokenizedText t = EncodeText(*tokenizer_, tok_, text);
      out.error = std::move(t.error);
      out.ids = std::move(t.ids);
      out.tokens = t.tokens;
      out.truncated = t.truncated;
      return true;
    } catch (const std::exception&) {
      out = PreparedInput();
      return false;
    }
  }

  BatchOutput ProcessPrepared(const std::vector<std::string_view>& texts,
                              const std::vector<const PreparedInput*>& prepared) override {
    return Run(texts, prepared.size() == texts.size() ? &prepared : nullptr);
  }

 private:
  GeneratorStage() : device_(torch::kCPU) {}

  BatchOutput Run(const std::vector<std::string_view>& texts,
                  const std::vector<const PreparedInput*>* prepared) {
    try {
      c10::InferenceMode guard;
      BatchOutput b;
      b.items = Generate(texts, prepared);
      return b;
    } catch (const std::exception& e) {
      std::string what = TorchErrorMessage(e);
      return BatchOutput::Failed(what, what.find("out of memory") != std::string::npos);
    }
  }

  Status Init(const StageConfig& config) {
    const std::string where = config.model.string();
    aoti_ = config.kind == kAotiGenerator;
    desc_.output = &GenerationOutput();
    if (!config.options.empty()) {
      return BadInput(
          "unknown stage option 'stage.options." + KeyForMessage(config.options.begin().key()) + "'",
          "stage.options",
          "the " + config.kind +
              " kind takes no options: the dtype is the export's "
              "(scripts/export-generator.py --dtype)");
    }
    if (!config.generation) {
      return BadInput("'generation' is required: stage kind '" + config.kind + "' generates text",
                      kGenerationParamsKey, "add generation.max_new_tokens (docs/generation.md, 'Settings')");
    }
    gen_ = *config.generation;
    for (const auto& stop : gen_.stop) max_stop_ = std::max(max_stop_, stop.size());
    if (!config.tokenizer) {
      return BadInput(
          "a generator needs stage.tokenizer: pilot tokenizes the prompts and decodes the completions", where,
          "add stage.tokenizer (docs/generation.md, 'A pilot of a generator')");
    }
    tokenizer_ = config.tokenizer;
    tok_ = config.tokenizer_settings;
    if (tok_.truncation != Truncation::kReject) {
      return BadInput("a generator's prompt is never cut: stage.tokenizer.truncation must be 'reject'",
                      "stage.tokenizer.truncation",
                      "remove truncation (a longer prompt is then rejected too_many_tokens)");
    }
    std::string why;
    decoder_ = tokenizer_->Decoder(why);
    if (decoder_.empty()) {
      return BadInput(
          "the tokenizer cannot decode completions: " + why, "stage.tokenizer",
          "give the model's tokenizer.json with a ByteLevel decoder (docs/generation.md, 'Decoding')");
    }
    if (config.threads > 0) at::set_num_threads(config.threads);
    device_ = torch::Device(config.device);
    ResetDevicePeakMemory(device_);
    ModelContract c;
    if (aoti_) {
      PILOT_TRY(LoadPackage(config, c));
    } else {
      try {
        module_ = torch::jit::load(config.model.string(), device_);
        module_.eval();
      } catch (const std::exception& e) {
        std::string message = TorchErrorMessage(e);
        message.erase(0, std::min(message.size(), message.find_first_not_of(" \t\r\n")));
        return BadInput(
            "cannot load the TorchScript model: " + GenText(message.substr(0, message.find('\n')), 300) +
                " (" + LoadFailureContext(config.model) + ")",
            where, kLoadFailureHint);
      }
      try {
        c = GeneratorContractOfModule(module_);
        ModelFootprint f;
        for (const auto& t : module_.parameters(true)) {
          f.parameter_bytes += static_cast<std::uint64_t>(t.numel()) * t.element_size();
          ++f.parameters;
        }
        for (const auto& t : module_.buffers(true)) {
          f.buffer_bytes += static_cast<std::uint64_t>(t.numel()) * t.element_size();
          ++f.buffers;
        }
        footprint_ = f;
      } catch (const std::exception& e) {
        return BadInput("the model's attributes are malformed: " + GenText(TorchErrorMessage(e)), where,
                        "export it with scripts/export-generator.py (docs/generation.md)");
      }
    }
    PILOT_TRY(CheckContract(c, where));
    PILOT_TRY(CheckSettings(where));
    if (tok_.pad_id < 0 || tok_.pad_id >= vocab_) {
      return BadInput("the tokenizer's padding id " + std::to_string(tok_.pad_id) +
                          " is outside the model's vocabulary of " + std::to_string(vocab_),
                      "stage.tokenizer.pad_token", "name a token of the model's vocabulary as pad_token");
    }
    desc_.kind = config.kind;
    desc_.model_sha256 = config.model_sha256;
    desc_.device = config.device;
    desc_.vocab = static_cast<std::uint64_t>(vocab_);
    auto& d = desc_.details;
    d["input_kind"] = "token_ids";
    d["generator_contract"] = 1;
    d["layers"] = layers_;
    d["kv_heads"] = kv_heads_;
    d["head_dim"] = head_dim_;
    d["context"] = context_;
    d["vocab"] = vocab_;
    d["eos_token_ids"] = eos_;
    d["kv_dtype"] = kv_dtype_name_;
    d["kv_bytes_per_token"] = KvBytes(1, 1).value_or(0);  // at most 2^39 within the bounds
    d[kGenerationParamsKey] = GenerationToJson(gen_);
    d["decoder"] = decoder_;
    d["tokenizer"] = config.tokenizer_record;
    // Warm up: a prompt of one token, prefilled and decoded once, checked for the contract's shapes.
    auto t0 = SteadyClock::now();
    try {
      c10::InferenceMode guard;
      for (int i = 0; i < 2; ++i) WarmUp();
    } catch (const std::exception& e) {
      return BadInput("the model fails on a warm-up step: " + GenText(TorchErrorMessage(e), 400), where,
                      "check the model's step against the generator contract (docs/generation.md)");
    }
    d["warmup_ms"] = Ms(t0, SteadyClock::now());
    return {};
  }

#if defined(PILOT_HAVE_AOTI)
  Status LoadPackage(const StageConfig& config, ModelContract& contract) {
    return LoadAotiPackage(config, device_, "scripts/export-generator.py", package_, loader_, contract);
  }
#else
  Status LoadPackage(const StageConfig& config, ModelContract&) {
    return EnvironmentError(
        "the " + config.kind + " kind needs libtorch >= 2.6 (AOTInductor); found libtorch " + TORCH_VERSION +
            " (" + build::kTorchFlavour + " build)",
        config.model.string(), "build against the PyTorch wheel, or use a TorchScript model");
  }
#endif

  Status CheckContract(const ModelContract& c, const std::string& where) {
    auto missing = [&](const std::string& name, const char* type) {
      return BadInput(
          aoti_ ? "the package has no 'pilot." + name + "' metadata (" + type + ")"
                : "the model has no '" + name + "' attribute of type " + type,
          where, "export it with scripts/export-generator.py (docs/generation.md, 'The generator contract')");
    };
    if (!c.generator_contract) return missing("generator_contract", "int");
    if (*c.generator_contract != 1) {
      return BadInput("the model follows generator contract " + std::to_string(*c.generator_contract) +
                          "; this pilot reads contract 1",
                      where, "export it with this pilot's scripts/export-generator.py");
    }
    if (!c.input_kind) return missing("input_kind", "str");
    if (*c.input_kind != "token_ids") {
      return BadInput(
          "a generator's input_kind must be 'token_ids', not '" + GenText(*c.input_kind, 64) + "'", where,
          "export it with scripts/export-generator.py");
    }
    struct Bound {
      const char* name;
      const std::optional<std::int64_t>& value;
      std::int64_t max;
      std::int64_t* dest;
    };
    for (const Bound& b : {Bound{"layers", c.layers, kMaxLayers, &layers_},
                           Bound{"kv_heads", c.kv_heads, kMaxKvHeads, &kv_heads_},
                           Bound{"head_dim", c.head_dim, kMaxHeadDim, &head_dim_},
                           Bound{"context", c.context, kMaxContext, &context_},
                           Bound{"vocab", c.vocab, static_cast<std::int64_t>(kMaxGeneratorVocab), &vocab_}}) {
      if (!b.value) return missing(b.name, "int");
      if (*b.value < 1 || *b.value > b.max) {
        return BadInput("the model's " + std::string(b.name) + " " + std::to_string(*b.value) +
                            " is outside 1.." + std::to_string(b.max),
                        where, "fix the model's contract");
      }
      *b.dest = *b.value;
    }
    if (!c.eos_token_ids) return missing("eos_token_ids", "List[int]");
    if (c.eos_token_ids->size() > kMaxEosTokenIds) {
      return BadInput("the model declares more than " + std::to_string(kMaxEosTokenIds) + " eos_token_ids",
                      where, "fix the model's contract");
    }
    for (std::int64_t e : *c.eos_token_ids) {
      if (e < 0 || e >= vocab_) {
        return BadInput("the model's eos token id " + std::to_string(e) + " is outside its vocabulary of " +
                            std::to_string(vocab_),
                        where, "fix the model's contract");
      }
      eos_.push_back(e);
    }
    if (!c.kv_dtype) return missing("kv_dtype", "str");
    auto dtype = DtypeNamed(*c.kv_dtype);
    if (!dtype) {
      return BadInput(
          "the model's kv_dtype '" + GenText(*c.kv_dtype, 64) + "' is not float32, bfloat16 or float16",
          where, "fix the model's contract");
    }
    kv_dtype_ = *dtype;
    kv_dtype_name_ = *c.kv_dtype;
    return {};
  }

  Status CheckSettings(const std::string& where) {
    (void)where;
    for (std::int64_t id : gen_.stop_token_ids) {
      if (id >= vocab_) {
        return BadInput("generation.stop_token_ids holds " + std::to_string(id) +
                            ", outside the model's vocabulary of " + std::to_string(vocab_),
                        "generation.stop_token_ids", "give ids of the model's tokenizer");
      }
    }
    if (gen_.max_new_tokens >= static_cast<std::uint64_t>(context_)) {
      return BadInput("generation.max_new_tokens " + std::to_string(gen_.max_new_tokens) +
                          " leaves no room for a prompt in the model's context of " +
                          std::to_string(context_),
                      "generation.max_new_tokens", "lower max_new_tokens");
    }
    return {};
  }

  // 2 x layers x KV heads x head dim x positions x slots x dtype bytes; nullopt past 2^64.
  std::optional<std::uint64_t> KvBytes(std::int64_t batch, std::int64_t positions) const {
    std::uint64_t n = kv_dtype_ == torch::kFloat32 ? 8 : 4;
    for (std::int64_t f : {layers_, kv_heads_, head_dim_, positions, batch}) {
      if (f < 0 || __builtin_mul_overflow(n, static_cast<std::uint64_t>(f), &n)) return std::nullopt;
    }
    return n;
  }

  // The cache's bytes, when they fit. On a CPU an allocation the kernel overcommits would be
  // killed when zeroed, not refused: a cache past the memory available throws "out of memory",
  // which fails the batch so that the engine halves it (on a GPU the allocator refuses alike).
  std::uint64_t CacheFits(std::int64_t batch, std::int64_t positions) const {
    const std::optional<std::uint64_t> kv = KvBytes(batch, positions);
    if (!kv || (!device_.is_cuda() && *kv > available_())) {
      throw std::runtime_error("out of memory: the KV cache of " + std::to_string(batch) + " sequences of " +
                               std::to_string(positions) + " positions needs " +
                               (kv ? std::to_string(*kv) + " bytes" : std::string("more than 2^64 bytes")) +
                               ", more than the memory available");
    }
    return *kv;
  }

  torch::Tensor Cache(std::int64_t batch, std::int64_t positions) const {
    return torch::zeros({layers_, batch, kv_heads_, positions, head_dim_},
                        torch::TensorOptions().dtype(kv_dtype_).device(device_));
  }

  // One call of the model's step, its outputs checked against the contract's shapes.
  std::vector<torch::Tensor> Step(const torch::Tensor& ids, const torch::Tensor& positions,
                                  const torch::Tensor& at, const torch::Tensor& k, const torch::Tensor& v) {
    std::vector<torch::Tensor> out;
#if defined(PILOT_HAVE_AOTI)
    if (aoti_) out = loader_->run({ids, positions, at, k, v});
#endif
    if (!aoti_) {
      // The graph executor's profiling and fusion would specialise the step on every new shape
      // (each batch's cache length) and compile again: on a GPU that cost tens of milliseconds a
      // step. The step runs as scripted.
      torch::jit::GraphOptimizerEnabledGuard plain(false);
      torch::jit::IValue r = module_.forward({ids, positions, at, k, v});
      if (!r.isTuple()) throw std::runtime_error("the model's step did not return a tuple");
      for (const auto& e : r.toTupleRef().elements()) {
        if (!e.isTensor()) throw std::runtime_error("the model's step returned something other than tensors");
        out.push_back(e.toTensor());
      }
    }
    if (out.size() != 3) {
      throw std::runtime_error("the model's step returned " + std::to_string(out.size()) +
                               " outputs, expected 3 (logits, new_k, new_v)");
    }
    const std::int64_t b = ids.size(0), t = ids.size(1);
    if (out[0].dim() != 2 || out[0].size(0) != b || out[0].size(1) != vocab_) {
      throw std::runtime_error("the model's logits have shape " + c10::str(out[0].sizes()) + ", expected [" +
                               std::to_string(b) + ", " + std::to_string(vocab_) + "]");
    }
    const std::vector<std::int64_t> want{layers_, b, kv_heads_, t, head_dim_};
    for (int i = 1; i < 3; ++i) {
      if (out[i].sizes().vec() != want || out[i].scalar_type() != kv_dtype_) {
        throw std::runtime_error("the model's " + std::string(i == 1 ? "new_k" : "new_v") + " has shape " +
                                 c10::str(out[i].sizes()) + " of " + c10::toString(out[i].scalar_type()) +
                                 ", expected " + c10::str(c10::IntArrayRef(want)) + " of " + kv_dtype_name_);
      }
    }
    return out;
  }

  void WarmUp() {
    auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device_);
    (void)CacheFits(1, 2);
    auto k = Cache(1, 2), v = Cache(1, 2);
    auto out = Step(torch::zeros({1, 1}, opts), torch::zeros({1, 1}, opts), torch::zeros({1}, opts), k, v);
    k.narrow(3, 0, 1).copy_(out[1]);
    v.narrow(3, 0, 1).copy_(out[2]);
    (void)Step(torch::zeros({1, 1}, opts), torch::ones({1, 1}, opts), torch::zeros({1}, opts), k, v);
  }

  // Takes `id` into `s`, and ends it when it should: an end-of-sequence id (unless
  // ignore_eos), a stop id, a stop string in the text so far, or max_new_tokens.
  void Take(Sequence& s, std::int64_t id) const {
    s.ids.push_back(id);
    if (!gen_.ignore_eos && std::find(eos_.begin(), eos_.end(), id) != eos_.end()) {
      s.finish = "eos";
      return;
    }
    if (std::find(gen_.stop_token_ids.begin(), gen_.stop_token_ids.end(), id) != gen_.stop_token_ids.end()) {
      s.finish = "stop";
      return;
    }
    const std::string piece = tokenizer_->TokenBytes(id);
    s.byte_count += piece.size();
    if (s.byte_count > kMaxCompletionBytes + kMaxStopStringBytes) {  // past what a record holds
      s.finish = "too_long";
      return;
    }
    if (!gen_.stop.empty()) {
      const std::size_t before = s.bytes.size();
      s.bytes += piece;
      // A stop string that ends in the new bytes starts at most its length (and a character
      // completed by them, 3 bytes) before them: the window's own first bytes, where it may cut
      // a character, lie before any such start. Only a match found there decodes the whole.
      const std::size_t window = before > max_stop_ + 8 ? before - max_stop_ - 8 : 0;
      const std::string tail = LossyUtf8(std::string_view(s.bytes).substr(window));
      bool found = false;
      for (const auto& stop : gen_.stop) found = found || tail.find(stop) != std::string::npos;
      if (found) {
        const std::string text = LossyUtf8(s.bytes);
        std::size_t first = std::string::npos;
        for (const auto& stop : gen_.stop) first = std::min(first, text.find(stop));
        s.finish = "stop";
        s.text_end = first;
        return;
      }
    }
    if (s.ids.size() >= gen_.max_new_tokens) s.finish = "length";
  }

  // Each live slot's next token from its row of `logits` (sampling.h), taken into its sequence.
  void TakeRows(const torch::Tensor& logits, const std::vector<std::int64_t>& rows,
                const std::vector<Sequence*>& seqs) {
    torch::Tensor l = logits.to(torch::kCPU, torch::kFloat32).contiguous();  // synchronises
    const float* p = l.data_ptr<float>();
    scratch_.resize(static_cast<std::size_t>(vocab_));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Sequence& s = *seqs[i];
      const TokenChoice c = ChooseToken(p + rows[i] * vocab_, static_cast<std::size_t>(vocab_), gen_, s.key,
                                        s.ids.size(), scratch_.data());
      if (c.id < 0) {
        s.finish = "invalid";
        continue;
      }
      if (c.near_tie) s.near_ties.push_back(s.ids.size());
      Take(s, c.id);
    }
  }

  // Decodes `seqs` (all valid prompts) in `slots` slots over one KV cache sized for the longest
  // prompt plus max_new_tokens. In-flight (`refill`): a finished sequence's slot takes the next
  // waiting prompt at once, prefilled alone. Static: every sequence starts together and the
  // cache is released when the last one ends. Returns the cache's bytes.
  std::uint64_t Decode(std::vector<Sequence>& seqs, const std::vector<const PreparedInput*>& prompts,
                       std::size_t slots, bool refill) {
    const auto max_new = static_cast<std::int64_t>(gen_.max_new_tokens);
    std::int64_t longest = 0;
    for (const auto& s : seqs) longest = std::max(longest, s.prompt_tokens);
    const std::int64_t c = std::min(context_, longest + max_new);
    const auto b = static_cast<std::int64_t>(slots);
    const std::uint64_t kv_bytes = CacheFits(b, c);
    torch::Tensor k_cache = Cache(b, c), v_cache = Cache(b, c);
    auto cpu = torch::TensorOptions().dtype(torch::kInt64);
    // From here: the window's time, its cache allocated and zeroed before.
    const auto start = SteadyClock::now();
    const double call_ms = Ms(call_start_, start);  // token_ms count from the call's entry
    std::vector<Sequence*> in_slot(slots, nullptr);
    std::size_t waiting = 0;  // seqs[waiting..] have not started
    // Prefill: the prompts entering `free` slots, right-padded, each its logits at its last
    // prompt token; a one-place cache, all masked (a new prompt reads no cached entry).
    auto admit = [&](const std::vector<std::size_t>& free) {
      std::vector<std::int64_t> slot_ids, rows;
      std::vector<Sequence*> entering;
      std::int64_t t = 0, prompt_sum = 0;
      for (std::size_t slot : free) {
        if (waiting == seqs.size()) break;
        Sequence& s = seqs[waiting++];
        in_slot[slot] = &s;
        slot_ids.push_back(static_cast<std::int64_t>(slot));
        rows.push_back(static_cast<std::int64_t>(entering.size()));
        entering.push_back(&s);
        t = std::max(t, s.prompt_tokens);
        prompt_sum += s.prompt_tokens;
      }
      if (entering.empty()) return;
      const auto r = static_cast<std::int64_t>(entering.size());
      const auto t0 = SteadyClock::now();
      torch::Tensor ids = torch::full({r, t}, tok_.pad_id, cpu);
      torch::Tensor at = torch::empty({r}, cpu);
      auto ids_a = ids.accessor<std::int64_t, 2>();
      auto at_a = at.accessor<std::int64_t, 1>();
      for (std::int64_t i = 0; i < r; ++i) {
        const auto& p = prompts[entering[static_cast<std::size_t>(i)]->input]->ids;
        for (std::size_t j = 0; j < p.size(); ++j) ids_a[i][static_cast<std::int64_t>(j)] = p[j];
        at_a[i] = entering[static_cast<std::size_t>(i)]->prompt_tokens - 1;
      }
      torch::Tensor positions = torch::arange(t, cpu).repeat({r, 1});
      torch::Tensor none = Cache(r, 1);
      auto out = Step(ids.to(device_), positions.to(device_), at.to(device_), none, none);
      torch::Tensor where = torch::tensor(slot_ids, cpu).to(device_);
      k_cache.narrow(3, 0, t).index_copy_(1, where, out[1]);
      v_cache.narrow(3, 0, t).index_copy_(1, where, out[2]);
      const auto t1 = SteadyClock::now();
      const double ms = Ms(t0, t1);
      for (Sequence* s : entering) {
        s->admitted_ms = Ms(start, t0);
        s->prefill_ms = ms * static_cast<double>(s->prompt_tokens) / static_cast<double>(prompt_sum);
      }
      TakeRows(out[0], rows, entering);
      const double now_ms = Ms(start, SteadyClock::now());
      for (Sequence* s : entering) {
        s->ttft_ms = now_ms - s->admitted_ms;
        s->last_token_ms = now_ms;
        s->token_ms.push_back(call_ms + now_ms);
      }
    };
    std::vector<std::size_t> all(slots);
    for (std::size_t i = 0; i < slots; ++i) all[i] = i;
    admit(all);
    torch::Tensor batch_index = torch::arange(b, cpu).view({b, 1}).to(device_);
    torch::Tensor zero = torch::zeros({b}, cpu).to(device_);
    const double slots_d = static_cast<double>(slots);
    while (true) {
      // A slot whose sequence ended takes the next prompt (in-flight), or stays idle.
      std::vector<std::size_t> free;
      for (std::size_t i = 0; i < slots; ++i) {
        if (in_slot[i] && !in_slot[i]->finish.empty()) in_slot[i] = nullptr;
        if (!in_slot[i]) free.push_back(i);
      }
      if (refill && !free.empty() && waiting < seqs.size()) {
        admit(free);
        continue;  // a prompt may end at its first token: look again
      }
      std::vector<std::int64_t> rows;
      std::vector<Sequence*> live;
      torch::Tensor step_ids = torch::full({b, 1}, tok_.pad_id, cpu), step_pos = torch::zeros({b, 1}, cpu);
      auto ids_a = step_ids.accessor<std::int64_t, 2>();
      auto pos_a = step_pos.accessor<std::int64_t, 2>();
      for (std::size_t i = 0; i < slots; ++i) {
        Sequence* s = in_slot[i];
        if (!s) continue;  // an idle slot rewrites its place 0, which no sequence reads before writing
        ids_a[static_cast<std::int64_t>(i)][0] = s->ids.back();
        pos_a[static_cast<std::int64_t>(i)][0] =
            s->prompt_tokens + static_cast<std::int64_t>(s->ids.size()) - 1;
        rows.push_back(static_cast<std::int64_t>(i));
        live.push_back(s);
      }
      if (live.empty()) break;
      const auto t0 = SteadyClock::now();
      torch::Tensor pos_d = step_pos.to(device_);
      auto out = Step(step_ids.to(device_), pos_d, zero, k_cache, v_cache);
      using torch::indexing::Slice;
      k_cache.index_put_({Slice(), batch_index, Slice(), pos_d}, out[1].permute({1, 3, 0, 2, 4}));
      v_cache.index_put_({Slice(), batch_index, Slice(), pos_d}, out[2].permute({1, 3, 0, 2, 4}));
      TakeRows(out[0], rows, live);
      const auto t1 = SteadyClock::now();
      const double step_ms = Ms(t0, t1), at_ms = Ms(start, t1);
      const double n_live = static_cast<double>(live.size());
      for (Sequence* s : live) {
        s->decode_ms += step_ms / n_live;
        s->slot_steps += slots_d / n_live;
        s->last_token_ms = at_ms;
        s->token_ms.push_back(call_ms + at_ms);
      }
    }
    return kv_bytes;
  }

  std::vector<ItemOutput> Generate(const std::vector<std::string_view>& texts,
                                   const std::vector<const PreparedInput*>* prepared) {
    if (!prepared && gen_.temperature > 0) {
      // Each draw is keyed by the item's id, which only a prepared call carries: sampling
      // under another key would give another completion than the item's own.
      throw std::runtime_error("sampling needs each prompt's id, and this call came unprepared");
    }
    call_start_ = SteadyClock::now();
    std::vector<ItemOutput> outputs(texts.size());
    std::vector<PreparedInput> own(prepared ? 0 : texts.size());
    std::vector<const PreparedInput*> prompts(texts.size());
    std::vector<Sequence> seqs;
    const auto max_new = static_cast<std::int64_t>(gen_.max_new_tokens);
    for (std::size_t k = 0; k < texts.size(); ++k) {
      const PreparedInput* p = prepared ? (*prepared)[k] : &own[k];
      if (!prepared && !Prepare(texts[k], own[k]))
        throw std::runtime_error("the tokenizer failed on a prompt");
      prompts[k] = p;
      ItemOutput& o = outputs[k];
      if (!p->error.empty()) {
        o.error = p->error;
        continue;
      }
      o.tokens = p->tokens;
      o.truncated = p->truncated;
      if (tok_.truncation == Truncation::kReject && p->tokens > tok_.max_length) {
        o.reason = std::string(reason::kTooManyTokens);
        o.error = std::to_string(p->tokens) + " tokens, more than stage.tokenizer.max_length " +
                  std::to_string(tok_.max_length);
        continue;
      }
      if (p->ids.empty()) {
        o.reason = std::string(reason::kEmptyInput);
        o.error = "the prompt gives no tokens";
        continue;
      }
      if (auto bad = std::find_if(p->ids.begin(), p->ids.end(),
                                  [&](std::int64_t id) { return id < 0 || id >= vocab_; });
          bad != p->ids.end()) {
        o.error = "the prompt's token id " + std::to_string(*bad) + " is outside the model's vocabulary of " +
                  std::to_string(vocab_) + ": the tokenizer does not match the model";
        continue;
      }
      if (static_cast<std::int64_t>(p->ids.size()) + max_new > context_) {
        o.reason = std::string(reason::kPromptTooLong);
        o.error = std::to_string(p->ids.size()) + " prompt tokens plus generation.max_new_tokens " +
                  std::to_string(max_new) + " exceed the model's context of " + std::to_string(context_);
        continue;
      }
      Sequence s;
      s.input = k;
      s.prompt_tokens = static_cast<std::int64_t>(p->ids.size());
      s.key = SamplingKeyFor(gen_.seed, p->key);
      seqs.push_back(std::move(s));
    }
    if (seqs.empty()) return outputs;
    // The slots: the batch size the caller set, never more than the prompts.
    const std::size_t slots = slots_ == 0 ? seqs.size() : std::min(slots_, seqs.size());
    std::vector<std::uint64_t> kv(seqs.size(), 0);
    if (gen_.batching == "static") {
      for (std::size_t begin = 0; begin < seqs.size(); begin += slots) {
        const std::size_t end = std::min(seqs.size(), begin + slots);
        std::vector<Sequence> part(std::make_move_iterator(seqs.begin() + static_cast<std::ptrdiff_t>(begin)),
                                   std::make_move_iterator(seqs.begin() + static_cast<std::ptrdiff_t>(end)));
        const std::uint64_t bytes = Decode(part, prompts, end - begin, /*refill=*/false);
        for (std::size_t i = begin; i < end; ++i) {
          seqs[i] = std::move(part[i - begin]);
          kv[i] = bytes;
        }
      }
    } else {
      const std::uint64_t bytes = Decode(seqs, prompts, slots, /*refill=*/true);
      std::fill(kv.begin(), kv.end(), bytes);
    }
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      Sequence& s = seqs[i];
      ItemOutput& o = outputs[s.input];
      if (s.finish == "invalid") {
        o.reason = std::string(reason::kInvalidOutput);
        o.error = "the model's logits are not finite after " + std::to_string(s.ids.size()) + " tokens";
        continue;
      }
      if (s.finish == "too_long") {
        o.reason = std::string(reason::kInvalidOutput);
        o.error = "the completion passed " + std::to_string(kMaxCompletionBytes) + " bytes after " +
                  std::to_string(s.ids.size()) + " tokens, more than a record holds";
        continue;
      }
      o.ok = true;
      Completion cpl;
      cpl.ids = s.ids;
      cpl.finish_reason = s.finish;
      // The text: the tokens before an end-of-sequence or stop id, cut before a stop string.
      std::vector<std::int64_t> shown = s.ids;
      if (s.finish != "length" && s.text_end == std::string::npos) shown.pop_back();
      cpl.text = tokenizer_->DecodeIds(shown);
      if (s.text_end != std::string::npos) cpl.text = LossyUtf8(s.bytes).substr(0, s.text_end);
      cpl.ttft_ms = s.ttft_ms;
      if (s.ids.size() >= 2)
        cpl.tpot_ms = (s.last_token_ms - s.admitted_ms - s.ttft_ms) / static_cast<double>(s.ids.size() - 1);
      cpl.prefill_ms = s.prefill_ms;
      cpl.decode_ms = s.decode_ms;
      cpl.kv_cache_bytes = kv[i];
      cpl.slot_steps = s.slot_steps;
      cpl.near_tie_steps = s.near_ties;
      cpl.token_ms = s.token_ms;
      cpl.token_ms.resize(s.ids.size(), s.token_ms.empty() ? 0.0 : s.token_ms.back());  // one per id
      o.completion = std::move(cpl);
    }
    return outputs;
  }

  torch::jit::Module module_;
  std::optional<ModelFootprint> footprint_;
#if defined(PILOT_HAVE_AOTI)
  std::unique_ptr<PrivatePackage> package_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
#endif
  bool aoti_ = false;
  torch::Device device_;
  StageDescription desc_;
  GenerationSettings gen_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  TokenizerSettings tok_;
  std::string decoder_;
  // The host memory a CPU cache may take, in bytes (everything when the kernel does not say).
  std::function<std::uint64_t()> available_ = [] {
    const std::uint64_t n = AvailableMemoryBytes(RealFileSystem());
    return n == 0 ? ~std::uint64_t{0} : n;
  };
  std::int64_t layers_ = 0, kv_heads_ = 0, head_dim_ = 0, context_ = 0, vocab_ = 0;
  std::vector<std::int64_t> eos_;
  std::size_t max_stop_ = 0;            // the longest stop string's bytes
  std::size_t slots_ = 0;               // SetConcurrency's; 0: every prompt of a call at once
  SteadyClock::time_point call_start_;  // the current call's entry: token_ms counts from it
  std::vector<std::size_t> scratch_;
  torch::Dtype kv_dtype_ = torch::kFloat32;
  std::string kv_dtype_name_;
};

}  // namespace

Result<std::unique_ptr<Stage>> CreateGeneratorStage(const StageConfig& config) {
  return GeneratorStage::Create(config);
}

}  // namespace pilot
