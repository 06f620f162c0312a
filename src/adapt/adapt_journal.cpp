// The adaptation journal (adapt_records.h): its parser and which checkpoints it keeps.
#include <algorithm>
#include <cmath>

#include "pilot/adapt/adapt_params.h"
#include "pilot/adapt/adapt_records.h"
#include "pilot/json_util.h"

namespace pilot {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// One journal line. Above limits::kJournalLineBytes on purpose: the baseline record lists a
// label (up to 128 bytes) and a confidence for each of up to kMaxAdaptEvalItems items.
constexpr std::uint64_t kAdaptJournalLineBytes = 16ull << 20;
constexpr const char* kHint =
    "the adaptation folder is damaged and cannot be resumed; start a new `pilot adapt`";

bool HasOnlyKeys(const json& j, std::initializer_list<const char*> allowed) {
  for (const auto& item : j.items()) {
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return item.key() == a; }))
      return false;
  }
  return true;
}

// Builds an AdaptJournalState record by record. A record that cannot be read at all (torn:
// no newline, or not a JSON object with a type) is acceptable only as the last one; a
// readable record that is wrong is an error at once.
class AdaptJournalParser {
 public:
  explicit AdaptJournalParser(std::string where) : where_(std::move(where)) {}

  // One line without its '\n'; `complete` when it had one; `end` is the offset after it.
  Status Add(std::string_view line, bool complete, std::uint64_t end) {
    const std::uint64_t start = end - line.size() - (complete ? 1 : 0);
    ++line_no_;
    if (pending_error_) return *pending_error_;
    std::optional<json> j;
    if (complete) {
      auto parsed = ParseJson(line, Where());
      if (parsed.ok() && parsed.value().is_object() && parsed.value().contains("type"))
        j = std::move(parsed).value();
    }
    if (!j) {
      pending_error_ = Bad("is damaged (not a whole JSON record with a type)");
      st_.torn_bytes = end - start;
      return {};
    }
    PILOT_TRY(Record(*j));
    st_.valid_bytes = end;
    ++st_.records;
    return {};
  }

  Result<AdaptJournalState> Finish() {
    if (st_.records == 0) {
      return BadInput("the adaptation journal has no header: the adaptation never started", where_,
                      "start a new `pilot adapt`");
    }
    return std::move(st_);
  }

 private:
  std::string Where() const { return where_ + ":" + std::to_string(line_no_); }
  Error Bad(const std::string& what) const {
    return BadInput("record " + std::to_string(line_no_) + " " + what, Where(), kHint);
  }

  Status Record(const json& j) {
    auto type = StringAt(j, "type");
    if (!type) return Bad("has a 'type' that is not a string");
    if (*type == "header") {
      if (line_no_ != 1) return Bad("is a second header");
      auto header = AdaptJournalHeader::FromJson(j, Where());
      if (!header.ok()) return header.error();
      st_.header = std::move(header).value();
      return {};
    }
    if (line_no_ == 1) return Bad("(" + KeyForMessage(*type) + ") comes before the header");
    if (*type == "session") return Session(j);
    if (*type == "baseline") return Baseline(j);
    if (*type == "checkpoint") return Checkpoint(j);
    if (*type == "pruned") return Pruned(j);
    return Bad("has unknown type '" + KeyForMessage(*type) + "'");
  }

  Status Session(const json& j) {
    auto at = NumberAt(j, "at_unix");
    if (!HasOnlyKeys(j, {"type", "at_unix", "pid", "command"}) || !at || !std::isfinite(*at) || *at < 0 ||
        !j.contains("pid") || !j["pid"].is_number_integer() || !StringAt(j, "command")) {
      return Bad("(a session) is not {type, at_unix, pid, command}");
    }
    ++st_.sessions;
    session_started_ = *at;
    last_checkpoint_at_ = 0;
    return {};
  }

  Status Baseline(const json& j) {
    if (st_.baseline) return Bad("is a second baseline");
    auto b = AdaptBaseline::FromJson(j, Where());
    if (!b.ok()) return b.error();
    if (b.value().eval.total != st_.header.eval_used) {
      return Bad("(the baseline) evaluates another number of items than the header's eval_used");
    }
    st_.baseline = std::move(b).value();
    return {};
  }

