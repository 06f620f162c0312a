#include "pilot/adapt/adapt_records.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pilot/json_util.h"

namespace pilot {
namespace {

const std::string kShaA(64, 'a');
const std::string kShaB(64, 'b');

AdaptJournalHeader Header() {
  AdaptJournalHeader h;
  h.run_id = "adapt-20250101-000000";
  h.params_sha256 = h.train_manifest_sha256 = h.eval_manifest_sha256 = h.base_model_sha256 = kShaA;
  h.train_accounting_sha256 = kShaB;
  h.train_manifest_copy = "data/train-manifest.json";
  h.eval_manifest_copy = "data/eval-manifest.jsonl";
  h.train_items = 10;
  h.train_used = 9;
  h.eval_items = 5;
  h.eval_used = 4;
  h.total_steps = 100;
  h.steps_per_epoch = 3;
  h.threads = 2;
  h.seed = 7;
  h.device = "cpu";
  h.dtype = "float32";
  h.params_path = "/p/adapt.json";
  h.base_model_path = "/p/m.pt";
  h.train_manifest_path = "/p/train.json";
  h.eval_manifest_path = "/p/eval.jsonl";
  h.started_at = "2025-01-01T00:00:00Z";
  h.started_unix = 1735689600.5;
  return h;
}

// An evaluation of 4 items, `correct` of them right.
EvalSummary Eval(std::size_t correct) {
  EvalSummary e;
  e.total = 4;
  e.correct = correct;
  e.per_label["en"] = {std::min<std::size_t>(correct, 2), 2};
  e.per_label["fr"] = {correct - std::min<std::size_t>(correct, 2), 2};
  return e;
}

AdaptCheckpointRecord Checkpoint(std::uint64_t step, std::size_t correct, double at_unix = 0) {
  AdaptCheckpointRecord c;
  c.step = step;
  c.epoch = step / 3;
  c.position = (step % 3) * 4;
  c.file = CheckpointFileName(step);
  c.sha256 = kShaB;
  c.bytes = 1234;
  c.write_ms = 1.5;
  c.losses = {0.7, 0.5};
  c.eval = Eval(correct);
  c.params_digest = kShaA;
  c.at_unix = at_unix;
  return c;
}

AdaptBaseline Baseline() {
  AdaptBaseline b;
  b.eval = Eval(1);
  b.predictions = {"en", "en", "fr", "de"};
  b.confidences = {0.9, 0.5, 1.0, 0.0};
  return b;
}

std::string Line(const nlohmann::ordered_json& j) { return JsonLine(j) + "\n"; }

// header, session, baseline, checkpoints at steps 2, 4, 6 and a pruned record.
std::string Journal() {
  return Line(Header().ToJson()) + Line(AdaptSessionRecord(1000, 42, "pilot adapt")) +
         Line(Baseline().ToJson()) + Line(Checkpoint(2, 2, 1010).ToJson()) +
         Line(Checkpoint(4, 3, 1030).ToJson()) + Line(AdaptPrunedRecord({CheckpointFileName(2)}, 4)) +
         Line(Checkpoint(6, 3, 1040).ToJson());
}

Result<AdaptJournalState> Parse(const std::string& text) {
  return ParseAdaptJournal(text, "run/data/journal.jsonl");
}

void ExpectRefused(const std::string& text, const std::string& what, const std::string& line) {
  auto st = Parse(text);
  ASSERT_FALSE(st.ok()) << what;
  EXPECT_EQ(st.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(st.error().what.find(what), std::string::npos) << st.error().ToString();
  EXPECT_EQ(st.error().where, "run/data/journal.jsonl" + (line.empty() ? "" : ":" + line))
      << st.error().ToString();
}

// `j` with `key` set to `value` (a JSON text).
std::string Edit(nlohmann::ordered_json j, const std::string& key, const std::string& value) {
  j[key] = nlohmann::ordered_json::parse(value);
  return Line(j);
}

TEST(AdaptRecords, CheckpointFileNames) {
  EXPECT_EQ(CheckpointFileName(50), "data/checkpoints/step-00000050.ckpt");
  EXPECT_EQ(CheckpointFileName(123456789), "data/checkpoints/step-123456789.ckpt");
  EXPECT_TRUE(IsCheckpointFileName("step-00000050.ckpt"));
  EXPECT_TRUE(IsCheckpointFileName("step-123456789.ckpt"));
  for (const char* bad : {"step-0000050.ckpt", "step-00000050.ckpt.tmp", "step-0000005a.ckpt",
                          "Step-00000050.ckpt", "step--0000050.ckpt", "data/checkpoints/step-00000050.ckpt",
                          "step-00000050.ckp", "", "x-step-00000050.ckpt"}) {
    EXPECT_FALSE(IsCheckpointFileName(bad)) << bad;
  }
}

TEST(AdaptRecords, JournalRoundTrips) {
  const std::string text = Journal();
  auto st = Parse(text);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  const AdaptJournalState& s = st.value();
  EXPECT_EQ(s.header.ToJson(), Header().ToJson());
  ASSERT_TRUE(s.baseline.has_value());
  EXPECT_EQ(s.baseline->ToJson(), Baseline().ToJson());
  ASSERT_EQ(s.checkpoints.size(), 3u);
  EXPECT_EQ(s.checkpoints[1].ToJson(), Checkpoint(4, 3, 1030).ToJson());
  EXPECT_EQ(s.checkpoints[1].eval.per_label.at("fr"), (std::pair<std::size_t, std::size_t>{1, 2}));
  EXPECT_EQ(s.pruned, (std::set<std::string>{CheckpointFileName(2)}));
  EXPECT_EQ(s.sessions, 1u);
  EXPECT_EQ(s.records, 7u);
  EXPECT_EQ(s.valid_bytes, text.size());
  EXPECT_EQ(s.torn_bytes, 0u);
  EXPECT_DOUBLE_EQ(s.training_seconds, 40.0);  // 1000 -> 1040 in one session
}

TEST(AdaptRecords, TrainingSecondsCountOnlyTimeInsideSessions) {
  std::string text = Line(Header().ToJson()) + Line(AdaptSessionRecord(1000, 1, "pilot adapt")) +
                     Line(Checkpoint(2, 2, 1010).ToJson()) +
                     Line(AdaptSessionRecord(5000, 2, "pilot resume")) +
                     Line(Checkpoint(4, 2, 5005).ToJson()) + Line(Checkpoint(6, 2, 5007).ToJson());
  auto st = Parse(text);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_DOUBLE_EQ(st.value().training_seconds, 17.0);  // 10 + 5 + 2: not the 3990 s between sessions
  EXPECT_EQ(st.value().sessions, 2u);
}

TEST(AdaptRecords, TornLastRecordIsDroppedAndCounted) {
  const std::string whole = Journal();
  const std::string torn = JsonLine(Checkpoint(8, 4, 1050).ToJson());
  for (std::size_t cut : {std::size_t{1}, torn.size() / 2, torn.size()}) {
    auto st = Parse(whole + torn.substr(0, cut));
    ASSERT_TRUE(st.ok()) << cut << ": " << st.error().ToString();
    EXPECT_EQ(st.value().valid_bytes, whole.size());
    EXPECT_EQ(st.value().torn_bytes, cut);
    EXPECT_EQ(st.value().checkpoints.size(), 3u);
    EXPECT_EQ(st.value().records, 7u);
  }
  // Every prefix parses (to its last whole record) or is refused as having no header.
  for (std::size_t n = 0; n <= whole.size(); ++n) {
    auto st = Parse(whole.substr(0, n));
    if (!st.ok()) {
      EXPECT_NE(st.error().what.find("no header"), std::string::npos) << n << ": " << st.error().ToString();
      continue;
    }
    EXPECT_EQ(st.value().valid_bytes + st.value().torn_bytes, n);
  }
  // Damage before the last record is an error naming its line.
  ExpectRefused(Line(Header().ToJson()) + "{\"type\":\"sess\n" + Line(AdaptSessionRecord(1, 1, "x")),
                "record 2", "2");
}

TEST(AdaptRecords, RecordsOutOfPlaceAreRefused) {
  const std::string header = Line(Header().ToJson());
  ExpectRefused(Line(AdaptSessionRecord(1, 1, "x")) + header, "before the header", "1");
  ExpectRefused(header + header, "second header", "2");
  ExpectRefused(header + Line(Baseline().ToJson()) + Line(Baseline().ToJson()), "second baseline", "3");
  ExpectRefused(header + "{\"type\":\"resumed\"}\n", "unknown type 'resumed'", "2");
  ExpectRefused(header + "{\"type\":7}\n", "'type'", "2");
  ExpectRefused("", "no header", "");
}

TEST(AdaptRecords, CheckpointStepsMustIncrease) {
  const std::string start = Line(Header().ToJson()) + Line(Checkpoint(4, 2).ToJson());
  ExpectRefused(start + Line(Checkpoint(4, 2).ToJson()), "not after step 4", "3");
  ExpectRefused(start + Line(Checkpoint(3, 2).ToJson()), "not after step 4", "3");
  ExpectRefused(start + Line(Checkpoint(101, 2).ToJson()), "total_steps", "3");
  AdaptCheckpointRecord many = Checkpoint(6, 2);
  many.losses = {1, 1, 1};  // three losses, two steps since step 4
  ExpectRefused(start + Line(many.ToJson()), "more losses", "3");
  AdaptCheckpointRecord other_file = Checkpoint(6, 2);
  other_file.file = CheckpointFileName(7);
  ExpectRefused(start + Line(other_file.ToJson()), "'file'", "3");
  AdaptCheckpointRecord outside = Checkpoint(6, 2);
  outside.file = "../../etc/passwd";
  ExpectRefused(start + Line(outside.ToJson()), "'file'", "3");
}

TEST(AdaptRecords, PrunedFilesMustBeRecordedOnce) {
  const std::string start =
      Line(Header().ToJson()) + Line(Checkpoint(2, 2).ToJson()) + Line(Checkpoint(4, 2).ToJson());
  ExpectRefused(start + Line(AdaptPrunedRecord({CheckpointFileName(6)}, 4)), "no checkpoint record names",
                "4");
  ExpectRefused(start + Line(AdaptPrunedRecord({"data/params.json"}, 4)), "no checkpoint record names", "4");
  ExpectRefused(start + Line(AdaptPrunedRecord({CheckpointFileName(2)}, 4)) +
                    Line(AdaptPrunedRecord({CheckpointFileName(2)}, 6)),
                "second time", "5");
  ExpectRefused(start + Line(AdaptPrunedRecord({CheckpointFileName(2), CheckpointFileName(2)}, 4)),
                "second time", "4");
  ExpectRefused(start + "{\"type\":\"pruned\",\"files\":\"x\",\"at_step\":4}\n", "pruned", "4");
}

TEST(AdaptRecords, HeaderFieldsAreChecked) {
  const auto h = Header().ToJson();
  ExpectRefused(Edit(h, "version", "2"), "reads (version 1)", "1");
  ExpectRefused(Edit(h, "version", "\"1\""), "version", "1");
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"params_sha256", "\"ABC\""},
           {"base_model_sha256", "null"},
           {"train_manifest_copy", "\"data/../manifest.json\""},
           {"eval_manifest_copy", "\"data/train-manifest.json\""},
           {"train_used", "11"},
           {"eval_used", "6"},
           {"total_steps", "0"},
           {"total_steps", "10000001"},
           {"steps_per_epoch", "0"},
           {"threads", "0"},
           {"threads", "257"},
           {"run_id", "\"\""},
           {"run_id", "\"a/b\""},
           {"device", "\"tpu\""},
           {"dtype", "\"float64\""},
           {"params_path", "\"relative.json\""},
           {"train_items", "-1"},
           {"train_items", "1.5"},
           {"started_unix", "\"now\""},
       }) {
    ExpectRefused(Edit(h, key, value), key, "1");
  }
  auto extra = h;
  extra["surprise"] = 1;
  ExpectRefused(Line(extra), "unknown key 'surprise'", "1");
  auto missing = h;
  missing.erase("seed");
  ExpectRefused(Line(missing), "'seed'", "1");
}

