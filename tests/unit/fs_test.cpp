// The real file system's refusals that only a real file system can show: hard links (a write
// never reaches the other name), opening beneath a root (a link leading out is never
// followed, one inside is), and the replacing rename a staged change is applied with.
#include "pilot/fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "pilot/run_lock.h"
#include "test_support.h"

namespace pilot {
namespace {

namespace fs = std::filesystem;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

nlink_t Links(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_nlink : 0;
}

TEST(HardLinks, AnAppendNeverReachesTheOtherName) {
  TempDir t;
  WriteText(t / "run/data/journal.jsonl", "line 1\n");
  fs::create_hard_link(t / "run/data/journal.jsonl", t / "outside.txt");
  ASSERT_EQ(Links(t / "outside.txt"), 2u);
  auto f = RealFileSystem().OpenAppend(t / "run/data/journal.jsonl");
  ASSERT_TRUE(f.ok()) << f.error().ToString();
  ASSERT_TRUE(f.value()->Append("line 2\n").ok());
  ASSERT_TRUE(f.value()->Sync().ok());
  EXPECT_EQ(ReadText(t / "outside.txt"), "line 1\n");  // the other name keeps its bytes
  EXPECT_EQ(ReadText(t / "run/data/journal.jsonl"), "line 1\nline 2\n");
  EXPECT_EQ(Links(t / "outside.txt"), 1u);
  EXPECT_EQ(Links(t / "run/data/journal.jsonl"), 1u);
}

TEST(HardLinks, ACutNeverReachesTheOtherName) {
  TempDir t;
  WriteText(t / "run/journal", "keep this and the torn tail");
  fs::create_hard_link(t / "run/journal", t / "snapshot");
  ASSERT_TRUE(RealFileSystem().Truncate(t / "run/journal", 9).ok());
  EXPECT_EQ(ReadText(t / "run/journal"), "keep this");
  EXPECT_EQ(ReadText(t / "snapshot"), "keep this and the torn tail");
}

TEST(HardLinks, ALockFileLinkedOutsideIsReplacedNotWritten) {
  TempDir t;
  fs::create_directories(t / "run");
  WriteText(t / "victim.txt", "victim: nothing may write here\n");
  fs::create_hard_link(t / "victim.txt", t / "run/.lock");
  {
    auto lock = RunLock::Acquire(RealFileSystem(), t / "run");
    ASSERT_TRUE(lock.ok()) << lock.error().ToString();
    EXPECT_EQ(ReadText(t / "run/.lock"), std::to_string(::getpid()) + "\n");
  }
  EXPECT_EQ(ReadText(t / "victim.txt"), "victim: nothing may write here\n");
  EXPECT_EQ(Links(t / "victim.txt"), 1u);
}

TEST(HardLinks, AHeldLockIsReportedEvenThroughALink) {
  TempDir t;
  fs::create_directories(t / "run");
  auto first = RunLock::Acquire(RealFileSystem(), t / "run");
  ASSERT_TRUE(first.ok());
  fs::create_hard_link(t / "run/.lock", t / "other-lock");
  auto second = RunLock::Acquire(RealFileSystem(), t / "run");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().what.find("being written by process " + std::to_string(::getpid())),
            std::string::npos);
}

TEST(LockHolderText, SaysWhenNoPidIsWrittenYet) {
  EXPECT_EQ(LockHolderText(1234), "process 1234");
  EXPECT_EQ(LockHolderText(0), "another process (it has not written its pid yet)");
}

TEST(RenameReplace, ReplacesAFileAndRefusesALinkOrFolder) {
  TempDir t;
  WriteText(t / "staged", "new");
  WriteText(t / "target", "old");
  ASSERT_TRUE(RealFileSystem().RenameReplace(t / "staged", t / "target").ok());
  EXPECT_EQ(ReadText(t / "target"), "new");
  EXPECT_FALSE(fs::exists(t / "staged"));
  WriteText(t / "staged", "again");
  WriteText(t / "victim", "victim");
  fs::create_symlink(t / "victim", t / "link");
  auto through = RealFileSystem().RenameReplace(t / "staged", t / "link");
  ASSERT_FALSE(through.ok());
  EXPECT_NE(through.error().what.find("symlink"), std::string::npos);
  EXPECT_EQ(ReadText(t / "victim"), "victim");
  fs::create_directories(t / "folder");
  EXPECT_FALSE(RealFileSystem().RenameReplace(t / "staged", t / "folder").ok());
}

TEST(OpenBeneath, OpensInsideFollowsInnerLinksRefusesOuterOnes) {
  TempDir t;
  WriteText(t / "root/sub/a.txt", "inside");
  WriteText(t / "outside.txt", "secret");
  fs::create_symlink("sub/a.txt", t / "root/inner-link.txt");
  fs::create_symlink(t / "outside.txt", t / "root/outer-link.txt");
  fs::create_directory_symlink(t.path(), t / "root/up");
  const fs::path root = fs::canonical(t / "root");
  auto ok = RealFileSystem().OpenBeneath(root, "sub/a.txt");
  ASSERT_EQ(ok.failure, BeneathOpen::Failure::kNone) << ok.detail;
  auto text = ReadAllCapped(*ok.file, 100);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value(), "inside");
  EXPECT_EQ(RealFileSystem().OpenBeneath(root, "inner-link.txt").failure, BeneathOpen::Failure::kNone);
  for (const char* escape :
       {"outer-link.txt", "up/outside.txt", "../outside.txt", "/etc/passwd", "sub/../../outside.txt"}) {
    auto out = RealFileSystem().OpenBeneath(root, escape);
    EXPECT_EQ(out.failure, BeneathOpen::Failure::kOutside) << escape << ": " << out.detail;
    EXPECT_FALSE(out.file) << escape;
  }
  EXPECT_EQ(RealFileSystem().OpenBeneath(root, "missing.txt").failure, BeneathOpen::Failure::kMissing);
  ASSERT_EQ(::mkfifo((t / "root/fifo").c_str(), 0600), 0);
  EXPECT_EQ(RealFileSystem().OpenBeneath(root, "fifo").failure,
            BeneathOpen::Failure::kNotRegular);  // never blocks
  EXPECT_EQ(RealFileSystem().OpenBeneath(root, "sub").failure, BeneathOpen::Failure::kNotRegular);
}

