// pilot decide on runs the engine wrote with the fake stage: a proposal for each outcome,
// nothing written without a decision, a recorded decision that keeps verify green, and the
// decision files' own checks.
#include <gtest/gtest.h>

#include "pilot/clock.h"
#include "pilot/decide.h"
#include "pilot/run.h"
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
  auto out = ExecuteRun(f.plan, stage, RealFileSystem(), SystemClock());
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
  auto out = Decide(RealFileSystem(), SystemClock(), run, DecideOptions{});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out.value().proposal, "go");
  EXPECT_NE(Points(out.value(), "go").find("every rejection (1) is one the manifest expects"), std::string::npos);
  EXPECT_FALSE(out.value().recorded);
  EXPECT_FALSE(fs::exists(run / "decisions.jsonl"));
  EXPECT_EQ(ReadText(run / "tagmanifest-sha256.txt"), tags);
}

TEST(Decide, AnUnexpectedRejectionProposesReviseConfig) {
  Fixture f({{"a", "fr salut"}, {"d", "ru privet"}});  // ru is not an allowed category
  fs::path run = MakeRun(f);
  auto out = Decide(RealFileSystem(), SystemClock(), run, DecideOptions{});
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
  auto out = Decide(RealFileSystem(), SystemClock(), run, o);
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
  WriteText(f.dir / "doctor.json", R"({"ok": true, "checks": [{"name": "host", "status": "pass", "required": true}]})");
  DecideOptions o;
  o.doctor = f.dir / "doctor.json";
  o.decision = "go";
  o.reasons = {"clean"};
  auto first = Decide(RealFileSystem(), SystemClock(), run, o);
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
  auto second = Decide(RealFileSystem(), SystemClock(), run, o);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value().entry, 2u);
  const std::string both = ReadText(run / "decisions.jsonl");
  EXPECT_EQ(both.substr(0, line1.size()), line1);
  EXPECT_NE(ReadText(run / "decision.md").find("- entry 1: **go**"), std::string::npos);
  EXPECT_TRUE(VerifyRunFolder(RealFileSystem(), run, VerifyOptions{}).ok());
}

TEST(Decide, BadEvidenceAndMissingReasonsAreRefusedBeforeWriting) {
  Fixture f(kClean);
  Label(f);
  fs::path run = MakeRun(f);
  DecideOptions o;
  o.decision = "go";
  auto no_reason = Decide(RealFileSystem(), SystemClock(), run, o);
  ASSERT_FALSE(no_reason.ok());
  EXPECT_EQ(no_reason.error().where, "--reason");
  o.reasons = {"x"};
  WriteText(f.dir / "notplan.json", R"({"kind": "something"})");
  o.plan = f.dir / "notplan.json";
  auto bad = Decide(RealFileSystem(), SystemClock(), run, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("pilot-plan"), std::string::npos);
  EXPECT_FALSE(fs::exists(run / "decisions.jsonl"));
  EXPECT_FALSE(fs::exists(run / ".lock"));
}

TEST(DecisionEntry, ParsesWhatDecideWritesAndRefusesTheRest) {
  auto ok = ParseDecisionEntry(
      R"({"entry":2,"decision":"go","reasons":["r"],"evidence":[{"file":"decision-2-plan.json","sha256":")" +
          std::string(64, 'a') + R"("}]})",
      "x");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok.value().entry, 2u);
  EXPECT_EQ(ok.value().evidence.size(), 1u);
  for (const char* bad : {R"({"entry":0,"decision":"go","reasons":["r"],"evidence":[]})",
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
  WriteText(t / "decisions.jsonl", R"({"entry":1,"decision":"go","reasons":["r"],"evidence":[]})" "\n");
  WriteText(t / "decision.md", "x");
  CheckDecisionFiles(RealFileSystem(), t.path(), findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].where, "decision-1-doctor.json");
}

}  // namespace
}  // namespace pilot