TEST(AdaptRecords, EvalSummaryAndBaselineAreChecked) {
  auto round = EvalSummary::FromJson(nlohmann::json::parse(JsonLine(Eval(3).ToJson())), "w");
  ASSERT_TRUE(round.ok()) << round.error().ToString();
  EXPECT_EQ(round.value().ToJson(), Eval(3).ToJson());
  for (const char* bad : {
           R"({"correct":5,"total":4,"accuracy":1,"per_label":{}})",
           R"({"correct":1,"total":4,"accuracy":0.25,"per_label":{"en":{"correct":1,"total":3}}})",
           R"({"correct":1,"total":1,"accuracy":0.5,"per_label":{"en":{"correct":1,"total":1}}})",
           R"({"correct":1,"total":1,"accuracy":1,"per_label":{"":{"correct":1,"total":1}}})",
           R"({"correct":1,"total":1,"accuracy":1,"per_label":{"en":{"correct":1,"total":1,"x":0}}})",
           R"({"correct":1,"total":1,"accuracy":1,"per_label":[]})",
           R"({"correct":1,"total":1,"accuracy":1})",
           R"({"correct":-1,"total":1,"accuracy":1,"per_label":{}})",
           R"({"correct":0,"total":20001,"accuracy":0,"per_label":{"en":{"correct":0,"total":20001}}})",
           R"([1])",
       }) {
    auto e = EvalSummary::FromJson(nlohmann::json::parse(bad), "w");
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_EQ(e.error().where, "w");
    }
  }
  const std::string header = Line(Header().ToJson());
  AdaptBaseline short_b = Baseline();
  short_b.predictions.pop_back();
  ExpectRefused(header + Line(short_b.ToJson()), "one prediction and one confidence", "2");
  AdaptBaseline high = Baseline();
  high.confidences[0] = 1.5;
  ExpectRefused(header + Line(high.ToJson()), "confidences", "2");
  AdaptBaseline empty_label = Baseline();
  empty_label.predictions[0] = "";
  ExpectRefused(header + Line(empty_label.ToJson()), "predictions", "2");
  AdaptBaseline other_count = Baseline();
  other_count.eval.total = other_count.eval.correct = 2;
  other_count.eval.per_label = {{"en", {2, 2}}};
  other_count.predictions.resize(2);
  other_count.confidences.resize(2);
  ExpectRefused(header + Line(other_count.ToJson()), "eval_used", "2");
}

