// `verify` of an adaptation folder (kind `adapt`), after the bag's own checks (verify.cpp):
// run.json and the copies against their pins; the journal, and every checkpoint it keeps
// against its recorded sha256 (and nothing else in data/checkpoints); every training and
// evaluation id accounted for exactly once; the final model against the model card and
// run.json; report.json's counts against what the accounting and the journal say.
#include <map>
#include <set>

#include "pilot/adapt/adapt_files.h"
#include "pilot/adapt/adapt_params.h"
#include "pilot/adapt/adapt_records.h"
#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/utf8.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kAdaptJournalCap = 512ull << 20;
constexpr std::uint64_t kAccountingCap = 256ull << 20;
constexpr std::uint64_t kModelCardCap = 1ull << 20;

class AdaptChecker {
 public:
  AdaptChecker(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings)
      : fs_(fsys), dir_(dir), findings_(findings) {}

  void Run() {
    if (!ReadRecord()) return;
    auto text = ReadInsideFolder(fs_, dir_, kAdaptJournal, kAdaptJournalCap);
    if (!text.ok()) return Add("journal", kAdaptJournal, text.error().what);
    auto state = ParseAdaptJournal(text.value(), kAdaptJournal);
    if (!state.ok()) return Add("journal", kAdaptJournal, state.error().what);
    state_ = std::move(state).value();
    CheckPins();
    CheckCheckpoints();
    CheckTrain();
    CheckEval();
    CheckModel();
    CheckReport();
  }

 private:
  void Add(const std::string& check, const std::string& where, const std::string& what) {
    findings_.push_back({check, EscapeTerminal(where), EscapeTerminal(what)});
  }

  std::string Pin(const char* key) { return StringAt(record_, key).value_or(""); }

  bool ReadRecord() {
    auto text = ReadInsideFolder(fs_, dir_, kRunRecord, limits::kRunRecordBytes);
    if (!text.ok()) {
      Add("copies", kRunRecord, text.error().what);
      return false;
    }
    auto parsed = ParseJson(text.value(), kRunRecord);
    if (!parsed.ok() || !parsed.value().is_object()) {
      Add("copies", kRunRecord, parsed.ok() ? "not a JSON object" : parsed.error().what);
      return false;
    }
    record_ = std::move(parsed).value();
    if (Pin("state") != "finished") {
      Add("copies", kRunRecord,
          "the adaptation has not finished (state '" + KeyForMessage(Pin("state")) + "'); `pilot resume` it");
    }
    return true;
  }

  // A file of the folder against the sha256 `want`.
  void CheckHash(const std::string& check, const std::string& rel, const std::string& want) {
    auto sha = Sha256File(fs_, dir_ / rel, false);
    if (!sha.ok()) return Add(check, rel, sha.error().what);
    if (sha.value() != want)
      Add(check, rel, "its sha256 " + sha.value() + " is not the pinned " + KeyForMessage(want));
  }

  void CheckPins() {
    const AdaptJournalHeader& h = state_.header;
    for (auto [key, journal] : {std::pair{"params_sha256", &h.params_sha256},
                                std::pair{"train_manifest_sha256", &h.train_manifest_sha256},
                                std::pair{"eval_manifest_sha256", &h.eval_manifest_sha256},
                                std::pair{"base_model_sha256", &h.base_model_sha256},
                                std::pair{"train_manifest_copy", &h.train_manifest_copy},
                                std::pair{"eval_manifest_copy", &h.eval_manifest_copy}}) {
      if (Pin(key) != *journal)
        Add("copies", kRunRecord, std::string(key) + " differs from the journal's header");
    }
    CheckHash("copies", kParamsCopy, h.params_sha256);
    CheckHash("copies", h.train_manifest_copy, h.train_manifest_sha256);
    CheckHash("copies", h.eval_manifest_copy, h.eval_manifest_sha256);
    if (state_.torn_bytes > 0) Add("journal", kAdaptJournal, "its last record is torn");
    if (!state_.baseline) Add("journal", kAdaptJournal, "it has no baseline evaluation");
    if (state_.checkpoints.empty() || state_.checkpoints.back().step != h.total_steps) {
      Add("journal", kAdaptJournal,
          "the last checkpoint is not at the final step " + std::to_string(h.total_steps));
    }
  }

