// pilot decide on runs the engine wrote with the fake stage: a proposal for each outcome,
// nothing written without a decision, a recorded decision that keeps verify green, and the
// decision files' own checks.
#include "pilot/verdict/decide.h"

#include <gtest/gtest.h>

#include <functional>

#include "pilot/clock.h"
#include "pilot/run.h"
#include "pilot/verdict/rental_plan.h"
#include "pilot/verify.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::Fixture;
using testing::ReadText;
using testing::WriteText;

fs::path MakeRun(Fixture& f) {
  FakeStage stage;
  auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), f.plan, stage);
  EXPECT_TRUE(out.ok()) << out.error().ToString();
  return out.value().run_dir;
}

const testing::Items kClean = {{"a", "fr salut"}, {"b", "en hi"}, {"c", ""}};

void Label(Fixture& f) {
  f.Expect("a", "fr");
  f.ExpectRejection("c", "empty_input");
}

std::string Points(const DecideOutcome& out, const std::string& to) {
  std::string facts;
  for (const auto& f : out.facts) {
    if (f["points_to"] == to) facts += f["fact"].get<std::string>() + "\n";
  }
  return facts;
}

TEST(Decide, ACleanRunProposesGoAndWritesNothing) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  const std::string tags = ReadText(run / "tagmanifest-sha256.txt");
  auto out = Decide(RealFileSystem(), testing::SharedClock(), run, DecideOptions{});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().proposal, "go");
  EXPECT_NE(Points(out.value(), "go").find("every rejection (1) is one the manifest expects"),
            std::string::npos);
  EXPECT_FALSE(out.value().recorded);
  EXPECT_FALSE(fs::exists(run / "decisions.jsonl"));
  EXPECT_EQ(ReadText(run / "tagmanifest-sha256.txt"), tags);
}

// A label the labelled items expect but the model never gives is shown, whatever the accuracy.
TEST(Decide, ALabelNeverPredictedIsShown) {
  Fixture f({{"a", "fr salut"}, {"b", "fr bonjour"}, {"c", "en hi"}});
  f.Expect("a", "fr");
  f.Expect("b", "de");
  f.Expect("c", "en");
  fs::path run = MakeRun(f);
  auto out = Decide(RealFileSystem(), testing::SharedClock(), run, DecideOptions{});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_NE(Points(out.value(), "note")
                .find("the label 'de' is never predicted (0 of the 1 labelled items that expect it"),
            std::string::npos)
      << Points(out.value(), "note");
  // The results carry each labelled item's label.
  EXPECT_NE(ReadText(run / "data/results.jsonl").find(R"("id":"b","status":"accepted","category":"fr")"),
            std::string::npos);
  EXPECT_NE(ReadText(run / "data/results.jsonl").find(R"(,"expected":"de"})"), std::string::npos);
}

TEST(Decide, AnUnexpectedRejectionProposesReviseConfig) {
  Fixture f({{"a", "fr salut"}, {"d", "ru privet"}});  // ru is not an allowed category
  fs::path run = MakeRun(f);
  auto out = Decide(RealFileSystem(), testing::SharedClock(), run, DecideOptions{});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value().proposal, "revise-config");
  EXPECT_NE(Points(out.value(), "revise-config").find("d (category_not_allowed)"), std::string::npos);
}

TEST(Decide, AFailedDoctorCheckProposesFixEnvFirst) {
  Fixture f({{"a", "fr salut"}, {"d", "ru privet"}});
  fs::path run = MakeRun(f);
  WriteText(f.dir / "doctor.json",
            R"({"ok": false, "checks": [{"name": "requires", "status": "fail", "required": true, "detail": "",
                "data": {"unmet": ["backend: cuda asked, cpu received"]}},
               {"name": "gpus", "status": "could-not-run", "required": false}]})");
  DecideOptions o;
  o.doctor = f.dir / "doctor.json";
  auto out = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().proposal, "fix-env");  // over the revise-config the rejection points to
  EXPECT_NE(Points(out.value(), "fix-env").find("backend: cuda asked"), std::string::npos);
  EXPECT_EQ(Points(out.value(), "fix-env").find("gpus"), std::string::npos);  // not a required check
}

TEST(Decide, RecordingKeepsThePayloadAndVerifyGreenAndAppends) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  const std::string results = ReadText(run / "data/results.jsonl");
  WriteText(f.dir / "doctor.json",
            R"({"ok": true, "checks": [{"name": "host", "status": "pass", "required": true}]})");
  DecideOptions o;
  o.doctor = f.dir / "doctor.json";
  o.decision = "go";
  o.reasons = {"clean"};
  auto first = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(first.value().recorded);
  EXPECT_EQ(first.value().entry, 1u);
  EXPECT_NE(first.value().fingerprint, first.value().previous_fingerprint);
  EXPECT_EQ(ReadText(run / "decision-1-doctor.json"), ReadText(f.dir / "doctor.json"));
  EXPECT_EQ(ReadText(run / "data/results.jsonl"), results);
  VerifyResult v = VerifyRunFolder(RealFileSystem(), run, VerifyOptions{});
  EXPECT_TRUE(v.ok()) << (v.findings.empty() ? "" : v.findings[0].where + ": " + v.findings[0].what);
  EXPECT_EQ(v.fingerprint, first.value().fingerprint);
  const std::string line1 = ReadText(run / "decisions.jsonl");
  o.doctor.reset();
  o.decision = "revise-config";
  o.reasons = {"changed my mind"};
  auto second = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value().entry, 2u);
  const std::string both = ReadText(run / "decisions.jsonl");
  EXPECT_EQ(both.substr(0, line1.size()), line1);
  EXPECT_NE(ReadText(run / "decision.md").find("- entry 1: **go**"), std::string::npos);
  EXPECT_TRUE(VerifyRunFolder(RealFileSystem(), run, VerifyOptions{}).ok());
}