TEST(AdaptRecords, CheckpointFieldsAreChecked) {
  const std::string header = Line(Header().ToJson());
  const auto c = Checkpoint(2, 2).ToJson();
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"step", "0"},
           {"step", "2.0"},
           {"sha256", "\"x\""},
           {"params_digest", "7"},
           {"write_ms", "-1"},
           {"losses", "[0.5, \"nan\"]"},
           {"losses", "{}"},
           {"eval", "{}"},
           {"at_unix", "null"},
       }) {
    ExpectRefused(header + Edit(c, key, value), key, "2");
  }
}

TEST(AdaptRecords, SessionRecordsAreChecked) {
  const std::string header = Line(Header().ToJson());
  auto s = AdaptSessionRecord(5, 1, "pilot adapt");
  ExpectRefused(header + Edit(s, "pid", "\"1\""), "session", "2");
  ExpectRefused(header + Edit(s, "at_unix", "-5"), "session", "2");
  ExpectRefused(header + Edit(s, "extra", "1"), "session", "2");
}

AdaptJournalState State(const std::vector<std::pair<std::uint64_t, std::size_t>>& steps_correct) {
  AdaptJournalState s;
  s.header = Header();
  for (auto [step, correct] : steps_correct) s.checkpoints.push_back(Checkpoint(step, correct));
  return s;
}

