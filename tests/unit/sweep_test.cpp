// The sweep's core on a scripted stage, in process: grouping, one cell, the first limit,
// equivalence findings, the folder (a verified bag), resume with finished cells kept, and
// the strict parsers of what a sweep folder holds.
#include "pilot/sweep/sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pilot/bag.h"
#include "pilot/batch_plan.h"
#include "pilot/clock.h"
#include "pilot/json_util.h"
#include "pilot/sweep/sweep_run.h"
#include "pilot/verify.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

using testing::FakeClock;

// The FakeStage, scripted for sweeps: a batch of `oom_at` or more that holds a long input
// (over 100 bytes) runs out of memory; "drift" items change their confidence with the batch
// size, as a model whose batching changes results would.
class SweepStage : public testing::FakeStage {
 public:
  explicit SweepStage(const OutputKindSpec& kind = ClassificationOutput()) : FakeStage(kind) {}
  std::size_t oom_at = 0;
  std::size_t calls = 0;
  BatchOutput Process(const std::vector<std::string_view>& texts) override {
    ++calls;
    if (oom_at > 0 && texts.size() >= oom_at) {
      for (auto t : texts) {
        if (t.size() > 100)
          return BatchOutput::Failed("out of memory (scripted) at batch " + std::to_string(texts.size()),
                                     true);
      }
    }
    BatchOutput out = FakeStage::Process(texts);
    for (std::size_t k = 0; k < texts.size() && out.ok; ++k) {
      if (texts[k].substr(0, 5) == "drift") {
        out.items[k].label = "en";
        out.items[k].confidence = 0.9 - 0.01 * static_cast<double>(texts.size());
      }
    }
    return out;
  }
};

// Short, medium and long inputs, four of each: three length groups.
testing::Items ThreeLengths(const std::string& medium_word = "fr") {
  testing::Items items;
  for (int i = 0; i < 4; ++i) items.push_back({"s" + std::to_string(i), "en s" + std::to_string(i)});
  for (int i = 0; i < 4; ++i)
    items.push_back({"m" + std::to_string(i), medium_word + " " + std::string(40 + i, 'm')});
  for (int i = 0; i < 4; ++i) items.push_back({"l" + std::to_string(i), "de " + std::string(200 + i, 'l')});
  return items;
}

struct SweepHarness {
  Fixture fx;
  SweepStage stage;
  FakeClock clock;
  std::size_t cells_run = 0;
  std::size_t stop_after_cells = 0;  // 0: never
  explicit SweepHarness(const testing::Items& items, const OutputKindSpec& kind = ClassificationOutput())
      : fx(items), stage(kind) {
    if (kind.vectors) {
      fx.plan.params.allowed_categories.clear();
    }
  }
  SweepPlan Plan(SweepSettings settings = {}) {
    SweepPlan p;
    p.run = fx.plan;
    p.settings = settings;
    p.dir = fx.dir / "sweep";
    p.grouping =
        GroupManifest(RealFileSystem(), p.run, stage, settings.groups, SweepSampleSize(settings)).value();
    p.stage = stage.Describe();
    return p;
  }
  CellRunner Runner(const RunPlan& plan) {
    return [this, plan](const fs::path& dir, int g, int b, int) -> Result<CellMeasure> {
      auto in = LoadCellInputs(RealFileSystem(), dir, plan, stage, g);
      if (!in.ok()) return in.error();
      ++cells_run;
      return RunCell(clock, stage, in.value().ids, in.value().texts, g, b, 2);
    };
  }
  SweepControl Control() {
    SweepControl c;
    c.should_stop = [this] { return stop_after_cells > 0 && cells_run >= stop_after_cells; };
    return c;
  }
};