// A plan from this very run on its own class of card, with a doctor from that class: go. Each
// figure the rental would rest on without a measurement on the card (an assumed rate, an
// unknown fit, another manifest, no doctor there) makes the proposal measure-first, naming it.
TEST(Decide, APlanNotMeasuredOnItsCardProposesMeasureFirstNamingWhatIsMissing) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  auto basis = ReadMeasurement(RealFileSystem(), run);
  ASSERT_TRUE(basis.ok()) << basis.error().ToString();
  auto write_plan = [&](DeviceClass card_class, std::optional<double> scaling,
                        const std::function<void(nlohmann::json&)>& edit = nullptr) {
    PlanRequest q;
    q.basis = basis.value();
    q.corpus.items = 1000;
    q.prices.currency = "EUR";
    q.prices.file = "prices.json";
    CardType c;
    c.name = card_class == DeviceClass::kCpu ? "node" : "H100";
    c.device_class = card_class;
    c.memory_gb = 64;
    c.lot_price = {{3, 30}};
    q.prices.cards = {c};
    q.assume_scaling = scaling;
    auto built = BuildRentalPlan(q);
    EXPECT_TRUE(built.ok()) << built.error().ToString();
    nlohmann::json doc = nlohmann::json::parse(RentalPlanToJson(built.value()).dump());
    if (edit) edit(doc);
    WriteText(f.dir / "plan.json", doc.dump());
  };
  WriteText(f.dir / "doctor-cpu.json", R"({"ok": true, "checks": [{"name": "compute on cpu", "status": "pass",
                                           "required": true}]})");
  WriteText(f.dir / "doctor-cuda.json", R"({"ok": true, "checks": [
      {"name": "libtorch", "status": "pass", "required": true, "data": {"rocm_available": false}},
      {"name": "compute on cuda:0", "status": "pass", "required": true}]})");
  DecideOptions o;
  o.plan = f.dir / "plan.json";
  o.doctor = f.dir / "doctor-cpu.json";
  auto decide = [&] {
    auto out = Decide(RealFileSystem(), testing::SharedClock(), run, o);
    EXPECT_TRUE(out.ok()) << out.error().ToString();
    return out.value();
  };
  write_plan(DeviceClass::kCpu, std::nullopt);
  auto out = decide();
  EXPECT_EQ(out.proposal, "go") << Points(out, "measure-first");

  o.doctor.reset();  // no doctor at all
  out = decide();
  EXPECT_EQ(out.proposal, "measure-first");
  EXPECT_NE(Points(out, "measure-first").find("no doctor report (--doctor) from a cpu card"),
            std::string::npos);

  // GPU cards from this CPU run: an assumed rate, an unknown fit, a doctor on the CPU only.
  o.doctor = f.dir / "doctor-cpu.json";
  write_plan(DeviceClass::kCuda, 20.0);
  out = decide();
  EXPECT_EQ(out.proposal, "measure-first");
  const std::string missing = Points(out, "measure-first");
  EXPECT_NE(missing.find("the cheapest plan's rate on H100 (cuda) is assumed: cpu items/s x 20"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find("whether the model fits one H100 is unknown"), std::string::npos) << missing;
  EXPECT_NE(missing.find("the doctor ran on cpu, not on the plan's card class cuda"), std::string::npos)
      << missing;
  EXPECT_NE(missing.find(": measure on one H100 first"), std::string::npos);
  o.doctor = f.dir / "doctor-cuda.json";  // the doctor on a CUDA card: that one is no longer missing
  out = decide();
  EXPECT_EQ(Points(out, "measure-first").find("the doctor ran on"), std::string::npos);
  EXPECT_EQ(out.proposal, "measure-first");  // the rate and the fit still are

  // A basis of another folder: another manifest, or none named (a plan before format 3).
  o.doctor = f.dir / "doctor-cpu.json";
  write_plan(DeviceClass::kCpu, std::nullopt, [](nlohmann::json& d) {
    d["basis"]["fingerprint"] = std::string(64, 'a');
    d["basis"]["manifest_sha256"] = std::string(64, 'b');
  });
  out = decide();
  EXPECT_EQ(out.proposal, "measure-first");
  EXPECT_NE(Points(out, "measure-first").find("the plan's basis measured another manifest (bbbb"),
            std::string::npos);
  write_plan(DeviceClass::kCpu, std::nullopt, [](nlohmann::json& d) {
    d["basis"]["fingerprint"] = std::string(64, 'a');
    d["basis"]["manifest_sha256"] = nullptr;
  });
  out = decide();
  EXPECT_NE(Points(out, "measure-first").find("does not say which manifest it measured"), std::string::npos);
  // This folder as its basis, naming another manifest than it measured: a contradiction.
  write_plan(DeviceClass::kCpu, std::nullopt,
             [](nlohmann::json& d) { d["basis"]["manifest_sha256"] = std::string(64, 'b'); });
  auto refused = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("its basis is this folder, yet it names manifest bbbb"),
            std::string::npos);

  // measure-first is a decision a person records too, and verify reads it back.
  write_plan(DeviceClass::kCuda, 20.0);
  o.decision = "measure-first";
  o.reasons = {"one H100 for an hour first"};
  out = decide();
  ASSERT_TRUE(out.recorded);
  EXPECT_NE(ReadText(run / "decisions.jsonl").find(R"("decision":"measure-first")"), std::string::npos);
  VerifyResult v = VerifyRunFolder(RealFileSystem(), run, VerifyOptions{});
  EXPECT_TRUE(v.ok()) << (v.findings.empty() ? "" : v.findings[0].where + ": " + v.findings[0].what);
}

