#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "pilot/bag.h"
#include "pilot/folder_kind.h"
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
    auto out = ExecuteRun(RealFileSystem(), testing::SharedClock(), fixture_->plan, stage);
    ASSERT_TRUE(out.ok());
    run_ = out.value().run_dir;
    ASSERT_TRUE(VerifyRunFolder(RealFileSystem(), run_, {}).ok());
  }

  // Rewrites the bag manifests so that fixity holds again after a payload edit: only the
  // accounting rules can catch what was changed.
  void Rebag() {
    fs::remove(run_ / "manifest-sha256.txt");
    fs::remove(run_ / "tagmanifest-sha256.txt");
    ASSERT_TRUE(FinalizeBag(RealFileSystem(), run_, "2026-11-30",
                            {{"External-Identifier", "test-run"},
                             {"Pilot-Folder-Kind", "run"},
                             {"Pilot-Format-Version", std::to_string(kRunFormatVersion)}})
                    .ok());
  }

  bool Has(const VerifyResult& r, const std::string& check, const std::string& where,
           const std::string& what) {
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
  auto r = VerifyRunFolder(RealFileSystem(), other / "copy", {});
  EXPECT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(r.items, 3u);
  EXPECT_EQ(r.accepted + r.rejected, 3u);
}

// report.json and report.md are derived documents: a forger who re-hashes the bag still
// has verify rebuild them from the results, the manifest copy, the parameters and the journal.
TEST_F(VerifyTest, AForgedReportIsFoundAgainstTheReportRebuiltFromTheFolder) {
  const std::string original = ReadText(run_ / "data/report.json");
  auto report = nlohmann::ordered_json::parse(original);
  report["throughput_items_per_s"] = 1e6;
  report["latency_ms"]["p95"] = 0.001;
  WriteText(run_ / "data/report.json", report.dump(2) + "\n");
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "report", "data/report.json", "differing keys: latency_ms, throughput_items_per_s"))
      << Dump(r);
  EXPECT_EQ(r.findings.size(), 1u) << Dump(r);

  // The same figures in another layout (indent, key order) are other bytes: a finding too.
  report = nlohmann::ordered_json::parse(original);
  WriteText(run_ / "data/report.json", report.dump(4) + "\n");
  Rebag();
  r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "report", "data/report.json", "its bytes differ")) << Dump(r);

  // The peak RSS of the finishing session is in no other file: taken as recorded, but never
  // below the journal's peak.
  report = nlohmann::ordered_json::parse(original);
  report["peak_rss_mb"] = -1;
  WriteText(run_ / "data/report.json", report.dump(2) + "\n");
  Rebag();
  r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "report", "data/report.json", "peak_rss_mb is not a number at or above")) << Dump(r);

  // The original back: the folder verifies again; nothing else was touched.
  WriteText(run_ / "data/report.json", original);
  Rebag();
  r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(r.ok()) << Dump(r);
}

TEST_F(VerifyTest, AForgedReportMarkdownIsFoundAgainstTheRenderingOfTheReport) {
  std::string md = ReadText(run_ / "data/report.md");
  const auto at = md.find("| a |");
  ASSERT_NE(at, std::string::npos) << md;
  md.insert(at, "| z | accepted | en | forged row |\n");
  WriteText(run_ / "data/report.md", md);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "report", "data/report.md", "does not match the report rendered again")) << Dump(r);
  EXPECT_EQ(r.findings.size(), 1u) << Dump(r);
}

TEST_F(VerifyTest, OneChangedByteIsAFixityFinding) {
  std::string text = ReadText(run_ / "data/report.md");
  text[10] ^= 1;
  WriteText(run_ / "data/report.md", text);
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "fixity", "data/report.md", "sha256 is")) << Dump(r);
  // --fast does not re-hash, but report.md is rendered again from report.json and compared.
  auto fast = VerifyRunFolder(RealFileSystem(), run_, {true, false, {}, {}, {}});
  EXPECT_FALSE(Has(fast, "fixity", "data/report.md", "sha256 is")) << Dump(fast);
  EXPECT_TRUE(Has(fast, "report", "data/report.md", "does not match the report rendered again"))
      << Dump(fast);
}