TEST(SweepGroupsTest, CutsWhereTheLengthChangesIntoDisjointGroupsInManifestOrder) {
  std::vector<MeasuredItem> items = {{"a", 5}, {"b", 1}, {"c", 5}, {"d", 9}, {"e", 1}, {"f", 9}};
  Grouping g = MakeGroups(items, 3, "bytes");
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(g.groups[0].ids, (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(g.groups[1].ids, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(g.groups[2].ids, (std::vector<std::string>{"d", "f"}));
  EXPECT_EQ(g.groups[1].min_length, 5u);
  EXPECT_EQ(g.groups[1].max_length, 5u);
  // Ties are never split: four equal lengths make one group, whatever was asked.
  Grouping same = MakeGroups({{"a", 3}, {"b", 3}, {"c", 3}, {"d", 3}}, 3, "bytes");
  ASSERT_EQ(same.groups.size(), 1u);
  EXPECT_EQ(same.groups[0].ids.size(), 4u);
  // A length falls in exactly one group; beyond the last, the last.
  std::vector<std::uint64_t> max = {1, 5, 9};
  EXPECT_EQ(GroupForLength(max, 0), 0u);
  EXPECT_EQ(GroupForLength(max, 2), 1u);
  EXPECT_EQ(GroupForLength(max, 9), 2u);
  EXPECT_EQ(GroupForLength(max, 1000), 2u);
}

TEST(SweepGroupsTest, EveryDistinctLengthCanBeAGroup) {
  // Ten of length 1, then 2 and 3: both cuts land after the tenth item; the second must move on.
  std::vector<MeasuredItem> items;
  for (int i = 0; i < 10; ++i) items.push_back({"a" + std::to_string(i), 1});
  items.push_back({"b", 2});
  items.push_back({"c", 3});
  Grouping g = MakeGroups(items, 3, "bytes");
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(g.groups[1].ids, (std::vector<std::string>{"b"}));
  EXPECT_EQ(g.groups[2].ids, (std::vector<std::string>{"c"}));
}

TEST(SweepGroupsTest, ALargeGroupRunsOnAnEvenSample) {
  Fixture fx(ThreeLengths());
  SweepStage stage;
  auto g = GroupManifest(RealFileSystem(), fx.plan, stage, 3, /*max_sample=*/2);
  ASSERT_TRUE(g.ok()) << g.error().ToString();
  ASSERT_EQ(g.value().groups.size(), 3u);
  EXPECT_EQ(g.value().groups[0].items, 4u);
  EXPECT_EQ(g.value().groups[0].ids, (std::vector<std::string>{"s0", "s2"}));
  // The groups file says both, and reads back.
  auto back = GroupingFromJson(PrettyJson(GroupingToJson(g.value())), "groups.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value().groups[2].items, 4u);
  EXPECT_EQ(back.value().groups[2].ids.size(), 2u);
  EXPECT_EQ(SweepSampleSize(SweepSettings{}), 256u);
}

TEST(SweepGroupsTest, ManyItemsGroupQuickly) {
  std::vector<MeasuredItem> items;
  for (int i = 0; i < 200000; ++i)
    items.push_back({"i" + std::to_string(i), static_cast<std::uint64_t>(i % 7)});
  Grouping g = MakeGroups(items, 16, "bytes");
  EXPECT_EQ(g.groups.size(), 7u);  // seven distinct lengths
  std::size_t total = 0;
  for (const auto& lg : g.groups) total += lg.ids.size();
  EXPECT_EQ(total, items.size());
}

TEST(SweepSettingsTest, BatchSizesMustIncreaseFromOne) {
  EXPECT_EQ(ParseBatchSizes("1,2,4,8").value(), (std::vector<int>{1, 2, 4, 8}));
  for (const char* bad : {"", "2,4", "1,1", "1,4,2", "1,,2", "1,x", "1,-2", "1,99999", "1, 2"}) {
    auto r = ParseBatchSizes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().where, "--batch-sizes") << bad;
  }
  SweepSettings s;
  s.groups = 0;
  EXPECT_FALSE(CheckSweepSettings(s).ok());
  s.groups = 3;
  s.latency_budget_ms = -1;
  EXPECT_FALSE(CheckSweepSettings(s).ok());
}

TEST(SweepCellTest, ABatchLargerThanTheGroupIsFilledByCyclingAndSaysSo) {
  SweepStage stage;
  FakeClock clock;
  CellMeasure c = RunCell(clock, stage, {"a", "b", "c"}, {"en a", "fr b", "de c"}, 1, 8, 2);
  EXPECT_TRUE(c.limit.empty()) << c.error;
  EXPECT_TRUE(c.cycled);
  EXPECT_EQ(c.batches, 2u);     // one batch of 8 per repeat
  EXPECT_EQ(c.completed, 16u);  // 8 x 2 repeats
  ASSERT_EQ(c.outcomes.size(), 8u);
  EXPECT_EQ(c.outcomes[3].id, "a");
  EXPECT_EQ(c.outcomes[4].label, "fr");
  EXPECT_EQ(c.repeat_mismatches, 0u);
  // The warm-up is one more batch that is not timed.
  EXPECT_EQ(stage.calls, 3u);
}

// A tokenized stage reports each batch's tokens and its padded tensor's size: the cell sums
// them over the timed repeats (not the warm-up), and gives tokens/s and the padding waste.
class TokenStage : public SweepStage {
 public:
  BatchOutput Process(const std::vector<std::string_view>& texts) override {
    BatchOutput out = SweepStage::Process(texts);
    std::size_t longest = 0;
    for (auto t : texts) {
      out.input_tokens += t.size();
      longest = std::max(longest, t.size());
    }
    out.padded_tokens = longest * texts.size();
    return out;
  }
};

TEST(SweepCellTest, ATokenizedStageGivesTokensPerSecondAndThePaddingWaste) {
  TokenStage stage;
  FakeClock clock;
  // Batches of 2: {4, 7} tokens pad to 14; {2} alone pads to 2. Per repeat 13 of 16.
  CellMeasure c = RunCell(clock, stage, {"a", "b", "c"}, {"en a", "fr bbbb", "de"}, 1, 2, 2);
  ASSERT_TRUE(c.limit.empty()) << c.error;
  EXPECT_EQ(c.tokens, 26u);
  EXPECT_EQ(c.padded_tokens, 32u);
  EXPECT_NEAR(c.padding_waste(), 1.0 - 26.0 / 32.0, 1e-12);
  ASSERT_GT(c.wall_seconds, 0);
  EXPECT_NEAR(c.tokens_per_second, 26.0 / c.wall_seconds, 1e-9);
  // Round trip through the cell file; a stage without tokens writes none of the fields.
  auto back = CellFromJson(CellToJson(c).dump(), "cell.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value().tokens, 26u);
  EXPECT_EQ(back.value().padded_tokens, 32u);
  EXPECT_EQ(back.value().tokens_per_second, c.tokens_per_second);
  SweepStage plain;
  CellMeasure p = RunCell(clock, plain, {"a"}, {"en a"}, 1, 1, 1);
  EXPECT_FALSE(CellToJson(p).contains("padded_tokens"));
  EXPECT_EQ(p.padding_waste(), 0);
}

TEST(SweepCellTest, AnOutOfMemoryIsADataPointWithItsText) {
  SweepStage stage;
  stage.oom_at = 2;
  FakeClock clock;
  CellMeasure c = RunCell(clock, stage, {"a", "b"}, {"en " + std::string(200, 'x'), "en b"}, 3, 2, 2);
  EXPECT_EQ(c.limit, kLimitOutOfMemory);
  EXPECT_NE(c.error.find("out of memory (scripted) at batch 2"), std::string::npos) << c.error;
}

// Each timed repeat's seconds are kept (their sum the cell's wall time), and round-trip; a cell
// file whose repeats do not add up, or hold more than its repeats, is refused.
TEST(SweepCellTest, EachRepeatsSecondsAreKeptAndAddUpToTheWallTime) {
  SweepStage stage;
  FakeClock clock;
  CellMeasure c = RunCell(clock, stage, {"a", "b", "c"}, {"en a", "fr b", "de c"}, 1, 2, 3);
  ASSERT_TRUE(c.limit.empty()) << c.error;
  ASSERT_EQ(c.repeat_seconds.size(), 3u);
  double sum = 0;
  for (double r : c.repeat_seconds) sum += r;
  EXPECT_NEAR(sum, c.wall_seconds, 1e-9);
  auto back = CellFromJson(CellToJson(c).dump(), "cell.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value().repeat_seconds, c.repeat_seconds);
  auto edited = CellToJson(c);
  edited["repeat_seconds"][0] = edited["repeat_seconds"][0].get<double>() + 1;
  auto refused = CellFromJson(edited.dump(), "cell.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("do not add up to 'wall_seconds'"), std::string::npos);
  for (const char* bad : {R"([1, 1, 1, 1])", R"([])", R"([-1, 1, 1])", R"("fast")", R"([1, "x", 1])"}) {
    edited = CellToJson(c);
    edited["repeat_seconds"] = nlohmann::ordered_json::parse(bad);
    EXPECT_FALSE(CellFromJson(edited.dump(), "cell.json").ok()) << bad;
  }
}

// The fastest size is judged against its repeats' noise: another size whose fastest repeat
// reaches the fastest's slowest is not told apart from it; with one repeat the noise is unknown.
TEST(SweepTest, AFastestSizeWithinTheRepeatsNoiseSaysSo) {
  Grouping g;
  g.measure = "bytes";
  LengthGroup lg;
  lg.min_length = 1;
  lg.max_length = 9;
  lg.ids = {"a", "b", "c", "d"};
  lg.items = 4;
  g.groups = {lg};
  auto cell = [](int b, std::vector<double> seconds) {
    CellMeasure c;
    c.group = 1;
    c.batch_size = b;
    c.repeats = static_cast<int>(seconds.size());
    c.group_items = 4;
    c.completed = 4 * seconds.size();
    c.repeat_seconds = seconds;
    for (double s : seconds) c.wall_seconds += s;
    c.items_per_second = static_cast<double>(c.completed) / c.wall_seconds;
    return c;
  };
  // Rates per repeat: batch 1 {4, 2}, batch 2 {4.4, 3.6}, batch 4 {2, 1.9}: batch 2 is the
  // fastest (8 items in 2 s); batch 1's best repeat (4/s) reaches its slowest (3.6/s), batch 4's
  // (2/s) does not.
  auto recs = Recommend(g, {cell(1, {1.0, 2.0}), cell(2, {4.0 / 4.4, 4.0 / 3.6}), cell(4, {2.0, 4.0 / 1.9})});
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_EQ(recs[0].fastest_batch_size, 2);
  ASSERT_TRUE(recs[0].fastest_within_noise_of.has_value());
  EXPECT_EQ(*recs[0].fastest_within_noise_of, std::vector<int>{1});
  // Repeats far apart: told apart.
  recs = Recommend(g, {cell(1, {2.0, 2.0}), cell(2, {1.0, 1.0})});
  ASSERT_TRUE(recs[0].fastest_within_noise_of.has_value());
  EXPECT_TRUE(recs[0].fastest_within_noise_of->empty());
  // One repeat, or a cell of sweep format 1 (no repeat_seconds): unmeasured.
  recs = Recommend(g, {cell(1, {2.0}), cell(2, {1.0})});
  EXPECT_FALSE(recs[0].fastest_within_noise_of.has_value());
  CellMeasure old = cell(2, {1.0, 1.0});
  old.repeat_seconds.clear();
  recs = Recommend(g, {cell(1, {2.0, 2.0}), old});
  EXPECT_FALSE(recs[0].fastest_within_noise_of.has_value());

  // In sweep.json (format 2) and sweep.md; a format 1 document is built as it was, without them.
  const std::vector<CellMeasure> cells = {cell(1, {1.0, 2.0}), cell(2, {4.0 / 4.4, 4.0 / 3.6})};
  SweepSettings settings;
  settings.batch_sizes = {1, 2};
  settings.repeats = 2;
  const SweepAnalysis analysis = AnalyseSweep(g, settings, cells, false);
  nlohmann::ordered_json stage = {{"device", "cpu"}};
  auto now = SweepSummary({"s", stage, nlohmann::ordered_json::object(), g, settings, cells, analysis});
  EXPECT_EQ(now["format_version"], 2);
  EXPECT_EQ(now["recommendation"][0]["fastest_within_noise_of"], nlohmann::ordered_json::array({1}));
  EXPECT_NE(SweepMarkdown(now).find("within the repeats' noise: batch 2 is not told apart from batch 1"),
            std::string::npos);
  // The headroom of a CPU measurement: unknown on a GPU, in the document and the table.
  for (const auto& card : now["headroom"]["cards"]) {
    for (const auto& group : card["groups"]) {
      EXPECT_TRUE(group["fits"].is_null());
      EXPECT_TRUE(group["headroom_mb"].is_null());
    }
  }
  EXPECT_NE(now["headroom"]["basis"].get<std::string>().find("unknown on a GPU"), std::string::npos);
  EXPECT_NE(SweepMarkdown(now).find("| unknown on a GPU |"), std::string::npos);
  EXPECT_EQ(SweepMarkdown(now).find("GB free"), std::string::npos);
  auto older = SweepSummary({"s", stage, nlohmann::ordered_json::object(), g, settings, cells, analysis, 1});
  EXPECT_EQ(older["format_version"], 1);
  EXPECT_FALSE(older["recommendation"][0].contains("fastest_within_noise_of"));
  EXPECT_TRUE(older["headroom"]["cards"][0]["groups"][0]["fits"].is_boolean());
  EXPECT_NE(SweepMarkdown(older).find("GB free"), std::string::npos);
  // On a GPU the table judges fit, format 2 as before.
  stage["device"] = "cuda:0";
  auto gpu = SweepSummary({"s", stage, nlohmann::ordered_json::object(), g, settings, cells, analysis});
  EXPECT_TRUE(gpu["headroom"]["cards"][0]["groups"][0]["fits"].is_boolean());
}

TEST(SweepTest, TheLongGroupStopsAtItsFirstOutOfMemoryAndTheOthersGoOn) {
  SweepHarness h(ThreeLengths());
  h.stage.oom_at = 4;
  SweepSettings s;
  s.batch_sizes = {1, 2, 4, 8};
  SweepPlan plan = h.Plan(s);
  ASSERT_EQ(plan.grouping.groups.size(), 3u);
  EXPECT_EQ(plan.grouping.groups[2].ids, (std::vector<std::string>{"l0", "l1", "l2", "l3"}));
  auto out = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_TRUE(out.value().verify.ok()) << out.value().verify.findings.front().what;
  EXPECT_EQ(out.value().findings, 0u);
  const auto& sum = out.value().summary;
  // Groups 1 and 2 ran every size; group 3 stopped at 4, which is its limit; 8 never ran.
  EXPECT_EQ(sum["cells"].size(), 4u + 4u + 3u);
  EXPECT_EQ(h.cells_run, 11u);
  const auto& rec = sum["recommendation"];
  EXPECT_EQ(rec[0]["batch_size"], 8);
  EXPECT_EQ(rec[1]["batch_size"], 8);
  EXPECT_EQ(rec[2]["batch_size"], 2);
  EXPECT_EQ(rec[2]["limit_batch_size"], 4);
  EXPECT_EQ(rec[2]["limit"], kLimitOutOfMemory);
  ASSERT_EQ(sum["not_run"].size(), 1u);
  EXPECT_EQ(sum["not_run"][0]["batch_size"], 8);
  // The reports say so too.
  const std::string md = ReadText(plan.dir / "data/sweep.md");
  EXPECT_NE(md.find("**out_of_memory**: out of memory (scripted) at batch 4"), std::string::npos) << md;
  // Every row names its group and batch size (the summary is built in memory with signed
  // integers; these columns were once left blank).
  const auto rec_at = md.find("## Recommendation");
  ASSERT_NE(rec_at, std::string::npos) << md;
  const auto rec_md = md.substr(rec_at);
  EXPECT_NE(rec_md.find("\n| 3 | "), std::string::npos) << rec_md;
  EXPECT_EQ(md.find("\n|  |"), std::string::npos) << md;
  const std::string csv = ReadText(plan.dir / "data/sweep.csv");
  EXPECT_NE(csv.find(",out_of_memory,"), std::string::npos) << csv;
  const std::string html = ReadText(plan.dir / "data/report.html");
  EXPECT_NE(html.find("limit: out_of_memory"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<tr><td></td>"), std::string::npos) << html;
  // A batch plan from it: each group's size.
  auto bp = BatchPlanFromSweep(RealFileSystem(), plan.dir);
  ASSERT_TRUE(bp.ok()) << bp.error().ToString();
  EXPECT_EQ(bp.value().batch_sizes, (std::vector<int>{8, 8, 2}));
}

TEST(SweepTest, ALatencyBudgetOrMemoryCapBreachIsTheGroupsLimit) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2, 4};
  s.max_memory_mb = 0.001;  // any process is over it: every group stops at batch 1
  SweepPlan plan = h.Plan(s);
  auto out = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().summary["cells"].size(), 3u);
  for (const auto& r : out.value().summary["recommendation"]) {
    EXPECT_TRUE(r["batch_size"].is_null());
    EXPECT_EQ(r["limit"], kLimitMemoryCap);
  }
  // No recommended size: no batch plan.
  auto bp = BatchPlanFromSweep(RealFileSystem(), plan.dir);
  ASSERT_FALSE(bp.ok());
  EXPECT_NE(bp.error().what.find("no recommended batch size"), std::string::npos) << bp.error().what;
}

TEST(SweepTest, OutputsThatChangeWithBatchSizeAreFindingsNamingTheItem) {
  SweepHarness h(ThreeLengths("drift"));
  SweepSettings s;
  s.batch_sizes = {1, 2};
  SweepPlan plan = h.Plan(s);
  auto out = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().findings, 4u);  // the four medium items, at batch 2
  const auto& f = out.value().summary["findings"];
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0]["id"], "m0");
  EXPECT_EQ(f[0]["batch_size"], 2);
  EXPECT_NE(f[0]["what"].get<std::string>().find("confidence"), std::string::npos);
  // A sweep whose batching changes results is no batch plan.
  auto bp = BatchPlanFromSweep(RealFileSystem(), plan.dir);
  ASSERT_FALSE(bp.ok());
  EXPECT_NE(bp.error().what.find("equivalence finding"), std::string::npos);
}

TEST(SweepTest, AReorderedBatchIsAFinding) {
  CellMeasure ref, cell;
  ref.group = cell.group = 1;
  ref.batch_size = 1;
  cell.batch_size = 2;
  ref.group_items = cell.group_items = 2;
  for (const char* id : {"a", "b"}) ref.outcomes.push_back({id, true, "en", 0.9, {}, "", false, {}, {}});
  cell.outcomes = {ref.outcomes[1], ref.outcomes[0]};  // swapped
  auto f = CompareWithReference(ref, cell, /*vectors=*/false);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].id, "b");
  EXPECT_NE(f[0].what.find("order changed"), std::string::npos);
  // Embeddings: a vector beyond tolerance names the item.
  CellMeasure vref = ref, vcell = ref;
  vcell.batch_size = 2;
  vref.outcomes[0].vector = {1, 2};
  vcell.outcomes[0].vector = {1, 2.001f};
  auto v = CompareWithReference(vref, vcell, /*vectors=*/true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].id, "a");
}

