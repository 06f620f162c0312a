#include <gtest/gtest.h>

#include "pilot/manifest.h"

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
  for (const std::string& bad : {Item("has space"), Item(std::string(129, 'a')), Item(""),
                                 Item("ok", R"(,"expceted":"fr")"), Item("ok", R"(,"expected_rejection":"nope")"),
                                 Item("ok", R"(,"expected":"fr","expected_rejection":"too_large")"),
                                 std::string(R"({"id":"ok","path":"p","sha256":"ABC"})")}) {
    auto m = ParseManifest(R"({"items":[)" + bad + "]}", false, "m.json");
    EXPECT_FALSE(m.ok()) << bad;
  }
  EXPECT_FALSE(ParseManifest(R"({"items":[]})", false, "m.json").ok());
  EXPECT_FALSE(ParseManifest(R"({"items":[], "extra": 1})", false, "m.json").ok());
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

}  // namespace
}  // namespace pilot
