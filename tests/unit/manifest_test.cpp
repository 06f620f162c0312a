#include "pilot/manifest.h"

#include <gtest/gtest.h>

#include <set>

#include "pilot/hash.h"
#include "pilot/memory_fs.h"

namespace pilot {
namespace {

const std::string kSha(64, 'a');

std::string Item(const std::string& id, const std::string& extra = "") {
  return R"({"id":")" + id + R"(","path":")" + id + R"(.txt","sha256":")" + kSha + "\"" + extra + "}";
}

TEST(Manifest, ParsesItemsInOrderWithOptionalFields) {
  auto m = ParseManifest(R"({"name":"n","items":[)" + Item("b", R"(,"expected":"fr")") + "," +
                             Item("a", R"(,"expected_rejection":"empty_input")") + "]}",
                         false, "m.json");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  ASSERT_EQ(m.value().items.size(), 2u);
  EXPECT_EQ(m.value().name, "n");
  EXPECT_EQ(m.value().items[0].id, "b");
  EXPECT_EQ(*m.value().items[0].expected, "fr");
  EXPECT_EQ(*m.value().items[1].expected_rejection, "empty_input");
}

TEST(ManifestLineScanner, ReadsThePlainFormWithSpacesAndOptionalFields) {
  auto item = ScanManifestLine(" { \"id\" : \"a-1\" ,\t\"path\":\"x/a.txt\", \"sha256\":\"" + kSha +
                               "\", \"expected\":\"fr\" }\r");
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->id, "a-1");
  EXPECT_EQ(item->path, "x/a.txt");
  EXPECT_EQ(item->sha256, kSha);
  EXPECT_EQ(item->expected, std::optional<std::string>("fr"));
  EXPECT_FALSE(item->expected_rejection.has_value());
}

TEST(ManifestLineScanner, DeclinesWhatOnlyTheJsonParserMayJudge) {
  for (const std::string& line : {
           Item("a", R"(,"id":"b")"),                    // a repeated key
           Item("a", R"(,"note":"x")"),                  // an unknown key
           Item("a", R"(,"expected":1)"),                // a number
           Item("a", R"(,"expected":null)"),             // null
           Item(R"(a\u0041)"),                           // an escape
           Item("caf\xc3\xa9"),                          // UTF-8
           Item("a") + " x",                             // trailing bytes
           Item("a") + ",",                              // trailing comma
           std::string(R"({"id":"a","path":"a.txt"})"),  // a required field missing
           std::string("{}"),
           std::string("[]"),
           std::string(""),
       }) {
    EXPECT_FALSE(ScanManifestLine(line).has_value()) << line;
  }
}

TEST(ManifestLineScanner, BothPathsRefuseAnInvalidItemWithTheSameWords) {
  // The same bad sha256, once in the plain form (scanner) and once with an escape (parser).
  auto fast = ParseManifestLine(R"({"id":"d1","path":"a.txt","sha256":"ABC"})", "m.jsonl:3");
  auto slow = ParseManifestLine(R"({"id":"d1","path":"a\u002etxt","sha256":"ABC"})", "m.jsonl:3");
  ASSERT_FALSE(fast.ok());
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(fast.error().ToString(), slow.error().ToString());
  EXPECT_EQ(fast.error().where, "m.jsonl:3 id d1");
  auto empty = ParseManifestLine(Item("d2", R"(,"expected":"")"), "m.jsonl:4");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().what.find("'expected' must be a non-empty string"), std::string::npos);
  auto same = ParseManifestLine(R"({"id":"d1","path":"a\u002etxt","sha256":")" + kSha + "\"}", "m.jsonl:5");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same.value().path, "a.txt");
}

// Text that holds no item reserves nothing for it: megabytes of newlines, or a JSON array of
// zeros, are refused at once (the first as empty, the second at its first item), and ids
// stay unique across the vector's growth.
TEST(Manifest, HostileSizesReserveNothingAndGrowthKeepsTheDuplicateCheck) {
  auto blank = ParseManifest(std::string(64u << 20, '\n'), true, "m.jsonl");
  ASSERT_FALSE(blank.ok());
  EXPECT_NE(blank.error().what.find("no items"), std::string::npos);
  std::string zeros = R"({"items":[0)";
  for (int i = 0; i < 1000000; ++i) zeros += ",0";
  auto z = ParseManifest(zeros + "]}", false, "m.json");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().what.find("JSON object"), std::string::npos);
  std::string lines;
  for (int i = 0; i < 70000; ++i) lines += Item("d" + std::to_string(i)) + "\n";  // beyond 2^16: grows twice
  auto many = ParseManifest(lines, true, "m.jsonl");
  ASSERT_TRUE(many.ok()) << many.error().ToString();
  EXPECT_EQ(many.value().items.size(), 70000u);
  auto dup = ParseManifest(lines + Item("d3") + "\n", true, "m.jsonl");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().what.find("duplicate id 'd3'"), std::string::npos);
  EXPECT_NE(dup.error().where.find("m.jsonl:70001"), std::string::npos);
}