TEST(Decide, BadEvidenceAndMissingReasonsAreRefusedBeforeWriting) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  DecideOptions o;
  o.decision = "go";
  auto no_reason = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_FALSE(no_reason.ok());
  EXPECT_EQ(no_reason.error().where, "--reason");
  o.reasons = {"x"};
  WriteText(f.dir / "notplan.json", R"({"kind": "something"})");
  o.plan = f.dir / "notplan.json";
  auto bad = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("pilot-plan"), std::string::npos);
  EXPECT_FALSE(fs::exists(run / "decisions.jsonl"));
  EXPECT_FALSE(fs::exists(run / ".lock"));
}

// A file system that dies after its Nth change: every later write, rename or removal fails, as
// if the process had been killed there (nothing it does afterwards reaches the disk).
class DyingFileSystem : public FileSystemWrapper {
 public:
  explicit DyingFileSystem(int die_after) : FileSystemWrapper(RealFileSystem()), die_after_(die_after) {}
  Status WriteFileAtomic(const stdfs::path& f, std::string_view d) override {
    return Step([&] { return target().WriteFileAtomic(f, d); });
  }
  Status CreateDirectoryExclusive(const stdfs::path& d) override {
    return Step([&] { return target().CreateDirectoryExclusive(d); });
  }
  Status RenameReplace(const stdfs::path& a, const stdfs::path& b) override {
    return Step([&] { return target().RenameReplace(a, b); });
  }
  Status RemoveFile(const stdfs::path& f) override {
    return Step([&] { return target().RemoveFile(f); });
  }
  Status RemoveTree(const stdfs::path& d) override {
    return Step([&] { return target().RemoveTree(d); });
  }
  bool died() const { return steps_ > die_after_; }

 private:
  template <typename F>
  Status Step(F op) {
    if (++steps_ > die_after_) return WorkFailed("killed (test)", "");
    return op();
  }
  int die_after_;
  int steps_ = 0;
};

TEST(Decide, KilledAfterAnyStepTheFolderIsBeforeAfterOrFinishedByTheNext) {
  std::string reference_tags;
  for (int die_after = 0; die_after < 40; ++die_after) {
    Fixture f(kClean);
    Label(f);
    fs::path run = MakeRun(f);
    const std::string before = ReadText(run / "tagmanifest-sha256.txt");
    WriteText(f.dir / "doctor.json",
              R"({"ok": true, "checks": [{"name": "host", "status": "pass", "required": true}]})");
    DecideOptions o;
    o.doctor = f.dir / "doctor.json";
    o.decision = "go";
    o.reasons = {"clean"};
    DyingFileSystem dying(die_after);
    auto out = Decide(dying, testing::SharedClock(), run, o);
    if (!dying.died()) {  // every step ran: the reference, recorded in full
      ASSERT_TRUE(out.ok()) << out.error().ToString();
      EXPECT_TRUE(out.value().recorded);
      EXPECT_GT(die_after, 5);
      return;
    }
    // Killed part-way: an error, or (killed at the very last step, the lock's removal) a
    // decision recorded with a stale lock left behind.
    // The next decide (here its first step alone) finishes or undoes what was left.
    auto recovered = RecoverInterruptedDecide(RealFileSystem(), run);
    ASSERT_TRUE(recovered.ok()) << die_after << ": " << recovered.error().ToString();
    EXPECT_FALSE(fs::exists(run / ".decide-pending")) << die_after;
    EXPECT_FALSE(fs::exists(run / ".lock")) << die_after;
    VerifyResult v = VerifyRunFolder(RealFileSystem(), run, VerifyOptions{});
    EXPECT_TRUE(v.ok()) << die_after << ": "
                        << (v.findings.empty() ? "" : v.findings[0].where + ": " + v.findings[0].what);
    const bool recorded = fs::exists(run / "decisions.jsonl");
    if (!recorded) {
      EXPECT_EQ(ReadText(run / "tagmanifest-sha256.txt"), before) << die_after;  // as before
      EXPECT_FALSE(fs::exists(run / "decision-1-doctor.json")) << die_after;
    } else {
      const std::string entries = ReadText(run / "decisions.jsonl");
      EXPECT_EQ(std::count(entries.begin(), entries.end(), '\n'), 1) << die_after;
      EXPECT_EQ(ReadText(run / "decision-1-doctor.json"), ReadText(f.dir / "doctor.json")) << die_after;
    }
  }
  FAIL() << "decide never ran to its end in 40 steps";
}