TEST_F(VerifyTest, EveryFailingFileIsListed) {
  for (const char* f : {"data/report.md", "data/environment.json"}) {
    std::ofstream(run_ / f, std::ios::app) << " ";
  }
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "fixity", "data/report.md", "")) << Dump(r);
  EXPECT_TRUE(Has(r, "fixity", "data/environment.json", "")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "bag-info.txt", "Payload-Oxum")) << Dump(r);
}

TEST_F(VerifyTest, DeletedAndAddedFilesAreCompletenessFindings) {
  fs::remove(run_ / "data/report.md");
  WriteText(run_ / "data/extra.txt", "x");
  WriteText(run_ / "stray.txt", "x");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "completeness", "data/report.md", "missing")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "data/extra.txt", "unexpected")) << Dump(r);
  EXPECT_TRUE(Has(r, "completeness", "stray.txt", "unexpected")) << Dump(r);
}

TEST_F(VerifyTest, MissingResultLineInAConsistentBagIsAnAccountingFinding) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  WriteText(run_ / "data/results.jsonl", results.substr(results.find('\n') + 1));  // drop "a"
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "no result")) << Dump(r);
  EXPECT_TRUE(Has(r, "report", "data/report.json", "counts.accepted")) << Dump(r);
}

// Every result present once, but two lines swapped: the only finding is the order (the id
// map is built for the lines that leave manifest order). An unknown id placed first does
// not shift the others out of order.
TEST_F(VerifyTest, SwappedResultLinesAreAnOrderFinding) {
  std::istringstream in(ReadText(run_ / "data/results.jsonl"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
  ASSERT_EQ(lines.size(), 3u);
  WriteText(run_ / "data/results.jsonl", lines[1] + lines[0] + lines[2]);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "accounting", "data/results.jsonl", "not in manifest order")) << Dump(r);
  EXPECT_EQ(r.findings.size(), 1u) << Dump(r);

  std::string unknown = lines[0];
  unknown.replace(unknown.find("\"a\""), 3, "\"zz\"");
  WriteText(run_ / "data/results.jsonl", unknown + lines[0] + lines[1] + lines[2]);
  Rebag();
  auto u = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(u, "accounting", "zz", "not in the manifest")) << Dump(u);
  EXPECT_FALSE(Has(u, "accounting", "data/results.jsonl", "not in manifest order")) << Dump(u);
}

TEST_F(VerifyTest, DuplicateAndUnknownIdsAreFindings) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  std::string first = results.substr(0, results.find('\n') + 1);
  std::string unknown = first;
  unknown.replace(unknown.find("\"a\""), 3, "\"zz\"");
  WriteText(run_ / "data/results.jsonl", results + first + unknown);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "more than once")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "zz", "not in the manifest")) << Dump(r);
}

TEST_F(VerifyTest, DisallowedCategoryUnknownReasonAndUnmetExpectedRejection) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  results.replace(results.find("\"category\":\"fr\""), 15, "\"category\":\"xx\"");
  results.replace(results.find("\"empty_input\""), 13, "\"made_up\"");
  WriteText(run_ / "data/results.jsonl", results);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "not in allowed_categories")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "c", "unknown reason 'made_up'")) << Dump(r);
  EXPECT_TRUE(Has(r, "accounting", "c", "expected rejection 'empty_input'")) << Dump(r);
}

TEST_F(VerifyTest, ChangedCopyOfTheManifestIsFound) {
  std::string m = ReadText(run_ / "data/manifest.json");
  WriteText(run_ / "data/manifest.json", m + " ");
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "copies", "data/manifest.json", "manifest_sha256")) << Dump(r);
}

TEST_F(VerifyTest, AnUnfinishedRunNeverPasses) {
  fs::remove(run_ / "manifest-sha256.txt");
  fs::remove(run_ / "tagmanifest-sha256.txt");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "bag", "manifest-sha256.txt", "did not finish")) << Dump(r);
}

TEST_F(VerifyTest, InputsOptionRehashesTheInputs) {
  EXPECT_TRUE(VerifyRunFolder(RealFileSystem(), run_, {false, true, {}, {}, {}}).ok());
  WriteText(fixture_->inputs / "b.txt", "en changed");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {false, true, {}, {}, {}});
  EXPECT_TRUE(Has(r, "inputs", "b", "no longer matches")) << Dump(r);
}

