#include "pilot/id_index.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

namespace pilot {
namespace {

TEST(IdIndex, KeepsInsertionOrderValuesAndRefusesARepeat) {
  IdIndex ids;
  EXPECT_EQ(ids.Find("a"), IdIndex::npos) << "an empty index finds nothing";
  EXPECT_TRUE(ids.Insert("a", 10));
  EXPECT_TRUE(ids.Insert("ab", 20));
  EXPECT_TRUE(ids.Insert("", 30)) << "the index holds any bytes; validation is the caller's";
  EXPECT_FALSE(ids.Insert("ab", 99));
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.Id(0), "a");
  EXPECT_EQ(ids.Id(1), "ab");
  EXPECT_EQ(ids.Id(2), "");
  EXPECT_EQ(ids.Value(ids.Find("ab")), 20u) << "a refused repeat changes nothing";
  EXPECT_EQ(ids.Find("b"), IdIndex::npos);
  EXPECT_EQ(ids.Find("ab", 1), 1u);
  EXPECT_EQ(ids.Find("ab", 0), 1u) << "a wrong hint falls back to the lookup";
  EXPECT_EQ(ids.Find("ab", 77), 1u) << "a hint past the end too";
}

TEST(IdIndex, AgreesWithAMapThroughEveryGrowth) {
  IdIndex ids;
  std::unordered_map<std::string, std::uint64_t> want;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    std::string id = "item-" + std::to_string(i * 7919 % 200003);
    ASSERT_EQ(ids.Insert(id, i), want.emplace(id, i).second) << id;
  }
  ASSERT_EQ(ids.size(), want.size());
  for (const auto& [id, value] : want) {
    std::size_t at = ids.Find(id);
    ASSERT_NE(at, IdIndex::npos) << id;
    EXPECT_EQ(ids.Id(at), id);
    EXPECT_EQ(ids.Value(at), value);
  }
  EXPECT_EQ(ids.Find("item-200003"), IdIndex::npos);
  IdIndex reserved;
  reserved.Reserve(1000);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(reserved.Insert(std::to_string(i)));
  EXPECT_EQ(reserved.Find("999"), 999u);
}

}  // namespace
}  // namespace pilot
