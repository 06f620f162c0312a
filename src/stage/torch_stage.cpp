// The torch stage kinds. A model declares its own input contract (and labels, or dim):
//   "torchscript-classifier", "torchscript-embedding": a TorchScript module (torch.jit.save),
//       the contract in module attributes;
//   "aoti-classifier", "aoti-embedding": an AOTInductor package (.pt2, from
//       torch._inductor.aoti_compile_and_package), the contract in the package's metadata under
//       "pilot.<name>" (strings; labels as a JSON array). Built where libtorch >= 2.6; elsewhere
//       these kinds refuse with exit 3, naming the libtorch found.
// A classifier's forward returns [batch, labels] probabilities or logits; an embedding's
// [batch, dim] float vectors.
//
// The contract:
//   input_kind: str            "text" (forward(texts: List[str]); TorchScript only),
//                              "hashed_char_ngrams" (forward(ids: Tensor[int64], offsets: Tensor[int64])) or
//                              "token_ids" (forward(input_ids: Tensor[int64] [B, T],
//                              attention_mask: Tensor[int64] [B, T][, token_type_ids [B, T]]),
//                              tokenized by stage.tokenizer; docs/tokenizers.md)
//   token_type_ids: bool       token_ids: forward takes token_type_ids as its third argument
//   ngram_min, ngram_max, buckets, max_chars: int   for hashed_char_ngrams
//   classifier: labels: List[str] (the categories, in output column order);
//               output: str, "probabilities" (default) or "logits"
//   embedding:  dim: int (the vector length)
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define PILOT_HAVE_AOTI 1
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/package_layout.h"
#endif

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>

#include "pilot/build_flavour.h"
#include "pilot/escape.h"
#include "pilot/limits.h"
#include "pilot/model_contract.h"
#include "pilot/package_layout.h"
#include "pilot/reasons.h"
#include "pilot/text_features.h"
#include "pilot/tokenizer.h"
#include "pilot/torch_stage.h"
#include "pilot/utf8.h"
#include "torch_contract.h"
#include "torch_device.h"
#include "torch_package.h"