TEST(AdaptRecords, PruningKeepsTheLastAndTheBest) {
  // The best (step 2, 4/4) is old: kept with the last two.
  auto s = State({{2, 4}, {4, 1}, {6, 2}, {8, 3}, {10, 3}});
  ASSERT_NE(BestCheckpoint(s), nullptr);
  EXPECT_EQ(BestCheckpoint(s)->step, 2u);
  EXPECT_EQ(CheckpointsToPrune(s, 2),
            (std::vector<std::string>{CheckpointFileName(4), CheckpointFileName(6)}));
  // The best is among the last two: only those two remain.
  auto t = State({{2, 1}, {4, 1}, {6, 2}, {8, 4}, {10, 3}});
  EXPECT_EQ(BestCheckpoint(t)->step, 8u);
  EXPECT_EQ(CheckpointsToPrune(t, 2),
            (std::vector<std::string>{CheckpointFileName(2), CheckpointFileName(4), CheckpointFileName(6)}));
  // A tie goes to the earliest; pruned checkpoints are neither kept nor candidates.
  auto u = State({{2, 3}, {4, 3}, {6, 1}, {8, 1}});
  EXPECT_EQ(BestCheckpoint(u)->step, 2u);
  u.pruned.insert(CheckpointFileName(2));
  EXPECT_EQ(KeptCheckpoints(u).size(), 3u);
  EXPECT_EQ(BestCheckpoint(u)->step, 4u);
  EXPECT_EQ(CheckpointsToPrune(u, 2), std::vector<std::string>{});
  EXPECT_EQ(CheckpointsToPrune(u, 1), (std::vector<std::string>{CheckpointFileName(6)}));
  // Nothing to prune with fewer checkpoints than kept; none at all: no best.
  EXPECT_TRUE(CheckpointsToPrune(State({{2, 1}}), 2).empty());
  EXPECT_EQ(BestCheckpoint(State({})), nullptr);
}

