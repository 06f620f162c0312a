// `pilot merge`: the shards of one manifest (shard.h), each verified, joined into one bag of
// kind `merged` with global exactly-once: every manifest id once, from the shard its hash
// names, in manifest order.
//
// Memory is O(shards + ids): the shards' results are streamed side by side (one line
// reader each, 64 KiB), the manifest copy once; only the manifest's ids are held (while it
// is validated) and a report latency per item.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "pilot/clock.h"
#include "pilot/fs.h"
#include "pilot/report.h"
#include "pilot/run.h"
#include "pilot/shard.h"
#include "pilot/status.h"
#include "pilot/verify.h"

namespace pilot {

struct MergeRequest {
  std::vector<std::filesystem::path> shards;  // shard folders, in any order
  std::filesystem::path out;                  // must not exist
  std::vector<std::string> command_line;
  // `out` was resolved already, in a folder this command pinned (run --workers: RUN_ID beside
  // RUN_ID.shards): it is used as it is, never resolved again, so that a parent swapped for a
  // link while the workers ran cannot move the merged folder.
  bool out_resolved = false;
};

struct MergedShard {
  ShardSpec spec;
  std::filesystem::path dir;
  std::string run_id, fingerprint, started_at, finished_at;
  std::size_t items = 0, accepted = 0, rejected = 0;
  double items_per_second = 0;
};

struct MergeOutcome {
  std::filesystem::path dir;
  std::vector<MergedShard> shards;  // by index
  // Shards that failed verification (verdict kVerifyFailed, nothing written).
  std::vector<std::pair<std::filesystem::path, VerifyResult>> failed_shards;
  Report report;
  VerifyResult verify;  // the merged folder's
  std::string fingerprint;
  RunVerdict verdict = RunVerdict::kPassed;
};

// Checks the shards before anything is written (exit 2 naming the folder: not a shard, an
// unfinished one with the resume command, a duplicate, a missing index, another manifest,
// parameters or model), verifies each in full (a failure: kVerifyFailed), then writes OUT
// through OUT.partial (renamed when finished and verified). Acceptance is judged over the
// whole manifest (kAcceptanceFailed). `control.should_stop` is polled while streaming: an
// interrupted merge leaves OUT.partial, which the next merge replaces.
Result<MergeOutcome> MergeShards(FileSystem& fs, Clock& clock, const MergeRequest& request,
                                 const RunControl& control = {});

}  // namespace pilot