  void CheckCheckpoints() {
    std::set<std::string> kept;
    for (const auto* c : KeptCheckpoints(state_)) {
      kept.insert(fs::path(c->file).filename().string());
      auto st = fs_.LinkStat(dir_ / c->file);
      if (!st.ok() || !st.value().exists || st.value().symlink || !st.value().regular) {
        Add("checkpoints", c->file, "a checkpoint the journal keeps is missing, or not a regular file");
        continue;
      }
      if (st.value().size != c->bytes) {
        Add("checkpoints", c->file,
            "its size is " + std::to_string(st.value().size) + ", the journal records " +
                std::to_string(c->bytes));
      }
      CheckHash("checkpoints", c->file, c->sha256);
    }
    auto listing = fs_.ListDirectory(dir_ / kAdaptCheckpointDir);
    if (!listing.ok()) return Add("checkpoints", kAdaptCheckpointDir, listing.error().what);
    for (const auto& e : listing.value()) {
      if (!kept.count(e.name)) {
        Add("checkpoints", std::string(kAdaptCheckpointDir) + "/" + e.name,
            state_.pruned.count(std::string(kAdaptCheckpointDir) + "/" + e.name)
                ? "the journal says this checkpoint was pruned"
                : "not a checkpoint the journal keeps");
      }
    }
  }

  // The lines of a JSON Lines file of the folder, each parsed.
  bool ReadLines(const std::string& rel, std::vector<nlohmann::json>& out, std::string* bytes = nullptr) {
    auto text = ReadInsideFolder(fs_, dir_, rel, kAccountingCap);
    if (!text.ok()) {
      Add("accounting", rel, text.error().what);
      return false;
    }
    if (bytes) *bytes = text.value();
    std::string_view rest(text.value());
    std::size_t line_no = 0;
    while (!rest.empty()) {
      ++line_no;
      const std::size_t nl = rest.find('\n');
      if (nl == std::string_view::npos) {
        Add("accounting", rel, "its last line is not terminated");
        return false;
      }
      auto j = ParseJson(rest.substr(0, nl), rel + ":" + std::to_string(line_no));
      if (!j.ok()) {
        Add("accounting", rel, j.error().what);
        return false;
      }
      out.push_back(std::move(j).value());
      rest.remove_prefix(nl + 1);
    }
    return true;
  }

  // The manifest copy's items, or nothing (a finding) when it cannot be read.
  std::optional<std::vector<ManifestItem>> Items(const std::string& copy) {
    auto source = ManifestSource::Open(fs_, dir_ / copy);
    if (!source.ok()) {
      Add("copies", copy, source.error().what);
      return std::nullopt;
    }
    std::vector<ManifestItem> items;
    Status st = source.value().ForEach([&](const ManifestItem& item) {
      items.push_back(item);
      return Status();
    });
    if (!st.ok()) {
      Add("copies", copy, st.error().what);
      return std::nullopt;
    }
    return items;
  }

  void CheckTrain() {
    const AdaptJournalHeader& h = state_.header;
    auto items = Items(h.train_manifest_copy);
    std::vector<nlohmann::json> lines;
    std::string bytes;
    if (!items || !ReadLines(kAdaptTrainAccounting, lines, &bytes)) return;
    if (Sha256Hex(bytes) != h.train_accounting_sha256) {
      Add("accounting", kAdaptTrainAccounting,
          "it differs from what the prechecks wrote when the adaptation began");
    }
    if (lines.size() != items->size()) {
      Add("accounting", kAdaptTrainAccounting,
          std::to_string(lines.size()) + " lines for " + std::to_string(items->size()) + " training ids");
    }
    for (std::size_t i = 0; i < std::min(lines.size(), items->size()); ++i) {
      auto line = TrainAccountingLine::FromJson(
          lines[i], std::string(kAdaptTrainAccounting) + ":" + std::to_string(i + 1));
      if (!line.ok()) {
        Add("accounting", kAdaptTrainAccounting, line.error().what);
        continue;
      }
      const ManifestItem& item = (*items)[i];
      const TrainAccountingLine& l = line.value();
      if (l.id != item.id) {
        Add("accounting", item.id,
            "the training accounting is not in manifest order (line " + std::to_string(i + 1) + " is '" +
                l.id + "')");
        return;
      }
      if (l.status != "used") ++train_reasons_[l.reason];
      if (l.status == "used") {
        ++train_used_;
        if (!item.expected || l.label != *item.expected)
          Add("accounting", item.id, "used with another label than its `expected`");
      } else {
        ++train_rejected_;
      }
      if (item.expected_rejection && (l.status != "rejected" || l.reason != *item.expected_rejection)) {
        Add("accounting", item.id,
            "expected the rejection '" + KeyForMessage(*item.expected_rejection) + "'");
      }
    }
    train_checked_ = true;
    if (train_used_ != h.train_used) {
      Add("accounting", kAdaptTrainAccounting,
          std::to_string(train_used_) + " items used, the journal says " + std::to_string(h.train_used));
    }
  }

