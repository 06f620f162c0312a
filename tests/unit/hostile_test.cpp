// Hostile and damaged inputs at the library level: the file-system seam never writes
// through a symlink or blocks on a FIFO, every JSON document is capped and type-checked,
// secrets are neither missed nor echoed, and a run folder that lies is caught.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pilot/bag.h"
#include "pilot/credentials.h"
#include "pilot/hash.h"
#include "pilot/journal.h"
#include "pilot/json_util.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/run.h"
#include "pilot/run_lock.h"
#include "pilot/run_record.h"
#include "pilot/utf8.h"
#include "pilot/verify.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FakeStage;
using testing::Fixture;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

const std::string kSecret = "sk-proj-SeCrEtMaRkEr0123456789abcdefABCDEF";

// --- JSON: one parser for every file, with caps -------------------------------------------

TEST(HostileJson, DuplicateKeysAreRefusedWithTheirPath) {
  auto top = ParseJson(R"({"a":1,"b":2,"a":3})", "f.json");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.error().what.find("duplicate key 'a'"), std::string::npos) << top.error().what;
  auto nested = ParseJson(R"({"items":[{"id":"x"},{"id":"y","path":"p","id":"z"}]})", "f.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().what.find("'items[1].id'"), std::string::npos) << nested.error().what;
  // The same key in two objects is no duplicate.
  EXPECT_TRUE(ParseJson(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]})", "f.json").ok());
}

TEST(HostileJson, DeepNestingIsRefusedWithoutRecursion) {
  std::string deep(100000, '[');
  auto r = ParseJson(deep, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what.find("nested deeper"), std::string::npos);
  std::string ok = std::string(limits::kJsonDepth, '[') + std::string(limits::kJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok, "ok.json").ok());
  std::string over = std::string(limits::kJsonDepth + 1, '[') + std::string(limits::kJsonDepth + 1, ']');
  EXPECT_FALSE(ParseJson(over, "over.json").ok());
}

