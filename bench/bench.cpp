// pilot-bench: the programs behind bench/run-bench.sh.
//   gen N DIR         writes N synthetic documents and DIR/manifest.jsonl (sha256-pinned)
//   manifest N FILE   writes a manifest of N items only (no files), for validation figures
//   bare PARAMS MANIFEST   the same reading, featurisation and model calls as `pilot run`,
//                     in the same batches, with no journal, bag, prechecks or report
//   validate MANIFEST opens (validates) a manifest as `pilot run` does
//   shards N K DIR    K finished shard folders of one N-item manifest under DIR/runs (what
//                     `pilot merge` joins), written by the engine itself with a stage that
//                     answers at once: the merge figures are the merge's alone
//   tokenize TOKENIZER TEXTS [--fairseq] [--repeat R]
//                     encodes every text of TEXTS (JSON Lines, one string a line, read before
//                     the clock starts) with the tokenizer file (a tokenizer.json, or a
//                     SentencePiece .model with </s>; --fairseq: XLM-R's ids), special tokens
//                     added, on one thread, R times (default 3): the fastest pass's figures
//                     and the ids' count and sum (to check against the reference's)
// Each prints one JSON line of figures (items, seconds, items/s, peak RSS).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/shard.h"
#include "pilot/stage.h"
#include "pilot/tokenizer.h"
#include "pilot/torch_stage.h"

namespace fs = std::filesystem;
using namespace pilot;

