// The OpenAI-compatible API's bodies and answers (openai_api.h).
#include "pilot/load/openai_api.h"

#include <nlohmann/json.hpp>

#include "pilot/json_util.h"

namespace pilot {

namespace {

using json = nlohmann::json;
// The OpenAI API's field holding a vector (the wire format's word, not an output kind's).
constexpr const char* kWireEmbeddingKey = "embedding";

bool IsStringOrNull(const json& j) { return j.is_string() || j.is_null(); }

// The content a chunk or an answer carries: the text of a completion's first choice, or the
// content of a chat's first message or delta. nullopt: the chunk is not of the API's shape.
// A chunk with no choices (the usage chunk) carries "" .
std::optional<std::string> ChoiceText(OpenAiApi api, const json& j, bool streamed) {
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array()) return std::nullopt;
  const json& choices = j["choices"];
  if (choices.empty()) return streamed ? std::optional<std::string>("") : std::nullopt;
  const json& c = choices[0];
  if (!c.is_object()) return std::nullopt;
  if (api == OpenAiApi::kCompletions) {
    if (!c.contains("text") || !c["text"].is_string()) return std::nullopt;
    return c["text"].get<std::string>();
  }
  const char* key = streamed ? "delta" : "message";
  if (!c.contains(key) || !c[key].is_object()) return std::nullopt;
  const json& m = c[key];
  if (!m.contains("content")) return std::string();  // a role-only delta, a tool call
  if (!IsStringOrNull(m["content"])) return std::nullopt;
  return m["content"].is_string() ? m["content"].get<std::string>() : std::string();
}

std::optional<std::uint64_t> UsageTokens(const json& j) {
  if (!j.is_object() || !j.contains("usage") || !j["usage"].is_object()) return std::nullopt;
  return UnsignedAt(j["usage"], "completion_tokens");
}

OpenAiAnswer Bad(const char* reason, std::string detail) {
  OpenAiAnswer a;
  a.reason = reason;
  a.detail = std::move(detail);
  return a;
}

}  // namespace

const char* OpenAiApiName(OpenAiApi api) {
  switch (api) {
    case OpenAiApi::kEmbeddings:
      return "embeddings";
    case OpenAiApi::kCompletions:
      return "completions";
    case OpenAiApi::kChat:
      return "chat";
  }
  return "completions";
}

std::optional<OpenAiApi> OpenAiApiFromName(std::string_view name) {
  for (OpenAiApi api : {OpenAiApi::kEmbeddings, OpenAiApi::kCompletions, OpenAiApi::kChat}) {
    if (name == OpenAiApiName(api)) return api;
  }
  return std::nullopt;
}

const char* OpenAiApiPath(OpenAiApi api) {
  switch (api) {
    case OpenAiApi::kEmbeddings:
      return "/v1/embeddings";
    case OpenAiApi::kCompletions:
      return "/v1/completions";
    case OpenAiApi::kChat:
      return "/v1/chat/completions";
  }
  return "/v1/completions";
}

std::string OpenAiRequestBody(const OpenAiRequestSpec& spec, std::string_view text) {
  json j;
  j["model"] = spec.model;
  const std::string input(text);
  switch (spec.api) {
    case OpenAiApi::kEmbeddings:
      j["input"] = input;
      j["encoding_format"] = "float";
      break;
    case OpenAiApi::kCompletions:
      j["prompt"] = input;
      break;
    case OpenAiApi::kChat:
      j["messages"] = json::array({{{"role", "user"}, {"content", input}}});
      break;
  }
  if (spec.api != OpenAiApi::kEmbeddings) {
    j["max_tokens"] = spec.max_tokens;
    j["temperature"] = 0;
    j["stream"] = spec.stream;
    if (spec.stream) j["stream_options"] = {{"include_usage", true}};
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

OpenAiAnswer ParseOpenAiBody(OpenAiApi api, std::string_view body, std::uint64_t max_tokens) {
  if (body.size() > kMaxResponseBytes) return Bad(http_reason::kTooLarge, "the answer is over 16 MiB");
  auto parsed = ParseJson(body, "the answer");
  if (!parsed.ok()) return Bad(http_reason::kBadResponse, "not JSON: " + parsed.error().what);
  const json& j = parsed.value();
  OpenAiAnswer a;
  if (api == OpenAiApi::kEmbeddings) {
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].is_object() || !j["data"][0].contains(kWireEmbeddingKey) ||
        !j["data"][0][kWireEmbeddingKey].is_array() || j["data"][0][kWireEmbeddingKey].empty())
      return Bad(http_reason::kBadResponse, "no data[0].embedding array");
    for (const json& v : j["data"][0][kWireEmbeddingKey]) {
      if (!v.is_number()) return Bad(http_reason::kBadResponse, "an embedding value that is not a number");
    }
    a.ok = true;
    return a;
  }
  if (!ChoiceText(api, j, false))
    return Bad(http_reason::kBadResponse,
               api == OpenAiApi::kChat ? "no choices[0].message.content" : "no choices[0].text");
  a.output_tokens = UsageTokens(j).value_or(0);
  if (a.output_tokens > std::min<std::uint64_t>(max_tokens, kMaxAnswerTokens))
    return Bad(http_reason::kBadResponse, "more output tokens than the request's max_tokens");
  a.ok = true;
  return a;
}