TEST(OpenBeneath, ALinkSwappedInAfterTheCheckCannotLeadOut) {
  // The race the old check-then-open had: the path is a plain file when looked at, a link
  // outside when opened. Here the link is in place before the open: the open refuses it,
  // which is what a swap between any check and the open meets.
  TempDir t;
  WriteText(t / "root/doc.txt", "inside");
  WriteText(t / "outside.txt", "secret");
  const fs::path root = fs::canonical(t / "root");
  ASSERT_EQ(RealFileSystem().OpenBeneath(root, "doc.txt").failure, BeneathOpen::Failure::kNone);
  fs::remove(t / "root/doc.txt");
  fs::create_symlink(t / "outside.txt", t / "root/doc.txt");
  auto swapped = RealFileSystem().OpenBeneath(root, "doc.txt");
  EXPECT_EQ(swapped.failure, BeneathOpen::Failure::kOutside);
  EXPECT_FALSE(swapped.file);
}

TEST(Anchor, APinnedFolderIsWrittenEvenIfItsParentIsSwappedForALink) {
  // The folder is resolved and pinned; then its parent is renamed and a link to another folder
  // put in its place (another process racing the command). Every write still lands in the
  // folder that was pinned, never where the link points.
  TempDir t;
  fs::create_directories(t / "runs/r1/data");
  fs::create_directories(t / "decoy/r1/data");
  const fs::path run = fs::canonical(t / "runs/r1");
  ASSERT_TRUE(RealFileSystem().Anchor(run).ok());
  fs::rename(t / "runs", t / "runs.old");
  fs::create_directory_symlink(t / "decoy", t / "runs");
  FileSystem& f = RealFileSystem();
  ASSERT_TRUE(f.WriteFileAtomic(run / "data/a.txt", "pinned").ok());
  ASSERT_TRUE(f.CreateDirectoryExclusive(run / "data/sub").ok());
  ASSERT_TRUE(f.CreateDirectories(run / "data/deep/er").ok());
  auto app = f.OpenAppend(run / "data/journal.jsonl");
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.value()->Append("x\n").ok());
  auto lock = RunLock::Acquire(f, run);
  ASSERT_TRUE(lock.ok()) << lock.error().ToString();
  EXPECT_EQ(ReadText(t / "runs.old/r1/data/a.txt"), "pinned");
  // Reads see the pinned folder too, as the writes do.
  auto back = f.ReadFile(run / "data/a.txt", 100);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back.value(), "pinned");
  EXPECT_TRUE(f.LinkStat(run / ".lock").value().exists);
  auto listed = f.ListDirectory(run / "data");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed.value().size(), 4u);  // a.txt, deep, journal.jsonl, sub: the decoy holds none
  EXPECT_TRUE(fs::is_directory(t / "runs.old/r1/data/sub"));
  EXPECT_TRUE(fs::is_directory(t / "runs.old/r1/data/deep/er"));
  EXPECT_TRUE(fs::exists(t / "runs.old/r1/.lock"));
  EXPECT_TRUE(fs::is_empty(t / "decoy/r1/data"));
  EXPECT_FALSE(fs::exists(t / "decoy/r1/.lock"));
  ASSERT_TRUE(f.RemoveFile(run / "data/a.txt").ok());
  EXPECT_FALSE(fs::exists(t / "runs.old/r1/data/a.txt"));
  ASSERT_TRUE(f.RemoveTree(run / "data/deep").ok());
  EXPECT_FALSE(fs::exists(t / "runs.old/r1/data/deep"));
}

