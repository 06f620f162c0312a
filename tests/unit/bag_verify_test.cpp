#include <gtest/gtest.h>

#include <fstream>

#include "pilot/bag.h"
#include "pilot/hash.h"
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

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = std::make_unique<Fixture>(
        std::vector<std::pair<std::string, std::string>>{{"a", "fr salut"}, {"b", "en hi"}, {"c", ""}});
    fixture_->ExpectRejection("c", "empty_input");
    FakeStage stage;
    auto out = ExecuteRun(fixture_->plan, stage, RealFileSystem(), SystemClock());
    ASSERT_TRUE(out.ok());
    run_ = out.value().run_dir;
    ASSERT_TRUE(VerifyRunFolder(run_, {}).ok());
  }

  // Rewrites the bag manifests so that fixity holds again after a payload edit: only the
  // accounting rules can catch what was changed.
  void Rebag() {
    fs::remove(run_ / "manifest-sha256.txt");
    fs::remove(run_ / "tagmanifest-sha256.txt");
    ASSERT_TRUE(FinalizeBag(RealFileSystem(), run_, {{"External-Identifier", "test-run"}}).ok());
  }

  bool Has(const VerifyResult& r, const std::string& check, const std::string& where, const std::string& what) {
    for (const auto& f : r.findings) {
      if (f.check == check && f.where == where && f.what.find(what) != std::string::npos) return true;
    }
    return false;
  }

  std::string Dump(const VerifyResult& r) { return VerifyResultToJson(run_, r).dump(1); }

  std::unique_ptr<Fixture> fixture_;
  fs::path run_;
};

TEST_F(VerifyTest, ACopyElsewhereVerifiesWithoutTheInputs) {
  testing::TempDir other;
  fs::copy(run_, other / "copy", fs::copy_options::recursive);
  fs::remove_all(fixture_->inputs);
  auto r = VerifyRunFolder(other / "copy", {});
  EXPECT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(r.items, 3u);
  EXPECT_EQ(r.accepted + r.rejected, 3u);
}

TEST_F(VerifyTest, OneChangedByteIsAFixityFinding) {
  std::string text = ReadText(run_ / "data/report.md");
  text[10] ^= 1;
  WriteText(run_ / "data/report.md", text);
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "fixity", "data/report.md", "sha256 is")) << Dump(r);
  EXPECT_TRUE(VerifyRunFolder(run_, {true, false, {}}).ok()) << "--fast does not re-hash";
}

TEST_F(VerifyTest, EveryFailingFileIsListed) {
  for (const char* f : {"data/report.md", "data/environment.json"}) {
    std::ofstream(run_ / f, std::ios::app) << " ";
  }
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "fixity", "data/report.md", "")) << Dump(r);
  EXPECT_TRUE(Has(r, "fixity", "data/environment.json", "")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "bag-info.txt", "Payload-Oxum")) << Dump(r);
}

TEST_F(VerifyTest, DeletedAndAddedFilesAreCompletenessFindings) {
  fs::remove(run_ / "data/report.md");
  WriteText(run_ / "data/extra.txt", "x");
  WriteText(run_ / "stray.txt", "x");
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "completeness", "data/report.md", "missing")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "data/extra.txt", "unexpected")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "stray.txt", "unexpected")) << Dump(r);
}

TEST_F(VerifyTest, MissingResultLineInAConsistentBagIsAnAccountingFinding) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  WriteText(run_ / "data/results.jsonl", results.substr(results.find('\n') + 1));  // drop "a"
  Rebag();
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "no result")) << Dump(r);
  EXPECT_TRUE(Has(r, "report", "data/report.json", "counts.accepted")) << Dump(r);
}

TEST_F(VerifyTest, DuplicateAndUnknownIdsAreFindings) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  std::string first = results.substr(0, results.find('\n') + 1);
  std::string unknown = first;
  unknown.replace(unknown.find("\"a\""), 3, "\"zz\"");
  WriteText(run_ / "data/results.jsonl", results + first + unknown);
  Rebag();
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "more than once")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "zz", "not in the manifest")) << Dump(r);
}

TEST_F(VerifyTest, DisallowedCategoryUnknownReasonAndUnmetExpectedRejection) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  results.replace(results.find("\"category\":\"fr\""), 15, "\"category\":\"xx\"");
  results.replace(results.find("\"empty_input\""), 13, "\"made_up\"");
  WriteText(run_ / "data/results.jsonl", results);
  Rebag();
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "not in allowed_categories")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "c", "unknown reason 'made_up'")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "c", "expected rejection 'empty_input'")) << Dump(r);
}

TEST_F(VerifyTest, ChangedCopyOfTheManifestIsFound) {
  std::string m = ReadText(run_ / "data/manifest.json");
  WriteText(run_ / "data/manifest.json", m + " ");
  Rebag();
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "copies", "data/manifest.json", "manifest_sha256")) << Dump(r);
}

TEST_F(VerifyTest, AnUnfinishedRunNeverPasses) {
  fs::remove(run_ / "manifest-sha256.txt");
  fs::remove(run_ / "tagmanifest-sha256.txt");
  auto r = VerifyRunFolder(run_, {});
  EXPECT_TRUE(Has(r, "bag", "manifest-sha256.txt", "did not finish")) << Dump(r);
}

TEST_F(VerifyTest, InputsOptionRehashesTheInputs) {
  EXPECT_TRUE(VerifyRunFolder(run_, {false, true, {}}).ok());
  WriteText(fixture_->inputs / "b.txt", "en changed");
  auto r = VerifyRunFolder(run_, {false, true, {}});
  EXPECT_TRUE(Has(r, "inputs", "b", "no longer matches")) << Dump(r);
}

TEST(BagManifest, PathsWithSpecialCharactersRoundTrip) {
  EXPECT_EQ(EncodeManifestPath("data/a%b\nc"), "data/a%25b%0Ac");
  EXPECT_EQ(DecodeManifestPath("data/a%25b%0Ac"), "data/a%b\nc");
  auto lines = ParseManifestLines(std::string(64, 'a') + "  data/x y.txt\n", "m");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(lines.value()[0].path, "data/x y.txt");
  EXPECT_FALSE(ParseManifestLines("nothex  data/x\n", "m").ok());
}

}  // namespace
}  // namespace pilot