namespace pilot {

ModelContract ContractOfModule(const torch::jit::Module& m) {
  ModelContract c;
  if (m.hasattr("labels")) {
    c.labels.emplace();
    for (const auto& l : m.attr("labels").toListRef()) c.labels->push_back(l.toStringRef());
  }
  for (auto [name, dest] :
       {std::pair{"dim", &c.dim}, std::pair{"ngram_min", &c.ngram_min}, std::pair{"ngram_max", &c.ngram_max},
        std::pair{"buckets", &c.buckets}, std::pair{"max_chars", &c.max_chars}}) {
    if (m.hasattr(name)) *dest = m.attr(name).toInt();
  }
  if (m.hasattr("input_kind")) c.input_kind = m.attr("input_kind").toStringRef();
  if (m.hasattr("token_type_ids")) {
    const auto v = m.attr("token_type_ids");
    c.token_type_ids = v.isBool() ? static_cast<std::int64_t>(v.toBool()) : v.toInt();
  }
  if (m.hasattr("output")) c.output = m.attr("output").toStringRef();
  return c;
}

std::string LoadFailureContext(const std::filesystem::path& model) {
  std::string facts = "the file could not be read again";
  if (auto file = RealFileSystem().OpenRead(model, /*follow_symlinks=*/true); file.ok())
    facts = DescribeTorchArchive(ReadTorchArchiveFacts(*file.value(), model.string()));
  return facts + "; this pilot runs libtorch " + TORCH_VERSION + " (" + build::kTorchFlavour + " build)";
}

const char* const kLoadFailureHint =
    "a model saved by a newer torch can use operators this libtorch lacks "
    "(aten::scaled_dot_product_attention "
    "came with 2.0): run it with a pilot built against a libtorch at least as new as the one that saved it "
    "(docs/building.md), or export it with the torch this pilot runs; save with "
    "_extra_files={'torch_version': torch.__version__} so that this message names it (docs/models.md)";

std::string TorchErrorMessage(const std::exception& e) {
  if (const auto* c10e = dynamic_cast<const c10::Error*>(&e)) return c10e->what_without_backtrace();
  return e.what();
}

void ToFloatingDtype(torch::jit::Module& m, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  for (at::Tensor t : m.parameters(/*recurse=*/true))
    if (t.is_floating_point() && t.scalar_type() != dtype) t.set_data(t.to(dtype));
  for (at::Tensor t : m.buffers(/*recurse=*/true))
    if (t.is_floating_point() && t.scalar_type() != dtype) t.set_data(t.to(dtype));
}

std::string HeldDtype(const torch::jit::Module& m) {
  std::set<std::string> held;
  auto name = [](at::ScalarType t) -> std::string {
    switch (t) {
      case at::kFloat:
        return "float32";
      case at::kBFloat16:
        return "bfloat16";
      case at::kHalf:
        return "float16";
      case at::kDouble:
        return "float64";
      default:
        return c10::toString(t);
    }
  };
  for (const at::Tensor& t : m.parameters(/*recurse=*/true))
    if (t.is_floating_point()) held.insert(name(t.scalar_type()));
  for (const at::Tensor& t : m.buffers(/*recurse=*/true))
    if (t.is_floating_point()) held.insert(name(t.scalar_type()));
  std::string out;
  for (const auto& h : held) out += (out.empty() ? "" : "+") + h;
  return out.empty() ? "none" : out;
}

namespace {

// c10 errors carry a C++ backtrace in what(); users need the message alone.
std::string Message(const std::exception& e) { return TorchErrorMessage(e); }

// Text that came from a model or a package (or an error quoting it), fit for one line of a
// message: control bytes escaped, at most `max` bytes.
std::string Untrusted(std::string_view text, std::size_t max = 200) {
  return EscapeTerminal(TruncateUtf8(text, max));
}

// A TorchScript failure quotes the script's traceback before the error itself: keep the error.
std::string Essential(const std::string& message) {
  std::string_view m(message);
  if (auto at = m.rfind("RuntimeError: "); at != std::string_view::npos) m = m.substr(at + 14);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.remove_suffix(1);
  if (auto nl = m.find('\n'); nl != std::string_view::npos) m = m.substr(0, nl);
  return std::string(m);
}

bool IsAoti(const std::string& kind) { return kind == kAotiClassifier || kind == kAotiEmbedding; }

}  // namespace

#if defined(PILOT_HAVE_AOTI)
// The package's compiled library resolves libtorch's C shim (aoti_torch_*) from the global
// scope, and the torch module was loaded RTLD_LOCAL: promote the libtorch libraries that
// are already loaded (RTLD_NOLOAD loads nothing new).
//
// The library also names libtorch.so among its dependencies (inductor links it), though every
// symbol it takes is in libtorch_cpu and libc10 (libtorch_cuda on a GPU). A build that links
// libtorch_cpu alone has not loaded the wheel's libtorch.so, which would load libtorch_cuda and
// the CUDA libraries, and the loader would search the system for the name (and find Debian's
// libtorch 1.13 where it is installed). So that name is answered by libpilot-libtorch-name.so,
// built beside libpilot-torch.so: an empty library whose soname is libtorch.so.
void ExposeLibtorchSymbols() {
  for (const char* lib :
       {"libc10.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so", "libtorch.so"}) {
    if (void* h = ::dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) (void)h;  // kept open: stays global
  }
  if (::dlopen("libtorch.so", RTLD_NOW | RTLD_NOLOAD) != nullptr) return;
  // Beside the object this code is in: libpilot-torch.so, or a test binary linking it.
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&ExposeLibtorchSymbols), &self) == 0 || self.dli_fname == nullptr)
    return;
  const auto stub = std::filesystem::path(self.dli_fname).parent_path() / "libpilot-libtorch-name.so";
  std::error_code ec;
  if (std::filesystem::is_regular_file(stub, ec))
    (void)::dlopen(stub.c_str(), RTLD_NOW | RTLD_GLOBAL);  // kept open: stays global
}