TEST(Manifest, DuplicateIdRefusesTheWholeManifest) {
  auto m = ParseManifest(R"({"items":[)" + Item("x") + "," + Item("x") + "]}", false, "m.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(m.error().what.find("duplicate id 'x'"), std::string::npos);
  EXPECT_NE(m.error().where.find("m.json"), std::string::npos);
}

TEST(Manifest, MissingFieldNamesFieldAndItem) {
  auto m = ParseManifest(R"({"items":[{"id":"doc-1","path":"a.txt"}]})", false, "m.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().what.find("'sha256'"), std::string::npos);
  EXPECT_NE(m.error().where.find("doc-1"), std::string::npos);
}

TEST(Manifest, UnparseableFileIsRefusedNamingTheFile) {
  auto m = ParseManifest(R"({"items":[)", false, "broken.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().where, "broken.json");
  EXPECT_NE(m.error().what.find("not valid JSON"), std::string::npos);
}

TEST(Manifest, RejectsBadIdsShaUnknownFieldsAndReasons) {
  for (const std::string& bad :
       {Item("has space"), Item(std::string(129, 'a')), Item(""), Item("ok", R"(,"expceted":"fr")"),
        Item("ok", R"(,"expected_rejection":"nope")"),
        Item("ok", R"(,"expected":"fr","expected_rejection":"too_large")"),
        std::string(R"({"id":"ok","path":"p","sha256":"ABC"})")}) {
    auto m = ParseManifest(R"({"items":[)" + bad + "]}", false, "m.json");
    EXPECT_FALSE(m.ok()) << bad;
  }
  EXPECT_FALSE(ParseManifest(R"({"items":[]})", false, "m.json").ok());
  EXPECT_FALSE(ParseManifest(R"({"items":[], "extra": 1})", false, "m.json").ok());
}

TEST(Manifest, AnExpectedLabelIsShortPlainText) {
  // A label is compared with the model's and lands in reports: no ESC sequence, line break,
  // bidi override or page of text ever passes for one.
  for (const std::string& extra :
       {std::string(R"(,"expected":"\u001b[2Jen")"), std::string(R"(,"expected":"en\nfr")"),
        std::string(R"(,"expected":"en\u202efr")"), std::string(R"(,"expected":"\u0085")"),
        R"(,"expected":")" + std::string(257, 'x') + "\""}) {
    auto json = ParseManifest(R"({"items":[)" + Item("a", extra) + "]}", false, "m.json");
    ASSERT_FALSE(json.ok()) << extra;
    EXPECT_NE(json.error().where.find("id a"), std::string::npos) << json.error().where;
    EXPECT_NE(json.error().what.find("'expected'"), std::string::npos) << json.error().what;
    auto line = ParseManifestLine(Item("a", extra), "m.jsonl:1");
    ASSERT_FALSE(line.ok()) << extra;
    EXPECT_EQ(line.error().what, json.error().what);
  }
  EXPECT_TRUE(
      ParseManifest(R"({"items":[)" + Item("a", R"(,"expected":"pt-BR <x> | y")") + "]}", false, "m.json")
          .ok());
  EXPECT_TRUE(
      ParseManifest(R"({"items":[)" + Item("a", R"(,"expected":"日本語")") + "]}", false, "m.json").ok());
}

TEST(Manifest, IdRules) {
  EXPECT_TRUE(IsValidItemId("doc-01.v2_final"));
  EXPECT_TRUE(IsValidItemId(std::string(128, 'z')));
  EXPECT_FALSE(IsValidItemId(std::string(129, 'z')));
  EXPECT_FALSE(IsValidItemId("a/b"));
  EXPECT_FALSE(IsValidItemId("é"));
}

TEST(Manifest, JsonLinesWithLineNumbersInErrors) {
  auto ok = ParseManifest(Item("a") + "\n\n" + Item("b") + "\n", true, "big.jsonl");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok.value().items.size(), 2u);
  auto bad = ParseManifest(Item("a") + "\n" + Item("a") + "\n", true, "big.jsonl");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().where.find("big.jsonl:2"), std::string::npos);
}

TEST(Manifest, RoundTripsThroughJson) {
  Manifest m;
  m.name = "x";
  m.items.push_back({"a", "a.txt", kSha, std::string("fr"), std::nullopt});
  auto back = ParseManifest(ManifestToJson(m), false, "m.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().items[0].path, "a.txt");
  EXPECT_EQ(*back.value().items[0].expected, "fr");
}

// `pilot manifest DIR` as a library call, on a file system in memory: what is pinned, how ids
// are made and told apart, where paths start, and each refusal with nothing written.
TEST(ManifestOfFolder, PinsEveryVisibleFileWithIdsFromItsPath) {
  MemoryFileSystem mem;
  mem.AddFile("/w/in/b.txt", "bee");
  mem.AddFile("/w/in/docs/GFDL-1.2", "v12");
  mem.AddFile("/w/in/docs/GFDL-1.3", "v13");
  mem.AddFile("/w/in/two words.md", "tw");
  mem.AddFile("/w/in/.hidden", "h");
  mem.AddFile("/w/in/sub/.git/config", "g");
  mem.AddSpecial("/w/in/fifo");
  mem.AddSymlink("/w/in/link.txt", "/etc/passwd");
  mem.AddFile("/w/in/manifest.json", "old");
  mem.AddFile("/w/in/notes.json", R"({"name": "not", "items": [1, 2]})");
  const auto before = mem.Files();

  auto made = ManifestOfFolder(mem, "/w/in", std::nullopt, "");
  ASSERT_TRUE(made.ok()) << made.error().ToString();
  const Manifest& m = made.value();
  EXPECT_EQ(m.name, "in");
  std::vector<std::string> ids, paths;
  for (const auto& item : m.items) {
    ids.push_back(item.id);
    paths.push_back(item.path);
  }
  // Sorted by path; an id keeps the whole name, dots and version numbers included.
  // A name with a byte replaced ends in 8 hex digits of its path's sha256.
  EXPECT_EQ(ids, (std::vector<std::string>{"b.txt", "docs__GFDL-1.2", "docs__GFDL-1.3", "manifest.json",
                                           "notes.json",
                                           "two_words.md-" + Sha256Hex("two words.md").substr(0, 8)}));
  EXPECT_EQ(paths, (std::vector<std::string>{"b.txt", "docs/GFDL-1.2", "docs/GFDL-1.3", "manifest.json",
                                             "notes.json", "two words.md"}));
  EXPECT_EQ(m.items[0].sha256, Sha256Hex("bee"));
  EXPECT_EQ(mem.Files(), before) << "it writes nothing";

  // Written to the folder itself: the manifest is not its own item, and an existing one stays.
  auto refused =
      ManifestOfFolder(mem, "/w/in", std::optional<std::filesystem::path>("/w/in/manifest.json"), "n");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().what, "refusing to overwrite an existing manifest");
  auto replaced =
      ManifestOfFolder(mem, "/w/in", std::optional<std::filesystem::path>("/w/in/manifest.json"), "n", true);
  ASSERT_TRUE(replaced.ok()) << replaced.error().ToString();
  EXPECT_EQ(replaced.value().name, "n");
  EXPECT_EQ(replaced.value().items.size(), 5u);

  // From above the folder, the paths start with its name.
  auto above = ManifestOfFolder(mem, "/w/in", std::optional<std::filesystem::path>("/w/all.json"), "");
  ASSERT_TRUE(above.ok()) << above.error().ToString();
  EXPECT_EQ(above.value().items[0].path, "in/b.txt");
  EXPECT_EQ(mem.Files(), before);
}

// What pilot wrote is never an input: earlier manifests (JSON or JSONL, however named, however
// large) and the folders pilot wrote are left out, each named; a folder pilot wrote is refused.
TEST(ManifestOfFolder, NeverPinsWhatPilotWrote) {
  MemoryFileSystem mem;
  mem.AddFile("/w/in/a.txt", "a");
  const Manifest earlier{"in", {{"a.txt", "a.txt", Sha256Hex("a"), std::nullopt, std::string("x")}}};
  mem.AddFile("/w/in/manifest.json", ManifestToJson(earlier));
  std::string huge = R"({"name": "big", "items": [)";
  for (int i = 0; i < 5000; ++i) {
    huge += std::string(i ? "," : "") + R"({"id": "i)" + std::to_string(i) +
            R"(", "path": "p", "sha256": ")" + std::string(64, 'a') + R"(", "expected": "en"})";
  }
  huge += "]}";
  ASSERT_GT(huge.size(), 64u * 1024);
  mem.AddFile("/w/in/sub/old-inputs.list", huge);
  mem.AddFile("/w/in/lines.jsonl",
              "{\"id\": \"x\", \"path\": \"x.txt\", \"sha256\": \"00\"}\n{\"id\": \"y\"");
  // Look-alikes are inputs: another key at the top, an item without sha256, an item's extra key.
  mem.AddFile("/w/in/other.json",
              R"({"name": "n", "k": 1, "items": [{"id": "x", "path": "p", "sha256": "s"}]})");
  mem.AddFile("/w/in/partial.json", R"({"items": [{"id": "x", "path": "p"}]})");
  mem.AddFile("/w/in/extra.json", R"({"id": "x", "path": "p", "sha256": "s", "note": "n"})");
  mem.AddFile("/w/in/runs/r1/bag-info.txt", "Bag-Software-Agent: pilot 0.2.0\nPilot-Folder-Kind: run\n");
  mem.AddFile("/w/in/runs/r1/data/results.jsonl", "{}");
  mem.AddFile("/w/in/runs/r1/sub/bag-info.txt", "Pilot-Folder-Kind: shard\n");
  mem.AddFile("/w/in/bags/other/bag-info.txt", "Bag-Software-Agent: bagit.py\n");
  const auto before = mem.Files();
  std::vector<std::string> told;
  auto made = ManifestOfFolder(mem, "/w/in", std::optional<std::filesystem::path>("/w/in/again.json"), "",
                               false, [&](const std::string& why) { told.push_back(why); });
  ASSERT_TRUE(made.ok()) << made.error().ToString();
  std::vector<std::string> ids;
  for (const auto& item : made.value().items) ids.push_back(item.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a.txt", "bags__other__bag-info.txt", "extra.json", "other.json",
                                           "partial.json"}));
  EXPECT_EQ(told, (std::vector<std::string>{"runs/r1: a folder pilot wrote",
                                            "lines.jsonl: a manifest, never an input",
                                            "manifest.json: a manifest, never an input",
                                            "sub/old-inputs.list: a manifest, never an input"}));
  EXPECT_EQ(mem.Files(), before);

  auto run = ManifestOfFolder(mem, "/w/in/runs/r1", std::nullopt, "");
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().what.find("this folder is a folder pilot wrote (/w/in/runs/r1:"), std::string::npos)
      << run.error().what;
  EXPECT_EQ(run.error().where, "/w/in/runs/r1");
  auto inside = ManifestOfFolder(mem, "/w/in/runs/r1/data", std::nullopt, "");
  ASSERT_FALSE(inside.ok());
  EXPECT_NE(inside.error().what.find("this folder is inside a folder pilot wrote (/w/in/runs/r1:"),
            std::string::npos)
      << inside.error().what;
}

