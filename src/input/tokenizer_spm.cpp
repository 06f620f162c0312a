// SentencePiece .model files, through Debian's libsentencepiece (0.1.97): the model's own
// normalizer (its precompiled character map) and its unigram or BPE model, behind the C
// interface of spm_api.h. Built twice (CMakeLists.txt):
//   PILOT_SPM_DLOPEN=0  linked to spm_api.cpp directly: the binaries without libtorch;
//   PILOT_SPM_DLOPEN=1  libpilot-spm.so, beside the executable, opened with RTLD_LOCAL |
//                       RTLD_DEEPBIND the first time a .model is read: the binaries that load
//                       libtorch, so that neither library's protobuf binds to the other's.
#include <link.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "pilot/fs.h"
#include "pilot/json_util.h"
#include "pilot/tokenizer.h"
#include "spm_api.h"

#if PILOT_SPM_DLOPEN
#include <dlfcn.h>

#include <filesystem>
#endif

namespace pilot {
namespace {

constexpr const char* kHint = "see docs/tokenizers.md, 'SentencePiece'";

// The interface's functions, bound directly or looked up in libpilot-spm.so.
struct SpmApi {
  decltype(&pilot_spm_load) load;
  decltype(&pilot_spm_free) free;
  decltype(&pilot_spm_encode) encode;
  decltype(&pilot_spm_free_ids) free_ids;
  decltype(&pilot_spm_bos) bos;
  decltype(&pilot_spm_eos) eos;
  decltype(&pilot_spm_size) size;
  decltype(&pilot_spm_piece_id) piece_id;
};

#if PILOT_SPM_DLOPEN
constexpr const char* kModuleFile = "libpilot-spm.so";

Result<const SpmApi*> Api() {
  static std::mutex mu;
  static SpmApi api;
  static std::string failure;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    // Beside the executable (pilot's own folder), never from the working directory or a path.
    auto self = RealFileSystem().Resolve("/proc/self/exe");
    const std::filesystem::path module =
        self.ok() ? self.value().parent_path() / kModuleFile : std::filesystem::path(kModuleFile);
    void* h = self.ok() ? ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND) : nullptr;
    if (!h) {
      const char* why = !self.ok() ? "cannot find the executable's folder" : ::dlerror();
      failure = std::string("cannot load ") + module.string() + ": " + (why ? why : "unknown error");
    } else {
      bool all = true;
      auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
        all = all && fn != nullptr;
      };
      bind(api.load, "pilot_spm_load");
      bind(api.free, "pilot_spm_free");
      bind(api.encode, "pilot_spm_encode");
      bind(api.free_ids, "pilot_spm_free_ids");
      bind(api.bos, "pilot_spm_bos");
      bind(api.eos, "pilot_spm_eos");
      bind(api.size, "pilot_spm_size");
      bind(api.piece_id, "pilot_spm_piece_id");
      if (!all) failure = module.string() + " is not pilot's SentencePiece module";
    }
  }
  if (!failure.empty()) {
    return EnvironmentError("SentencePiece is not available: " + failure, kModuleFile,
                            "build pilot whole: the module is built beside the binary (docs/building.md)");
  }
  return &api;
}
#else
Result<const SpmApi*> Api() {
  static const SpmApi api{pilot_spm_load, pilot_spm_free, pilot_spm_encode, pilot_spm_free_ids,
                          pilot_spm_bos,  pilot_spm_eos,  pilot_spm_size,   pilot_spm_piece_id};
  return &api;
}
#endif

class SpmTokenizer final : public Tokenizer {
 public:
  SpmTokenizer(const SpmApi* api, void* model, bool add_bos, bool add_eos, bool fairseq)
      : api_(api), model_(model, api->free), add_bos_(add_bos), add_eos_(add_eos), fairseq_(fairseq) {}

  bool EncodeContent(std::string_view text, std::vector<std::int64_t>& out,
                     std::string& error) const override {
    std::size_t n = 0;
    int* ids = api_->encode(model_.get(), text.data(), text.size(), &n);
    if (!ids) {
      out.clear();
      error = "libsentencepiece could not encode the text";
      return false;
    }
    out.assign(ids, ids + n);
    api_->free_ids(ids);
    if (fairseq_) {
      for (auto& id : out) id = id == kSpmUnk ? kFairseqUnk : id + 1;
    }
    return true;
  }

  std::size_t SpecialTokenCount() const override { return (add_bos_ ? 1 : 0) + (add_eos_ ? 1 : 0); }

  void AddSpecialTokens(const std::vector<std::int64_t>& content, bool add_special,
                        TokenizedText& out) const override {
    out.ids.clear();
    if (add_special && add_bos_) out.ids.push_back(fairseq_ ? kFairseqBos : api_->bos(model_.get()));
    out.ids.insert(out.ids.end(), content.begin(), content.end());
    if (add_special && add_eos_) out.ids.push_back(fairseq_ ? kFairseqEos : api_->eos(model_.get()));
    out.type_ids.assign(out.ids.size(), 0);
  }

