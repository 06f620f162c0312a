#include "pilot/journal.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FaultyFileSystem;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

JournalHeader Header() {
  JournalHeader h;
  h.run_id = "r";
  h.manifest_sha256 = h.params_sha256 = h.model_sha256 = std::string(64, 'a');
  h.items = 5;
  h.manifest_copy = "data/manifest.json";
  h.manifest_path = "/m.json";
  h.params_path = "/p.json";
  h.model_path = "/model.pt";
  h.inputs_root = "/";
  return h;
}

ResultRecord Rec(const std::string& id, bool ok) {
  if (!ok) return ResultRecord::Rejected(id, "empty_input", "the file is empty");
  ResultRecord r;
  r.id = id;
  r.accepted = true;
  r.category = "fr";
  r.confidence = 0.9;
  r.model = "sha256:x";
  r.latency_ms = 1.0;
  return r;
}

// A journal of a header, a session and two batches (5 results).
std::string WriteJournal(const fs::path& file) {
  auto w = JournalWriter::Open(RealFileSystem(), file);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE(w.value().AppendHeader(Header()).ok());
  EXPECT_TRUE(w.value().AppendSession({{"pid", 1}}, 1.0).ok());
  EXPECT_TRUE(w.value().AppendResults({Rec("a", true), Rec("b", false), Rec("c", true)}, 100.0, 50).ok());
  EXPECT_TRUE(w.value().AppendResults({Rec("d", true), Rec("e", false)}, 101.0, 60).ok());
  return ReadText(file);
}

TEST(Journal, LoadsHeaderCountsAndOffsets) {
  TempDir t;
  std::string text = WriteJournal(t / "j.jsonl");
  auto st = LoadJournal(RealFileSystem(), t / "j.jsonl", false);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(st.value().header.run_id, "r");
  EXPECT_EQ(st.value().done.size(), 5u);
  EXPECT_EQ(st.value().accepted, 3u);
  EXPECT_EQ(st.value().rejected, 2u);
  EXPECT_EQ(st.value().sessions, 1u);
  EXPECT_DOUBLE_EQ(st.value().peak_rss_mb, 60);
  EXPECT_EQ(st.value().torn_bytes, 0u);
  EXPECT_EQ(st.value().valid_bytes, text.size());
  JournalReader reader(RealFileSystem(), t / "j.jsonl");
  // Out of order (a seek), then in order (none needed): both read the right record.
  for (const char* id : {"d", "a", "b", "c", "e"}) {
    auto rec = reader.Read(st.value().done.Value(st.value().done.Find(id)));
    ASSERT_TRUE(rec.ok()) << id;
    EXPECT_EQ(rec.value().id, id);
  }
  EXPECT_EQ(reader.Read(st.value().done.Value(st.value().done.Find("d"))).value().category, "fr");
}

// Cut the journal at every byte offset inside its last two batches: loading recovers to the
// last whole record, and repairing leaves a file that ends on a whole record.
TEST(Journal, TruncatedAtEveryOffsetOfItsLastRecordsRecoversToTheLastWholeRecord) {
  TempDir t;
  const std::string full = WriteJournal(t / "full.jsonl");
  std::vector<std::size_t> line_ends;
  for (std::size_t i = 0; i < full.size(); ++i) {
    if (full[i] == '\n') line_ends.push_back(i + 1);
  }
  const std::size_t first_cut = line_ends[1];  // after header and session
  for (std::size_t cut = first_cut; cut <= full.size(); ++cut) {
    fs::path f = t / "cut.jsonl";
    WriteText(f, full.substr(0, cut));
    std::size_t whole = 0, results = 0;
    for (std::size_t k = 0; k < line_ends.size() && line_ends[k] <= cut; ++k) {
      whole = line_ends[k];
      std::string line = full.substr(k ? line_ends[k - 1] : 0, line_ends[k] - (k ? line_ends[k - 1] : 0));
      results += line.find("\"type\":\"result\"") != std::string::npos;
    }
    FaultyFileSystem fsys;
    auto st = LoadJournal(fsys, f, true);
    ASSERT_TRUE(st.ok()) << "cut " << cut << ": " << st.error().ToString();
    EXPECT_EQ(st.value().valid_bytes, whole) << "cut " << cut;
    EXPECT_EQ(st.value().torn_bytes, cut - whole) << "cut " << cut;
    EXPECT_EQ(st.value().done.size(), results) << "cut " << cut;
    EXPECT_EQ(fs::file_size(f), whole) << "repair truncates to the last whole record, cut " << cut;
  }
}