TEST(Decide, ADamagedStagingFolderIsRefusedAndLeftAlone) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  fs::create_directories(run / ".decide-pending");
  WriteText(run / ".decide-pending/COMMIT.json",
            R"({"kind":"pilot-decide-commit","entry":1,"fingerprint_before":")" + std::string(64, 'a') +
                R"(","files":[{"file":"../../outside","sha256":")" + std::string(64, 'b') + R"("}]})");
  auto got = RecoverInterruptedDecide(RealFileSystem(), run);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().what.find("not one decide writes"), std::string::npos);
  EXPECT_TRUE(fs::exists(run / ".decide-pending/COMMIT.json"));
  EXPECT_FALSE(fs::exists(run / ".lock"));
  VerifyResult v = VerifyRunFolder(RealFileSystem(), run, VerifyOptions{});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.findings[0].where, ".decide-pending");
}

TEST(Decide, AWrongFingerprintIsAFindingBeforeAnyProposal) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  DecideOptions o;
  o.expect = std::string(64, '0');
  auto out = Decide(RealFileSystem(), testing::SharedClock(), run, o);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_TRUE(out.value().failed_verification.has_value());
  EXPECT_EQ(out.value().failed_verification->findings.back().check, "fingerprint");
  EXPECT_TRUE(out.value().proposal.empty());
}

TEST(DecideEvidence, PlanTiesWithinItsRoundingAreAcceptedAsPlanBreaksThem) {
  // plan takes figures within a relative 1e-9 as equal and breaks the tie by cards: a cheapest
  // row that costs 0.30000000000000004 beside one of 0.3 is plan's own answer; one of 0.31 is not.
  // 288,000 items at 10 items/s per card: 8 h on one card, 2 h on four.
  auto row = [](const std::string& card, int cards, const std::string& cost) {
    const std::string hours = cards == 1 ? "8.0" : "2.0";
    return R"({"card":")" + card + R"(","period_days":3,"lots":1,"cards":)" + std::to_string(cards) +
           R"(,"fit":"unknown","rate_basis":"measured","items_per_s_per_card":10.0,"compute_hours":)" +
           hours + R"(,"needed_hours":)" + hours + R"(,"period_suffices":true,"cost":)" + cost +
           R"(,"fits":true})";
  };
  auto plan = [&](const std::string& a_cost, int a_cards) {
    const std::string a = row("a", a_cards, a_cost), b = row("b", 4, "0.3");
    return R"({"kind":"pilot-plan","allowance_hours":0,"basis":{"items_per_s_per_card":10.0,)"
           R"("device_class":"cpu"},"cards":[{"card":"a","class":"cpu"},{"card":"b","class":"cpu"}],)"
           R"("corpus":{"items":288000},"plans":[)" +
           a + "," + b + R"(],"cheapest":)" + a + R"(,"fastest":)" + a + R"(,"verdict":"fits"})";
  };
  EXPECT_TRUE(CheckEvidenceDocument("plan", plan("0.30000000000000004", 4), "plan.json").ok());
  auto dearer = CheckEvidenceDocument("plan", plan("0.31", 4), "plan.json");
  ASSERT_FALSE(dearer.ok());
  EXPECT_NE(dearer.error().what.find("cheapest costs more"), std::string::npos) << dearer.error().what;
  auto slower = CheckEvidenceDocument("plan", plan("0.3", 1), "plan.json");
  ASSERT_FALSE(slower.ok());
  EXPECT_NE(slower.error().what.find("fastest needs more hours"), std::string::npos) << slower.error().what;
}