Status LoadAotiPackage(const StageConfig& config, const torch::Device& device,
                       const std::string& export_script, std::unique_ptr<PrivatePackage>& package,
                       std::unique_ptr<torch::inductor::AOTIModelPackageLoader>& loader,
                       ModelContract& contract) {
  const std::string where = config.model.string();
  // The sha256 first (on a private copy), then the metadata, then the native code.
  auto copy = PrivatePackage::Make(config.model, config.model_sha256);
  if (!copy.ok()) return copy.error();
  package = std::move(copy.value());
  {
    // What libtorch's loader would unpack, checked first (include/pilot/package_layout.h).
    auto file = RealFileSystem().OpenRead(package->file(), false);
    if (!file.ok()) return file.error();
    auto entries = ListZipEntries(*file.value(), where);
    if (!entries.ok()) return entries.error();
    if (Status st = CheckPackageLayout(entries.value(), where); !st.ok()) return st;
  }
  std::unordered_map<std::string, std::string> meta;
  try {
    meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package->file().string(),
                                                                               "model");
  } catch (const std::exception& e) {
    return BadInput("cannot read the .pt2 package: " + Untrusted(Message(e)), where,
                    "give a package written by torch._inductor.aoti_compile_and_package");
  }
  auto dev = meta.find("AOTI_DEVICE_KEY");
  const std::string built_for = dev == meta.end() ? "" : dev->second;
  const std::string running_on = device.is_cuda() ? "cuda" : "cpu";
  if (built_for != running_on) {
    return BadInput("the package was compiled for device '" + Untrusted(built_for, 64) +
                        "' but the stage runs on '" + running_on + "'",
                    where,
                    "export the model for " + running_on + " (" + export_script + " --device " + running_on +
                        "), or choose the matching --device");
  }
  auto read =
      ContractFromPackageMetadata(std::map<std::string, std::string>(meta.begin(), meta.end()), where);
  if (!read.ok()) return read.error();
  contract = std::move(read.value());
  ExposeLibtorchSymbols();
  try {
    c10::DeviceIndex index = device.is_cuda() && device.has_index() ? device.index() : -1;
    loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package->file().string(), "model",
                                                                       false, 1, index);
  } catch (const std::exception& e) {
    return BadInput(
        "cannot load the .pt2 package: " + Untrusted(Message(e)), where,
        "a package is tied to the torch version (" + std::string(TORCH_VERSION) +
            " here), the device and the CPU it was compiled for: export it again on this machine");
  }
  return {};
}
#endif

namespace {

class TorchStage : public Stage {
 public:
  static Result<std::unique_ptr<Stage>> Create(const StageConfig& config) {
    auto stage = std::unique_ptr<TorchStage>(new TorchStage());
    if (Status st = stage->Init(config); !st.ok()) return st.error();
    return std::unique_ptr<Stage>(std::move(stage));
  }

  const StageDescription& Describe() const override { return desc_; }
  std::optional<double> PeakDeviceMemoryMb() const override { return DevicePeakMemoryMb(device_); }
  std::optional<ModelFootprint> Footprint() const override { return footprint_; }

  // A failure of the forward pass fails the batch; the engine bisects it.
  BatchOutput Process(const std::vector<std::string_view>& texts) override { return Run(texts, nullptr); }

