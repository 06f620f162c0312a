// Token choice (pilot/sampling.h): Philox4x32-10 against the published known answers, a draw
// keyed by seed, item id and step alone, greedy as torch.argmax, top-k and top-p cuts, the
// draw's distribution, and near-ties flagged where rounding could flip a step.
#include "pilot/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace pilot {
namespace {

TEST(Philox, MatchesTheKnownAnswersOfRandom123) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(SamplingDraw, DependsOnSeedItemAndStepAlone) {
  const SamplingKey a = SamplingKeyFor(7, "doc-1");
  EXPECT_EQ(SamplingKeyFor(7, "doc-1").item, a.item) << "a pure function of the id";
  EXPECT_NE(SamplingKeyFor(7, "doc-2").item, a.item);
  const double u = SamplingUniform(a, 3);
  EXPECT_EQ(SamplingUniform(a, 3), u);
  EXPECT_NE(SamplingUniform(a, 4), u);
  EXPECT_NE(SamplingUniform(SamplingKeyFor(8, "doc-1"), 3), u);
  EXPECT_NE(SamplingUniform(SamplingKeyFor(7, "doc-2"), 3), u);
  // Uniform on [0, 1): 20,000 draws in 10 bins, each within 5 standard deviations of 2,000.
  std::vector<int> bins(10, 0);
  for (std::uint64_t step = 0; step < 20000; ++step) {
    const double v = SamplingUniform(a, step);
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    ++bins[static_cast<std::size_t>(v * 10)];
  }
  for (int n : bins) EXPECT_NEAR(n, 2000, 5 * std::sqrt(2000 * 0.9));
}

GenerationSettings Sampling(double temperature, std::uint64_t top_k = 0, double top_p = 1) {
  GenerationSettings g;
  g.max_new_tokens = 8;
  g.temperature = temperature;
  g.top_k = top_k;
  g.top_p = top_p;
  return g;
}

TEST(ChooseToken, GreedyTakesTheFirstLargestAndRefusesNonFiniteRows) {
  std::vector<std::size_t> scratch(8);
  const GenerationSettings greedy = Sampling(0);
  const SamplingKey key = SamplingKeyFor(1, "x");
  const std::vector<float> row{0.5f, 2.0f, 2.0f, -1.0f};
  TokenChoice c = ChooseToken(row.data(), row.size(), greedy, key, 0, scratch.data());
  EXPECT_EQ(c.id, 1) << "ties go to the lower id, as torch.argmax";
  EXPECT_TRUE(c.near_tie) << "the two largest are equal";
  const std::vector<float> clear{0.5f, 2.0f, 1.0f};
  c = ChooseToken(clear.data(), clear.size(), greedy, key, 0, scratch.data());
  EXPECT_EQ(c.id, 1);
  EXPECT_FALSE(c.near_tie);
  const std::vector<float> close{0.5f, 2.0f, 2.0f - 5e-5f};
  EXPECT_TRUE(ChooseToken(close.data(), close.size(), greedy, key, 0, scratch.data()).near_tie);
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::vector<float>& bad : {std::vector<float>{0, std::nanf(""), 1}, std::vector<float>{0, inf},
                                        std::vector<float>{-inf, -inf}}) {
    EXPECT_EQ(ChooseToken(bad.data(), bad.size(), greedy, key, 0, scratch.data()).id, -1);
    EXPECT_EQ(ChooseToken(bad.data(), bad.size(), Sampling(1), key, 0, scratch.data()).id, -1);
  }
  const std::vector<float> masked{-inf, 3.0f, -inf};
  EXPECT_EQ(ChooseToken(masked.data(), masked.size(), greedy, key, 0, scratch.data()).id, 1);
  EXPECT_EQ(ChooseToken(masked.data(), masked.size(), Sampling(1), key, 0, scratch.data()).id, 1)
      << "-inf is never drawn";
}

// How often each token is drawn over `draws` steps of one key.
std::map<std::int64_t, int> Counts(const std::vector<float>& row, const GenerationSettings& g, int draws) {
  std::vector<std::size_t> scratch(row.size());
  const SamplingKey key = SamplingKeyFor(42, "item");
  std::map<std::int64_t, int> n;
  for (int s = 0; s < draws; ++s) {
    ++n[ChooseToken(row.data(), row.size(), g, key, static_cast<std::uint64_t>(s), scratch.data()).id];
  }
  return n;
}