  std::optional<std::int64_t> TokenId(std::string_view token) const override {
    if (fairseq_) {
      if (token == "<s>") return kFairseqBos;
      if (token == "<pad>") return kFairseqPad;
      if (token == "</s>") return kFairseqEos;
      if (token == "<unk>") return kFairseqUnk;
      if (token == "<mask>") return api_->size(model_.get()) + 1;
    }
    const int id = api_->piece_id(model_.get(), token.data(), token.size());
    if (id < 0) return std::nullopt;
    if (fairseq_) {
      if (id == kSpmUnk) return std::nullopt;  // not a piece: SentencePiece answers <unk>
      return id + 1;
    }
    return id;
  }

  nlohmann::ordered_json Describe() const override {
    nlohmann::ordered_json d;
    d["format"] = "sentencepiece";
    d["library"] = "libsentencepiece (Debian)";
    d["vocab_size"] = api_->size(model_.get());
    d["add_bos"] = add_bos_;
    d["add_eos"] = add_eos_;
    d["ids"] = fairseq_ ? "fairseq" : "sentencepiece";
    if (fairseq_) d["vocab_size"] = api_->size(model_.get()) + 2;  // <pad> and <mask> added
    return d;
  }

  int bos() const { return api_->bos(model_.get()); }
  int eos() const { return api_->eos(model_.get()); }
  int unk() const { return api_->piece_id(model_.get(), "<unk>", 5); }

  // XLM-R's ids (fairseq's dictionary): its four specials first, then the pieces shifted by one.
  static constexpr std::int64_t kFairseqBos = 0, kFairseqPad = 1, kFairseqEos = 2, kFairseqUnk = 3;
  static constexpr int kSpmUnk = 0;

 private:
  const SpmApi* api_;
  std::unique_ptr<void, decltype(&pilot_spm_free)> model_;
  bool add_bos_, add_eos_, fairseq_;
};

#if !PILOT_SPM_DLOPEN
// Another libprotobuf in the process (Debian's libtorch 1.13 loads libprotobuf.so.32): the
// name of such a library, if one is loaded. Only the builds without libtorch link
// libsentencepiece directly; should one of them still have it, a .model is refused rather than
// risk the clash.
std::string ClashingProtobuf() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        const char* name = info->dlpi_name ? info->dlpi_name : "";
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "libprotobuf", 11) == 0) {
          *static_cast<std::string*>(data) = base;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}
#endif

}  // namespace

Result<std::unique_ptr<Tokenizer>> ParseSentencePieceModel(std::string_view bytes, const std::string& source,
                                                           bool add_bos, bool add_eos, bool fairseq) {
  if (bytes.size() > kMaxTokenizerBytes) {
    return BadInput("the tokenizer file is larger than " + std::to_string(kMaxTokenizerBytes >> 20) + " MiB",
                    source, kHint);
  }
#if !PILOT_SPM_DLOPEN
  if (const std::string clash = ClashingProtobuf(); !clash.empty()) {
    return EnvironmentError("SentencePiece cannot run in this process: " + clash +
                                " is loaded, and its protobuf clashes with the one libsentencepiece carries",
                            source, kHint);
  }
#endif
  auto api = Api();
  if (!api.ok()) {
    Error e = api.error();
    e.where = source;
    return e;
  }
  char why[256] = {0};
  void* model = api.value()->load(bytes.data(), bytes.size(), why, sizeof why);
  if (!model) {
    return BadInput("libsentencepiece cannot load the model: " + ValueForMessage(why, 200), source, kHint);
  }
  auto t = std::make_unique<SpmTokenizer>(api.value(), model, add_bos, add_eos, fairseq);
  if (fairseq && (t->unk() != 0 || t->bos() != 1 || t->eos() != 2)) {
    return BadInput(
        "stage.tokenizer.ids 'fairseq' needs XLM-R's layout (<unk> 0, <s> 1, </s> 2); this model has "
        "<unk> " +
            std::to_string(t->unk()) + ", <s> " + std::to_string(t->bos()) + ", </s> " +
            std::to_string(t->eos()),
        source, "leave stage.tokenizer.ids out: the model's own ids are used");
  }
  if ((add_bos && t->bos() < 0) || (add_eos && t->eos() < 0)) {
    const bool bos = add_bos && t->bos() < 0;
    return BadInput(std::string("the model has no ") + (bos ? "<s>" : "</s>") + " piece, which add_" +
                        (bos ? "bos" : "eos") + " asks for",
                    source, kHint);
  }
  return std::unique_ptr<Tokenizer>(std::move(t));
}

}  // namespace pilot