  // Hashed n-grams are computed here, on the engine's workers; the text contract has no
  // featurisation of its own (the model takes the strings).
  bool Prepare(std::string_view text, PreparedInput& out) const override {
    if (input_kind_ == "token_ids") return Tokenize(text, out);
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
  // The text's token ids under the pilot's settings (never throws: false on a failure, and
  // Process tokenizes again, where a failure fails the batch).
  bool Tokenize(std::string_view text, PreparedInput& out) const {
    if (!tokenizer_) return false;
    try {
      TokenizedText t = EncodeText(*tokenizer_, tok_, text);
      out.error = std::move(t.error);
      out.ids = std::move(t.ids);
      out.type_ids = std::move(t.type_ids);
      out.tokens = t.tokens;
      out.truncated = t.truncated;
      return true;
    } catch (const std::exception&) {
      out = PreparedInput();
      return false;
    }
  }

  BatchOutput Run(const std::vector<std::string_view>& texts,
                  const std::vector<const PreparedInput*>* prepared) {
    try {
      BatchOutput b;
      batch_tokens_ = batch_padded_ = 0;
      b.items = Forward(texts, prepared);
      b.input_tokens = batch_tokens_;
      b.padded_tokens = batch_padded_;
      return b;
    } catch (const std::exception& e) {
      std::string what = Message(e);
      return BatchOutput::Failed(what, what.find("out of memory") != std::string::npos);
    }
  }

  TorchStage() : device_(torch::kCPU) {}

  Status Init(const StageConfig& config) {
    const std::string where = config.model.string();
    const bool classifies = config.kind == kTorchScriptClassifier || config.kind == kAotiClassifier;
    aoti_ = IsAoti(config.kind);
    desc_.output = classifies ? &ClassificationOutput() : &EmbeddingOutput();
    for (const auto& [key, value] : config.options.items()) {
      if (key == "dtype") {
        auto dtype = value.is_string() ? DtypeFromName(value.get<std::string>()) : std::nullopt;
        if (!dtype) {
          return BadInput(
              "'stage.options.dtype' must be one of float32, bfloat16, float16", "stage.options.dtype",
              "float32 is the default; the others halve the model's weights where the device supports them");
        }
        dtype_ = *dtype;
        dtype_name_ = value.get<std::string>();
        dtype_given_ = true;
        continue;
      }
      if (key != "min_confidence" || !classifies) {
        return BadInput("unknown stage option 'stage.options." + key + "'", "stage.options",
                        classifies ? "the " + config.kind + " kind takes: min_confidence, dtype"
                                   : "the " + config.kind + " kind takes: dtype");
      }
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1) {
        return BadInput("'stage.options.min_confidence' must be a number in [0, 1]", "stage.options");
      }
      desc_.min_confidence = value.get<double>();
    }
    if (aoti_ && dtype_ != torch::kFloat32) {
      return BadInput("'stage.options.dtype' " + dtype_name_ +
                          " cannot apply to a .pt2 package: its dtype is compiled in",
                      config.model.string(),
                      "export the package in " + dtype_name_ + ", or use the TorchScript model");
    }
    tokenizer_ = config.tokenizer;
    tok_ = config.tokenizer_settings;
    if (config.threads > 0) at::set_num_threads(config.threads);
    at::manual_seed(config.seed);
    device_ = torch::Device(config.device);
    ResetDevicePeakMemory(device_);
    ModelContract contract;
    if (aoti_) {
      if (Status st = LoadPackage(config, contract); !st.ok()) return st;
    } else {
      try {
        module_ = torch::jit::load(config.model.string(), device_);
        module_.eval();
      } catch (const std::exception& e) {
        // The first line that says something: libtorch opens some messages with a blank one.
        std::string why = Message(e);
        why.erase(0, std::min(why.size(), why.find_first_not_of(" \t\r\n")));
        return BadInput(
            "cannot load the TorchScript model: " + Untrusted(why.substr(0, why.find('\n')), 300) + " (" +
                LoadFailureContext(config.model) + ")",
            where, kLoadFailureHint);
      }
      if (dtype_given_) {
        try {
          ToFloatingDtype(module_, dtype_);
        } catch (const std::exception& e) {
          return DtypeRefused(config, Message(e));
        }
      }
      try {
        held_dtype_ = HeldDtype(module_);
      } catch (const std::exception&) {  // a module that cannot list them: not recorded
        held_dtype_.clear();
      }
      try {
        ModelFootprint f;
        for (const auto& t : module_.parameters(/*recurse=*/true)) {
          f.parameter_bytes += static_cast<std::uint64_t>(t.numel()) * t.element_size();
          ++f.parameters;
        }
        for (const auto& t : module_.buffers(/*recurse=*/true)) {
          f.buffer_bytes += static_cast<std::uint64_t>(t.numel()) * t.element_size();
          ++f.buffers;
        }
        footprint_ = f;
      } catch (const std::exception&) {  // a module that cannot list them: no footprint, no failure
        footprint_.reset();
      }
      try {
        contract = ContractOfModule(module_);
      } catch (const std::exception& e) {  // an attribute of another type than the contract's
        return BadInput("the model's attributes are malformed: " + Untrusted(Message(e)), where,
                        "see docs/models.md, 'The stage and bringing your own model'");
      }
    }
    if (Status st = CheckContract(contract, classifies, where); !st.ok()) return st;
    if (input_kind_ == "token_ids" && !tokenizer_) {
      return BadInput("the model takes token_ids, and the parameters give no stage.tokenizer", where,
                      "add stage.tokenizer: the model's tokenizer file, pinned by sha256, and max_length "
                      "(docs/tokenizers.md, 'In a pilot')");
    }
    if (input_kind_ != "token_ids" && tokenizer_) {
      return BadInput("stage.tokenizer is given, but the model's input_kind is '" +
                          Untrusted(input_kind_, 64) + "', not token_ids",
                      where, "remove stage.tokenizer, or give a model that takes token_ids");
    }
    desc_.kind = config.kind;
    desc_.model_sha256 = config.model_sha256;
    desc_.device = config.device;
    desc_.details["input_kind"] = input_kind_;
    desc_.details["dtype"] = dtype_name_;
    if (!held_dtype_.empty()) desc_.details["held_dtype"] = held_dtype_;
    if (classifies) desc_.details["output"] = logits_ ? "logits" : "probabilities";
    if (!classifies) desc_.details["dim"] = desc_.dim;
    if (input_kind_ == "token_ids") {
      desc_.details["token_type_ids"] = type_ids_;
      desc_.details["tokenizer"] = config.tokenizer_record;
    }
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
      if ((!out.ok || out.items.size() != 1 || !out.items[0].ok) && dtype_given_ &&
          dtype_ != torch::kFloat32 && !aoti_) {
        // The dtype is at fault only if the same model runs in float32; otherwise the model is.
        bool float32_runs = false;
        try {
          ToFloatingDtype(module_, torch::kFloat32);
          auto again = Process({std::string_view("warm up")});
          float32_runs = again.ok && again.items.size() == 1 && again.items[0].ok;
        } catch (const std::exception&) {
          float32_runs = false;
        }
        if (float32_runs) return DtypeRefused(config, error);
      }
      if (!out.ok || out.items.size() != 1 || !out.items[0].ok) {
        return BadInput("the model fails on a warm-up input: " + error, where,
                        "check the model's forward() against its declared input_kind");
      }
    }
    desc_.details["warmup_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {};
  }

#if defined(PILOT_HAVE_AOTI)
  Status LoadPackage(const StageConfig& config, ModelContract& contract) {
    return LoadAotiPackage(config, device_, "scripts/export-pt2.py", package_, loader_, contract);
  }
#else
  Status LoadPackage(const StageConfig& config, ModelContract&) {
    return EnvironmentError("the " + config.kind +
                                " kind needs libtorch >= 2.6 (AOTInductor); found libtorch " + TORCH_VERSION +
                                " (" + build::kTorchFlavour + " build)",
                            config.model.string(),
                            "build against the PyTorch wheel, the default (docs/building.md, 'Build "
                            "flavours'), or use a TorchScript model");
  }
#endif