  void CheckEval() {
    const AdaptJournalHeader& h = state_.header;
    auto items = Items(h.eval_manifest_copy);
    std::vector<nlohmann::json> lines;
    if (!items || !ReadLines(kAdaptEvalAccounting, lines)) return;
    if (lines.size() != items->size()) {
      Add("accounting", kAdaptEvalAccounting,
          std::to_string(lines.size()) + " lines for " + std::to_string(items->size()) + " evaluation ids");
    }
    std::size_t evaluated = 0;
    for (std::size_t i = 0; i < std::min(lines.size(), items->size()); ++i) {
      auto line = EvalAccountingLine::FromJson(
          lines[i], std::string(kAdaptEvalAccounting) + ":" + std::to_string(i + 1));
      if (!line.ok()) {
        Add("accounting", kAdaptEvalAccounting, line.error().what);
        continue;
      }
      const ManifestItem& item = (*items)[i];
      const EvalAccountingLine& l = line.value();
      if (l.id != item.id) {
        Add("accounting", item.id, "the evaluation accounting is not in manifest order");
        return;
      }
      if (item.expected_rejection && (l.status != "rejected" || l.reason != *item.expected_rejection)) {
        Add("accounting", item.id,
            "expected the rejection '" + KeyForMessage(*item.expected_rejection) + "'");
      }
      if (l.status != "evaluated") {
        ++eval_reasons_[l.reason];
        continue;
      }
      if (!item.expected || l.expected != *item.expected)
        Add("accounting", item.id, "evaluated against another label");
      if (state_.baseline && evaluated < state_.baseline->predictions.size() &&
          state_.baseline->predictions[evaluated] != l.base) {
        Add("accounting", item.id, "its base prediction differs from the journal's baseline");
      }
      ++evaluated;
      adapted_.total++;
      auto& cell = adapted_.per_label[l.expected];
      ++cell.second;
      if (l.adapted == l.expected) {
        ++adapted_.correct;
        ++cell.first;
      }
    }
    if (evaluated != h.eval_used) {
      Add("accounting", kAdaptEvalAccounting,
          std::to_string(evaluated) + " items evaluated, the journal says " + std::to_string(h.eval_used));
    }
    eval_checked_ = true;
  }

  void CheckModel() {
    auto sha = Sha256File(fs_, dir_ / kAdaptModel, false);
    if (!sha.ok()) return Add("model", kAdaptModel, sha.error().what);
    model_sha_ = sha.value();
    if (Pin("adapted_model_sha256") != model_sha_) {
      Add("model", kAdaptModel, "its sha256 " + model_sha_ + " is not the one data/run.json records");
    }
    auto card = ReadInsideFolder(fs_, dir_, kAdaptModelCard, kModelCardCap);
    if (!card.ok()) return Add("model", kAdaptModelCard, card.error().what);
    auto stated = ModelCardSha256(card.value());
    if (!stated) return Add("model", kAdaptModelCard, "it states no sha256 for the adapted model");
    if (*stated != model_sha_)
      Add("model", kAdaptModelCard, "it states sha256 " + *stated + ", the model's is " + model_sha_);
  }

  void CheckReport() {
    auto text = ReadInsideFolder(fs_, dir_, kAdaptReportJson, limits::kReportBytes);
    if (!text.ok()) return Add("report", kAdaptReportJson, text.error().what);
    auto parsed = ParseJson(text.value(), kAdaptReportJson);
    if (!parsed.ok()) return Add("report", kAdaptReportJson, parsed.error().what);
    const nlohmann::json& r = parsed.value();
    auto at = [&](std::initializer_list<const char*> path) -> const nlohmann::json* {
      const nlohmann::json* j = &r;
      for (const char* k : path) {
        if (!j->is_object() || !j->contains(k)) return nullptr;
        j = &(*j)[k];
      }
      return j;
    };
    auto same = [&](std::initializer_list<const char*> path, std::uint64_t want, const std::string& what) {
      const nlohmann::json* j = at(path);
      if (!j || !j->is_number_unsigned() || j->get<std::uint64_t>() != want) {
        Add("report", kAdaptReportJson, what + " differs from " + std::to_string(want));
      }
    };
    same({"train", "used"}, train_used_, "train.used");
    same({"train", "rejected"}, train_rejected_, "train.rejected");
    same({"train", "items"}, state_.header.train_items, "train.items");
    same({"eval", "evaluated"}, state_.header.eval_used, "eval.evaluated");
    if (state_.baseline)
      same({"evaluation", "base", "correct"}, state_.baseline->eval.correct, "evaluation.base.correct");
    if (eval_checked_)
      same({"evaluation", "adapted", "correct"}, adapted_.correct, "evaluation.adapted.correct");
    const nlohmann::json* sha = at({"adapted_model", "sha256"});
    if (!sha || !sha->is_string() || sha->get<std::string>() != model_sha_) {
      Add("report", kAdaptReportJson, "adapted_model.sha256 is not the model's");
    }
    if (!state_.checkpoints.empty()) {
      const nlohmann::json* digest = at({"final_params_digest"});
      if (!digest || !digest->is_string() ||
          digest->get<std::string>() != state_.checkpoints.back().params_digest) {
        Add("report", kAdaptReportJson, "final_params_digest is not the last checkpoint's");
      }
    }
    // Only from complete sources: a partial tally would only repeat the findings above.
    if (train_checked_ && eval_checked_ && state_.baseline && !state_.checkpoints.empty() &&
        !model_sha_.empty())
      CheckDerived(text.value(), r);
  }