// The parse that keeps key order (a sweep's record, the documents verify rebuilds) has the same
// checks in the same single pass, and keeps the order it read.
TEST(HostileJson, TheOrderedParseRefusesWhatParseJsonRefuses) {
  auto dup = ParseOrderedJson(R"({"a":1,"b":2,"a":3})", "f.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().what.find("duplicate key 'a'"), std::string::npos) << dup.error().what;
  std::string deep(limits::kJsonDepth + 1, '[');
  deep += std::string(limits::kJsonDepth + 1, ']');
  auto nested = ParseOrderedJson(deep, "deep.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().what.find("nested deeper"), std::string::npos);
  auto bad = ParseOrderedJson("{\"secret\": \"hunter2\"", "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().what.find("hunter2"), std::string::npos);
  auto kept = ParseOrderedJson(R"({"z":1,"a":{"y":2,"b":3}})", "f.json");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept.value().dump(), R"({"z":1,"a":{"y":2,"b":3}})");
}

TEST(HostileJson, SyntaxErrorsGivePositionsNeverText) {
  auto r = ParseJson("{\"description\": \"" + kSecret + "\" ,, }", "p.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().ToString().find("SeCrEtMaRkEr"), std::string::npos) << r.error().ToString();
  EXPECT_NE(r.error().what.find("line 1, column"), std::string::npos) << r.error().what;
  auto utf8 = ParseJson("{\"a\": \"\xff\"}", "p.json");
  EXPECT_FALSE(utf8.ok());
}

TEST(HostileJson, SecretLookingKeysAreMaskedInMessages) {
  EXPECT_EQ(KeyForMessage("batch_size"), "batch_size");
  EXPECT_EQ(KeyForMessage(kSecret).find("SeCrEt"), std::string::npos);
  EXPECT_EQ(KeyForMessage("has space").find("space"), std::string::npos);
  auto dup = ParseJson("{\"" + kSecret + "\":1,\"" + kSecret + "\":2}", "p.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().ToString().find("SeCrEt"), std::string::npos);
}

TEST(HostileJson, SerialisingInvalidUtf8NeverThrows) {
  nlohmann::ordered_json j = {{"dir", std::string("runs/\xff\xfe")}, {"label", std::string("\xe6\x97")}};
  std::string out;
  EXPECT_NO_THROW(out = PrettyJson(j));
  EXPECT_TRUE(CheckUtf8(out).valid);
  EXPECT_NO_THROW(out = JsonLine(j));
  EXPECT_TRUE(CheckUtf8(out).valid);
}

TEST(HostileJson, TruncationNeverSplitsACharacter) {
  std::string label;
  for (int i = 0; i < 200; ++i) label += "\xe6\x97\xa5";  // 日, 3 bytes each
  for (std::size_t cut = 0; cut < 20; ++cut)
    EXPECT_TRUE(CheckUtf8(TruncateUtf8(label, 100 + cut)).valid) << cut;
}

// --- Credentials: what must be refused, and what must pass ----------------------------------

// The one reader of a parameter file's settings (params and adapt both): each wrong value named
// by its key path, the file and the hint; a whole number compared exactly; never a throw.
TEST(HostileJson, SettingsReaderNamesTheKeyPathAndComparesWholeNumbersExactly) {
  auto doc = ParseJson(R"({"train": {"batch": 8, "big": 18446744073709551615, "neg": -1, "half": 1.5,
                          "text": "x", "empty": "", "rate": 0.5, "path": "a/../b.json", "kind": "sgd"},
                          "list": [1]})",
                       "p.json");
  ASSERT_TRUE(doc.ok());
  const SettingsReader top(doc.value(), "", "p.json", "see the docs");
  const SettingsReader t = top.Child("train");
  auto says = [](const Status& st, const std::string& what) {
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_EQ(st.error().what, what);
    EXPECT_EQ(st.error().where, "p.json");
    EXPECT_EQ(st.error().hint, "see the docs");
    EXPECT_EQ(st.error().kind, ErrorKind::kBadInput);
  };
  int batch = 0;
  EXPECT_TRUE(t.Whole("batch", batch, 1, 64).ok());
  EXPECT_EQ(batch, 8);
  int absent = 3;
  EXPECT_TRUE(t.Whole("absent", absent, 1, 64).ok());
  EXPECT_EQ(absent, 3) << "an absent setting keeps its default";
  std::uint64_t big = 0;
  EXPECT_TRUE(t.Whole("big", big, 0, ~std::uint64_t{0}).ok());
  EXPECT_EQ(big, ~std::uint64_t{0});
  says(t.Whole("big", big, 0, ~std::uint64_t{0} - 1),
       "'train.big' must be between 0 and 18446744073709551614");
  says(t.Whole("neg", batch, 0, 64), "'train.neg' must be between 0 and 64");
  says(t.Whole("half", batch, 0, 64), "'train.half' must be a whole number between 0 and 64 (not 1.5)");
  says(t.Whole("text", batch, 0, 64), "'train.text' must be a whole number between 0 and 64");
  std::string text;
  says(t.String("empty", text, false), "'train.empty' must be a non-empty string");
  says(t.String("nothing", text, true), "'train.nothing' is required");
  EXPECT_TRUE(t.OneOf("kind", text, {"adam", "sgd"}).ok());
  says(t.OneOf("text", text, {"adam", "sgd"}), "'train.text' must be one of adam, sgd");
  std::filesystem::path path;
  EXPECT_TRUE(t.Path("path", "/base", path).ok());
  EXPECT_EQ(path, std::filesystem::path("/base/b.json"));
  double rate = 0;
  EXPECT_TRUE(t.Number("rate", rate, 0, 1).ok());
  says(t.Number("rate", rate, 0.5, 1, true), "'train.rate' must be in (0.5, 1.0]");
  says(t.Number("text", rate, 0, 1), "'train.text' must be a number in [0.0, 1.0]");
  // The settings of something that is not an object are all absent, never a throw.
  const SettingsReader list = top.Child("list");
  EXPECT_FALSE(list.Has("0"));
  says(list.String("x", text, true), "'list.x' is required");
  EXPECT_TRUE(MemberOrNull(doc.value(), "nothing").is_null());
  EXPECT_TRUE(MemberOrNull(doc.value()["list"], "0").is_null());
  EXPECT_EQ(MemberOrNull(doc.value(), "train")["batch"], 8);
}

TEST(HostileCredentials, SecretsInsideTextWithSlashesOrAsKeys) {
  EXPECT_TRUE(ValueLooksLikeCredential("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));  // AWS secret key
  EXPECT_TRUE(ValueLooksLikeCredential("my key is sk-SeCrEtMaRkEr0123456789abcdefgh, keep it"));
  EXPECT_TRUE(ValueLooksLikeCredential("token=ghp_0123456789abcdefABCDEF0123456789"));
  EXPECT_TRUE(ValueLooksLikeCredential(
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"));
  EXPECT_TRUE(ValueLooksLikeCredential("postgres://admin:hunter2@db.internal:5432/x"));
  auto key = CheckNoCredentials(nlohmann::json::parse("{\"" + kSecret + "\": 1}"), "p.json");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().ToString().find("SeCrEt"), std::string::npos) << key.error().ToString();
}

TEST(HostileCredentials, ThePassSetStaysAllowed) {
  // Values real parameter files and manifests hold; tighter detection must not flag them.
  for (const std::string& v : {
           std::string("fefc6e4d6c1b5a0ad80c4ac5b8d4e5a4b4b1dd1a0c04e6e8c57e4c6d6f2e0b6c"),  // sha256 pin
           std::string("sha256:7b16a0e3f2c8d9b1e4f5a6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7"),
           std::string("../data/models/langid/langid.pt"),
           std::string("../data/pilot/manifest.json"),
           std::string("/mnt/scratch/projects/ResearchGroup2024/inputs/batch-03"),
           std::string("doc-01"),
           std::string("20261129T193754Z-1f8df1"),
           std::string("torchscript-classifier"),
           std::string("The bundled default pilot: 12 documents in 9 languages, 3 rejected."),
           std::string("https://example.com/docs/pilot?x=1"),
           std::string("Q2F0ZWdvcnlB"),
           std::string("bGFiZWwtb25l"),  // base64-looking labels
           std::string("en"),
           std::string("zh-Hant"),
           std::string("HF_TOKEN"),
           std::string("MY_API_KEY"),
           std::string("a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4"),  // a git revision
           std::string("task-classification-english-v2"),
           std::string("disk-scratch-volume-0001-primary"),
       }) {
    EXPECT_FALSE(ValueLooksLikeCredential(v)) << v;
  }
}

TEST(HostileCredentials, DuplicateKeyCannotHideASecret) {
  std::string text = "{\"description\": \"" + kSecret +
                     "\", \"manifest\": \"m.json\", \"description\": \"ok\", \"stage\": {\"kind\": \"k\", "
                     "\"model\": \"m.pt\"}, \"allowed_categories\": [\"en\"]}";
  auto p = ParseParams(text, "/tmp", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what.find("duplicate key 'description'"), std::string::npos) << p.error().what;
  EXPECT_EQ(p.error().ToString().find("SeCrEt"), std::string::npos);
}

TEST(HostileCredentials, UnknownKeysAreNotEchoedUnlessPlainNames) {
  auto p = ParseParams(
      R"({"manifest":"m.json","stage":{"kind":"k","model":"m.pt"},"allowed_categories":["en"],"weird key with spaces and more":1})",
      "/tmp", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what.find("unknown key"), std::string::npos);
  EXPECT_EQ(p.error().what.find("spaces"), std::string::npos) << p.error().what;
}

// --- The file-system seam -------------------------------------------------------------------

class HostileFs : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "run/data");
    fs::create_directories(dir_ / "outside");
    WriteText(dir_ / "outside/victim.txt", "precious\n");
  }
  std::string Victim() { return ReadText(dir_ / "outside/victim.txt"); }
  TempDir dir_;
};

TEST_F(HostileFs, NoWriteFollowsASymlink) {
  FileSystem& fsys = RealFileSystem();
  fs::create_symlink(dir_ / "outside/victim.txt", dir_ / "run/data/journal.jsonl");
  auto append = fsys.OpenAppend(dir_ / "run/data/journal.jsonl");
  EXPECT_FALSE(append.ok());
  EXPECT_FALSE(fsys.Truncate(dir_ / "run/data/journal.jsonl", 0).ok());
  Status w = fsys.WriteFileAtomic(dir_ / "run/data/journal.jsonl", "x");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().what.find("symlink"), std::string::npos);
  EXPECT_EQ(Victim(), "precious\n");
  EXPECT_TRUE(fs::is_symlink(dir_ / "run/data/journal.jsonl"));

  // A folder that is a symlink to elsewhere is not written into either.
  fs::create_directory_symlink(dir_ / "outside", dir_ / "run/linked");
  EXPECT_FALSE(fsys.WriteFileAtomic(dir_ / "run/linked/new.txt", "x").ok());
  EXPECT_FALSE(fs::exists(dir_ / "outside/new.txt"));
  EXPECT_FALSE(fsys.CopyFileAtomic(dir_ / "outside/victim.txt", dir_ / "run/linked/copy.txt").ok());
}