namespace {

const char* kTexts[] = {
    "Please check the invoice before you send it to the customer.",
    "Le comité a décidé de reporter la réunion à la semaine prochaine.",
    "Die Stadtverwaltung hat angekündigt, dass die Bauarbeiten im Frühjahr beginnen.",
    "El informe anual muestra que las ventas crecieron en todas las regiones.",
    "La biblioteca comunale resterà chiusa per lavori di ristrutturazione.",
    "O relatório técnico descreve os resultados dos testes realizados no laboratório.",
    "De gemeente heeft besloten om het park aan de rand van de stad opnieuw in te richten.",
    "このソフトウェアは、設定ファイルを読み込んでからデータを処理します。",
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Gen(long n, const fs::path& dir) {
  fs::create_directories(dir / "docs");
  std::ofstream manifest(dir / "manifest.jsonl");
  for (long i = 0; i < n; ++i) {
    std::string text;
    for (long k = 0; k <= i % 4; ++k) text += std::string(kTexts[(i + k) % 8]) + " ";
    text += std::to_string(i) + "\n";
    std::string name = "docs/d" + std::to_string(i) + ".txt";
    std::ofstream(dir / name, std::ios::binary) << text;
    manifest << "{\"id\":\"d" << i << "\",\"path\":\"" << name << "\",\"sha256\":\"" << Sha256Hex(text)
             << "\"}\n";
  }
  std::printf("{\"generated\": %ld}\n", n);
  return 0;
}

int ManifestOnly(long n, const fs::path& file) {
  std::ofstream out(file);
  const std::string sha(64, 'a');
  for (long i = 0; i < n; ++i) {
    out << "{\"id\":\"item-" << i << "\",\"path\":\"docs/d" << i << ".txt\",\"sha256\":\"" << sha << "\"}\n";
  }
  return 0;
}

int Bare(const fs::path& params_file, const fs::path& manifest_file) {
  auto params = LoadParams(RealFileSystem(), params_file);
  if (!params.ok()) return std::fprintf(stderr, "%s\n", params.error().ToString().c_str()), 2;
  auto manifest = ManifestSource::Open(RealFileSystem(), manifest_file);
  if (!manifest.ok()) return std::fprintf(stderr, "%s\n", manifest.error().ToString().c_str()), 2;
  StageRegistry registry;
  RegisterTorchStages(registry);
  StageConfig c;
  c.kind = params.value().stage.kind;
  c.model = params.value().stage.model;
  c.options = params.value().stage.options;
  c.threads = params.value().threads;
  c.device = ResolveDevice(params.value().device).value();
  auto stage = registry.Create(c);
  if (!stage.ok()) return std::fprintf(stderr, "%s\n", stage.error().ToString().c_str()), 2;
  const fs::path root = manifest_file.parent_path();
  std::vector<std::string> texts;
  std::size_t items = 0, accepted = 0;
  auto flush = [&] {
    std::vector<std::string_view> views(texts.begin(), texts.end());
    for (const auto& o : stage.value()->Process(views).items) accepted += o.ok;
    texts.clear();
  };
  double t0 = Now();
  Status st = manifest.value().ForEach([&](const ManifestItem& item) -> Status {
    auto bytes = RealFileSystem().ReadFile(root / item.path, params.value().max_bytes);
    texts.push_back(bytes.ok() ? std::move(bytes).value() : std::string());
    ++items;
    if (texts.size() == static_cast<std::size_t>(params.value().batch_size)) flush();
    return {};
  });
  if (!texts.empty()) flush();
  double secs = Now() - t0;
  std::printf("{\"bare_items\": %zu, \"bare_seconds\": %.3f, \"bare_items_per_s\": %.1f, \"ok\": %zu}\n",
              items, secs, items / secs, accepted);
  return st.ok() ? 0 : 2;
}

int Validate(const fs::path& manifest_file) {
  double t0 = Now();
  auto m = ManifestSource::Open(RealFileSystem(), manifest_file);
  if (!m.ok()) return std::fprintf(stderr, "%s\n", m.error().ToString().c_str()), 2;
  std::printf("{\"validated_items\": %zu, \"seconds\": %.3f, \"peak_rss_mb\": %.1f}\n", m.value().size(),
              Now() - t0, PeakRssMegabytes());
  return 0;
}

// A classifier that answers at once: every item "en" at 0.9.
class InstantStage : public Stage {
 public:
  explicit InstantStage(std::string model_sha256) {
    desc_.kind = "instant";
    desc_.output = &ClassificationOutput();
    desc_.labels = {"en", "fr"};
    desc_.model_sha256 = std::move(model_sha256);
    desc_.device = "cpu";
    desc_.min_confidence = 0.5;
  }
  const StageDescription& Describe() const override { return desc_; }
  BatchOutput Process(const std::vector<std::string_view>& inputs) override {
    BatchOutput out;
    out.ok = true;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      ItemOutput item;
      item.ok = true;
      item.label = "en";
      item.confidence = 0.9f;
      item.scores = {0.9f, 0.1f};
      out.items.push_back(std::move(item));
    }
    return out;
  }

 private:
  StageDescription desc_;
};

int Shards(long n, long k, const fs::path& dir) {
  fs::create_directories(dir / "docs");
  const std::string text = "The committee met on Tuesday to review the annual report.\n";
  std::ofstream(dir / "docs/d.txt", std::ios::binary) << text;
  {
    // Every item names the same small input: the figures are the engine's and the merge's,
    // not a million files'.
    std::ofstream manifest(dir / "manifest.jsonl");
    const std::string sha = Sha256Hex(text);
    for (long i = 0; i < n; ++i) {
      manifest << "{\"id\":\"d" << i << "\",\"path\":\"docs/d.txt\",\"sha256\":\"" << sha << "\"}\n";
    }
  }
  std::ofstream(dir / "model.bin", std::ios::binary) << "instant";
  const std::string params_text =
      R"({"manifest": "manifest.jsonl", "stage": {"kind": "instant", "model": "model.bin"},
  "allowed_categories": ["en", "fr"], "device": "cpu", "batch_size": 256, "threads": 1})";
  std::ofstream(dir / "params.json", std::ios::binary) << params_text;
  auto params = ParseParams(params_text, fs::absolute(dir), (dir / "params.json").string());
  if (!params.ok()) return std::fprintf(stderr, "%s\n", params.error().ToString().c_str()), 2;
  const double t0 = Now();
  for (long i = 0; i < k; ++i) {
    RunPlan plan;
    plan.params = params.value();
    plan.params_file = fs::absolute(dir / "params.json");
    plan.params_bytes = params_text;
    auto manifest = ManifestSource::Open(RealFileSystem(), dir / "manifest.jsonl");
    if (!manifest.ok()) return std::fprintf(stderr, "%s\n", manifest.error().ToString().c_str()), 2;
    plan.manifest = std::move(manifest).value();
    plan.inputs_root = fs::canonical(dir);
    plan.model_sha256 = Sha256Hex("instant");
    plan.runs_dir = dir / "runs";
    const ShardSpec spec{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(k)};
    plan.shard = spec;
    plan.run_id = ShardRunId(spec);
    plan.command_line = {"pilot-bench", "shards"};
    plan.environment = {{"host", "pilot-bench"}};
    InstantStage stage(plan.model_sha256);
    auto out = ExecuteRun(RealFileSystem(), SystemClock(), plan, stage);
    if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().ToString().c_str()), 2;
    if (out.value().verdict != RunVerdict::kPassed) return std::fprintf(stderr, "shard %ld failed\n", i), 1;
  }
  std::printf("{\"items\": %ld, \"shards\": %ld, \"seconds\": %.3f}\n", n, k, Now() - t0);
  return 0;
}

}  // namespace

