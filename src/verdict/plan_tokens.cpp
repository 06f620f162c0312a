// `pilot plan` by tokens (rental_plan.h): the tokenizer a folder's stage ran with, and what a
// manifest's inputs weigh in its tokens.
#include <algorithm>

#include "pilot/fleet/calibrate.h"
#include "pilot/folder_files.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/precheck.h"
#include "pilot/reasons.h"
#include "pilot/stage.h"
#include "pilot/verdict/rental_plan.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

const char* const kTokenizerHint =
    "give --tokenizer FILE: the tokenizer file the run used (its sha256 must be the one the run pinned)";

// The folder's parameter copy, parsed with the folder's recorded parameter path's folder as
// the base (as resume parses it): stage.tokenizer.file resolves where the run found it. `base`
// is false when run.json records no absolute parameter path (a relative tokenizer path would
// then resolve inside the folder).
Result<Params> FolderParams(FileSystem& fsys, const fs::path& dir, bool& base) {
  auto run_text = ReadCapped(fsys, dir / kRunRecord, limits::kRunRecordBytes, "run record");
  if (!run_text.ok()) return run_text.error();
  auto run = ParseJson(run_text.value(), (dir / kRunRecord).string());
  if (!run.ok()) return run.error();
  std::optional<std::string> params_path;
  for (const char* section : {"plan", "request"}) {
    if (!params_path && run.value().is_object() && run.value().contains(section))
      params_path = StringAt(run.value()[section], "params");
  }
  auto text = ReadCapped(fsys, dir / kParamsCopy, limits::kParamsBytes, "parameter file");
  if (!text.ok()) return text.error();
  base = params_path && fs::path(*params_path).is_absolute();
  return ParseParams(text.value(), base ? fs::path(*params_path).parent_path() : dir,
                     (dir / kParamsCopy).string());
}