// A resumed run reads on from the state it loaded: the same state as reading the whole file,
// and the same refusals for what it appended.
TEST(Journal, ContinuingFromALoadedStateEqualsReadingTheWholeFile) {
  TempDir t;
  const fs::path file = t / "j.jsonl";
  WriteJournal(file);
  // A torn tail, repaired as a resume repairs it, then a second session appended.
  std::ofstream(file, std::ios::app) << "{\"type\":\"result\",\"id\":\"f\",\"sta";
  FaultyFileSystem fsys;
  auto prior = LoadJournal(fsys, file, /*repair=*/true);
  ASSERT_TRUE(prior.ok()) << prior.error().ToString();
  EXPECT_GT(prior.value().torn_bytes, 0u);
  {
    auto w = JournalWriter::Open(RealFileSystem(), file);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w.value().AppendSession({{"pid", 2}}, 200.0).ok());
    ASSERT_TRUE(w.value().AppendResults({Rec("f", true), Rec("g", false)}, 201.0, 70).ok());
  }
  auto whole = LoadJournal(RealFileSystem(), file, false);
  auto continued = ContinueJournal(RealFileSystem(), file, std::move(prior).value());
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(continued.ok()) << continued.error().ToString();
  const JournalState& a = whole.value();
  const JournalState& b = continued.value();
  EXPECT_EQ(b.done.size(), 7u);
  EXPECT_EQ(b.accepted, a.accepted);
  EXPECT_EQ(b.rejected, a.rejected);
  EXPECT_EQ(b.sessions, a.sessions);
  EXPECT_EQ(b.records, a.records);
  EXPECT_EQ(b.valid_bytes, a.valid_bytes);
  EXPECT_EQ(b.torn_bytes, 0u);
  EXPECT_DOUBLE_EQ(b.peak_rss_mb, a.peak_rss_mb);
  EXPECT_DOUBLE_EQ(b.processing_seconds, a.processing_seconds);
  EXPECT_EQ(b.done_in_session, a.done_in_session);
  for (std::size_t k = 0; k < a.done.size(); ++k) {
    EXPECT_EQ(b.done.Id(k), a.done.Id(k));
    EXPECT_EQ(b.done.Value(k), a.done.Value(k));
  }

  // An id journaled before the continuation point and again after it is refused, naming
  // the record, as a whole read refuses it.
  auto again = LoadJournal(RealFileSystem(), file, false);
  ASSERT_TRUE(again.ok());
  {
    auto w = JournalWriter::Open(RealFileSystem(), file);
    ASSERT_TRUE(w.value().AppendResults({Rec("a", true)}, 202.0, 70).ok());
  }
  auto twice = ContinueJournal(RealFileSystem(), file, std::move(again).value());
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().what.find("item 'a' has two results"), std::string::npos) << twice.error().what;
}

TEST(Journal, DamageBeforeTheLastRecordIsRefused) {
  TempDir t;
  std::string text = WriteJournal(t / "j.jsonl");
  std::size_t third = text.find("\"type\":\"result\"");
  text[third + 2] = '#';  // breaks the first result record's JSON
  WriteText(t / "j.jsonl", text);
  auto st = LoadJournal(RealFileSystem(), t / "j.jsonl", true);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("record 3 is damaged"), std::string::npos) << st.error().what;
  EXPECT_EQ(ReadText(t / "j.jsonl"), text) << "a refused journal is not modified";
}

TEST(Journal, DuplicateResultAndMissingHeaderAreRefused) {
  TempDir t;
  std::string text = WriteJournal(t / "j.jsonl");
  std::string first_result = text.substr(text.find("{\"type\":\"result\""));
  first_result = first_result.substr(0, first_result.find('\n') + 1);
  WriteText(t / "dup.jsonl", text + first_result);
  auto dup = LoadJournal(RealFileSystem(), t / "dup.jsonl", false);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().what.find("'a' has two results"), std::string::npos);

  WriteText(t / "noheader.jsonl", first_result);
  EXPECT_FALSE(LoadJournal(RealFileSystem(), t / "noheader.jsonl", false).ok());
  WriteText(t / "empty.jsonl", "");
  auto empty = LoadJournal(RealFileSystem(), t / "empty.jsonl", false);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().what.find("never started"), std::string::npos);
  EXPECT_FALSE(LoadJournal(RealFileSystem(), t / "missing.jsonl", false).ok());
}

}  // namespace
}  // namespace pilot