int Tokenize(int argc, char** argv) {
  const std::string file = argv[2], texts_file = argv[3];
  bool fairseq = false;
  int repeat = 3;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fairseq") {
      fairseq = true;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "pilot-bench tokenize: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  const bool spm = file.size() > 6 && file.compare(file.size() - 6, 6, ".model") == 0;
  // As the parity test reads them: </s> added; with fairseq's ids <s> too.
  auto parsed = spm ? ParseSentencePieceModel(buf.str(), file, fairseq, true, fairseq)
                    : ParseTokenizerJson(buf.str(), file);
  if (!parsed.ok()) {
    std::fprintf(stderr, "pilot-bench tokenize: %s\n", parsed.error().ToString().c_str());
    return 2;
  }
  std::vector<std::string> texts;
  std::ifstream lines(texts_file);
  std::uint64_t bytes = 0;
  for (std::string line; std::getline(lines, line);) {
    texts.push_back(nlohmann::json::parse(line).get<std::string>());
    bytes += texts.back().size();
  }
  TokenizerSettings settings;
  settings.max_length = 1u << 30;  // no truncation: every token counted
  double best = 0;
  std::uint64_t tokens = 0, sum = 0;
  for (int r = 0; r < repeat; ++r) {
    tokens = sum = 0;
    const double t0 = Now();
    for (const auto& text : texts) {
      TokenizedText t = EncodeText(*parsed.value(), settings, text);
      tokens += t.ids.size();
      for (auto id : t.ids) sum += static_cast<std::uint64_t>(id);
    }
    const double took = Now() - t0;
    if (r == 0 || took < best) best = took;
  }
  std::printf(
      "{\"texts\": %zu, \"bytes\": %llu, \"tokens\": %llu, \"id_sum\": %llu, \"seconds\": %.6f, "
      "\"texts_per_s\": %.1f, \"mb_per_s\": %.3f, \"passes\": %d}\n",
      texts.size(), static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(tokens),
      static_cast<unsigned long long>(sum), best, static_cast<double>(texts.size()) / best,
      static_cast<double>(bytes) / best / 1e6, repeat);
  return 0;
}

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "tokenize" && argc >= 4) return Tokenize(argc, argv);
  if (cmd == "gen" && argc == 4) return Gen(std::atol(argv[2]), argv[3]);
  if (cmd == "manifest" && argc == 4) return ManifestOnly(std::atol(argv[2]), argv[3]);
  if (cmd == "bare" && argc == 4) return Bare(argv[2], argv[3]);
  if (cmd == "validate" && argc == 3) return Validate(argv[2]);
  if (cmd == "shards" && argc == 5) return Shards(std::atol(argv[2]), std::atol(argv[3]), argv[4]);
  std::fprintf(stderr,
               "usage: pilot-bench gen N DIR | manifest N FILE | bare PARAMS MANIFEST | validate MANIFEST | "
               "shards N K DIR | tokenize TOKENIZER TEXTS [--fairseq] [--repeat R]\n");
  return 2;
}