TEST(SweepTest, AGeneratorsCompletionsAreComparedTokenByTokenOutsideNearTies) {
  CellMeasure ref, cell;
  ref.group = cell.group = 1;
  ref.batch_size = 1;
  cell.batch_size = 4;
  ref.group_items = cell.group_items = 2;
  for (const char* id : {"a", "b"}) {
    CellOutcome o;
    o.id = id;
    o.ok = true;
    o.generated = true;
    o.completion = {5, 6, 7};
    ref.outcomes.push_back(o);
  }
  cell.outcomes = ref.outcomes;
  EXPECT_TRUE(CompareWithReference(ref, cell, false).empty());
  cell.outcomes[1].completion = {5, 6, 9, 1};
  auto f = CompareWithReference(ref, cell, false);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "b");
  EXPECT_NE(f[0].what.find("at token 2"), std::string::npos) << f[0].what;
  cell.outcomes[1].near_ties = {2};
  EXPECT_TRUE(CompareWithReference(ref, cell, false).empty()) << "a divergence at a near-tie is rounding";
  cell.outcomes[1].near_ties = {1};
  EXPECT_EQ(CompareWithReference(ref, cell, false).size(), 1u)
      << "a near-tie before the divergence explains nothing";
  cell.outcomes[1] = ref.outcomes[1];
  cell.outcomes[1].completion = {5, 6};
  EXPECT_EQ(CompareWithReference(ref, cell, false).size(), 1u) << "a shorter completion";
  // The cell's JSON keeps the completion and its near-ties, and refuses them malformed.
  cell.outcomes[1].near_ties = {1};
  cell.generation = CellGeneration{};
  cell.repeats = 1;
  cell.generation->completion_tokens = 5;
  cell.wall_seconds = 2;
  cell.generation->completion_tokens_per_second = 2.5;
  cell.generation->occupancy = 0.5;
  auto back = CellFromJson(CellToJson(cell).dump(), "cell");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value().outcomes[1].completion, (std::vector<std::int64_t>{5, 6}));
  EXPECT_EQ(back.value().outcomes[1].near_ties, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(back.value().generation->occupancy, 0.5);
  for (auto [from, to] :
       {std::pair{"\"completion_tokens_per_second\":2.5", "\"completion_tokens_per_second\":3.5"},
        std::pair{"\"near_tie_steps\":[1]", "\"near_tie_steps\":[2]"},
        std::pair{"\"slot_occupancy\":0.5", "\"slot_occupancy\":1.5"},
        std::pair{"\"completion_ids\":[5,6]", "\"completion_ids\":[5,-6]"}}) {
    std::string text = CellToJson(cell).dump();
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from << " in " << text;
    text.replace(at, std::string(from).size(), to);
    EXPECT_FALSE(CellFromJson(text, "cell").ok()) << to;
  }
}

