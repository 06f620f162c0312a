// Derives the bundled embedding model (data/models/langid-embed) from the bundled
// language-identification model: the same hashed character n-gram embedding bag, mean-pooled
// and L2-normalised, without the classification layer. A TorchScript module of the
// "torchscript-embedding" kind, built from C++ (no Python). Deterministic: the same langid
// model gives the same bytes.
//
//   pilot-derive-embedding --from data/models/langid/langid.pt --out data/models/langid-embed/langid-embed.pt
#include <torch/script.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "pilot/fs.h"
#include "pilot/hash.h"

int main(int argc, char** argv) {
  std::string from, out;
  CLI::App app{"Derive the bundled n-gram embedding model from the bundled langid model"};
  app.add_option("--from", from, "The langid TorchScript model")->required();
  app.add_option("--out", out, "Where to write the embedding model")->required();
  CLI11_PARSE(app, argc, argv);

  torch::jit::Module langid = torch::jit::load(from);
  torch::Tensor emb;
  for (const auto& p : langid.named_parameters()) {
    if (p.name == "emb") emb = p.value.detach().clone();
  }
  if (!emb.defined()) {
    std::fprintf(stderr, "%s has no 'emb' parameter\n", from.c_str());
    return 2;
  }
  torch::jit::Module m("LangIdEmbedding");
  m.register_parameter("emb", emb, false);
  m.register_attribute("input_kind", c10::StringType::get(), std::string("hashed_char_ngrams"));
  m.register_attribute("dim", c10::IntType::get(), emb.size(1));
  for (const char* attr : {"ngram_min", "ngram_max", "buckets", "max_chars"}) {
    m.register_attribute(attr, c10::IntType::get(), langid.attr(attr).toInt());
  }
  // Mean of the item's n-gram vectors, scaled to unit length (a text with no n-gram is a
  // zero vector; the norm is clamped so it never divides by zero).
  m.define(R"(
def forward(self, ids: Tensor, offsets: Tensor) -> Tensor:
    h = torch.embedding_bag(self.emb, ids, offsets, False, 1, False, None, False)[0]
    return h / torch.clamp(torch.norm(h, 2, 1, True), 1e-12)
)");
  m.save(out);
  std::printf("%s sha256 %s (dim %lld)\n", out.c_str(),
              pilot::Sha256File(pilot::RealFileSystem(), out).value().c_str(),
              static_cast<long long>(emb.size(1)));
  return 0;
}