TEST(Anchor, ASymlinkBelowAPinnedFolderIsNeverWrittenThrough) {
  TempDir t;
  fs::create_directories(t / "run/data");
  fs::create_directories(t / "elsewhere");
  const fs::path run = fs::canonical(t / "run");
  ASSERT_TRUE(RealFileSystem().Anchor(run).ok());
  fs::create_directory_symlink(t / "elsewhere", run / "data/linked");
  auto w = RealFileSystem().WriteFileAtomic(run / "data/linked/x.txt", "no");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().what.find("symlink"), std::string::npos) << w.error().what;
  EXPECT_TRUE(fs::is_empty(t / "elsewhere"));
  EXPECT_FALSE(RealFileSystem().CreateDirectories(run / "data/linked/deeper").ok());
  EXPECT_TRUE(fs::is_empty(t / "elsewhere"));
}

TEST(Anchor, InputsAreReadBeneathThePinnedFolderAfterASwap) {
  TempDir t;
  WriteText(t / "inputs/doc.txt", "the pinned input");
  WriteText(t / "decoy/doc.txt", "a decoy with other bytes");
  const fs::path root = fs::canonical(t / "inputs");
  ASSERT_TRUE(RealFileSystem().Anchor(root).ok());
  fs::rename(t / "inputs", t / "inputs.old");
  fs::create_directory_symlink(t / "decoy", t / "inputs");
  auto opened = RealFileSystem().OpenBeneath(root, "doc.txt");
  ASSERT_EQ(opened.failure, BeneathOpen::Failure::kNone) << opened.detail;
  EXPECT_EQ(ReadAllCapped(*opened.file, 100).value(), "the pinned input");
}

TEST(Anchor, AFolderGivenToReadIsNeverReadThroughALinkLeadingOut) {
  // A run folder given on the command line keeps its reads beneath it: data/ swapped for a
  // link to another folder is refused, never read through. Above a destination, reads may
  // leave (a models folder that is a link to a larger disk).
  TempDir t;
  fs::create_directories(t / "run/data");
  WriteText(t / "outside/secret.txt", "outside");
  WriteText(t / "bigdisk/model.pt", "weights");
  fs::create_directories(t / "project");
  const fs::path run = fs::canonical(t / "run");
  const fs::path project = fs::canonical(t / "project");
  FileSystem& f = RealFileSystem();
  ASSERT_TRUE(f.Anchor(run, FileSystem::Reads::kStayBeneath).ok());
  ASSERT_TRUE(f.Anchor(project).ok());
  fs::remove(run / "data");
  fs::create_directory_symlink(t / "outside", run / "data");
  auto read = f.ReadFile(run / "data/secret.txt", 100);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(read.error().what.find("leads outside"), std::string::npos) << read.error().what;
  EXPECT_FALSE(f.LinkStat(run / "data/secret.txt").ok());
  EXPECT_FALSE(f.ListDirectory(run / "data").ok());
  EXPECT_FALSE(f.OpenRead(run / "data/secret.txt", true).ok());
  fs::create_directory_symlink(t / "bigdisk", project / "models");
  auto model = f.ReadFile(project / "models/model.pt", 100);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  EXPECT_EQ(model.value(), "weights");
}

