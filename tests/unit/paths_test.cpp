#include "pilot/paths.h"

#include <gtest/gtest.h>

#include "pilot/destination.h"
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
  EXPECT_FALSE(
      ConfinePath(RealFileSystem(), t / "root", "./sub/../sub/a.txt").inside);   // any ".." is refused
  EXPECT_TRUE(ConfinePath(RealFileSystem(), t / "root", "missing.txt").inside);  // missing is not an escape
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

// --- paths given on the command line (docs/security.md, "Paths you give") -------------------

TEST(GivenPaths, AFolderArgumentIsResolvedOnceTheLastNameToo) {
  TempDir t;
  fs::create_directories(t / "real/run");
  fs::create_directory_symlink(t / "real/run", t / "link");
  auto got = ResolveGivenFolder(RealFileSystem(), t / "link", "a run folder");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got.value(), fs::canonical(t / "real/run"));
  WriteText(t / "file", "x");
  auto file = ResolveGivenFolder(RealFileSystem(), t / "file", "a run folder");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().what, "not a folder");
  auto missing = ResolveGivenFolder(RealFileSystem(), t / "nope", "a run folder");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().what, "no such folder");
  fs::create_symlink("loop", t / "loop");
  auto loop = ResolveGivenFolder(RealFileSystem(), t / "loop", "a run folder");
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().where.find("loop"), std::string::npos);
}

TEST(GivenPaths, ADestinationUnderASymlinkedParentIsResolvedOnce) {
  TempDir t;
  fs::create_directories(t / "elsewhere");
  fs::create_directory_symlink(t / "elsewhere", t / "parent");
  auto got = ResolveDestination(RealFileSystem(), t / "parent/copy", "DEST", Destination::kNew);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got.value(), fs::canonical(t / "elsewhere") / "copy");
  // The last name of a new destination is kept as written: an existing link there is the
  // caller's to refuse, never followed.
  fs::create_directory_symlink(t / "elsewhere", t / "taken");
  auto taken = ResolveDestination(RealFileSystem(), t / "taken", "DEST", Destination::kNew);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken.value(), fs::canonical(t.path()) / "taken");
  // A receiving folder (--runs-dir) is resolved whole.
  auto runs = ResolveDestination(RealFileSystem(), t / "parent", "--runs-dir", Destination::kFolder);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs.value(), fs::canonical(t / "elsewhere"));
}

TEST(GivenPaths, ADotDotInADestinationIsResolvedByTheFileSystem) {
  // "link/.." is the folder above where the link points (cd -P), not the folder holding the
  // link: the path is never collapsed by hand, as it is for a folder given to read.
  TempDir t;
  fs::create_directories(t / "far/inner");
  fs::create_directory_symlink(t / "far/inner", t / "link");
  auto d = ResolveDestination(RealFileSystem(), t / "link/../copy", "DEST", Destination::kNew);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_EQ(d.value(), fs::canonical(t / "far") / "copy");
  auto runs = ResolveDestination(RealFileSystem(), t / "link/../runs", "--runs-dir", Destination::kFolder);
  ASSERT_TRUE(runs.ok()) << runs.error().ToString();
  EXPECT_EQ(runs.value(), fs::canonical(t / "far") / "runs");
  auto given = ResolveGivenFolder(RealFileSystem(), t / "link/..", "a folder");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given.value(), fs::canonical(t / "far"));
  // A new name must name one: "x/.." and "x/." do not.
  for (const char* bad : {"link/..", "link/.", "link/../"}) {
    auto refused = ResolveDestination(RealFileSystem(), t / bad, "DEST", Destination::kNew);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().what.find("does not name a new folder"), std::string::npos)
        << refused.error().what;
  }
  EXPECT_FALSE(ResolveDestination(RealFileSystem(), "/", "--runs-dir", Destination::kFolder).ok());
}

TEST(GivenPaths, ADestinationInsideAPilotFolderIsRefusedNamingIt) {
  TempDir t;
  WriteText(t / "bag/bagit.txt", "BagIt-Version: 1.0\n");
  fs::create_directories(t / "bag/data");
  WriteText(t / "busy/.lock", "123\n");
  WriteText(t / "sweep/data/cells.jsonl", "");
  WriteText(t / "out.partial.lock", "");
  fs::create_directories(t / "out.partial");
  fs::create_directory_symlink(t / "bag/data", t / "sneaky");
  struct Case {
    fs::path path;
    Destination kind;
    const char* says;
  } cases[] = {
      {t / "bag/data", Destination::kFolder, "inside the pilot folder"},
      {t / "bag", Destination::kFolder, "is the pilot folder"},
      {t / "bag/data/m", Destination::kNew, "inside the pilot folder"},
      {t / "bag/copy", Destination::kNew, "inside the pilot folder"},
      {t / "busy/x", Destination::kNew, ".lock"},
      {t / "sweep/data/sw", Destination::kNew, "cells.jsonl"},
      {t / "out.partial/x", Destination::kNew, "still writing"},
      {t / "sneaky/m", Destination::kNew, "inside the pilot folder"},  // a link into a bag is resolved first
  };
  for (const Case& c : cases) {
    auto got = ResolveDestination(RealFileSystem(), c.path, "--out", c.kind);
    ASSERT_FALSE(got.ok()) << c.path;
    EXPECT_NE(got.error().what.find(c.says), std::string::npos) << c.path << ": " << got.error().what;
    EXPECT_EQ(got.error().where, "--out");
  }
  EXPECT_TRUE(ResolveDestination(RealFileSystem(), t / "fine/new", "--out", Destination::kNew).ok());
  EXPECT_FALSE(fs::exists(t / "fine"));  // resolving creates nothing
}

TEST(GivenPaths, EmptyRootTooLongAndLoopsAreRefused) {
  TempDir t;
  auto empty = ResolveDestination(RealFileSystem(), "", "--runs-dir", Destination::kFolder);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().where, "--runs-dir");
  EXPECT_FALSE(ResolveDestination(RealFileSystem(), "/", "DEST", Destination::kNew).ok());
  auto long_name =
      ResolveDestination(RealFileSystem(), t / std::string(300, 'a'), "--runs-dir", Destination::kFolder);
  ASSERT_FALSE(long_name.ok());
  EXPECT_NE(long_name.error().what.find("300 bytes"), std::string::npos);
  fs::path deep = t.path();
  for (int i = 0; i < 40; ++i) deep /= std::string(100, 'd');
  auto too_long = ResolveDestination(RealFileSystem(), deep, "--runs-dir", Destination::kFolder);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().what.find("at most 3800"), std::string::npos);
  fs::create_symlink("loop", t / "loop");
  auto loop = ResolveDestination(RealFileSystem(), t / "loop/runs", "--runs-dir", Destination::kFolder);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().what.find("loop"), std::string::npos);
  WriteText(t / "afile", "x");
  auto file = ResolveDestination(RealFileSystem(), t / "afile", "--runs-dir", Destination::kFolder);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().what, "is not a folder");
}

}  // namespace
}  // namespace pilot