  // A dtype this device or this libtorch cannot run the model in: the environment's limit
  // (exit 3), named with what libtorch said.
  Status DtypeRefused(const StageConfig& config, const std::string& why) const {
    return EnvironmentError("the model cannot run in " + dtype_name_ + " on " + config.device +
                                " with libtorch " + TORCH_VERSION + " (" + build::kTorchFlavour +
                                " build): " + Untrusted(Essential(why)),
                            "stage.options.dtype",
                            "use float32 here, or a device and libtorch that support " + dtype_name_ +
                                " (`pilot doctor` checks the model in the configured dtype)");
  }

  static std::optional<torch::Dtype> DtypeFromName(const std::string& name) {
    if (name == "float32") return torch::kFloat32;
    if (name == "bfloat16") return torch::kBFloat16;
    if (name == "float16") return torch::kFloat16;
    return std::nullopt;
  }

  Status CheckContract(const ModelContract& c, bool classifies, const std::string& where) {
    auto missing = [&](const std::string& name, const char* type) {
      return BadInput(
          aoti_ ? "the package has no 'pilot." + name + "' metadata (" + type + ")"
                : "the model has no '" + name + "' attribute of type " + type,
          where,
          aoti_ ? "export it with scripts/export-pt2.py, or add the metadata (docs/models.md, 'Models "
                  "as .pt2 packages')"
                : "declare it on the module before saving (see docs/models.md, 'The stage "
                  "and bringing your own model')");
    };
    if (classifies) {
      if (!c.labels) return missing("labels", "List[str]");
      if (Status st = CheckLabels(*c.labels, where, missing); !st.ok()) return st;
    } else {
      if (!c.dim) return missing("dim", "int");
      if (*c.dim < 1 || *c.dim > static_cast<std::int64_t>(limits::kEmbeddingDim)) {
        return BadInput("the model's dim " + std::to_string(*c.dim) + " is outside 1.." +
                            std::to_string(limits::kEmbeddingDim),
                        where, "fix the model's 'dim'");
      }
      desc_.dim = static_cast<std::size_t>(*c.dim);
    }
    if (!c.input_kind) return missing("input_kind", "str");
    input_kind_ = *c.input_kind;
    if (c.output && *c.output != "logits" && *c.output != "probabilities") {
      return BadInput("unknown output '" + Untrusted(*c.output, 64) + "'", where,
                      "use 'probabilities' (the default) or 'logits'");
    }
    logits_ = c.output && *c.output == "logits";
    if (input_kind_ == "hashed_char_ngrams") {
      if (!c.ngram_min) return missing("ngram_min", "int");
      if (!c.ngram_max) return missing("ngram_max", "int");
      if (!c.max_chars) return missing("max_chars", "int");
      if (!c.buckets) return missing("buckets", "int");
      const std::int64_t ngram_min = *c.ngram_min, ngram_max = *c.ngram_max, max_chars = *c.max_chars;
      contract_.buckets = *c.buckets;
      contract_.ngram_min = static_cast<int>(std::clamp<std::int64_t>(ngram_min, 0, kMaxNgram + 1));
      contract_.ngram_max = static_cast<int>(std::clamp<std::int64_t>(ngram_max, 0, kMaxNgram + 1));
      contract_.max_chars = static_cast<int>(std::clamp<std::int64_t>(max_chars, 0, kMaxChars + 1));
      // Checked before any narrowing: buckets = 2^32 would become 0 as a 32-bit modulus.
      if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > kMaxNgram || contract_.buckets < 1 ||
          contract_.buckets > kMaxBuckets || max_chars < 1 || max_chars > kMaxChars) {
        return BadInput("the model's n-gram contract is out of range (need 1 <= ngram_min <= ngram_max <= " +
                            std::to_string(kMaxNgram) + ", 1 <= buckets <= " + std::to_string(kMaxBuckets) +
                            ", 1 <= max_chars <= " + std::to_string(kMaxChars) + ")",
                        where, "fix the model's contract");
      }
    } else if (input_kind_ == "token_ids") {
      type_ids_ = c.token_type_ids && *c.token_type_ids != 0;
    } else if (input_kind_ == "text" && aoti_) {
      return BadInput("input_kind 'text' cannot be exported to a .pt2 package (strings are not tensors)",
                      where, "use 'hashed_char_ngrams', or a TorchScript model for text input");
    } else if (input_kind_ != "text") {
      return BadInput("unknown input_kind '" + Untrusted(input_kind_, 64) + "'", where,
                      "use 'text', 'hashed_char_ngrams' or 'token_ids'");
    }
    return {};
  }