TEST(DecideEvidence, PlanRowsMustFollowFromTheBasisAndTheCorpus) {
  // 36,000 items at 10 items/s on one card: 1 h. Each edit below keeps the row's other fields
  // consistent (needed = compute + allowance, the period suffices), as a careful forger would.
  auto plan = [](const std::string& rate, const std::string& hours, const std::string& rate_basis,
                 const std::string& scaling, const std::string& card_class = "cpu",
                 const std::string& fingerprint = "null") {
    const std::string r =
        R"({"card":"node","period_days":3,"lots":1,"cards":1,"fit":"unknown","rate_basis":")" + rate_basis +
        R"(","items_per_s_per_card":)" + rate + R"(,"compute_hours":)" + hours + R"(,"needed_hours":)" +
        hours + R"(,"period_suffices":true,"cost":5.0,"fits":true})";
    return R"({"kind":"pilot-plan","allowance_hours":0,"basis":{"items_per_s_per_card":10.0,)"
           R"("device_class":"cpu","fingerprint":)" +
           fingerprint + R"(,"assume_scaling":)" + scaling + R"(},"cards":[{"card":"node","class":")" +
           card_class + R"("}],"corpus":{"items":36000},"plans":[)" + r + R"(],"cheapest":)" + r +
           R"(,"fastest":)" + r + R"(,"verdict":"fits"})";
  };
  EXPECT_TRUE(CheckEvidenceDocument("plan", plan("10.0", "1.0", "measured", "null"), "plan.json").ok());
  EXPECT_TRUE(CheckEvidenceDocument("plan", plan("20.0", "0.5", "assumed", "2.0", "cuda"), "plan.json").ok());
  const std::string lower = "\"" + std::string(64, 'a') + "\"", upper = "\"" + std::string(64, 'A') + "\"";
  EXPECT_TRUE(
      CheckEvidenceDocument("plan", plan("10.0", "1.0", "measured", "null", "cpu", lower), "plan.json").ok());
  for (const auto& [doc, says] : std::vector<std::pair<std::string, std::string>>{
           {plan("10.0", "0.0001", "measured", "null"), "compute_hours 0.0001 is not corpus.items"},
           {plan("100000.0", "0.0001", "measured", "null"),
            "items_per_s_per_card 1e+05 is not the basis's rate"},
           {plan("20.0", "0.5", "assumed", "null", "cuda"), "rate_basis assumed is not measured"},
           {plan("10.0", "1.0", "guessed", "null"), "rate_basis guessed is not measured"},
           // An assumed rate on a card of the measured class, or a measured one on another class.
           {plan("20.0", "0.5", "assumed", "2.0"), "rate_basis assumed does not follow from its card"},
           {plan("10.0", "1.0", "measured", "null", "cuda"),
            "rate_basis measured does not follow from its card"},
           // This folder's fingerprint spelt otherwise would dodge the check against this folder.
           {plan("10.0", "1.0", "measured", "null", "cpu", upper), "is not a fingerprint pilot writes"},
       }) {
    auto got = CheckEvidenceDocument("plan", doc, "plan.json");
    ASSERT_FALSE(got.ok()) << says;
    EXPECT_NE(got.error().what.find(says), std::string::npos) << got.error().what;
  }
}

TEST(DecideEvidence, APlanByTokensScalesItsHoursByTheFactorItsTokenMixesGive) {
  // 36,000 items at 10 items/s on one card: 1 h by items; the corpus' items average 30 tokens
  // and the pilot's 12, so by tokens it is 2.5 h. A factor edited apart from the mixes, mixes
  // edited apart from their counts, or hours that ignore the factor are refused.
  auto plan = [](const std::string& hours, const std::string& projection, const std::string& version = "2") {
    const std::string r =
        R"({"card":"node","period_days":3,"lots":1,"cards":1,"fit":"unknown","rate_basis":"measured",)"
        R"("items_per_s_per_card":10.0,"compute_hours":)" +
        hours + R"(,"needed_hours":)" + hours + R"(,"period_suffices":true,"cost":5.0,"fits":true})";
    return R"({"kind":"pilot-plan","format_version":)" + version +
           R"(,"allowance_hours":0,"basis":{"items_per_s_per_card":10.0,)"
           R"("device_class":"cpu"},"cards":[{"card":"node","class":"cpu"}],"corpus":{"items":36000},)"
           R"("projection":)" +
           projection + R"(,"plans":[)" + r + R"(],"cheapest":)" + r + R"(,"fastest":)" + r +
           R"(,"verdict":"fits"})";
  };
  const std::string pilot =
      R"({"items":10,"sampled":10,"encoded":9,"unread":1,"tokens":120,"mean_tokens":12.0})";
  auto corpus = [](const std::string& items, const std::string& encoded, const std::string& mean) {
    return R"({"items":)" + items + R"(,"sampled":12000,"encoded":)" + encoded +
           R"(,"unread":0,"too_long_to_read":0,"tokens":360000,"mean_tokens":)" + mean + "}";
  };
  auto tokens = [&](const std::string& factor, const std::string& corpus_mix, const std::string& pilot_mix) {
    return R"({"by":"tokens","factor":)" + factor + R"(,"pilot":)" + pilot_mix + R"(,"corpus":)" +
           corpus_mix + "}";
  };
  const std::string good_corpus = corpus("36000", "12000", "30.0");
  EXPECT_TRUE(
      CheckEvidenceDocument("plan", plan("2.5", tokens("2.5", good_corpus, pilot)), "plan.json").ok());
  EXPECT_TRUE(CheckEvidenceDocument("plan", plan("1.0", R"({"by":"items","factor":1.0})"), "plan.json").ok());
  EXPECT_TRUE(
      CheckEvidenceDocument("plan", plan("1.0", "null", "1"), "plan.json").ok());  // format 1: by items
  for (const auto& [doc, says] : std::vector<std::pair<std::string, std::string>>{
           {plan("1.0", tokens("2.5", good_corpus, pilot)), "is not corpus.items x projection.factor"},
           {plan("1.0", tokens("1.0", good_corpus, pilot)),
            "projection.factor 1 is not the corpus' mean tokens"},
           {plan("0.5", R"({"by":"items","factor":0.5})"), "a projection by items has factor 0.5"},
           {plan("1.0", R"({"by":"bytes","factor":1.0})"), "projection.by bytes is not items or tokens"},
           {plan("1.0", tokens("-1.0", good_corpus, pilot)), "projection.factor -1 is not a positive figure"},
           // The means edited with the factor, the counts left: refused.
           {plan("3.3333333333333335", tokens("3.3333333333333335", corpus("36000", "12000", "40.0"), pilot)),
            "projection.corpus.mean_tokens 40 is not its tokens 360000 over its 12000"},
           {plan("2.5", tokens("2.5", corpus("36000", "11000", "30.0"), pilot)),
            "projection.corpus's counts"},
           {plan("2.5", tokens("2.5", corpus("12000", "12000", "30.0"), pilot)),
            "projection.corpus.items 12000 is not corpus.items 36000"},
           // An infinite mean (1e400 reads as infinity) is no figure, whatever it is compared with.
           {plan("2.5", tokens("2.5", corpus("36000", "12000", "1e400"), pilot)),
            "projection.corpus.mean_tokens"},
           {plan("1.0", "null"), "format_version 2 plans without a projection"},
           {plan("1.0", R"({"by":"items","factor":1.0})", "1"), "has a projection, which only format 2"},
       }) {
    auto got = CheckEvidenceDocument("plan", doc, "plan.json");
    ASSERT_FALSE(got.ok()) << says;
    EXPECT_NE(got.error().what.find(says), std::string::npos) << got.error().what;
  }
}