TEST(SweepTest, TheEmbeddingKindSweepsAndComparesVectors) {
  SweepHarness h(ThreeLengths(), EmbeddingOutput());
  SweepSettings s;
  s.batch_sizes = {1, 2, 4};
  SweepPlan plan = h.Plan(s);
  auto out = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_TRUE(out.value().verify.ok());
  EXPECT_EQ(out.value().findings, 0u);
  EXPECT_EQ(out.value().summary["stage"]["output"], "embedding");
  auto cell = CellFromJson(ReadText(plan.dir / "data/cells/g1-b2.json"), "cell");
  ASSERT_TRUE(cell.ok()) << cell.error().ToString();
  ASSERT_FALSE(cell.value().outcomes.empty());
  EXPECT_EQ(cell.value().outcomes[0].vector.size(), 4u);
}

TEST(SweepTest, AnInterruptedSweepResumesKeepingItsFinishedCells) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2, 4};
  SweepPlan plan = h.Plan(s);
  h.stop_after_cells = 4;
  auto first = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_TRUE(first.value().interrupted);
  const std::string g1b1 = ReadText(plan.dir / "data/cells/g1-b1.json");
  auto status = ReadRunStatus(RealFileSystem(), plan.dir);
  ASSERT_TRUE(status.ok()) << status.error().ToString();
  EXPECT_EQ(status.value().state, "interrupted");
  EXPECT_EQ(status.value().done, 4u);
  // A torn last journal line (a kill while appending) is cut off on resume.
  { std::ofstream(plan.dir / kSweepCells, std::ios::app) << "{\"group\":2,\"batch"; }
  h.stop_after_cells = 0;
  h.cells_run = 0;
  auto resumed = ResumeSweep(RealFileSystem(), h.clock, plan.dir, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
  EXPECT_FALSE(resumed.value().interrupted);
  EXPECT_EQ(h.cells_run, 5u);  // 9 cells, 4 kept
  EXPECT_EQ(ReadText(plan.dir / "data/cells/g1-b1.json"), g1b1);
  EXPECT_TRUE(resumed.value().verify.ok());
  EXPECT_EQ(resumed.value().summary["cells"].size(), 9u);
  // Finished: resuming again is refused; the folder is left as it was.
  auto again = ResumeSweep(RealFileSystem(), h.clock, plan.dir, plan, h.Runner(plan.run), h.Control());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().what.find("already finished"), std::string::npos);
}