  template <typename Missing>
  Status CheckLabels(const std::vector<std::string>& labels, const std::string& where, Missing missing) {
    if (labels.empty()) return missing("labels", "List[str] (non-empty)");
    // Labels go into every result record: they must be text, short, and distinct.
    std::set<std::string> distinct;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const std::string& l = labels[i];
      if (l.empty() || l.size() > 256 || !CheckUtf8(l).valid ||
          std::any_of(l.begin(), l.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
        return BadInput(
            "the model's label " + std::to_string(i) + " is not 1-256 bytes of printable UTF-8 text", where,
            "labels are categories written into every result record");
      }
      if (!distinct.insert(l).second) {
        return BadInput("the model's label " + std::to_string(i) + " appears twice", where,
                        "labels must be distinct");
      }
    }
    desc_.labels = labels;
    return {};
  }

  // One batch of tokenized inputs, padded to its longest (rounded up to pad_to_multiple_of).
  torch::Tensor CallTokens(const std::vector<const PreparedInput*>& batch) {
    std::size_t longest = 1;
    for (const auto* p : batch) longest = std::max(longest, p->ids.size());
    if (tok_.pad_to_multiple_of > 1) {
      longest = (longest + tok_.pad_to_multiple_of - 1) / tok_.pad_to_multiple_of * tok_.pad_to_multiple_of;
    }
    const auto b = static_cast<std::int64_t>(batch.size());
    const auto t = static_cast<std::int64_t>(longest);
    batch_padded_ = static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(t);
    for (const auto* p : batch) batch_tokens_ += p->ids.size();
    auto opts = torch::TensorOptions().dtype(torch::kInt64);
    torch::Tensor ids = torch::full({b, t}, tok_.pad_id, opts);
    torch::Tensor mask = torch::zeros({b, t}, opts);
    torch::Tensor types = torch::zeros({b, t}, opts);
    auto ids_a = ids.accessor<std::int64_t, 2>();
    auto mask_a = mask.accessor<std::int64_t, 2>();
    auto types_a = types.accessor<std::int64_t, 2>();
    for (std::int64_t i = 0; i < b; ++i) {
      const PreparedInput& p = *batch[static_cast<std::size_t>(i)];
      for (std::size_t j = 0; j < p.ids.size(); ++j) {
        ids_a[i][static_cast<std::int64_t>(j)] = p.ids[j];
        mask_a[i][static_cast<std::int64_t>(j)] = 1;
        if (j < p.type_ids.size()) types_a[i][static_cast<std::int64_t>(j)] = p.type_ids[j];
      }
    }
    std::vector<torch::Tensor> args{ids.to(device_), mask.to(device_)};
    if (type_ids_) args.push_back(types.to(device_));
#if defined(PILOT_HAVE_AOTI)
    if (aoti_) {
      std::vector<torch::Tensor> out = loader_->run(args);
      if (out.size() != 1)
        throw std::runtime_error("the package returned " + std::to_string(out.size()) +
                                 " outputs, expected 1");
      return out[0];
    }
#endif
    std::vector<torch::jit::IValue> inputs(args.begin(), args.end());
    torch::jit::IValue result = module_.forward(inputs);
    if (!result.isTensor()) throw std::runtime_error("the model's forward() did not return a Tensor");
    return result.toTensor();
  }