TEST_F(HostileFs, ALockThatIsASymlinkIsRefusedAndItsTargetUntouched) {
  fs::create_symlink(dir_ / "outside/victim.txt", dir_ / "run" / kLockFile);
  auto lock = RunLock::Acquire(RealFileSystem(), dir_ / "run");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.error().what.find("symlink"), std::string::npos);
  EXPECT_EQ(Victim(), "precious\n");
  EXPECT_FALSE(LockHolder(RealFileSystem(), dir_ / "run").has_value());
}

TEST_F(HostileFs, ALockThisProcessCreatedGoesWithIt) {
  {
    auto lock = RunLock::Acquire(RealFileSystem(), dir_ / "run");
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(fs::exists(dir_ / "run" / kLockFile));
  }
  EXPECT_FALSE(fs::exists(dir_ / "run" / kLockFile));
  WriteText(dir_ / "run" / kLockFile, "12345\n");  // left by a dead process: taken over, then left
  {
    auto lock = RunLock::Acquire(RealFileSystem(), dir_ / "run");
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(lock.value().stale_taken_over());
  }
  EXPECT_TRUE(fs::exists(dir_ / "run" / kLockFile));
}

TEST_F(HostileFs, ALockFileRemovedOnceIsNeverRemovedAgain) {
  {
    auto lock = RunLock::Acquire(RealFileSystem(), dir_ / "run");
    ASSERT_TRUE(lock.ok());
    lock.value().RemoveFile();  // a clean stop: the process lingers a moment before exiting
    WriteText(dir_ / "run" / kLockFile, "4242\n");  // meanwhile another writer's lock appears
  }
  EXPECT_EQ(ReadText(dir_ / "run" / kLockFile), "4242\n");
}