// A bag from a rented machine may lie in ways a consistent re-hash hides; none of them
// passes, and verify never follows a link or opens a non-regular file.
TEST_F(VerifyTest, ASymlinkToIdenticalBytesOutsideIsAFinding) {
  testing::TempDir outside;
  fs::copy_file(run_ / "data/report.md", outside / "report.md");
  fs::remove(run_ / "data/report.md");
  fs::create_symlink(outside / "report.md", run_ / "data/report.md");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "completeness", "data/report.md", "symlink")) << Dump(r);
}

TEST_F(VerifyTest, AConsistentlyRehashedLinkToASystemFileIsAFindingAndNeverRead) {
  fs::create_symlink("/etc/passwd", run_ / "data/passwd");
  // Hashes the link's target as a careless tool would: a bag that is consistent.
  const std::string sha = Sha256File(RealFileSystem(), "/etc/passwd").value();
  WriteText(run_ / "manifest-sha256.txt", ReadText(run_ / "manifest-sha256.txt") + sha + "  data/passwd\n");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "completeness", "data/passwd", "symlink")) << Dump(r);
}

TEST_F(VerifyTest, AFifoInsteadOfATagFileIsAFindingNotAHang) {
  fs::remove(run_ / "bagit.txt");
  ASSERT_EQ(::mkfifo((run_ / "bagit.txt").c_str(), 0600), 0);
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "bag", "bagit.txt", "not a regular file")) << Dump(r);
}

TEST_F(VerifyTest, ARunRecordLinkedToADeviceIsAFinding) {
  fs::remove(run_ / "data/run.json");
  fs::create_symlink("/dev/zero", run_ / "data/run.json");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "copies", "data/run.json", "symlink")) << Dump(r);
}

TEST_F(VerifyTest, WellFormedButWrongJsonIsAFindingNotACrash) {
  std::string run_json = ReadText(run_ / "data/run.json");
  run_json.replace(run_json.find("\"finished\""), 10, "1");
  WriteText(run_ / "data/run.json", run_json);
  WriteText(run_ / "data/report.json", "[]\n");
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "copies", "data/run.json", "'state'")) << Dump(r);
  EXPECT_TRUE(Has(r, "report", "data/report.json", "not a JSON object")) << Dump(r);
}

TEST_F(VerifyTest, AnEmptyFolderInThePayloadIsAFinding) {
  fs::create_directory(run_ / "data/extra");
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "completeness", "data/extra", "empty folder")) << Dump(r);
}

TEST_F(VerifyTest, AHandEditedTagManifestIsAFinding) {
  const std::string tags = ReadText(run_ / "tagmanifest-sha256.txt");
  for (const std::string& edited :
       {tags + "\n", std::string(tags).insert(tags.find('\n'), "\r"), std::string(tags).insert(66, "*")}) {
    WriteText(run_ / "tagmanifest-sha256.txt", edited);
    auto r = VerifyRunFolder(RealFileSystem(), run_, {});
    EXPECT_TRUE(Has(r, "fixity", "tagmanifest-sha256.txt", "malformed")) << Dump(r);
  }
}

TEST_F(VerifyTest, AFlippedResultRehashedConsistentlyDisagreesWithTheJournal) {
  std::string results = ReadText(run_ / "data/results.jsonl");
  auto at = results.find("\"category\":\"fr\"");
  ASSERT_NE(at, std::string::npos);
  results.replace(at, 15, "\"category\":\"en\"");
  WriteText(run_ / "data/results.jsonl", results);
  Rebag();
  auto r = VerifyRunFolder(RealFileSystem(), run_, {});
  EXPECT_TRUE(Has(r, "accounting", "a", "differs from its record in data/journal.jsonl")) << Dump(r);
}

TEST_F(VerifyTest, TheFingerprintTellsACopyFromARehashedOne) {
  const std::string fingerprint = Sha256File(RealFileSystem(), run_ / "tagmanifest-sha256.txt").value();
  VerifyOptions expect;
  expect.expect_fingerprint = fingerprint;
  auto same = VerifyRunFolder(RealFileSystem(), run_, expect);
  EXPECT_TRUE(same.ok()) << Dump(same);
  EXPECT_EQ(same.fingerprint, fingerprint);
  WriteText(run_ / "bag-info.txt", ReadText(run_ / "bag-info.txt") + "Contact-Name: someone\n");
  Rebag();
  ASSERT_TRUE(VerifyRunFolder(RealFileSystem(), run_, {}).ok()) << "consistent on its own";
  auto r = VerifyRunFolder(RealFileSystem(), run_, expect);
  EXPECT_TRUE(Has(r, "fingerprint", "tagmanifest-sha256.txt", "expected " + fingerprint)) << Dump(r);
}