// The test for a manifest takes any bytes: deep nesting, truncation, a BOM, look-alikes.
TEST(StartsAsManifest, JudgesTheShapeOfTheFirstItemOnly) {
  EXPECT_TRUE(StartsAsManifest(R"({"name": "n", "items": [{"id": "a", "path": "a", "sha256": "s"}, )"));
  EXPECT_TRUE(StartsAsManifest("\xEF\xBB\xBF {\"items\": [{\"sha256\": 1, \"path\": 2, \"id\": 3}]}"));
  EXPECT_TRUE(StartsAsManifest(R"({"id": "a", "path": "a", "sha256": "s", "expected": "en"})"));
  EXPECT_FALSE(StartsAsManifest(R"({"name": "n", "items": [{"id": "a", "path": "a", "sha)"));  // cut short
  EXPECT_FALSE(
      StartsAsManifest(R"({"name": "n", "items": [{"id": "a", "path": "a", "sha256": "s", "x": 1}]})"));
  EXPECT_FALSE(StartsAsManifest(R"({"items": {"id": "a", "path": "a", "sha256": "s"}})"));
  EXPECT_FALSE(StartsAsManifest(R"([{"id": "a", "path": "a", "sha256": "s"}])"));
  EXPECT_FALSE(StartsAsManifest(R"({"meta": {"id": "a", "path": "a", "sha256": "s"}})"));
  EXPECT_FALSE(StartsAsManifest(""));
  EXPECT_FALSE(StartsAsManifest("{\"items\": " + std::string(200000, '[')));
  EXPECT_FALSE(StartsAsManifest("{\"name\": " + std::string(200000, '{')));
  EXPECT_FALSE(StartsAsManifest(std::string("{\0\"items\"", 10)));
}

// Two paths that give one id ('/' written "__" against a real "__") are refused, both named;
// nothing is renamed into a look-alike.
TEST(ManifestOfFolder, RefusesTwoFilesWithOneIdNamingBoth) {
  MemoryFileSystem mem;
  mem.AddFile("/w/in/x/y", "1");
  mem.AddFile("/w/in/x__y", "2");
  auto made = ManifestOfFolder(mem, "/w/in", std::nullopt, "");
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().what, "two files would have the id 'x__y': 'x/y' and 'x__y'");
  EXPECT_EQ(made.error().where, "/w/in");

  // Names whose bytes were replaced stay apart: each ends in its own path's hash.
  MemoryFileSystem accents;
  for (const char* name : {"\xC3\xA9.txt", "\xC3\xBC.txt", "a b.txt", "a_b.txt"})
    accents.AddFile(std::string("/w/in/") + name, name);
  auto apart = ManifestOfFolder(accents, "/w/in", std::nullopt, "");
  ASSERT_TRUE(apart.ok()) << apart.error().ToString();
  std::set<std::string> ids;
  for (const auto& item : apart.value().items) ids.insert(item.id);
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_TRUE(ids.count("a_b.txt"));
  EXPECT_TRUE(ids.count("a_b.txt-" + Sha256Hex("a b.txt").substr(0, 8)));
  EXPECT_TRUE(ids.count("__.txt-" + Sha256Hex("\xC3\xA9.txt").substr(0, 8)));

  // A path too long for an id: its first 111 characters, '-' and 16 hex digits of its sha256.
  MemoryFileSystem deep;
  const std::string name = std::string(80, 'd') + "/" + std::string(80, 'f') + ".txt";
  deep.AddFile("/w/in/" + name, "1");
  auto long_id = ManifestOfFolder(deep, "/w/in", std::nullopt, "");
  ASSERT_TRUE(long_id.ok()) << long_id.error().ToString();
  const std::string& id = long_id.value().items[0].id;
  EXPECT_EQ(id.size(), 128u);
  EXPECT_EQ(id, std::string(80, 'd') + "__" + std::string(29, 'f') + "-" + Sha256Hex(name).substr(0, 16));
}