TEST_F(HostileFs, ReadsNeverBlockOnAFifoAndStopAtTheirCap) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  auto r = RealFileSystem().ReadFile(dir_ / "fifo", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(Sha256File(RealFileSystem(), dir_ / "fifo").ok());
  EXPECT_FALSE(LineReader::Open(RealFileSystem(), dir_ / "fifo", 100).ok());
  EXPECT_FALSE(Sha256File(RealFileSystem(), "/dev/zero").ok());
  EXPECT_FALSE(RealFileSystem().ReadFile("/dev/zero", 100).ok());

  WriteText(dir_ / "big.txt", std::string(1000, 'x'));
  auto capped = RealFileSystem().ReadFile(dir_ / "big.txt", 10);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped.value().size(), 11u) << "at most cap + 1 bytes are read";
  EXPECT_FALSE(ReadCapped(RealFileSystem(), dir_ / "big.txt", 10, "parameter file").ok());

  WriteText(dir_ / "lines.txt", "short\n" + std::string(5000, 'y') + "\n");
  auto lines = LineReader::Open(RealFileSystem(), dir_ / "lines.txt", 100);
  ASSERT_TRUE(lines.ok());
  std::string line;
  EXPECT_TRUE(lines.value().Next(line).value());
  EXPECT_EQ(line, "short");
  auto second = lines.value().Next(line);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().what.find("line 2"), std::string::npos);
}

// --- Manifests ------------------------------------------------------------------------------

TEST(HostileManifest, NulInAPathAndDuplicateKeysInAnItemAreRefused) {
  const std::string sha(64, 'a');
  auto nul = ParseManifest(
      "{\"items\":[{\"id\":\"a\",\"path\":\"a\\u0000.txt\",\"sha256\":\"" + sha + "\"}]}", false, "m.json");
  ASSERT_FALSE(nul.ok());
  EXPECT_NE(nul.error().what.find("control character"), std::string::npos);
  auto dup = ParseManifest("{\"id\":\"a\",\"path\":\"a.txt\",\"id\":\"b\",\"sha256\":\"" + sha + "\"}\n",
                           true, "m.jsonl");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().what.find("duplicate key 'id'"), std::string::npos);
}