  Status Checkpoint(const json& j) {
    if (st_.checkpoints.size() >= kMaxAdaptCheckpointRecords) {
      return Bad("is past the cap of " + std::to_string(kMaxAdaptCheckpointRecords) + " checkpoint records");
    }
    auto parsed = AdaptCheckpointRecord::FromJson(j, Where());
    if (!parsed.ok()) return parsed.error();
    AdaptCheckpointRecord& c = parsed.value();
    const std::uint64_t previous = st_.checkpoints.empty() ? 0 : st_.checkpoints.back().step;
    if (c.step <= previous) {
      return Bad("(a checkpoint) has step " + std::to_string(c.step) + ", not after step " +
                 std::to_string(previous));
    }
    if (c.step > st_.header.total_steps)
      return Bad("(a checkpoint) has a step past the header's total_steps");
    if (c.losses.size() > c.step - previous)
      return Bad("(a checkpoint) has more losses than steps since the previous one");
    if (c.eval.total != st_.header.eval_used) {
      return Bad("(a checkpoint) evaluates another number of items than the header's eval_used");
    }
    // Training time: from the session's start (or its previous checkpoint) to this one.
    const double since = std::max(session_started_, last_checkpoint_at_);
    if (session_started_ > 0 && c.at_unix >= since) st_.training_seconds += c.at_unix - since;
    last_checkpoint_at_ = c.at_unix;
    files_.insert(c.file);
    st_.checkpoints.push_back(std::move(c));
    return {};
  }

  Status Pruned(const json& j) {
    auto at_step = UnsignedAt(j, "at_step");
    if (!HasOnlyKeys(j, {"type", "files", "at_step"}) || !at_step || *at_step > kMaxAdaptSteps ||
        !j.contains("files") || !j["files"].is_array()) {
      return Bad("(pruned) is not {type, files, at_step}");
    }
    for (const auto& f : j["files"]) {
      if (!f.is_string() || files_.count(f.get_ref<const std::string&>()) == 0) {
        return Bad("(pruned) names a file that no checkpoint record names");
      }
      if (!st_.pruned.insert(f.get<std::string>()).second) {
        return Bad("(pruned) prunes " + f.get<std::string>() + " a second time");
      }
    }
    return {};
  }

  std::string where_;
  AdaptJournalState st_;
  std::size_t line_no_ = 0;
  std::optional<Error> pending_error_;  // a damaged record is fatal unless it turns out to be the last
  std::set<std::string> files_;         // every checkpoint file recorded
  double session_started_ = 0, last_checkpoint_at_ = 0;
};

// correct/total of `a` above that of `b`, in integers (an empty evaluation counts as 0/1).
bool MoreAccurate(const EvalSummary& a, const EvalSummary& b) {
  const std::uint64_t at = std::max<std::size_t>(a.total, 1), bt = std::max<std::size_t>(b.total, 1);
  return static_cast<std::uint64_t>(a.correct) * bt > static_cast<std::uint64_t>(b.correct) * at;
}

}  // namespace

Result<AdaptJournalState> ParseAdaptJournal(std::string_view text, const std::string& where) {
  AdaptJournalParser parser(where);
  for (std::size_t start = 0; start < text.size();) {
    auto nl = text.find('\n', start);
    bool complete = nl != std::string_view::npos;
    std::size_t stop = complete ? nl : text.size();
    if (stop - start > kAdaptJournalLineBytes) {
      return BadInput(
          "a record is longer than pilot's cap of " + std::to_string(kAdaptJournalLineBytes) + " bytes",
          where, kHint);
    }
    std::string_view line = text.substr(start, stop - start);
    start = complete ? nl + 1 : text.size();
    if (Status st = parser.Add(line, complete, start); !st.ok()) return st.error();
  }
  return parser.Finish();
}

ojson AdaptSessionRecord(double at_unix, long pid, const std::string& command) {
  return ojson{{"type", "session"}, {"at_unix", at_unix}, {"pid", pid}, {"command", command}};
}

ojson AdaptPrunedRecord(const std::vector<std::string>& files, std::uint64_t at_step) {
  return ojson{{"type", "pruned"}, {"files", files}, {"at_step", at_step}};
}

std::vector<const AdaptCheckpointRecord*> KeptCheckpoints(const AdaptJournalState& state) {
  std::vector<const AdaptCheckpointRecord*> kept;
  for (const auto& c : state.checkpoints) {
    if (state.pruned.count(c.file) == 0) kept.push_back(&c);
  }
  return kept;
}

const AdaptCheckpointRecord* BestCheckpoint(const AdaptJournalState& state) {
  const AdaptCheckpointRecord* best = nullptr;
  for (const AdaptCheckpointRecord* c : KeptCheckpoints(state)) {
    if (!best || MoreAccurate(c->eval, best->eval)) best = c;
  }
  return best;
}

std::vector<std::string> CheckpointsToPrune(const AdaptJournalState& state, int keep_last) {
  auto kept = KeptCheckpoints(state);
  const AdaptCheckpointRecord* best = BestCheckpoint(state);
  const std::size_t keep = static_cast<std::size_t>(std::max(keep_last, 0));
  std::vector<std::string> prune;
  for (std::size_t i = 0; i + keep < kept.size(); ++i) {
    if (kept[i] != best) prune.push_back(kept[i]->file);
  }
  return prune;
}

}  // namespace pilot