TEST(BagManifest, PathsWithSpecialCharactersRoundTrip) {
  EXPECT_EQ(EncodeManifestPath("data/a%b\nc"), "data/a%25b%0Ac");
  EXPECT_EQ(DecodeManifestPath("data/a%25b%0Ac"), "data/a%b\nc");
  auto lines = ParseManifestLines(std::string(64, 'a') + "  data/x y.txt\n", "m");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(lines.value()[0].path, "data/x y.txt");
  EXPECT_FALSE(ParseManifestLines("nothex  data/x\n", "m").ok());
}

// Every kind's identity has one writer: bag-info.txt's fields and data/run.json's head.
TEST(FolderIdentity, BagInfoAndTheRecordHeadComeFromOneWriterInOneOrder) {
  testing::TempDir dir;
  fs::create_directories(dir / "data");
  WriteText(dir / "data/x.txt", "x");
  ASSERT_TRUE(WriteBagDeclaration(RealFileSystem(), dir.path()).ok());
  ASSERT_TRUE(
      FinalizeFolder(RealFileSystem(), dir.path(), "2026-12-02", FolderIdentity{"sweep", 3, "s-1", "a sweep"})
          .ok());
  const std::string info = ReadText(dir / "bag-info.txt");
  std::vector<std::size_t> at;
  for (const char* line :
       {"Bag-Software-Agent: pilot ", "External-Identifier: s-1\n", "External-Description: a sweep\n",
        "Pilot-Folder-Kind: sweep\n", "Pilot-Format-Version: 3\n"}) {
    at.push_back(info.find(line));
    EXPECT_NE(at.back(), std::string::npos) << line << " in\n" << info;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << info;
  EXPECT_EQ(BagInfoValue(info, "Pilot-Folder-Kind"), "sweep");

  testing::TempDir plain;
  fs::create_directories(plain / "data");
  WriteText(plain / "data/x.txt", "x");
  ASSERT_TRUE(WriteBagDeclaration(RealFileSystem(), plain.path()).ok());
  ASSERT_TRUE(
      FinalizeFolder(RealFileSystem(), plain.path(), "2026-12-02", FolderIdentity{"run", 2, "r-1", ""}).ok());
  EXPECT_EQ(ReadText(plain / "bag-info.txt").find("External-Description"), std::string::npos)
      << "no description, no field";
  // A folder renamed with a line break in its name cannot add a line to bag-info.txt.
  const std::string before = ReadText(plain / "bag-info.txt");
  auto injected = FinalizeFolder(RealFileSystem(), plain.path(), "2026-12-02",
                                 FolderIdentity{"sweep", 3, "s-1\nPilot-Folder-Kind: run", ""});
  ASSERT_FALSE(injected.ok());
  EXPECT_NE(injected.error().what.find("line break"), std::string::npos);
  EXPECT_EQ(ReadText(plain / "bag-info.txt"), before) << "nothing rewritten";

  auto running = RecordHead(FolderIdentity{"run", 2, "r-1", ""}, "pilot run --params p.json", "running",
                            "2026-12-02T06:00:00Z", std::nullopt);
  std::vector<std::string> keys;
  for (const auto& [key, value] : running.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"folder_kind", "format_version", "run_id", "pilot_version",
                                            "source_revision", "command_line", "state", "started_at",
                                            "finished_at"}));
  EXPECT_EQ(running["folder_kind"], "run");
  EXPECT_EQ(running["format_version"], 2);
  EXPECT_EQ(running["run_id"], "r-1");
  EXPECT_TRUE(running["finished_at"].is_null());
  auto finished = RecordHead(FolderIdentity{"run", 2, "r-1", ""}, "pilot run", "finished",
                             "2026-12-02T06:00:00Z", std::string("2026-12-02T06:01:00Z"));
  EXPECT_EQ(finished["finished_at"], "2026-12-02T06:01:00Z");
  EXPECT_EQ(finished["state"], "finished");
}

}  // namespace
}  // namespace pilot