TEST(HostileManifest, JsonLinesAreHashedExactlyAsValidated) {
  TempDir t;
  const std::string text = "{\"id\":\"a\",\"path\":\"a.txt\",\"sha256\":\"" + std::string(64, 'a') +
                           "\"}\r\n\n{\"id\":\"b\",\"path\":\"b.txt\",\"sha256\":\"" + std::string(64, 'b') +
                           "\"}";
  WriteText(t / "m.jsonl", text);
  auto src = ManifestSource::Open(RealFileSystem(), t / "m.jsonl");
  ASSERT_TRUE(src.ok()) << src.error().ToString();
  EXPECT_EQ(src.value().size(), 2u);
  EXPECT_EQ(src.value().sha256(), Sha256Hex(text));
}

// --- Journals and run records: wrong types are errors, never exceptions ---------------------

std::string Header() {
  const std::string sha(64, 'a');
  return R"({"type":"header","version":1,"run_id":"r1","manifest_sha256":")" + sha +
         R"(","params_sha256":")" + sha + R"(","model_sha256":")" + sha +
         R"(","items":2,"manifest_copy":"data/manifest.json","plan":{"manifest":"/m.json","params":"/p.json","model":"/m.pt","inputs_root":"/in"}})" +
         "\n";
}

TEST(HostileJournal, WrongTypesAreRefusedNamingTheRecord) {
  ASSERT_TRUE(ParseJournal(Header(), "j").ok());
  for (const char* bad :
       {R"({"type":5})", R"({"type":"session","at_unix":"x"})",
        R"({"type":"batch","at_unix":1,"peak_rss_mb":[]})", R"({"type":"result","id":5,"status":"accepted"})",
        R"({"type":"result","id":"a","status":"maybe"})", R"({"type":"frobnicate"})"}) {
    auto j = ParseJournal(Header() + bad + "\n" + R"({"type":"session","at_unix":1})" + "\n", "j");
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_NE(j.error().what.find("record 2"), std::string::npos) << j.error().what;
  }
}

TEST(HostileJournal, AHeaderCannotPointOutsideTheFolder) {
  std::string h = Header();
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"data/manifest.json", "../../outside/x"},
                                                        {"\"/m.pt\"", "\"relative.pt\""},
                                                        {"\"r1\"", "\"../r\""},
                                                        {"\"items\":2", "\"items\":-1"}}) {
    std::string bad = h;
    bad.replace(bad.find(from), from.size(), to);
    auto j = ParseJournal(bad, "j");
    EXPECT_FALSE(j.ok()) << to;
  }
}

// Found by the fuzzers (tests/fuzz/corpus/*/regress-*): conversions that were undefined
// behaviour on hostile numbers.
TEST(HostileFuzzFindings, HugeVersionPartsAndNonIntegerCounts) {
  EXPECT_FALSE(ParseVersion("99999999999").has_value());
  EXPECT_TRUE(ParseVersion("2.11.0").has_value());
  for (const char* items : {"1e20", "-1.5", "18446744073709551616", "-1"}) {
    std::string h = Header();
    h.replace(h.find("\"items\":2"), 9, std::string("\"items\":") + items);
    EXPECT_FALSE(ParseJournal(h, "j").ok()) << items;
  }
}

TEST(HostileRunRecord, WrongTypesAreErrors) {
  EXPECT_FALSE(ParseRunRecord("[]", "run.json").ok());
  EXPECT_FALSE(ParseRunRecord(R"({"state":1})", "run.json").ok());
  const std::string sha(64, 'a');
  std::string good =
      R"({"run_id":"r","state":"finished","manifest_copy":"data/manifest.json","manifest_sha256":")" + sha +
      R"(","params_sha256":")" + sha + R"(","model_sha256":")" + sha + R"(","plan":{"inputs_root":"/x"}})";
  auto r = ParseRunRecord(good, "run.json");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r.value().inputs_root, "/x");
  std::string escape = good;
  escape.replace(escape.find("data/manifest.json"), 18, "../../etc/passwd");
  EXPECT_FALSE(ParseRunRecord(escape, "run.json").ok());
}