// `pilot sweep` and its resume as one library call each, over a fake runtime: the setup (plan,
// environment, stage on the CPU, groups) before anything is created, then the sweep.
TEST(SweepTest, ASweepAndItsResumeAreOneCallEachAfterTheSetup) {
  SweepHarness h(ThreeLengths());
  testing::FakeRuntime runtime;
  runtime.make_stage = [] { return std::unique_ptr<Stage>(std::make_unique<SweepStage>()); };
  SweepRequest request;
  request.run.params_file = h.fx.dir / "params.json";
  request.run.runs_dir = h.fx.dir / "runs";
  request.run.command_line = {"pilot", "sweep"};
  request.settings.batch_sizes = {1, 2, 4};
  request.out = h.fx.dir / "sw";
  int ready = 0;
  SweepControl control = h.Control();
  control.on_ready = [&] { ++ready; };
  h.stop_after_cells = 4;
  auto first = RunSweep(RealFileSystem(), h.clock, runtime, request, h.Runner(h.fx.plan), control);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_TRUE(first.value().interrupted);
  EXPECT_EQ(ready, 1);
  EXPECT_EQ(runtime.stages_built, 1) << "the sweeping process loads the model once, on the CPU";
  const std::string record = ReadText(request.out / "data/run.json");
  EXPECT_NE(record.find("\"device\": \"cpu\""), std::string::npos) << record;

  h.stop_after_cells = 0;
  h.cells_run = 0;
  auto resumed = ResumeSweepFolder(RealFileSystem(), h.clock, runtime, request.out, {"pilot", "resume"},
                                   h.Runner(h.fx.plan), control);
  ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
  EXPECT_FALSE(resumed.value().interrupted);
  EXPECT_EQ(h.cells_run, 5u);  // 9 cells, 4 kept
  EXPECT_TRUE(resumed.value().verify.ok());
  EXPECT_EQ(ready, 2);

  // Unmet requirements: refused before anything is created, the handlers never installed.
  h.fx.SetParams(R"({"manifest": "inputs/manifest.json", "stage": {"kind": "fake", "model": "model.bin"},
    "allowed_categories": ["en", "fr", "de"], "requires": {"backend": "cuda"}})");
  request.out = h.fx.dir / "sw2";
  auto refused = RunSweep(RealFileSystem(), h.clock, runtime, request, h.Runner(h.fx.plan), control);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kEnvironment);
  EXPECT_NE(refused.error().hint.find("no sweep folder was created or changed"), std::string::npos);
  EXPECT_FALSE(fs::exists(request.out));
  EXPECT_EQ(ready, 2);
}