TEST(ChooseToken, SamplesTheSoftmaxOfLogitsOverTemperature) {
  // Logits log(1), log(2), log(3), log(4): probabilities 0.1, 0.2, 0.3, 0.4 at temperature 1.
  const std::vector<float> row{0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const int draws = 40000;
  auto n = Counts(row, Sampling(1), draws);
  for (int id = 0; id < 4; ++id) {
    const double p = 0.1 * (id + 1);
    EXPECT_NEAR(n[id], p * draws, 5 * std::sqrt(draws * p * (1 - p))) << "token " << id;
  }
  // Temperature 0.5 squares the odds: 1, 4, 9, 16 over 30.
  n = Counts(row, Sampling(0.5), draws);
  for (int id = 0; id < 4; ++id) {
    const double p = (id + 1.0) * (id + 1.0) / 30.0;
    EXPECT_NEAR(n[id], p * draws, 5 * std::sqrt(draws * p * (1 - p))) << "token " << id;
  }
}

TEST(ChooseToken, TopKAndTopPCutTheCandidates) {
  const std::vector<float> row{0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  auto k2 = Counts(row, Sampling(1, 2), 20000);
  EXPECT_EQ(k2.count(0) + k2.count(1), 0u) << "only the two largest";
  EXPECT_NEAR(k2[3], 20000 * 4.0 / 7.0, 5 * std::sqrt(20000 * (4.0 / 7) * (3.0 / 7)));
  // top_p 0.5: 0.4 is short of it, 0.4 + 0.3 reaches it; tokens 3 and 2 stay.
  auto p5 = Counts(row, Sampling(1, 0, 0.5), 20000);
  EXPECT_EQ(p5.count(0) + p5.count(1), 0u);
  EXPECT_GT(p5[2], 0);
  // top_p 0.35 is reached by the largest alone.
  auto p4 = Counts(row, Sampling(1, 0, 0.35), 1000);
  EXPECT_EQ(p4[3], 1000);
  auto k1 = Counts(row, Sampling(3, 1), 1000);
  EXPECT_EQ(k1[3], 1000) << "top_k 1 is greedy";
}

TEST(ChooseToken, ASampledStepCloseToAnEdgeIsANearTie) {
  // Two equal logits: the draw u picks token 0 below 0.5, token 1 from it; a near-tie within
  // 1e-4 of 0.5, and nowhere else.
  const std::vector<float> row{1.0f, 1.0f};
  std::vector<std::size_t> scratch(2);
  const SamplingKey key = SamplingKeyFor(9, "edge");
  int ties = 0, checked = 0;
  for (std::uint64_t s = 0; s < 200000; ++s) {
    const double u = SamplingUniform(key, s);
    const TokenChoice c = ChooseToken(row.data(), row.size(), Sampling(1), key, s, scratch.data());
    ASSERT_EQ(c.id, u < 0.5 ? 0 : 1);
    ASSERT_EQ(c.near_tie, std::fabs(u - 0.5) < kNearTieMargin) << u;
    ties += c.near_tie ? 1 : 0;
    ++checked;
  }
  EXPECT_GT(ties, 0) << "2e-4 of 200,000 draws, about 40";
  EXPECT_LT(ties, 100);
}

TEST(ChooseToken, TheDrawWalksTokenIdsSoNearlyEqualLogitsSortingEitherWayChangeNothing) {
  // Two logits 1e-7 apart, swapped: sorted by value their order flips, by id it does not. The
  // others distinct, so that the top_p cut is no near-tie.
  std::vector<float> a{0.0f, -1.0f, 0.0f, -2.0f, -3.0f, 0.0f, -4.0f, -5.0f}, b = a;
  a[5] = 2.0000001f;
  a[2] = 2.0f;
  b[5] = 2.0f;
  b[2] = 2.0000001f;
  std::vector<std::size_t> scratch(8);
  const SamplingKey key = SamplingKeyFor(4, "swap");
  int differ = 0, untied = 0;
  for (std::uint64_t s = 0; s < 2000; ++s) {
    const TokenChoice x = ChooseToken(a.data(), a.size(), Sampling(1, 0, 0.95), key, s, scratch.data());
    const TokenChoice y = ChooseToken(b.data(), b.size(), Sampling(1, 0, 0.95), key, s, scratch.data());
    if (x.id != y.id) {
      ++differ;
      EXPECT_TRUE(x.near_tie || y.near_tie) << "a flip only at a near-tie, step " << s;
    }
    untied += (x.near_tie || y.near_tie) ? 0 : 1;
  }
  EXPECT_GT(untied, 1900);
  EXPECT_LE(differ, 2000 - untied);
}

TEST(ChooseToken, ACutThatRoundingCouldMoveIsANearTie) {
  std::vector<std::size_t> scratch(4);
  const SamplingKey key = SamplingKeyFor(1, "cut");
  const std::vector<float> close{2.0f, 2.00005f, -3.0f, -3.0f};
  EXPECT_TRUE(ChooseToken(close.data(), close.size(), Sampling(1, 1), key, 0, scratch.data()).near_tie)
      << "top_k 1 between two logits 5e-5 apart";
  const std::vector<float> apart{2.0f, 3.0f, -3.0f, -3.0f};
  EXPECT_FALSE(ChooseToken(apart.data(), apart.size(), Sampling(1, 1), key, 0, scratch.data()).near_tie);
  // top_p exactly at a boundary of the mass: 0.5 of two equal weights.
  const std::vector<float> even{1.0f, 1.0f};
  EXPECT_TRUE(ChooseToken(even.data(), even.size(), Sampling(1, 0, 0.5), key, 0, scratch.data()).near_tie);
}

TEST(ChooseToken, ATinyTemperatureIsGreedyNotNaN) {
  std::vector<std::size_t> scratch(4);
  const std::vector<float> row{0.5f, 2.0f, 1.0f, -1.0f};
  for (double t : {1e-300, 1e-12, 1e-6}) {
    for (std::uint64_t s = 0; s < 50; ++s) {
      EXPECT_EQ(
          ChooseToken(row.data(), row.size(), Sampling(t), SamplingKeyFor(2, "t"), s, scratch.data()).id, 1)
          << t;
    }
  }
}

}  // namespace
}  // namespace pilot
