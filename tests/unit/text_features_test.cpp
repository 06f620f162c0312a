#include "pilot/text_features.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

TEST(TextFeatures, NormalisesCaseAndSeparators) {
  EXPECT_EQ(NormaliseForNgrams("Hello, WORLD!! 42", 100), U" hello world ");
  EXPECT_EQ(NormaliseForNgrams("Ärger ПРИВЕТ", 100), U" ärger привет ");
  EXPECT_EQ(NormaliseForNgrams("", 100), U" ");
  EXPECT_EQ(NormaliseForNgrams("abcdef", 3), U" abc ");
}

TEST(TextFeatures, IdsAreInRangeDeterministicAndCountable) {
  NgramContract c{1, 3, 1000, 100};
  std::vector<std::int64_t> a, b;
  std::size_t n = AppendNgramIds("abc", c, a);
  AppendNgramIds("abc", c, b);
  // " abc " -> 3 unigrams (spaces skipped) + 4 bigrams + 3 trigrams
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(a, b);
  for (auto id : a) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 1000);
  }
  std::vector<std::int64_t> empty;
  EXPECT_EQ(AppendNgramIds("!!!", c, empty), 1u);
}

TEST(TextFeatures, DifferentTextsGiveDifferentFeatures) {
  NgramContract c;
  std::vector<std::int64_t> a, b;
  AppendNgramIds("bonjour", c, a);
  AppendNgramIds("guten tag", c, b);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace pilot