TEST(SweepTest, ASweepKilledWhileFinishingIsFinishedByResume) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2};
  SweepPlan plan = h.Plan(s);
  ASSERT_TRUE(ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control()).ok());
  // As if killed after run.json said finished, before the bag's manifests were written.
  for (const char* f : {"manifest-sha256.txt", "bag-info.txt", "tagmanifest-sha256.txt"})
    fs::remove(plan.dir / f);
  auto unfinished = VerifyFolder(RealFileSystem(), plan.dir, {});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_FALSE(unfinished.value().ok());
  h.cells_run = 0;
  auto resumed = ResumeSweep(RealFileSystem(), h.clock, plan.dir, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
  EXPECT_EQ(h.cells_run, 0u);  // every cell was kept
  EXPECT_TRUE(resumed.value().verify.ok());
}

TEST(SweepTest, ResumeRefusesAChangedManifestOrModel) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2};
  SweepPlan plan = h.Plan(s);
  h.stop_after_cells = 1;
  ASSERT_TRUE(ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control()).ok());
  SweepPlan changed = plan;
  changed.run.model_sha256 = std::string(64, 'a');
  auto r = ResumeSweep(RealFileSystem(), h.clock, plan.dir, changed, h.Runner(plan.run), h.Control());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().what.find("the model changed"), std::string::npos) << r.error().what;
}

