// Fuzzes ParseJournal (data/journal.jsonl): an ok state is consistent with the bytes it
// was parsed from.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/journal.h"
#include "pilot/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseJournal(text, "fuzz/data/journal.jsonl");
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const JournalState& st = parsed.value();
  // A journal without a whole header record is refused ("the run never started").
  PILOT_FUZZ_CHECK(st.valid_bytes > 0);
  PILOT_FUZZ_CHECK(st.valid_bytes <= size);
  PILOT_FUZZ_CHECK(st.torn_bytes <= size - st.valid_bytes);
  // Whole records end with a newline; what follows them is the torn record, if any.
  PILOT_FUZZ_CHECK(text[st.valid_bytes - 1] == '\n');
  PILOT_FUZZ_CHECK(st.accepted + st.rejected == st.done.size());
  PILOT_FUZZ_CHECK(st.done_in_session <= st.done.size());
  for (std::size_t k = 0; k < st.done.size(); ++k) {
    const std::string_view id = st.done.Id(k);
    const std::uint64_t offset = st.done.Value(k);
    PILOT_FUZZ_CHECK(!id.empty());
    PILOT_FUZZ_CHECK(st.done.Find(id) == k);
    PILOT_FUZZ_CHECK(offset < st.valid_bytes);
    // The offset is the start of a record: the file's start or just after a newline.
    PILOT_FUZZ_CHECK(offset == 0 || text[offset - 1] == '\n');
  }
  PILOT_FUZZ_CHECK(!std::isnan(st.processing_seconds) && st.processing_seconds >= 0);
  PILOT_FUZZ_CHECK(!std::isnan(st.peak_rss_mb) && st.peak_rss_mb >= 0);
  if (st.device_peak_mb) PILOT_FUZZ_CHECK(!std::isnan(*st.device_peak_mb));
  // Journal version 2: batch_failure records (only there), the first kBatchFailuresKept kept;
  // embedding results' sidecar offsets bounded (vector_at <= 2^48, an id <= 128 bytes).
  PILOT_FUZZ_CHECK(st.header.version >= 1 && st.header.version <= kJournalVersion);
  if (st.header.version < 2) PILOT_FUZZ_CHECK(st.batch_failure_count == 0);
  PILOT_FUZZ_CHECK(st.batch_failures.size() == std::min(st.batch_failure_count, kBatchFailuresKept));
  PILOT_FUZZ_CHECK(st.vectors_end <= (std::uint64_t{1} << 48) + 4 + 128 + 4 * limits::kEmbeddingDim);
  return 0;
}