bool OpenAiStream::Fail(const char* reason, std::string detail) {
  failed_ = true;
  answer_.ok = false;
  answer_.reason = reason;
  answer_.detail = std::move(detail);
  return false;
}

bool OpenAiStream::Feed(std::string_view bytes, double now_ms) {
  if (failed_) return false;
  total_ += bytes.size();
  if (total_ > kMaxResponseBytes) return Fail(http_reason::kTooLarge, "the stream is over 16 MiB");
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    if (line_.size() + part.size() > kMaxEventLineBytes)
      return Fail(http_reason::kTooLarge, "a stream line over 64 KiB");
    line_.append(part);
    if (nl == std::string_view::npos) break;
    bytes.remove_prefix(nl + 1);
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Only `data:` lines carry chunks; blank lines end events, and other fields are skipped.
    if (line.rfind("data:", 0) == 0) {
      std::string_view data = line.substr(5);
      if (!data.empty() && data.front() == ' ') data.remove_prefix(1);
      if (!Event(data, now_ms)) return false;
    }
    line_.clear();
  }
  return true;
}

bool OpenAiStream::Event(std::string_view data, double now_ms) {
  if (done_) return true;  // anything after [DONE] is not read
  if (data == "[DONE]") {
    done_ = true;
    done_ms_ = now_ms;
    return true;
  }
  if (++events_ > kMaxStreamEvents) return Fail(http_reason::kBadResponse, "over 65,536 stream events");
  auto parsed = ParseJson(data, "a stream event");
  if (!parsed.ok())
    return Fail(http_reason::kBadResponse, "an event that is not JSON: " + parsed.error().what);
  const json& j = parsed.value();
  if (j.is_object() && j.contains("error"))
    return Fail(http_reason::kBadResponse, "the stream carried an error event");
  const auto text = ChoiceText(api_, j, true);
  if (!text) {
    return Fail(http_reason::kBadResponse, api_ == OpenAiApi::kChat ? "an event without choices[0].delta"
                                                                    : "an event without choices[0].text");
  }
  if (!text->empty()) answer_.token_ms.push_back(now_ms);
  if (auto usage = UsageTokens(j)) usage_tokens_ = usage;
  if (answer_.token_ms.size() > max_tokens_ || usage_tokens_.value_or(0) > max_tokens_)
    return Fail(http_reason::kBadResponse, "more output tokens than the request's max_tokens");
  return true;
}

OpenAiAnswer OpenAiStream::Finish() {
  if (failed_) return answer_;
  if (!done_ && events_ == 0 && answer_.token_ms.empty()) {
    // No event at all: an answer that is not a stream (a server ignoring "stream"), or nothing.
    Fail(total_ > 0 ? http_reason::kBadResponse : http_reason::kTruncated,
         total_ > 0 ? "no server-sent event in the answer" : "an empty answer");
    return answer_;
  }
  if (!done_) {
    Fail(http_reason::kTruncated,
         "the stream ended without data: [DONE] after " + std::to_string(events_) + " event(s)");
    return answer_;
  }
  answer_.ok = true;
  answer_.output_tokens = usage_tokens_.value_or(answer_.token_ms.size());
  return answer_;
}

}  // namespace pilot