TEST(SweepTest, ASweepFolderNeverReusesAFolder) {
  SweepHarness h(ThreeLengths());
  SweepPlan plan = h.Plan();
  fs::create_directories(plan.dir);
  WriteText(plan.dir / "keep.txt", "mine");
  auto r = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(ReadText(plan.dir / "keep.txt"), "mine");
  EXPECT_EQ(h.cells_run, 0u);
}

TEST(SweepTest, VerifyFindsATamperedCellEvenWhenTheBagIsRehashed) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2};
  SweepPlan plan = h.Plan(s);
  ASSERT_TRUE(ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control()).ok());
  // Edit a cell's figure: the journal's sha256 of the cell no longer matches.
  std::string text = ReadText(plan.dir / "data/cells/g2-b2.json");
  auto at = text.find("\"items_per_second\": ");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 20, "9");
  WriteText(plan.dir / "data/cells/g2-b2.json", text);
  auto v = VerifyFolder(RealFileSystem(), plan.dir, {});
  ASSERT_TRUE(v.ok());
  bool sweep_finding = false;
  for (const auto& f : v.value().findings)
    sweep_finding |= f.check == "sweep" && f.where.find("g2-b2") != std::string::npos;
  EXPECT_TRUE(sweep_finding);
}

TEST(SweepTest, VerifyDerivesTheRecommendationAgainFromTheCells) {
  SweepHarness h(ThreeLengths());
  h.stage.oom_at = 4;
  SweepSettings s;
  s.batch_sizes = {1, 2, 4};
  SweepPlan plan = h.Plan(s);
  ASSERT_TRUE(ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control()).ok());
  // On a rented machine: group 3's recommendation raised to 4096, the bag re-hashed.
  auto doc = ParseJson(ReadText(plan.dir / "data/sweep.json"), "sweep.json").value();
  doc["recommendation"][2]["batch_size"] = 4096;
  WriteText(plan.dir / "data/sweep.json", doc.dump(2));
  for (const char* f : {"manifest-sha256.txt", "bag-info.txt", "tagmanifest-sha256.txt"})
    fs::remove(plan.dir / f);
  ASSERT_TRUE(FinalizeBag(RealFileSystem(), plan.dir, "2026-11-30",
                          {{"Pilot-Folder-Kind", "sweep"},
                           {"Pilot-Format-Version", std::to_string(kSweepFormatVersion)}})
                  .ok());
  auto v = VerifyFolder(RealFileSystem(), plan.dir, {});
  ASSERT_TRUE(v.ok());
  bool caught = false;
  for (const auto& f : v.value().findings)
    caught |= f.what.find("group 3's recommended size differs") != std::string::npos;
  EXPECT_TRUE(caught);
  auto bp = BatchPlanFromSweep(RealFileSystem(), plan.dir);
  ASSERT_FALSE(bp.ok());
  EXPECT_NE(bp.error().what.find("does not verify"), std::string::npos) << bp.error().what;
}

// A derived file edited on a rented machine and the bag re-hashed: each is built again from
// the record, groups and cells and compared byte for byte.
TEST(SweepTest, VerifyRebuildsSweepJsonAndItsRenderingsFromTheCells) {
  SweepHarness h(ThreeLengths());
  SweepSettings s;
  s.batch_sizes = {1, 2};
  SweepPlan plan = h.Plan(s);
  auto run = ExecuteSweep(RealFileSystem(), h.clock, plan, h.Runner(plan.run), h.Control());
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  auto rehash = [&] {
    for (const char* f : {"manifest-sha256.txt", "bag-info.txt", "tagmanifest-sha256.txt"})
      fs::remove(plan.dir / f);
    ASSERT_TRUE(FinalizeBag(RealFileSystem(), plan.dir, "2026-11-30",
                            {{"Pilot-Folder-Kind", "sweep"},
                             {"Pilot-Format-Version", std::to_string(kSweepFormatVersion)}})
                    .ok());
  };
  auto findings_at = [&](const std::string& where) {
    auto v = VerifyFolder(RealFileSystem(), plan.dir, {});
    EXPECT_TRUE(v.ok());
    std::string all;
    for (const auto& f : v.value().findings)
      if (f.where == where) all += f.what + "\n";
    return all;
  };
  ASSERT_EQ(findings_at("data/sweep.json"), "");
  const std::string sweep_json = ReadText(plan.dir / "data/sweep.json");
  for (const char* rel : {"data/report.html", "data/sweep.csv", "data/sweep.md"}) {
    const std::string before = ReadText(plan.dir / rel);
    WriteText(plan.dir / rel, before + " ");
    rehash();
    EXPECT_NE(findings_at(rel).find("differs from the rendering"), std::string::npos) << rel;
    WriteText(plan.dir / rel, before);
    rehash();
    EXPECT_EQ(findings_at(rel), "") << rel;
  }
  // Written before signed counts were rendered (SweepRendering::kBlankSignedCounts): the
  // group and batch-size columns blank. Such a folder still verifies; an edit of it does not.
  const auto& summary = run.value().summary;
  const std::pair<const char*, std::string> older[] = {
      {"data/sweep.csv", SweepCsv(summary, SweepRendering::kBlankSignedCounts)},
      {"data/sweep.md", SweepMarkdown(summary, SweepRendering::kBlankSignedCounts)},
      {"data/report.html", SweepHtml(summary, SweepRendering::kBlankSignedCounts)}};
  for (const auto& [rel, text] : older) {
    const std::string now = ReadText(plan.dir / rel);
    ASSERT_NE(text, now) << rel;
    WriteText(plan.dir / rel, text);
    rehash();
    EXPECT_EQ(findings_at(rel), "") << rel;
    WriteText(plan.dir / rel, text + " ");
    rehash();
    EXPECT_NE(findings_at(rel).find("differs from the rendering"), std::string::npos) << rel;
    WriteText(plan.dir / rel, now);
    rehash();
  }
  EXPECT_NE(SweepMarkdown(summary, SweepRendering::kBlankSignedCounts).find("\n|  |"), std::string::npos);
  // The headroom table says a card fits that the recommendation does not: a key no finer
  // check reads, caught by the whole document.
  auto doc = ParseOrderedJson(sweep_json, "sweep.json").value();
  doc["headroom"]["cards"][0]["usable_mb"] = 999999.0;
  doc["cells"][0]["latency_ms"]["p95"] = 0.001;
  WriteText(plan.dir / "data/sweep.json", PrettyJson(doc));
  rehash();
  const std::string found = findings_at("data/sweep.json");
  EXPECT_NE(found.find("at: cells, headroom"), std::string::npos) << found;
  // Only the form changed (indentation): still not what pilot wrote.
  WriteText(plan.dir / "data/sweep.json", ParseJson(sweep_json, "s").value().dump(4));
  rehash();
  EXPECT_NE(findings_at("data/sweep.json").find("byte for byte"), std::string::npos);
}