// Whether `file` lies inside `folder`, both resolved (links followed) where they exist.
bool InsideFolder(FileSystem& fsys, const fs::path& file, const fs::path& folder) {
  auto f = fsys.Resolve(file);
  auto d = fsys.Resolve(folder);
  const fs::path a = (f.ok() ? f.value() : fs::absolute(file)).lexically_normal();
  const fs::path b = (d.ok() ? d.value() : fs::absolute(folder)).lexically_normal();
  auto rel = a.lexically_relative(b);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

Result<std::optional<PlanTokenizer>> LoadFolderTokenizer(FileSystem& fsys, const fs::path& dir,
                                                         const std::optional<fs::path>& given,
                                                         std::string& why) {
  why.clear();
  bool base = false;
  auto params = FolderParams(fsys, dir, base);
  if (!params.ok()) {
    if (given) return params.error();
    why = "the folder's parameter copy could not be read: " + params.error().what;
    return std::optional<PlanTokenizer>();
  }
  const auto& stage_tokenizer = params.value().stage.tokenizer;
  if (!stage_tokenizer) {
    if (given) {
      return BadInput("the folder's stage takes no tokenizer: there is nothing to project by tokens",
                      "--tokenizer " + given->string(), "leave --tokenizer out for this folder");
    }
    return std::optional<PlanTokenizer>();  // not tokenized: items it is, nothing to say
  }
  TokenizerParams tp = *stage_tokenizer;
  if (given) {
    tp.file = *given;
  } else if (!base || InsideFolder(fsys, tp.file, dir)) {
    // A folder copied off a machine names the file; one of its own, or one found through a
    // path it chose the base of, is never parsed unasked (a crafted SentencePiece model is not
    // safe to parse).
    why =
        "the run's tokenizer path leads into the folder itself, whose files are not trusted as a "
        "tokenizer; " +
        std::string(kTokenizerHint);
    return std::optional<PlanTokenizer>();
  }
  StageConfig config;
  if (Status loaded = LoadStageTokenizer(fsys, tp, config); !loaded.ok()) {
    if (given) return loaded.error();
    // Not told apart (absent, unreadable, another digest): the folder chose the path.
    why = "the tokenizer the run used could not be loaded from " + tp.file.string() +
          " (absent, unreadable, or not the file the run pinned by sha256); " + kTokenizerHint;
    return std::optional<PlanTokenizer>();
  }
  PlanTokenizer t;
  t.tokenizer = config.tokenizer;
  t.settings = config.tokenizer_settings;
  t.file = tp.file.string();
  t.sha256 = tp.sha256;
  t.truncation = tp.truncation;
  t.max_bytes = params.value().max_bytes;
  return std::optional<PlanTokenizer>(std::move(t));
}

TokenMix MeasureTokens(FileSystem& fsys, const fs::path& manifest, const fs::path& root,
                       const PlanTokenizer& tokenizer,
                       const std::function<void(std::size_t, std::size_t)>& progress) {
  TokenMix mix;
  auto source = ManifestSource::Open(fsys, manifest);
  if (!source.ok()) return mix;
  mix.items = source.value().size();
  if (mix.items == 0) return mix;
  mix.stride = (mix.items + kMaxTokenizedInputs - 1) / kMaxTokenizedInputs;
  const std::size_t want = (mix.items + mix.stride - 1) / mix.stride;
  auto resolved = fsys.Resolve(root);
  const std::size_t max_length = tokenizer.settings.max_length;
  const std::uint64_t read_cap = std::min<std::uint64_t>(tokenizer.max_bytes, kMaxPlanReadBytes);
  std::size_t index = 0;
  const Status walked = source.value().ForEach([&](const ManifestItem& item) -> Status {
    if (index++ % mix.stride != 0) return Status();
    ++mix.sampled;
    if (!resolved.ok()) {
      ++mix.unread;
      return Status();
    }
    Precheck pre = PrecheckItem(fsys, resolved.value(), item, read_cap, InputKind::kText);
    if (pre.rejection && pre.rejection->reason == reason::kTooLarge && read_cap < tokenizer.max_bytes) {
      // Over plan's read cap, never read: longer than any max_length in tokens.
      ++mix.too_long_to_read;
      ++mix.over_max_length;
      mix.tokens += max_length;
    } else if (pre.rejection) {
      ++mix.unread;
    } else {
      TokenizedText t = EncodeText(*tokenizer.tokenizer, tokenizer.settings, pre.text);
      if (!t.error.empty()) {
        ++mix.unread;
      } else {
        ++mix.encoded;
        mix.raw_tokens += t.tokens;
        mix.tokens += std::min<std::uint64_t>(t.tokens, max_length);
        if (t.tokens > max_length) ++mix.over_max_length;
      }
    }
    if (progress && mix.sampled % 1000 == 0) progress(mix.sampled, want);
    return Status();
  });
  (void)walked;  // an unreadable line ends the walk: what was tokenized stays, labelled by its counts
  if (progress && mix.sampled >= 1000 && mix.sampled % 1000 != 0) progress(mix.sampled, want);
  return mix;
}

// A tokenized folder's plan projects by tokens: the pilot's inputs and the corpus' (or a sample
// of it) tokenized with the run's own tokenizer. Where that cannot be done, the plan projects
// by items and says why; a --tokenizer that cannot be used is an error.
Status ProjectByTokens(FileSystem& fsys, const fs::path& given_from, const std::optional<fs::path>& given,
                       PlanRequest& q, const std::function<void(std::size_t, std::size_t)>& progress) {
  // A calibration's measurement is its pilot's: that run folder's tokenizer and inputs.
  const fs::path from =
      q.basis.folder_kind == kFolderKindCalibration ? given_from / kCalibrationPilot : given_from;
  // What cannot be tokenized, known before any tokenizer file is read.
  std::string cannot;
  if (q.corpus.manifest.empty()) {
    cannot = "the corpus is an item count (--corpus-items); give --corpus-manifest to project by tokens";
  } else if (q.basis.inputs_manifest.empty()) {
    cannot = "the folder records no manifest copy and inputs root to tokenize the pilot's inputs from";
  }
  if (!cannot.empty() && !given) {
    bool base = false;
    auto params = FolderParams(fsys, from, base);
    if (params.ok() && params.value().stage.tokenizer) q.by_items_why = cannot;
    return Status();
  }
  std::string why;
  auto loaded = LoadFolderTokenizer(fsys, from, given, why);  // a given one is checked in any case
  if (!loaded.ok()) return loaded.error();
  if (!loaded.value() || !cannot.empty()) {
    q.by_items_why = loaded.value() ? cannot : why;
    return Status();
  }
  const PlanTokenizer& t = *loaded.value();
  TokenProjection p;
  p.tokenizer_file = t.file;
  p.sha256 = t.sha256;
  p.truncation = t.truncation;
  p.max_length = t.settings.max_length;
  p.pilot = MeasureTokens(fsys, q.basis.inputs_manifest, q.basis.inputs_root, t);
  fs::path root = fs::path(q.corpus.manifest).parent_path();
  if (root.empty()) root = ".";
  p.corpus = MeasureTokens(fsys, q.corpus.manifest, root, t, progress);
  if (!p.pilot.known()) {
    q.by_items_why =
        "none of the pilot's inputs could be read and tokenized (from " + q.basis.inputs_root.string() + ")";
    return Status();
  }
  if (!p.corpus.known()) {
    q.by_items_why = "none of the corpus' inputs could be read and tokenized (from " + root.string() + ")";
    return Status();
  }
  if (p.pilot.tokens == 0 || p.corpus.tokens == 0) {
    q.by_items_why = std::string("the ") + (p.pilot.tokens == 0 ? "pilot's" : "corpus'") +
                     " inputs give no token at all under the run's tokenizer settings";
    return Status();
  }
  p.completion_per_item = q.basis.completion_tokens_per_item.value_or(0);
  q.tokens = std::move(p);
  return Status();
}

}  // namespace pilot