TEST(DecideEvidence, AFormat3PlansCostPerMillionAndFastestWithinItsResolutionFollowFromItsRows) {
  // plan's own document for twenty B200 against one H100 at 8 h of allowance (rental_plan_test's
  // case): the fastest is the H100, the cheapest of the plans within 0.1 h of the quickest.
  PlanRequest q;
  q.basis.folder = "runs/r";
  q.basis.folder_kind = "run";
  q.basis.device = "cuda:0";
  q.basis.device_class = DeviceClass::kCuda;
  q.basis.items = 12;
  q.basis.items_per_s_per_card = 1000;
  q.basis.peak_memory_mb = 1000;
  q.basis.memory_basis = "device";
  q.basis.output_bytes = 12 * 3000;  // 3 kB an item: 150 MB for the corpus, 1.5 s at 100 MB/s
  q.corpus.items = 50'000;
  q.prices.currency = "USD";
  for (const auto& [name, per_lot, price] : {std::tuple<const char*, int, double>{"B200", 2, 1000},
                                             std::tuple<const char*, int, double>{"H100", 1, 310}}) {
    CardType c;
    c.name = name;
    c.device_class = DeviceClass::kCuda;
    c.memory_gb = 80;
    c.cards_per_lot = per_lot;
    c.lot_price = {{3, price}};
    q.prices.cards.push_back(c);
  }
  auto built = BuildRentalPlan(q);
  ASSERT_TRUE(built.ok()) << built.error().ToString();
  const nlohmann::json good = nlohmann::json::parse(RentalPlanToJson(built.value()).dump());
  ASSERT_EQ(good["fastest"]["card"], "H100");
  EXPECT_TRUE(CheckEvidenceDocument("plan", good.dump(), "plan.json").ok());
  // The row of the fewest hours: twenty B200 for 10,000.
  nlohmann::json quickest;
  for (const auto& r : good["plans"]) {
    if (quickest.is_null() || r["needed_hours"].get<double>() < quickest["needed_hours"].get<double>())
      quickest = r;
  }
  ASSERT_EQ(quickest["cards"], 20);

  auto refused = [](const nlohmann::json& doc, const std::string& says) {
    auto got = CheckEvidenceDocument("plan", doc.dump(), "plan.json");
    ASSERT_FALSE(got.ok()) << says;
    EXPECT_NE(got.error().what.find(says), std::string::npos) << got.error().what;
  };
  auto doc = good;
  doc["fastest"] = quickest;  // a pick that ignores the resolution
  refused(doc, "fastest costs more than another row that fits within the plan's time_resolution_hours");
  doc = good;
  doc["time_resolution_hours"] = 0.0;  // the rule stated otherwise than the pick was made
  refused(doc, "fastest needs more hours than another row that fits");
  doc = good;
  doc["time_resolution_hours"] = 30;
  refused(doc, "time_resolution_hours 30 is not 0-24 hours");
  doc = good;
  doc["plans"][0]["cost_per_million_items"] = 1.0;
  refused(doc, "cost_per_million_items 1 is not its cost");
  doc = good;
  doc["plans"][0]["cost_per_million_tokens"] = 1.0;
  refused(doc, "cost_per_million_tokens 1 is given, though the plan projects by items");
  // The outputs: the corpus' bytes and copy-off hours follow from the measured bytes, and every
  // row's needed hours include them.
  ASSERT_GT(good["output"]["copy_off_hours"].get<double>(), 0);
  doc = good;
  doc["output"]["copy_off_hours"] = 0.0;
  refused(doc, "output.copy_off_hours 0 is not corpus_bytes / (copy_off_mb_per_s x 1e6) / 3600");
  doc = good;
  doc["output"]["corpus_bytes"] = 1.0;
  refused(doc, "output.corpus_bytes 1 is not bytes_per_item x corpus.items");
  doc = good;
  doc["output"]["measured_bytes"] = nullptr;
  refused(doc, "output.measured_bytes is unknown, yet it projects bytes or copy-off hours");
  doc = good;
  doc["output"]["copy_off_mb_per_s"] = 0;
  refused(doc, "output is not what pilot writes");
  doc = good;
  doc["plans"][1]["copy_off_hours"] = 0.0;
  refused(doc, "a plan row's copy_off_hours 0 is not output.copy_off_hours");
  doc = good;  // the copy-off left out of a row's needed hours
  doc["plans"][1]["needed_hours"] =
      doc["plans"][1]["needed_hours"].get<double>() - doc["plans"][1]["copy_off_hours"].get<double>();
  refused(doc, "plus its copy_off_hours plus the allowance");
  doc = good;
  doc["format_version"] = 4;
  refused(doc, "format_version 4 is not a plan format pilot reads");

  // A format 2 plan (no per-million figures, no resolution) picked the fastest exactly: the
  // twenty B200 are its fastest, and the H100 would not be.
  auto older = good;
  older["format_version"] = 2;
  older.erase("time_resolution_hours");
  older.erase("pick_rule");
  older.erase("output");
  auto to_format2 = [](nlohmann::json& r) {  // needed = compute + allowance, nothing per million
    r["needed_hours"] = r["needed_hours"].get<double>() - r["copy_off_hours"].get<double>();
    for (const char* k : {"cost_per_million_items", "cost_per_million_tokens", "copy_off_hours"}) r.erase(k);
  };
  for (auto& r : older["plans"]) to_format2(r);
  for (const char* pick : {"cheapest", "fastest"}) to_format2(older[pick]);
  to_format2(quickest);
  refused(older, "fastest needs more hours than another row that fits");
  older["fastest"] = quickest;
  EXPECT_TRUE(CheckEvidenceDocument("plan", older.dump(), "plan.json").ok());
}