TEST(SweepRecordsTest, HostileCellFilesAreRefusedNeverThrown) {
  const char* cases[] = {
      "",
      "[]",
      "{}",
      "null",
      "{\"group\":1}",
      R"({"group":0,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":-1,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"limit":"exploded","outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},
          "outcomes":[{"id":"a","ok":true,"label":"en","confidence":1},{"id":"b","ok":true,"label":"en","confidence":1}]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[{"id":"../x","ok":true,"vector":[1]}]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":5,"padded_tokens":4,"tokens_per_second":1,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":0,"padded_tokens":0,"tokens_per_second":0,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":5,"tokens_per_second":1,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":1,"padded_tokens":4,"tokens_per_second":-1,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":1,"padded_tokens":4,"tokens_per_second":"fast","latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":-1,"padded_tokens":4,"tokens_per_second":1,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":0,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":1,"padded_tokens":4e300,"tokens_per_second":1,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
      R"({"group":1,"batch_size":1,"repeats":1,"group_items":1,"cycled":false,"batches":0,"completed":0,"failed":0,
          "repeat_mismatches":0,"wall_seconds":2,"items_per_second":0,"rss_after_load_mb":0,"peak_rss_mb":0,
          "tokens":4,"padded_tokens":8,"tokens_per_second":3,"latency_ms":{"p50":0,"p90":0,"p95":0,"p99":0},"outcomes":[]})",
  };
  for (const char* text : cases) {
    auto c = CellFromJson(text, "cell.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.error().where, "cell.json");
  }
  EXPECT_FALSE(GroupingFromJson(R"({"measure":"bytes","excluded":0,"groups":[
      {"group":1,"min_length":1,"max_length":5,"items":1,"sampled":1,"ids":["a"]},
      {"group":2,"min_length":5,"max_length":9,"items":1,"sampled":1,"ids":["b"]}]})",
                                "groups.json")
                   .ok());  // overlap
  EXPECT_FALSE(GroupingFromJson(R"({"measure":"bytes","excluded":0,"groups":[
      {"group":1,"min_length":1,"max_length":5,"items":2,"sampled":2,"ids":["a"]}]})",
                                "groups.json")
                   .ok());  // count
  EXPECT_FALSE(GroupingFromJson(R"({"measure":"words","excluded":0,"groups":[]})", "groups.json").ok());
}

TEST(BatchPlanTest, ParsesStrictlyAndRoundTrips) {
  BatchPlan p;
  p.measure = "features";
  p.model_sha256 = std::string(64, 'a');
  p.sweep_fingerprint = std::string(64, 'b');
  p.max_lengths = {10, 20};
  p.batch_sizes = {64, 8};
  auto back = ParseBatchPlan(PrettyJson(BatchPlanToJson(p)), "plan");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value().batch_sizes, p.batch_sizes);
  EXPECT_EQ(back.value().max_batch_size(), 64);
  const std::string sha(64, 'a');
  for (
      std::string bad :
      {std::string("{}"), std::string("[1]"),
       R"({"measure":"bytes","model_sha256":")" + sha + R"(","sweep_fingerprint":")" + sha +
           R"(","groups":[{"group":1,"max_length":5,"batch_size":0}]})",
       R"({"measure":"bytes","model_sha256":")" + sha + R"(","sweep_fingerprint":")" + sha +
           R"(","groups":[{"group":1,"max_length":5,"batch_size":2},{"group":2,"max_length":5,"batch_size":2}]})",
       R"({"measure":"bytes","model_sha256":"x","sweep_fingerprint":")" + sha +
           R"(","groups":[{"group":1,"max_length":5,"batch_size":2}]})"}) {
    auto r = ParseBatchPlan(bad, "plan");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().where, "plan");
  }
}

}  // namespace
}  // namespace pilot
