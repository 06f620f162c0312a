#include <gtest/gtest.h>

#include "pilot/paths.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteText;

TEST(Paths, InsideIsAllowed) {
  TempDir t;
  WriteText(t / "root/sub/a.txt", "x");
  auto p = ConfinePath(RealFileSystem(), t / "root", "sub/a.txt");
  EXPECT_TRUE(p.inside) << p.why;
  EXPECT_EQ(p.resolved, fs::canonical(t / "root/sub/a.txt"));
  EXPECT_FALSE(ConfinePath(RealFileSystem(), t / "root", "./sub/../sub/a.txt").inside);  // any ".." is refused
  EXPECT_TRUE(ConfinePath(RealFileSystem(), t / "root", "missing.txt").inside);                 // missing is not an escape
}

TEST(Paths, AbsoluteAndDotDotAreRefused) {
  TempDir t;
  fs::create_directories(t / "root");
  EXPECT_FALSE(ConfinePath(RealFileSystem(), t / "root", "/etc/passwd").inside);
  auto up = ConfinePath(RealFileSystem(), t / "root", "../secret.txt");
  EXPECT_FALSE(up.inside);
  EXPECT_NE(up.why.find(".."), std::string::npos);
  EXPECT_FALSE(ConfinePath(RealFileSystem(), t / "root", "").inside);
}

TEST(Paths, SymlinkLeadingOutIsRefusedAndInsideIsAllowed) {
  TempDir t;
  WriteText(t / "outside.txt", "secret");
  WriteText(t / "root/real.txt", "ok");
  fs::create_directory_symlink(t.path(), t / "root/up");
  fs::create_symlink(t / "outside.txt", t / "root/link.txt");
  fs::create_symlink(t / "root/real.txt", t / "root/good.txt");
  EXPECT_FALSE(ConfinePath(RealFileSystem(), t / "root", "link.txt").inside);
  EXPECT_FALSE(ConfinePath(RealFileSystem(), t / "root", "up/outside.txt").inside);
  EXPECT_TRUE(ConfinePath(RealFileSystem(), t / "root", "good.txt").inside);
}

}  // namespace
}  // namespace pilot