TEST(AdaptRecords, BestComparesExactFractions) {
  AdaptJournalState s = State({{2, 0}, {4, 0}});
  // 1/3 against 2/6: equal, so the earlier wins; 0 of 0 counts as 0.
  s.checkpoints[0].eval = EvalSummary{};
  s.checkpoints[0].eval.correct = 1;
  s.checkpoints[0].eval.total = 3;
  s.checkpoints[1].eval = EvalSummary{};
  s.checkpoints[1].eval.correct = 2;
  s.checkpoints[1].eval.total = 6;
  EXPECT_EQ(BestCheckpoint(s)->step, 2u);
  s.checkpoints[0].eval = EvalSummary{};
  EXPECT_EQ(BestCheckpoint(s)->step, 4u);
}

TEST(AdaptRecords, TrainAccountingLines) {
  TrainAccountingLine used{"a-1", "used", "fr", "", ""};
  TrainAccountingLine rejected{"b", "rejected", "", "too_large", "1 MiB over max_bytes"};
  for (const auto& l : {used, rejected}) {
    auto back =
        TrainAccountingLine::FromJson(nlohmann::json::parse(JsonLine(l.ToJson())), "data/train.jsonl:1");
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back.value().ToJson(), l.ToJson());
  }
  EXPECT_EQ(JsonLine(used.ToJson()), R"({"id":"a-1","status":"used","label":"fr"})");
  for (const char* bad : {
           R"({"id":"a b","status":"used","label":"fr"})",
           R"({"id":"a","status":"accepted","label":"fr"})",
           R"({"id":"a","status":"used","label":""})",
           R"({"id":"a","status":"used"})",
           R"({"id":"a","status":"used","label":"fr","reason":"too_large"})",
           R"({"id":"a","status":"rejected","reason":"bad_vibes","detail":""})",
           R"({"id":"a","status":"rejected","reason":"too_large"})",
           R"({"id":"a","status":"rejected","reason":"too_large","detail":"x","label":"fr"})",
           R"({"id":7,"status":"used","label":"fr"})",
           R"("a")",
       }) {
    auto l = TrainAccountingLine::FromJson(nlohmann::json::parse(bad), "data/train.jsonl:3");
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_EQ(l.error().where, "data/train.jsonl:3");
  }
}

TEST(AdaptRecords, EvalAccountingLines) {
  EvalAccountingLine evaluated{"e1", "evaluated", "fr", "en", "fr", 0.6, 0.95, "", ""};
  EvalAccountingLine rejected{"e2", "rejected", "", "", "", 0, 0, "missing_file", "no such file"};
  for (const auto& l : {evaluated, rejected}) {
    auto back =
        EvalAccountingLine::FromJson(nlohmann::json::parse(JsonLine(l.ToJson())), "data/eval.jsonl:1");
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back.value().ToJson(), l.ToJson());
  }
  const std::string ok = JsonLine(evaluated.ToJson());
  EXPECT_EQ(
      ok,
      R"({"id":"e1","status":"evaluated","expected":"fr","base":"en","base_confidence":0.6,"adapted":"fr","adapted_confidence":0.95})");
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"0.6", "1.6"},
           {"0.95", "-0.1"},
           {"0.95", "\"0.95\""},
           {"\"base\":\"en\",", ""},
           {"\"expected\":\"fr\"", "\"expected\":\"\""},
           {"\"evaluated\"", "\"used\""},
           {"\"e1\"", "\"\""},
           {"}", ",\"note\":1}"},
       }) {
    std::string text = ok;
    text.replace(text.find(from), from.size(), to);
    auto l = EvalAccountingLine::FromJson(nlohmann::json::parse(text), "data/eval.jsonl:2");
    ASSERT_FALSE(l.ok()) << text;
    EXPECT_EQ(l.error().where, "data/eval.jsonl:2");
  }
  EXPECT_FALSE(
      EvalAccountingLine::FromJson(
          nlohmann::json::parse(R"({"id":"a","status":"rejected","reason":"nope","detail":""})"), "w")
          .ok());
}

}  // namespace
}  // namespace pilot
