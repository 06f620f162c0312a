// The OpenAI-compatible API that `pilot load --target URL` speaks (docs/load.md, "A service over
// HTTP"): each request's body, and the answer read back, whole or as a server-sent event stream,
// into one outcome. Pure text in and out (no sockets): the HTTP client (http_target.h) feeds it
// what arrives, and the tests and fuzz_openai_stream feed it hostile bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pilot {

enum class OpenAiApi { kEmbeddings, kCompletions, kChat };
const char* OpenAiApiName(OpenAiApi api);  // embeddings | completions | chat
std::optional<OpenAiApi> OpenAiApiFromName(std::string_view name);
const char* OpenAiApiPath(OpenAiApi api);  // /v1/embeddings | /v1/completions | /v1/chat/completions

// What one request asks of the service.
struct OpenAiRequestSpec {
  OpenAiApi api = OpenAiApi::kCompletions;
  std::string model;
  std::uint64_t max_tokens = 16;  // completions, chat
  bool stream = true;             // completions, chat: server-sent events, for TTFT and ITL
};
// The JSON body of one request carrying `text` (escaped as JSON; invalid UTF-8 replaced).
std::string OpenAiRequestBody(const OpenAiRequestSpec& spec, std::string_view text);

// Bounds on what is read back: a whole answer's body, a stream's total bytes, one event's line.
inline constexpr std::size_t kMaxResponseBytes = 16u << 20;
inline constexpr std::size_t kMaxEventLineBytes = 64u << 10;
inline constexpr std::size_t kMaxStreamEvents = 1u << 16;
// The most output tokens one answer may report (a load folder's records hold no more).
inline constexpr std::uint64_t kMaxAnswerTokens = 1u << 15;

// How an answer that arrived whole (HTTP 200) or as a stream ended. The reasons a request fails
// or is refused by (docs/load.md, "Outcomes over HTTP").
namespace http_reason {
inline constexpr const char* kConnectFailed = "connect_failed";
inline constexpr const char* kConnectionReset = "connection_reset";
inline constexpr const char* kTruncated = "truncated_response";
inline constexpr const char* kBadResponse = "bad_response";
inline constexpr const char* kTooLarge = "response_too_large";
inline constexpr const char* kClientBound = "client_in_flight_bound";
inline constexpr const char* kInterrupted = "interrupted";
inline constexpr const char* kTransport = "transport_error";
}  // namespace http_reason

// An answer read: ok, with its output tokens (a stream's `usage.completion_tokens` when the
// server sent it, else its content events; a whole answer's `usage.completion_tokens`, else 0)
// and, for a stream, the time of each content event; or not ok, with its reason.
struct OpenAiAnswer {
  bool ok = false;
  std::string reason;  // not ok: bad_response, truncated_response or response_too_large
  std::string detail;  // not ok: what was wrong, for a person (never the body itself)
  std::uint64_t output_tokens = 0;
  std::vector<double> token_ms;  // a stream's content events, as they arrived
};

// A whole answer's body (HTTP 200, not streamed): it must be JSON of the API's shape (an
// embedding's vector of numbers; a completion's text or message content), reporting no more
// output tokens than `max_tokens` (the request's; more is bad_response).
OpenAiAnswer ParseOpenAiBody(OpenAiApi api, std::string_view body,
                             std::uint64_t max_tokens = kMaxAnswerTokens);

// A streamed answer, fed as its bytes arrive: `data:` lines of server-sent events, each a JSON
// chunk of the API's shape, ended by `data: [DONE]`. Any other field (event, id, retry, a
// comment) is skipped. Finish() says how it ended: without [DONE] it was truncated.
class OpenAiStream {
 public:
  // `max_tokens`: the request's; a stream with more content events, or a usage over it, is bad.
  explicit OpenAiStream(OpenAiApi api, std::uint64_t max_tokens = kMaxAnswerTokens)
      : api_(api), max_tokens_(std::min<std::uint64_t>(max_tokens, kMaxAnswerTokens)) {}
  // The bytes that arrived at `now_ms`. False once the stream is bad (the answer's reason set).
  bool Feed(std::string_view bytes, double now_ms);
  OpenAiAnswer Finish();
  bool failed() const { return failed_; }
  bool done() const { return done_; }
  double done_ms() const { return done_ms_; }  // when data: [DONE] arrived

 private:
  bool Event(std::string_view data, double now_ms);
  bool Fail(const char* reason, std::string detail);
  OpenAiApi api_;
  std::uint64_t max_tokens_;
  double done_ms_ = 0;
  std::string line_;  // a line not yet ended
  std::size_t total_ = 0, events_ = 0;
  bool done_ = false, failed_ = false;
  std::optional<std::uint64_t> usage_tokens_;
  OpenAiAnswer answer_;
};

}  // namespace pilot