// The effective settings compare and decide read: typed, each optional, a wrong type named.
TEST(HostileRunRecord, SettingsAreTyped) {
  const std::string sha(64, 'a');
  auto record = [&](const std::string& plan, const std::string& extra = "") {
    return R"({"run_id":"r","state":"finished","manifest_copy":"data/manifest.json","manifest_sha256":")" +
           sha + R"(","params_sha256":")" + sha + R"(","model_sha256":")" + sha + R"(","plan":)" + plan +
           extra + "}";
  };
  auto full = ParseRunRecord(
      record(
          R"({"device":"cuda:1","batch_size":8,"threads":2,"seed":7,"max_bytes":4096,)"
          R"("model_contract":{"dtype":"bfloat16","held_dtype":"bfloat16+float32"},"batch_plan":{"sha256":"x","groups":[]}})",
          R"(,"pilot_version":"0.3.0","source_revision":"abc","started_at":"2026-11-29T19:10:36Z",)"
          R"("finished_at":"2026-11-29T19:10:46Z")"),
      "run.json");
  ASSERT_TRUE(full.ok()) << full.error().ToString();
  const RecordedSettings& s = full.value().settings;
  EXPECT_EQ(s.device, "cuda:1");
  EXPECT_EQ(s.dtype, "bfloat16");
  EXPECT_EQ(s.held_dtype, "bfloat16+float32");
  EXPECT_EQ(s.batch_size, 8u);
  EXPECT_EQ(s.threads, 2u);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.max_bytes, 4096u);
  EXPECT_TRUE(s.batch_plan.is_object());
  EXPECT_EQ(full.value().pilot_version, "0.3.0");
  EXPECT_EQ(full.value().source_revision, "abc");
  ASSERT_TRUE(full.value().span.started && full.value().span.finished);
  EXPECT_DOUBLE_EQ(*full.value().span.finished - *full.value().span.started, 10.0);

  // An older record (no settings) leaves each unset; a merged record's null device is unset.
  auto bare = ParseRunRecord(record(R"({"device":null})"), "run.json");
  ASSERT_TRUE(bare.ok()) << bare.error().ToString();
  EXPECT_FALSE(bare.value().settings.device || bare.value().settings.dtype ||
               bare.value().settings.batch_size);
  EXPECT_TRUE(bare.value().settings.batch_plan.is_null());
  EXPECT_FALSE(bare.value().pilot_version);

  for (auto [plan, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"device":3})", "plan.device"},
           {R"({"model_contract":{"dtype":["x"]}})", "plan.model_contract.dtype"},
           {R"({"model_contract":{"held_dtype":1}})", "plan.model_contract.held_dtype"},
           {R"({"batch_size":"8"})", "plan.batch_size"},
           {R"({"threads":-1})", "plan.threads"},
           {R"({"seed":1.5})", "plan.seed"},
           {R"({"max_bytes":null})", "plan.max_bytes"},
           {R"({"batch_plan":"plan.json"})", "plan.batch_plan"},
           {R"({"batch_plan":{"groups":[]}})", "plan.batch_plan"}}) {
    auto bad = ParseRunRecord(record(plan), "run.json");
    ASSERT_FALSE(bad.ok()) << plan;
    EXPECT_NE(bad.error().what.find("'" + key + "'"), std::string::npos) << bad.error().what;
    EXPECT_EQ(bad.error().where, "run.json");
  }
  auto version = ParseRunRecord(record("{}", R"(,"pilot_version":2)"), "run.json");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().what.find("'pilot_version'"), std::string::npos);
}

// --- Bag manifests: only the form pilot writes ----------------------------------------------

TEST(HostileBag, ManifestLinesAreStrict) {
  const std::string sha(64, 'a');
  EXPECT_TRUE(ParseManifestLines(sha + "  data/a\n" + sha + " data/b\n", "m").ok());
  EXPECT_FALSE(ParseManifestLines(sha + "  data/a\n\n", "m").ok()) << "blank line";
  EXPECT_FALSE(ParseManifestLines(sha + "  data/a\r\n", "m").ok()) << "CRLF";
  EXPECT_FALSE(ParseManifestLines(sha + " *data/a\n", "m").ok()) << "binary marker";
  EXPECT_FALSE(ParseManifestLines(sha + "  data/a", "m").ok()) << "no final newline";
}

}  // namespace
}  // namespace pilot
