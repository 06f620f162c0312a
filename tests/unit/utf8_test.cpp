#include "pilot/utf8.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

TEST(Utf8, AcceptsValidText) {
  EXPECT_TRUE(CheckUtf8("").valid);
  EXPECT_TRUE(CheckUtf8("plain ascii").valid);
  EXPECT_TRUE(CheckUtf8("déjà vu — 日本語 — 𝄞").valid);
}

TEST(Utf8, ReportsTheFirstBadByteAndItsOffset) {
  auto c = CheckUtf8("Customer: M\xfcller");
  EXPECT_FALSE(c.valid);
  EXPECT_EQ(c.offset, 11u);
  EXPECT_NE(c.detail.find("0xfc at offset 11"), std::string::npos);
}

TEST(Utf8, RejectsOverlongsSurrogatesTruncationAndOutOfRange) {
  EXPECT_FALSE(CheckUtf8("\xc0\xaf").valid);          // overlong '/'
  EXPECT_FALSE(CheckUtf8("\xe0\x80\xaf").valid);      // overlong
  EXPECT_FALSE(CheckUtf8("\xed\xa0\x80").valid);      // surrogate D800
  EXPECT_FALSE(CheckUtf8("abc\xe6\x97").valid);       // truncated
  EXPECT_FALSE(CheckUtf8("\xf4\x90\x80\x80").valid);  // > U+10FFFF
  EXPECT_FALSE(CheckUtf8("\xff").valid);
}

}  // namespace
}  // namespace pilot
