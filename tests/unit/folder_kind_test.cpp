// The registry of folder kinds (folder_kind.h): what this pilot knows, and the refusal of a kind
// or format it does not, from the registry alone.
#include "pilot/folder_kind.h"

#include <gtest/gtest.h>

#include "pilot/folder_files.h"

namespace pilot {
namespace {

TEST(FolderKinds, EveryKindIsRegisteredOnceWithItsFormats) {
  const auto names = FolderKinds().Names();
  EXPECT_EQ(names, (std::vector<std::string>{"run", "shard", "merged", "sweep", "adapt"}));
  const FolderKindSpec* run = FolderKinds().Find(kFolderKindRun);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->max_format, kRunFormatVersion);
  EXPECT_TRUE(run->undeclared_is_format_1);
  EXPECT_FALSE(run->checks);  // a run's checks are verify's own
  for (const char* own : {kFolderKindSweep, kFolderKindAdapt}) {
    const FolderKindSpec* spec = FolderKinds().Find(own);
    ASSERT_NE(spec, nullptr) << own;
    EXPECT_TRUE(spec->checks) << own;
    EXPECT_FALSE(spec->undeclared_is_format_1) << own;
  }
  EXPECT_EQ(FolderKinds().Find("load"), nullptr);
}

TEST(FolderKinds, AKindOrFormatNotRegisteredIsRefusedNamingIt) {
  auto refused = [](FolderKind k) {
    Status st = CheckFolderKind(k, "runs/x", "verify");
    return st.ok() ? std::string() : st.error().what;
  };
  EXPECT_EQ(refused({kFolderKindRun, 1, false}), "");  // pilot 0.1's runs declare nothing
  EXPECT_EQ(refused({kFolderKindRun, kRunFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindSweep, kSweepFormatVersion, true}), "");
  EXPECT_EQ(refused({kFolderKindAdapt, kAdaptFormatVersion, true}), "");
  EXPECT_EQ(
      refused({"load", 1, true}),
      "the folder is of kind 'load', which this pilot cannot verify (it knows: run, shard, merged, sweep, "
      "adapt)");
  EXPECT_EQ(refused({kFolderKindRun, 9, true}),
            "the folder is in run format 9, which this pilot cannot verify (it knows formats 1..2)");
  EXPECT_EQ(refused({kFolderKindShard, 1, true}),
            "the folder is in shard format 1, which this pilot cannot verify (it knows format 2)");
  // A shard or an adaptation folder always declares itself: undeclared, it is not one pilot wrote.
  EXPECT_NE(refused({kFolderKindAdapt, 1, false}), "");
  EXPECT_NE(refused({kFolderKindMerged, kRunFormatVersion, false}), "");
}

}  // namespace
}  // namespace pilot