TEST(DecideEvidence, DocumentsThatContradictThemselvesAreRefused) {
  const std::string row =
      R"({"card":"cpu","period_days":3,"lots":1,"cards":1,"fit":"unknown","rate_basis":"measured",
      "items_per_s_per_card":10.0,"compute_hours":1.0,"needed_hours":9.0,"period_suffices":true,"cost":COST,"fits":true})";
  auto plan = [&](const std::string& cost, const std::string& verdict) {
    std::string r = row;
    r.replace(r.find("COST"), 4, cost);
    return R"({"kind":"pilot-plan","basis":{"items_per_s_per_card":10.0,"device_class":"cpu"},)"
           R"("cards":[{"card":"cpu","class":"cpu"}],"corpus":{"items":36000},"plans":[)" +
           r + R"(],"cheapest":)" + r + R"(,"fastest":)" + r + R"(,"verdict":")" + verdict + R"("})";
  };
  EXPECT_TRUE(CheckEvidenceDocument("plan", plan("5.0", "fits"), "plan.json").ok());
  auto negative = CheckEvidenceDocument("plan", plan("-5.0", "fits"), "plan.json");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().what.find("cost -5"), std::string::npos) << negative.error().what;
  EXPECT_EQ(negative.error().where, "plan.json");
  EXPECT_FALSE(CheckEvidenceDocument("plan", plan("5.0", "none_fits"), "plan.json").ok());
  const std::string compare =
      R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":AGREE,"differ":DIFFER},"within_tolerance":true,
          "verdict":"agree","differences":LISTED,"differences_listed":NLISTED,"changes":[],"one_change":true})";
  auto cmp = [&](const std::string& agree, const std::string& differ, const std::string& listed,
                 const std::string& n) {
    std::string c = compare;
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"AGREE", agree},
                                     {"DIFFER", differ},
                                     {"NLISTED", n},
                                     {"LISTED", listed}}) {
      c.replace(c.find(key), key.size(), value);
    }
    return c;
  };
  EXPECT_TRUE(CheckEvidenceDocument("compare", cmp("3", "0", "[]", "0"), "compare.json").ok());
  auto forged = CheckEvidenceDocument("compare", cmp("1", "2", R"([{"id":"x"}])", "1"), "compare.json");
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.error().what.find("verdict agree (within_tolerance true) with 2 item(s) that differ"),
            std::string::npos)
      << forged.error().what;
  // What the review found decide accepting: more edits that contradict the rest.
  for (
      const auto& [doc, says] : std::vector<std::pair<std::string, std::string>>{
          {R"({"kind":"pilot-compare","tolerance":-1,"items":{"total":3,"agree":3,"differ":0},"within_tolerance":true,
                "verdict":"agree","differences":[],"differences_listed":0,"changes":[],"one_change":true})",
           "tolerance -1"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0,
                "max_confidence_difference":0.5},"within_tolerance":true,"verdict":"agree","differences":[],
                "differences_listed":0,"changes":[],"one_change":true})",
           "max_confidence_difference 0.5"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0,"agreement":0.0},
                "within_tolerance":true,"verdict":"agree","differences":[],"differences_listed":0,"changes":[],
                "one_change":true})",
           "agreement"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0,
                "differences_by_kind":{"status":2}},"within_tolerance":true,"verdict":"agree","differences":[],
                "differences_listed":0,"changes":[],"one_change":true})",
           "differences_by_kind"},
          // The fourth review: a quality or performance section that contradicts the items.
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0},
                "within_tolerance":true,"verdict":"agree","differences":[],"differences_listed":0,"changes":[],
                "one_change":true,"quality":{"accuracy_a":1.0,"accuracy_b":0.5,"accuracy_delta":0.5}})",
           "accuracy_delta 0.5 is not accuracy_b - accuracy_a"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0},
                "within_tolerance":true,"verdict":"agree","differences":[],"differences_listed":0,"changes":[],
                "one_change":true,"quality":{"accepted_b":700}})",
           "accepted_b 700 is not a count of at most items.total 3"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0,"same_status":3},
                "within_tolerance":true,"verdict":"agree","differences":[],"differences_listed":0,"changes":[],
                "one_change":true,"quality":{"accepted_a":3,"accepted_b":1}})",
           "every item has the same status in both runs"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0,"same_status":3,
                "same_category_or_reason":3},"within_tolerance":true,"verdict":"agree","differences":[],
                "differences_listed":0,"changes":[],"one_change":true,
                "quality":{"accuracy_a":1.0,"accuracy_b":0.25,"accuracy_delta":-0.75}})",
           "every item has the same outcome in both runs"},
          {R"({"kind":"pilot-compare","tolerance":0.001,"items":{"total":3,"agree":3,"differ":0},
                "within_tolerance":true,"verdict":"agree","differences":[],"differences_listed":0,"changes":[],
                "one_change":true,"performance":{"throughput_items_per_s":{"a":100.0,"b":100.0,"b_over_a":50.0}}})",
           "performance.throughput_items_per_s.b_over_a 50 is not b / a"},
      }) {
    auto got = CheckEvidenceDocument("compare", doc, "compare.json");
    ASSERT_FALSE(got.ok()) << says;
    EXPECT_NE(got.error().what.find(says), std::string::npos) << got.error().what;
  }
  std::string no_fit = plan("5.0", "fits");
  no_fit.replace(no_fit.find("\"fit\":\"unknown\""), 15, "\"fit\":\"no\"");
  auto unfit = CheckEvidenceDocument("plan", no_fit, "plan.json");
  ASSERT_FALSE(unfit.ok());
  EXPECT_NE(unfit.error().what.find("its card does not"), std::string::npos) << unfit.error().what;
  auto doctor = CheckEvidenceDocument(
      "doctor", R"({"ok": true, "checks": [{"name": "requires", "status": "fail", "required": true}]})",
      "d.json");
  ASSERT_FALSE(doctor.ok());
  EXPECT_NE(doctor.error().what.find("required check did not pass"), std::string::npos);
  EXPECT_FALSE(CheckEvidenceDocument(
                   "doctor", R"({"checks": [{"name": "x", "status": "maybe", "required": true}]})", "d.json")
                   .ok());
}

