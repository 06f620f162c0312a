// pilot-train-langid: trains the bundled language-identification model from gettext
// catalogs (see fetch-corpus.sh), evaluates it on held-out text, and writes the TorchScript
// model, a metrics JSON and the model card. Deterministic for a given corpus and seed: one
// thread, seeded initialisation, seeded shuffles.
//
// The model: hashed character n-grams (pilot/text_features.h) -> mean embedding bag ->
// linear -> softmax, the fastText recipe. It declares its labels and input contract as
// TorchScript attributes, so the torchscript-classifier stage needs nothing else.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/text_features.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string corpus;
  std::string languages;
  std::string out_model;
  std::string out_metrics;
  std::string out_card;
  int epochs = 5;
  int dim = 16;
  std::int64_t buckets = 1 << 16;
  int ngram_max = 4;
  int max_chars = 2048;
  std::size_t cap = 20000;  // training messages per language
  std::uint64_t seed = 20261129;
  double lr = 0.005;
  int batch = 64;
};

struct Sample {
  std::string text;
  std::int64_t label;
};

std::uint32_t Fnv(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

// Reads a GNU .mo file: (msgid, msgstr) pairs, plural forms split on NUL.
std::vector<std::pair<std::string, std::string>> ReadMo(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<std::string, std::string>> out;
  if (data.size() < 28) return out;
  auto u32 = [&](std::size_t off, bool swap) {
    std::uint32_t v;
    std::memcpy(&v, data.data() + off, 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  bool swap = u32(0, false) != 0x950412de;
  if (swap && u32(0, true) != 0x950412de) return out;
  std::uint32_t n = u32(8, swap), orig = u32(12, swap), trans = u32(16, swap);
  auto str = [&](std::uint32_t table, std::uint32_t i) -> std::string {
    std::size_t at = table + 8 * i;
    if (at + 8 > data.size()) return {};
    std::uint32_t len = u32(at, swap), off = u32(at + 4, swap);
    if (static_cast<std::size_t>(off) + len > data.size()) return {};
    return data.substr(off, len);
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string id = str(orig, i), tr = str(trans, i);
    if (id.empty()) continue;  // the header entry
    if (auto ctx = id.find('\x04'); ctx != std::string::npos) id = id.substr(ctx + 1);
    auto first = [](const std::string& s) { return s.substr(0, s.find('\0')); };
    out.emplace_back(first(id), first(tr));
  }
  return out;
}

// Strips what is not natural language: format directives, markup, accelerators.
std::string Clean(std::string s) {
  static const std::regex kFormat(
      R"(%(\d+\$)?[-+ #0']*(\d+|\*)?(\.(\d+|\*))?(hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcsSpn%]|%<PRI\w+>|\$\{?\w+\}?|\{[^}]*\}|<[^>]*>|&\w+;|https?://\S+)");
  s = std::regex_replace(s, kFormat, " ");
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '_' || c == '&') && i + 1 < s.size() && std::isalpha(static_cast<unsigned char>(s[i + 1])))
      continue;
    out += (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  }
  std::string collapsed;
  for (char c : out) {
    if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
    collapsed += c;
  }
  while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  return collapsed;
}

std::size_t Letters(const std::string& s) {
  std::u32string n = pilot::NormaliseForNgrams(s, 1 << 20);
  std::size_t k = 0;
  for (char32_t c : n) k += c != U' ';
  return k;
}

struct Split {
  std::vector<std::string> train, test;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Train the bundled language-identification model (see data/models/langid/MODEL_CARD.md)"};
  app.add_option("--corpus", o.corpus, "Folder written by tools/langid/fetch-corpus.sh")->required();
  app.add_option("--languages", o.languages, "tools/langid/languages.txt")->required();
  app.add_option("--out-model", o.out_model, "TorchScript file to write")->required();
  app.add_option("--out-metrics", o.out_metrics, "Metrics JSON to write")->required();
  app.add_option("--out-card", o.out_card, "Model card (Markdown) to write")->required();
  app.add_option("--epochs", o.epochs)->capture_default_str();
  app.add_option("--dim", o.dim)->capture_default_str();
  app.add_option("--buckets", o.buckets)->capture_default_str();
  app.add_option("--cap", o.cap, "Training messages per language")->capture_default_str();
  app.add_option("--seed", o.seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  at::set_num_threads(1);
  torch::manual_seed(o.seed);
  std::mt19937_64 rng(o.seed);

  std::vector<std::string> labels;
  std::map<std::string, std::string> names;
  {
    std::ifstream in(o.languages);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string code, name;
      ls >> code;
      std::getline(ls, name);
      labels.push_back(code);
      names[code] = name.substr(name.find_first_not_of(' '));
    }
  }
  std::map<std::string, std::int64_t> label_index;
  for (std::size_t i = 0; i < labels.size(); ++i) label_index[labels[i]] = static_cast<std::int64_t>(i);

  // Gather: per language, text keyed by its msgid so that a message's translations all fall
  // on the same side of the train/test split.
  std::map<std::string, std::map<std::string, std::string>> by_lang;  // lang -> msgid -> text
  std::size_t catalogs = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(o.corpus)) {
    if (e.is_regular_file() && e.path().extension() == ".mo") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::string lang = file.parent_path().filename().string();
    if (!label_index.count(lang)) continue;
    ++catalogs;
    for (auto& [id, tr] : ReadMo(file)) {
      std::string cid = Clean(id), ctr = Clean(tr);
      if (Letters(cid) >= 3) by_lang["en"].emplace(cid, cid);
      if (lang != "en" && Letters(ctr) >= 3 && ctr != cid) by_lang[lang].emplace(cid, ctr);
    }
  }
  std::map<std::string, Split> splits;
  for (auto& [lang, msgs] : by_lang) {
    Split& s = splits[lang];
    for (auto& [key, text] : msgs) (Fnv(key) % 10 == 0 ? s.test : s.train).push_back(text);
    Shuffle(s.train, rng);
    Shuffle(s.test, rng);
    if (s.train.size() > o.cap) s.train.resize(o.cap);
  }
  std::vector<Sample> train;
  for (auto& [lang, s] : splits) {
    for (auto& t : s.train) train.push_back({t, label_index[lang]});
    std::fprintf(stderr, "%s: %zu train, %zu held-out messages\n", lang.c_str(), s.train.size(),
                 s.test.size());
  }

  pilot::NgramContract contract{1, o.ngram_max, o.buckets, o.max_chars};
  auto emb = torch::empty({o.buckets, o.dim}).uniform_(-1.0 / o.dim, 1.0 / o.dim).requires_grad_(true);
  auto fc_w = torch::zeros({static_cast<std::int64_t>(labels.size()), o.dim}).requires_grad_(true);
  auto fc_b = torch::zeros({static_cast<std::int64_t>(labels.size())}).requires_grad_(true);
  torch::optim::Adam opt({emb, fc_w, fc_b}, torch::optim::AdamOptions(o.lr));

  auto batch_tensors = [&](const std::vector<const std::string*>& texts) {
    std::vector<std::int64_t> ids, offsets;
    for (const auto* t : texts) {
      offsets.push_back(static_cast<std::int64_t>(ids.size()));
      pilot::AppendNgramIds(*t, contract, ids);
    }
    return std::make_pair(torch::tensor(ids, torch::kInt64), torch::tensor(offsets, torch::kInt64));
  };
  auto forward = [&](const torch::Tensor& ids, const torch::Tensor& offsets) {
    auto h = std::get<0>(torch::embedding_bag(emb, ids, offsets, false, /*mode=mean*/ 1));
    return torch::addmm(fc_b, h, fc_w.t());
  };

  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    Shuffle(train, rng);
    double loss_sum = 0;
    std::size_t steps = 0;
    for (std::size_t b = 0; b < train.size(); b += static_cast<std::size_t>(o.batch)) {
      std::size_t e = std::min(train.size(), b + static_cast<std::size_t>(o.batch));
      std::vector<const std::string*> texts;
      std::vector<std::int64_t> ys;
      for (std::size_t i = b; i < e; ++i) {
        texts.push_back(&train[i].text);
        ys.push_back(train[i].label);
      }
      auto [ids, offsets] = batch_tensors(texts);
      auto loss =
          torch::nn::functional::cross_entropy(forward(ids, offsets), torch::tensor(ys, torch::kInt64));
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      ++steps;
    }
    std::fprintf(stderr, "epoch %d: mean loss %.4f\n", epoch + 1, loss_sum / std::max<std::size_t>(1, steps));
  }

  // Evaluation on held-out messages, and on held-out texts of >= 100 characters made by
  // joining held-out messages of one language.
  torch::NoGradGuard no_grad;
  auto predict = [&](const std::vector<std::string>& texts) {
    std::vector<std::int64_t> out;
    for (std::size_t b = 0; b < texts.size(); b += 512) {
      std::vector<const std::string*> ptrs;
      for (std::size_t i = b; i < std::min(texts.size(), b + 512); ++i) ptrs.push_back(&texts[i]);
      auto [ids, offsets] = batch_tensors(ptrs);
      auto idx = forward(ids, offsets).argmax(1);
      for (std::int64_t i = 0; i < idx.size(0); ++i) out.push_back(idx[i].item<std::int64_t>());
    }
    return out;
  };
  nlohmann::ordered_json per_lang = nlohmann::ordered_json::object();
  std::size_t long_total = 0, long_correct = 0, msg_total = 0, msg_correct = 0;
  std::map<std::string, std::map<std::string, std::size_t>> confusions;
  for (const auto& lang : labels) {
    const Split& s = splits[lang];
    std::vector<std::string> longs;
    std::string cur;
    for (const auto& t : s.test) {
      cur += (cur.empty() ? "" : ". ") + t;
      if (pilot::NormaliseForNgrams(cur, 1 << 20).size() >= 100 && cur.size() >= 100) {
        longs.push_back(cur);
        cur.clear();
      }
    }
    auto count = [&](const std::vector<std::string>& texts, bool record) {
      std::size_t ok = 0;
      auto pred = predict(texts);
      for (auto p : pred) {
        ok += p == label_index[lang];
        if (record && p != label_index[lang]) ++confusions[lang][labels[static_cast<std::size_t>(p)]];
      }
      return ok;
    };
    std::size_t m_ok = count(s.test, false), l_ok = count(longs, true);
    msg_total += s.test.size();
    msg_correct += m_ok;
    long_total += longs.size();
    long_correct += l_ok;
    per_lang[lang] = {{"name", names[lang]},
                      {"train_messages", s.train.size()},
                      {"heldout_messages", s.test.size()},
                      {"heldout_message_accuracy", s.test.empty() ? 0.0 : double(m_ok) / s.test.size()},
                      {"heldout_texts_100", longs.size()},
                      {"heldout_text_100_accuracy", longs.empty() ? 0.0 : double(l_ok) / longs.size()},
                      {"confused_with", confusions[lang]}};
  }

  // The TorchScript module, built from C++.
  torch::jit::Module m("LangId");
  m.register_parameter("emb", emb.detach().clone(), false);
  m.register_parameter("fc_w", fc_w.detach().clone(), false);
  m.register_parameter("fc_b", fc_b.detach().clone(), false);
  c10::List<std::string> label_list;
  for (const auto& l : labels) label_list.push_back(l);
  m.register_attribute("labels", c10::ListType::ofStrings(), label_list);
  m.register_attribute("input_kind", c10::StringType::get(), std::string("hashed_char_ngrams"));
  m.register_attribute("output", c10::StringType::get(), std::string("probabilities"));
  m.register_attribute("ngram_min", c10::IntType::get(), static_cast<std::int64_t>(contract.ngram_min));
  m.register_attribute("ngram_max", c10::IntType::get(), static_cast<std::int64_t>(contract.ngram_max));
  m.register_attribute("buckets", c10::IntType::get(), contract.buckets);
  m.register_attribute("max_chars", c10::IntType::get(), static_cast<std::int64_t>(contract.max_chars));
  m.define(R"(
def forward(self, ids: Tensor, offsets: Tensor) -> Tensor:
    h = torch.embedding_bag(self.emb, ids, offsets, False, 1, False, None, False)[0]
    return torch.softmax(torch.addmm(self.fc_b, h, self.fc_w.t()), 1)
)");
  m.save(o.out_model);
  std::string model_sha = pilot::Sha256File(pilot::RealFileSystem(), o.out_model).value();

  std::ifstream pk(fs::path(o.corpus) / "packages.txt");
  std::vector<std::string> packages;
  for (std::string l; std::getline(pk, l);) packages.push_back(l);
  auto sums = pilot::Sha256File(pilot::RealFileSystem(), fs::path(o.corpus) / "SHA256SUMS");
  nlohmann::ordered_json metrics;
  metrics["model_sha256"] = model_sha;
  metrics["labels"] = labels;
  metrics["corpus"] = {{"recipe", "tools/langid/fetch-corpus.sh"},
                       {"sha256_of_SHA256SUMS", sums.ok() ? sums.value() : "unknown"},
                       {"catalogs_used", catalogs},
                       {"packages", packages}};
  metrics["training"] = {{"seed", o.seed},
                         {"epochs", o.epochs},
                         {"dim", o.dim},
                         {"buckets", o.buckets},
                         {"ngram_min", 1},
                         {"ngram_max", o.ngram_max},
                         {"max_chars", o.max_chars},
                         {"cap_per_language", o.cap},
                         {"optimizer", "Adam"},
                         {"learning_rate", o.lr},
                         {"batch_size", o.batch},
                         {"threads", 1},
                         {"libtorch", TORCH_VERSION}};
  metrics["heldout"] = {{"texts_100", long_total},
                        {"text_100_accuracy", double(long_correct) / std::max<std::size_t>(1, long_total)},
                        {"messages", msg_total},
                        {"message_accuracy", double(msg_correct) / std::max<std::size_t>(1, msg_total)}};
  metrics["per_language"] = per_lang;
  std::ofstream(o.out_metrics) << metrics.dump(2) << "\n";

  std::ostringstream card;
  char buf[256];
  card
      << "# Model card: langid (bundled default model of pilot)\n\n"
      << "Generated by `pilot-train-langid` (tools/langid/train.cpp); every figure below was measured by\n"
      << "that program on held-out text. Regenerate with `tools/langid/rebuild-model.sh`.\n\n"
      << "- File: `langid.pt` (TorchScript), sha256 `" << model_sha << "`\n"
      << "- Task: language identification of UTF-8 text; labels are ISO 639-1 codes.\n"
      << "- Architecture: hashed character n-grams (n = 1.." << o.ngram_max << ", " << o.buckets
      << " buckets, FNV-1a) -> mean embedding bag (dim " << o.dim
      << ") -> linear -> softmax (fastText-style).\n"
      << "- Input contract (module attributes): `input_kind = hashed_char_ngrams`, `ngram_min = 1`, "
         "`ngram_max = "
      << o.ngram_max << "`, `buckets = " << o.buckets << "`, `max_chars = " << o.max_chars
      << "`; `forward(ids, offsets) -> probabilities [batch, labels]`.\n"
      << "- Training: Adam, lr " << o.lr << ", batch " << o.batch << ", " << o.epochs << " epochs, seed "
      << o.seed << ", one thread, at most " << o.cap << " messages per language, libtorch " << TORCH_VERSION
      << ".\n\n"
      << "## Corpus\n\nThe gettext catalogs (.mo) shipped by these Debian 12 packages, fetched by name with\n"
      << "`tools/langid/fetch-corpus.sh` (English from the msgids, other languages from the msgstrs;\n"
      << "format directives, markup and accelerators stripped; untranslated strings dropped). Messages are\n"
      << "split 90/10 by a hash of their msgid, so all translations of one message fall on the same "
         "side.\n\n";
  for (const auto& p : packages) card << "- " << p << "\n";
  card << "\n"
       << catalogs << " catalogs; sha256 of the corpus's SHA256SUMS: `"
       << (sums.ok() ? sums.value() : "unknown") << "`\n\n## Held-out accuracy\n\n";
  std::snprintf(
      buf, sizeof buf,
      "Overall: **%.2f%%** on %zu held-out texts of >= 100 characters; %.2f%% on %zu single held-out "
      "messages (often a few words).\n\n",
      100.0 * long_correct / std::max<std::size_t>(1, long_total), long_total,
      100.0 * msg_correct / std::max<std::size_t>(1, msg_total), msg_total);
  card << buf << "| code | language | train msgs | held-out msgs | msg acc. | texts >= 100 ch | text acc. |\n"
       << "|---|---|---:|---:|---:|---:|---:|\n";
  for (const auto& lang : labels) {
    const auto& j = per_lang[lang];
    std::snprintf(buf, sizeof buf, "| %s | %s | %zu | %zu | %.2f%% | %zu | %.2f%% |\n", lang.c_str(),
                  names[lang].c_str(), j["train_messages"].get<std::size_t>(),
                  j["heldout_messages"].get<std::size_t>(), 100 * j["heldout_message_accuracy"].get<double>(),
                  j["heldout_texts_100"].get<std::size_t>(),
                  100 * j["heldout_text_100_accuracy"].get<double>());
    card << buf;
  }
  card << "\n## Limits\n\nTrained on software messages: vocabulary is technical. Short inputs (a few words) "
          "are much\n"
       << "less reliable than paragraphs; use `stage.options.min_confidence` to reject uncertain items.\n"
       << "Languages outside the label set are forced onto the nearest label (often with low confidence).\n";
  std::ofstream(o.out_card) << card.str();
  std::printf("model %s sha256 %s: held-out accuracy %.2f%% on %zu texts >= 100 chars\n", o.out_model.c_str(),
              model_sha.c_str(), 100.0 * long_correct / std::max<std::size_t>(1, long_total), long_total);
  return 0;
}