TEST(Anchor, AFolderHandedDownAsADescriptorIsPinnedAsItIs) {
  // A parent hands a child the folder itself as /proc/self/fd/N: Resolve reports the path it
  // has now and pins that very folder, so a swap of its parent afterwards changes nothing.
  TempDir t;
  fs::create_directories(t / "runs/sweep");
  fs::create_directories(t / "decoy/sweep");
  const fs::path sweep = fs::canonical(t / "runs/sweep");
  auto fd = OpenFolderForChild(sweep);
  ASSERT_TRUE(fd.ok()) << fd.error().ToString();
  FileSystem& f = RealFileSystem();
  // Not noted as handed down at start: refused, as pilot's own descriptors are.
  auto own = f.Resolve("/proc/self/fd/" + std::to_string(fd.value()));
  ASSERT_FALSE(own.ok());
  EXPECT_NE(own.error().what.find("handed when it started"), std::string::npos) << own.error().what;
  NoteHandedDownFolders();  // as main does first: this descriptor now stands for a parent's
  auto got = f.Resolve("/proc/self/fd/" + std::to_string(fd.value()));
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got.value(), sweep);
  ::close(fd.value());
  fs::rename(t / "runs", t / "runs.old");
  fs::create_directory_symlink(t / "decoy", t / "runs");
  ASSERT_TRUE(f.WriteFileAtomic(sweep / "cell.json", "{}").ok());
  EXPECT_TRUE(fs::exists(t / "runs.old/sweep/cell.json"));
  EXPECT_TRUE(fs::is_empty(t / "decoy/sweep"));
  // A removed folder is refused, never acted on by the name the kernel gives it.
  fs::create_directories(t / "gone");
  const int gone = ::open((t / "gone").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(gone, 0);
  fs::remove(t / "gone");
  NoteHandedDownFolders();
  auto removed = f.Resolve("/proc/self/fd/" + std::to_string(gone));
  ASSERT_FALSE(removed.ok());
  EXPECT_NE(removed.error().what.find("has been removed"), std::string::npos) << removed.error().what;
  ::close(gone);
  // Anything else under /proc/self/fd is refused, naming it.
  auto not_folder = f.Resolve("/proc/self/fd/999999");
  ASSERT_FALSE(not_folder.ok());
  EXPECT_NE(not_folder.error().where.find("/proc/self/fd/999999"), std::string::npos);
  // A folder reached for a child after the swap is still the pinned one.
  auto again = OpenFolderForChild(sweep);
  ASSERT_TRUE(again.ok());
  struct stat a {
  }, b{};
  ASSERT_EQ(::fstat(again.value(), &a), 0);
  ASSERT_EQ(::stat((t / "runs.old/sweep").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  ::close(again.value());
}

TEST(RemoveTree, AFolderNestedTooDeepIsRefusedNamingWhereTheRemovalBegan) {
  TempDir t;
  fs::path deep = t / "stale.partial";
  fs::create_directories(deep);
  // Built one level at a time from a descriptor: the whole path would pass PATH_MAX.
  int fd = ::open(deep.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0);
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
  }
  ::close(fd);
  auto removed = RealFileSystem().RemoveTree(deep);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(removed.error().where, deep.string());
  EXPECT_NE(removed.error().what.find("nested more than 256"), std::string::npos) << removed.error().what;
  EXPECT_LT(removed.error().ToString().size(), 1000u);
  EXPECT_TRUE(fs::exists(deep));
  // Clean up the way a person would: from the bottom, with descriptors.
  ASSERT_EQ(std::system(("rm -rf '" + deep.string() + "'").c_str()), 0);
}

TEST(ReadAllCapped, ReadsTheWholeFileOrOneBytePastTheCap) {
  TempDir t;
  WriteText(t / "f", std::string(1000, 'x'));
  auto in = RealFileSystem().OpenRead(t / "f", false);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(ReadAllCapped(*in.value(), 5000).value().size(), 1000u);
  EXPECT_EQ(ReadAllCapped(*in.value(), 10).value().size(), 11u);
}

}  // namespace
}  // namespace pilot