TEST(DecisionEntry, ParsesWhatDecideWritesAndRefusesTheRest) {
  auto ok = ParseDecisionEntry(
      R"({"entry":2,"decision":"go","reasons":["r"],"evidence":[{"file":"decision-2-plan.json","sha256":")" +
          std::string(64, 'a') + R"("}]})",
      "x");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok.value().entry, 2u);
  EXPECT_EQ(ok.value().evidence.size(), 1u);
  for (
      const char* bad :
      {R"({"entry":0,"decision":"go","reasons":["r"],"evidence":[]})",
       R"({"entry":1,"decision":"maybe","reasons":["r"],"evidence":[]})",
       R"({"entry":1,"decision":"go","reasons":[],"evidence":[]})",
       R"({"entry":1,"decision":"go","reasons":["r"]})",
       R"({"entry":1,"decision":"go","reasons":["r"],"evidence":[{"file":"../x.json","sha256":"00"}]})",
       R"({"entry":1,"decision":"go","reasons":["r"],"evidence":[{"file":"decision-2-plan.json","sha256":"00"}]})",
       R"([1,2])", "not json"}) {
    EXPECT_FALSE(ParseDecisionEntry(bad, "x").ok()) << bad;
  }
}

TEST(DecisionFiles, AStrayEvidenceFileOrAMissingRecordIsAFinding) {
  testing::TempDir t;
  WriteText(t / "decision-1-doctor.json", "{}");
  std::vector<Finding> findings;
  CheckDecisionFiles(RealFileSystem(), t.path(), findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].where, "decisions.jsonl");
  findings.clear();
  WriteText(t / "decisions.jsonl", R"({"entry":1,"decision":"go","reasons":["r"],"evidence":[]})"
                                   "\n");
  WriteText(t / "decision.md", "x");
  CheckDecisionFiles(RealFileSystem(), t.path(), findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].where, "decision-1-doctor.json");
}

}  // namespace
}  // namespace pilot