  // report.json built again whole from the folder's sources (and the facts only it states:
  // versions, time, the trainable names), metrics.jsonl from the journal, and the three
  // renderings from the rebuilt report: each compared byte for byte.
  void CheckDerived(const std::string& text, const nlohmann::json& report) {
    auto params_text = ReadInsideFolder(fs_, dir_, kParamsCopy, limits::kParamsBytes);
    if (!params_text.ok()) return Add("copies", kParamsCopy, params_text.error().what);
    auto params = ParseAdaptParams(params_text.value(), dir_ / "data", kParamsCopy);
    if (!params.ok()) return Add("copies", kParamsCopy, params.error().what);
    auto model = fs_.LinkStat(dir_ / kAdaptModel);
    const std::uint64_t model_bytes = model.ok() ? model.value().size : 0;
    const AdaptMetrics metrics = BuildAdaptMetrics(state_, state_.baseline->eval.accuracy());
    const nlohmann::ordered_json want = BuildAdaptReport(
        {state_.header, state_, params.value(), metrics, train_reasons_, eval_reasons_, adapted_, model_sha_,
         model_bytes, state_.checkpoints.back().params_digest, AdaptReportFactsFromJson(report)});
    if (text != PrettyJson(want)) {
      const std::string keys = DifferingKeys(report, want);
      Add("report", kAdaptReportJson,
          keys.empty() ? "is not byte for byte the report its journal, accounting and parameters give"
                       : "differs from what its journal, accounting and parameters give, at: " + keys);
    }
    const std::pair<const char*, std::string> derived[] = {
        {kAdaptMetrics, metrics.text},
        {kAdaptReportMarkdown, RenderAdaptMarkdown(want)},
        {kAdaptReportHtml, RenderAdaptHtml(want, metrics.losses)},
        {kAdaptModelCard, RenderAdaptModelCard(want)}};
    for (const auto& [rel, expected] : derived) {
      auto got = ReadInsideFolder(fs_, dir_, rel, limits::kReportBytes);
      if (!got.ok()) {
        Add("report", rel, got.error().what);
      } else if (got.value() != expected) {
        Add("report", rel, "differs from what the folder's journal and report give (edited?)");
      }
    }
  }

  FileSystem& fs_;
  const fs::path& dir_;
  std::vector<Finding>& findings_;
  nlohmann::json record_;
  AdaptJournalState state_;
  std::size_t train_used_ = 0, train_rejected_ = 0;
  std::map<std::string, std::size_t> train_reasons_, eval_reasons_;
  EvalSummary adapted_;
  bool eval_checked_ = false, train_checked_ = false;
  std::string model_sha_;
};

}  // namespace

// The checks of an adaptation folder (kind `adapt`, adapt_records.h) after the bag's own.
void RegisterAdaptFolderKind(FolderKindRegistry& registry) {
  FolderKindSpec spec;
  spec.name = kFolderKindAdapt;
  spec.checked =
      "an adaptation folder: every training and evaluation id accounted for once, the kept checkpoints "
      "against the journal, the model against its card";
  spec.min_format = spec.max_format = kAdaptFormatVersion;
  spec.run_record = false;  // its record is its own (adapt_records.h)
  spec.checks = [](FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
    AdaptChecker(fsys, dir, findings).Run();
  };
  registry.Register(std::move(spec));
}

}  // namespace pilot