  torch::Tensor Call(const std::vector<std::string_view>& texts,
                     const std::vector<const PreparedInput*>* prepared) {
    if (input_kind_ == "text") {
      c10::List<std::string> list;
      for (auto t : texts) list.push_back(std::string(t));
      torch::jit::IValue result = module_.forward({list});
      if (!result.isTensor()) throw std::runtime_error("the model's forward() did not return a Tensor");
      return result.toTensor();
    }
    std::vector<std::int64_t> ids;  // outlive forward(): from_blob does not copy on CPU
    std::vector<std::int64_t> offsets;
    for (std::size_t k = 0; k < texts.size(); ++k) {
      offsets.push_back(static_cast<std::int64_t>(ids.size()));
      if (prepared) {
        ids.insert(ids.end(), (*prepared)[k]->ids.begin(), (*prepared)[k]->ids.end());
      } else {
        AppendNgramIds(texts[k], contract_, ids);
      }
    }
    auto opts = torch::TensorOptions().dtype(torch::kInt64);
    auto ids_t = torch::from_blob(ids.data(), {static_cast<std::int64_t>(ids.size())}, opts).to(device_);
    auto offsets_t =
        torch::from_blob(offsets.data(), {static_cast<std::int64_t>(offsets.size())}, opts).to(device_);
#if defined(PILOT_HAVE_AOTI)
    if (aoti_) {
      std::vector<torch::Tensor> out = loader_->run({ids_t, offsets_t});
      if (out.size() != 1)
        throw std::runtime_error("the package returned " + std::to_string(out.size()) +
                                 " outputs, expected 1");
      return out[0];
    }
#endif
    torch::jit::IValue result = module_.forward({ids_t, offsets_t});
    if (!result.isTensor()) throw std::runtime_error("the model's forward() did not return a Tensor");
    return result.toTensor();
  }

