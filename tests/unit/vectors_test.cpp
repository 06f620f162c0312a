// The vectors' storage (vectors.h): float16 conversion, the stored bytes and their digest,
// the .npy header of both dtypes.
#include "pilot/vectors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "pilot/hash.h"

namespace pilot {
namespace {

float Bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Float16, KnownValuesRoundToNearestEven) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                      // the largest finite float16
  EXPECT_EQ(FloatToHalf(65519.99f), 0x7bff);                     // below the halfway point: stays
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                      // the halfway point rounds to even: infinity
  EXPECT_EQ(FloatToHalf(1e9f), 0x7c00);                          // beyond: infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);         // the smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // half of it: a tie, to even (0)
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 of it: a tie, to even (2)
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie between 1 and 1+2^-10: to even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // a tie between odd and even: to even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -12) * 3), 0x3c01);  // above the tie: up
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(FloatToHalf(std::nanf("")) & 0x03ff, 0);
}

// Every float16 that is a number survives the way back and forth, bit for bit.
TEST(Float16, EveryHalfRoundTripsExactly) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<std::uint16_t>(h));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(FloatToHalf(f), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0xfc00)) && HalfToFloat(0xfc00) < 0);
}

// Against the compiler's own conversion (IEEE round to nearest even) over random floats of
// every exponent, where the compiler has _Float16.
TEST(Float16, AgreesWithTheCompilersConversion) {
#if defined(__FLT16_MAX__)
  std::mt19937 rng(7);
  for (int k = 0; k < 2000000; ++k) {
    const float f = Bits(rng());
    if (std::isnan(f)) continue;
    const _Float16 want = static_cast<_Float16>(f);
    std::uint16_t bits;
    std::memcpy(&bits, &want, 2);
    ASSERT_EQ(FloatToHalf(f), bits) << f;
  }
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

TEST(Float16, FitsHalfIsFiniteAfterStorage) {
  EXPECT_TRUE(FitsHalf(65504.0f));
  EXPECT_TRUE(FitsHalf(-65519.0f));
  EXPECT_FALSE(FitsHalf(65520.0f));
  EXPECT_FALSE(FitsHalf(-1e6f));
  EXPECT_FALSE(FitsHalf(std::nanf("")));
  EXPECT_TRUE(FitsHalf(1e-30f));  // underflows to zero: finite
}

TEST(StoredVector, BytesDigestAndTheWayBack) {
  const std::vector<float> v = {1.0f, -0.5f, 3.14159f, 1e-8f};
  const std::string f4 = StoredVector(v.data(), v.size(), VectorDtype::kFloat32);
  ASSERT_EQ(f4.size(), 16u);
  EXPECT_EQ(std::memcmp(f4.data(), v.data(), 16), 0);
  EXPECT_EQ(StoredToFloats(f4, VectorDtype::kFloat32), v);
  const std::string f2 = StoredVector(v.data(), v.size(), VectorDtype::kFloat16);
  ASSERT_EQ(f2.size(), 8u);
  EXPECT_EQ(StoredFromRaw(f4, VectorDtype::kFloat16), f2);
  EXPECT_EQ(StoredFromRaw(f4, VectorDtype::kFloat32), f4);
  std::uint16_t first;
  std::memcpy(&first, f2.data(), 2);
  EXPECT_EQ(first, 0x3c00);
  const std::vector<float> back = StoredToFloats(f2, VectorDtype::kFloat16);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -0.5f);
  EXPECT_NEAR(back[2], 3.14159f, 2e-3);
  EXPECT_EQ(VectorDigest(f2), Sha256Hex(f2));
  EXPECT_NE(VectorDigest(f2), VectorDigest(f4));
}

TEST(NpyHeader, BothDtypesRoundTripAndOthersAreRefused) {
  for (VectorDtype dtype : {VectorDtype::kFloat32, VectorDtype::kFloat16}) {
    const std::string h = NpyHeader(5, 768, dtype);
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_NE(h.find(std::string(NpyDescr(dtype))), std::string::npos);
    auto s = ParseNpyHeader(h, "x");
    ASSERT_TRUE(s.ok()) << s.error().what;
    EXPECT_EQ(s.value().dtype, dtype);
    EXPECT_EQ(s.value().rows, 5u);
    EXPECT_EQ(s.value().cols, 768u);
    EXPECT_EQ(s.value().row_bytes(), 768u * DtypeBytes(dtype));
  }
  std::string f8 = NpyHeader(1, 2);
  f8.replace(f8.find("<f4"), 3, "<f8");
  auto refused = ParseNpyHeader(f8, "data/vectors.npy");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("'<f8'"), std::string::npos) << refused.error().what;
  std::string big_endian = NpyHeader(1, 2, VectorDtype::kFloat16);
  big_endian.replace(big_endian.find("<f2"), 3, ">f2");
  EXPECT_FALSE(ParseNpyHeader(big_endian, "x").ok());
  EXPECT_EQ(ParseVectorDtype("float16"), VectorDtype::kFloat16);
  EXPECT_EQ(ParseVectorDtype("float32"), VectorDtype::kFloat32);
  EXPECT_FALSE(ParseVectorDtype("bfloat16"));
  EXPECT_FALSE(ParseVectorDtype(""));
}

}  // namespace
}  // namespace pilot