TEST(ManifestOfFolder, RefusesWhatCannotBePinnedNamingIt) {
  MemoryFileSystem mem;
  mem.AddFile("/w/in/ok.txt", "x");
  mem.AddFolder("/w/in/sub");
  auto below = ManifestOfFolder(mem, "/w/in", std::optional<std::filesystem::path>("/w/in/sub/m.json"), "");
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().what, "the manifest must sit in the inputs' folder or above it");
  EXPECT_EQ(below.error().where, "/w/in/sub/m.json");

  mem.AddFile(std::string("/w/in/bad\xff.txt"), "y");
  auto latin = ManifestOfFolder(mem, "/w/in", std::nullopt, "");
  ASSERT_FALSE(latin.ok());
  EXPECT_NE(latin.error().what.find("not valid UTF-8"), std::string::npos) << latin.error().what;
  EXPECT_EQ(latin.error().where, "/w/in/bad\\xff.txt");

  MemoryFileSystem ctl;
  ctl.AddFile("/w/in/line\nbreak.txt", "z");
  auto control = ManifestOfFolder(ctl, "/w/in", std::nullopt, "");
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.error().what.find("control character"), std::string::npos);

  MemoryFileSystem empty;
  empty.AddFile("/w/in/.only-hidden", "h");
  auto none = ManifestOfFolder(empty, "/w/in", std::nullopt, "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().what, "no input files found");
  EXPECT_EQ(none.error().where, "/w/in");
}

}  // namespace
}  // namespace pilot