  // Token ids: the items over max_length (truncation "reject") are rejected here, each with
  // its count; the others go to the model as one padded batch.
  std::vector<ItemOutput> ForwardTokens(const std::vector<std::string_view>& texts,
                                        const std::vector<const PreparedInput*>* prepared) {
    std::vector<ItemOutput> outputs(texts.size());
    std::vector<PreparedInput> own(prepared ? 0 : texts.size());
    std::vector<const PreparedInput*> batch;
    std::vector<std::size_t> at;  // outputs[at[i]] is batch[i]'s
    for (std::size_t k = 0; k < texts.size(); ++k) {
      const PreparedInput* p = prepared ? (*prepared)[k] : &own[k];
      if (!prepared && !Tokenize(texts[k], own[k]))
        throw std::runtime_error("the tokenizer failed on an input");
      if (!p->error.empty()) {  // this text alone: its rejection, with the tokenizer's reason
        outputs[k].ok = false;
        outputs[k].error = p->error;
        continue;
      }
      outputs[k].tokens = p->tokens;
      outputs[k].truncated = p->truncated;
      if (tok_.truncation == Truncation::kReject && p->tokens > tok_.max_length) {
        outputs[k].ok = false;
        outputs[k].reason = std::string(reason::kTooManyTokens);
        outputs[k].error = std::to_string(p->tokens) + " tokens, more than stage.tokenizer.max_length " +
                           std::to_string(tok_.max_length);
        continue;
      }
      batch.push_back(p);
      at.push_back(k);
    }
    if (batch.empty()) return outputs;
    std::vector<ItemOutput> ran = Outputs(CallTokens(batch), static_cast<std::int64_t>(batch.size()));
    for (std::size_t i = 0; i < at.size(); ++i) {
      ran[i].tokens = outputs[at[i]].tokens;
      ran[i].truncated = outputs[at[i]].truncated;
      outputs[at[i]] = std::move(ran[i]);
    }
    return outputs;
  }

  std::vector<ItemOutput> Forward(const std::vector<std::string_view>& texts,
                                  const std::vector<const PreparedInput*>* prepared) {
    c10::InferenceMode guard;
    if (input_kind_ == "token_ids") return ForwardTokens(texts, prepared);
    return Outputs(Call(texts, prepared), static_cast<std::int64_t>(texts.size()));
  }

  // The model's output for `n` inputs, checked for its shape, as pilot's outputs.
  std::vector<ItemOutput> Outputs(const torch::Tensor& result, std::int64_t n) {
    std::vector<ItemOutput> outputs(static_cast<std::size_t>(n));
    if (desc_.output->vectors) {
      // float32 as the model computed it: the bits that go to vectors.npy.
      torch::Tensor out = result.to(torch::kCPU, torch::kFloat32).contiguous();
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
    torch::Tensor out = result.to(torch::kCPU, torch::kFloat64);
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
  std::optional<ModelFootprint> footprint_;  // TorchScript: its parameters and buffers
#if defined(PILOT_HAVE_AOTI)
  // Declared before the loader: the loader goes first, then the private copy it read.
  std::unique_ptr<PrivatePackage> package_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
#endif
  bool aoti_ = false;
  torch::Device device_;
  StageDescription desc_;
  std::string input_kind_;
  bool logits_ = false;
  NgramContract contract_;
  std::shared_ptr<const Tokenizer> tokenizer_;  // token_ids: stage.tokenizer
  TokenizerSettings tok_;
  bool type_ids_ = false;  // token_ids: forward takes token_type_ids too
  // The last batch's tokens and padded tensor size (BatchOutput::input_tokens, padded_tokens).
  std::uint64_t batch_tokens_ = 0, batch_padded_ = 0;
  torch::Dtype dtype_ = torch::kFloat32;
  std::string dtype_name_ = "as saved";  // recorded as plan.model_contract.dtype
  bool dtype_given_ = false;             // stage.options.dtype set: the model is converted to it
  std::string held_dtype_;               // what its floating-point tensors hold, once converted
};

}  // namespace

void RegisterTorchStages(StageRegistry& registry) {
  for (const char* kind : {kTorchScriptClassifier, kTorchScriptEmbedding, kAotiClassifier, kAotiEmbedding}) {
    registry.Register(kind, &TorchStage::Create);
  }
  for (const char* kind : {kTorchScriptGenerator, kAotiGenerator})
    registry.Register(kind, &CreateGeneratorStage);
}

}  // namespace pilot
