#include "pilot/precheck.h"

#include <gtest/gtest.h>

#include "pilot/hash.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::FaultyFileSystem;
using testing::TempDir;
using testing::WriteText;

struct PrecheckTest : ::testing::Test {
  TempDir t;
  FaultyFileSystem fs;
  fs::path root() { return t / "in"; }
  ManifestItem Item(const std::string& file, const std::string& pinned_text) {
    return {"id-" + file, file, Sha256Hex(pinned_text), std::nullopt, std::nullopt};
  }
  Precheck Run(const ManifestItem& item, std::uint64_t max_bytes = 1000) {
    fs::create_directories(root());
    return PrecheckItem(fs, root(), item, max_bytes);
  }
};

TEST_F(PrecheckTest, GoodFileYieldsItsText) {
  WriteText(root() / "a.txt", "bonjour");
  Precheck p = Run(Item("a.txt", "bonjour"));
  EXPECT_FALSE(p.rejection.has_value());
  EXPECT_EQ(p.text, "bonjour");
}

TEST_F(PrecheckTest, EachReasonWithDetail) {
  WriteText(root() / "changed.txt", "new text");
  WriteText(root() / "empty.txt", "");
  WriteText(root() / "blank.txt", " \n\t\n");
  WriteText(root() / "bad.bin", "ok\xff");
  fs::create_directories(root() / "adir");
  struct Case {
    ManifestItem item;
    std::string reason;
  } cases[] = {
      {Item("missing.txt", "x"), "missing_file"},
      {Item("changed.txt", "old text"), "input_changed"},
      {Item("empty.txt", ""), "empty_input"},
      {Item("blank.txt", " \n\t\n"), "empty_input"},
      {Item("bad.bin", "ok\xff"), "invalid_encoding"},
      {Item("adir", "x"), "unreadable"},
      {Item("../escape.txt", "x"), "path_outside_root"},
  };
  for (const auto& c : cases) {
    Precheck p = Run(c.item);
    ASSERT_TRUE(p.rejection.has_value()) << c.item.path;
    EXPECT_EQ(p.rejection->reason, c.reason) << c.item.path;
    EXPECT_FALSE(p.rejection->detail.empty());
    EXPECT_EQ(p.rejection->id, c.item.id);
  }
}

TEST_F(PrecheckTest, TooLargeIsJudgedBySizeAndNeverRead) {
  WriteText(root() / "big.txt", std::string(5000, 'a'));
  Precheck p = Run(Item("big.txt", std::string(5000, 'a')), 4096);
  ASSERT_TRUE(p.rejection.has_value());
  EXPECT_EQ(p.rejection->reason, "too_large");
  EXPECT_EQ(fs.reads.count("big.txt"), 0u);
}

TEST_F(PrecheckTest, PathOutsideRootIsNeverOpened) {
  WriteText(t / "outside.txt", "secret");
  fs::create_directories(root());
  fs::create_symlink(t / "outside.txt", root() / "link.txt");
  Precheck p = Run(Item("link.txt", "secret"));
  ASSERT_TRUE(p.rejection.has_value());
  EXPECT_EQ(p.rejection->reason, "path_outside_root");
  EXPECT_TRUE(fs.reads.empty());
}

}  // namespace
}  // namespace pilot
