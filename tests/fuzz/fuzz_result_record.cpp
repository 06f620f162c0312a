// Fuzzes ParseResultRecord (one line of data/results.jsonl or a journal result record,
// classification, embedding or generation).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/limits.h"
#include "pilot/results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseResultRecord(line, "fuzz/data/results.jsonl:1");
  // The fast scanner (finish and verify) never accepts what the parser refuses, and reads
  // the same record. The journal's form is the same line with "type":"result" first.
  for (bool journal : {false, true}) {
    std::string text = journal && line.size() > 1 && line[0] == '{'
                           ? "{\"type\":\"result\"," + std::string(line.substr(1))
                           : std::string(line);
    auto fast = ScanResultRecord(text, journal);
    if (!fast) continue;
    auto slow = ParseResultRecord(text, "fuzz/differential");
    PILOT_FUZZ_CHECK(slow.ok());
    const ResultRecord& a = *fast;
    const ResultRecord& b = slow.value();
    PILOT_FUZZ_CHECK(a.id == b.id && a.accepted == b.accepted && a.category == b.category);
    PILOT_FUZZ_CHECK(a.confidence == b.confidence && a.reason == b.reason && a.detail == b.detail);
    PILOT_FUZZ_CHECK(a.model == b.model && a.latency_ms == b.latency_ms);
    PILOT_FUZZ_CHECK(a.dim == b.dim && a.row == b.row && a.vector_at == b.vector_at);
    PILOT_FUZZ_CHECK(a.vector_sha256 == b.vector_sha256);
    PILOT_FUZZ_CHECK(a.expected == b.expected);
    PILOT_FUZZ_CHECK(a.tokens == b.tokens && a.truncated == b.truncated);
    if (journal) PILOT_FUZZ_CHECK(!a.expected);  // a label is never read from the journal
  }
  if (!parsed.ok()) {
    PILOT_FUZZ_CHECK(!parsed.error().what.empty());
    return 0;
  }
  const ResultRecord& r = parsed.value();
  PILOT_FUZZ_CHECK(!r.id.empty());
  if (r.accepted) {
    PILOT_FUZZ_CHECK(r.reason.empty() && r.detail.empty());
  } else {
    PILOT_FUZZ_CHECK(r.category.empty());
  }
  PILOT_FUZZ_CHECK(!std::isnan(r.confidence));
  if (r.latency_ms) PILOT_FUZZ_CHECK(!std::isnan(*r.latency_ms));
  // A tokenized record: its count bounded, `truncated` only beside it.
  if (r.tokens) PILOT_FUZZ_CHECK(*r.tokens <= kMaxRecordTokens);
  // A generator's completion: within its bounds, and written back as it was read.
  if (r.completion) {
    const Completion& c = *r.completion;
    PILOT_FUZZ_CHECK(r.accepted && !r.dim);
    PILOT_FUZZ_CHECK(!c.ids.empty() && c.ids.size() <= kMaxCompletionIds &&
                     c.text.size() <= kMaxCompletionBytes);
    PILOT_FUZZ_CHECK(IsFinishReason(c.finish_reason));
    for (std::int64_t id : c.ids) PILOT_FUZZ_CHECK(id >= 0 && id <= 2147483647);
    for (double ms : {c.ttft_ms, c.prefill_ms, c.decode_ms}) PILOT_FUZZ_CHECK(std::isfinite(ms) && ms >= 0);
    if (c.tpot_ms) PILOT_FUZZ_CHECK(c.ids.size() >= 2 && std::isfinite(*c.tpot_ms));
    auto again = ParseResultRecord(ToJsonLine(r), "fuzz/again");
    PILOT_FUZZ_CHECK(again.ok() && again.value().completion && again.value().completion->ids == c.ids &&
                     again.value().completion->text == c.text);
  }
  if (r.truncated) PILOT_FUZZ_CHECK(r.tokens.has_value());
  // Embedding records: an accepted record's dim in 1..kEmbeddingDim; a row or a sidecar
  // offset only with a dim, each a count that fits in int64 (an off_t).
  if (r.dim) {
    PILOT_FUZZ_CHECK(r.accepted);
    PILOT_FUZZ_CHECK(*r.dim >= 1 && *r.dim <= limits::kEmbeddingDim);
  } else {
    PILOT_FUZZ_CHECK(!r.row && !r.vector_at && !r.vector_sha256);
  }
  // A row's digest: 64 lower-case hex digits, nothing else.
  if (r.vector_sha256) PILOT_FUZZ_CHECK(pilot::fuzz::IsLowerHex64(*r.vector_sha256));
  constexpr auto kMaxCount = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (r.row) PILOT_FUZZ_CHECK(*r.row <= kMaxCount);
  if (r.vector_at) PILOT_FUZZ_CHECK(*r.vector_at <= kMaxCount);
  // Writing the record and reading it back gives the same record.
  auto again = ParseResultRecord(ToJsonLine(r), "fuzz/roundtrip");
  PILOT_FUZZ_CHECK(again.ok());
  const ResultRecord& b = again.value();
  PILOT_FUZZ_CHECK(b.id == r.id);
  PILOT_FUZZ_CHECK(b.accepted == r.accepted);
  PILOT_FUZZ_CHECK(b.category == r.category);
  PILOT_FUZZ_CHECK(b.confidence == r.confidence);
  PILOT_FUZZ_CHECK(b.reason == r.reason);
  PILOT_FUZZ_CHECK(b.detail == r.detail);
  PILOT_FUZZ_CHECK(b.model == r.model);
  PILOT_FUZZ_CHECK(b.latency_ms == r.latency_ms);
  PILOT_FUZZ_CHECK(b.dim == r.dim);
  PILOT_FUZZ_CHECK(b.row == r.row);
  PILOT_FUZZ_CHECK(b.vector_at == r.vector_at);
  PILOT_FUZZ_CHECK(b.vector_sha256 == r.vector_sha256);
  PILOT_FUZZ_CHECK(b.expected == r.expected);
  PILOT_FUZZ_CHECK(b.tokens == r.tokens && b.truncated == r.truncated);
  return 0;
}
