// The OpenAI-compatible API's bodies and answers (openai_api.h) and the --target URL's checks
// (http_target.h): what pilot load --target sends and how each answer becomes one outcome.
#include "pilot/load/openai_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pilot/load/http_target.h"

namespace pilot {
namespace {

using json = nlohmann::json;

std::string Chunk(const std::string& text) {
  return "data: " +
         json({{"choices", json::array({{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}})}})
             .dump() +
         "\n\n";
}

std::string ChatChunk(const json& delta) {
  return "data: " + json({{"choices", json::array({{{"index", 0}, {"delta", delta}}})}}).dump() + "\n\n";
}

TEST(OpenAiApi, NamesPathsAndBodies) {
  EXPECT_EQ(OpenAiApiFromName("chat"), OpenAiApi::kChat);
  EXPECT_FALSE(OpenAiApiFromName("Chat").has_value());
  EXPECT_STREQ(OpenAiApiPath(OpenAiApi::kChat), "/v1/chat/completions");
  OpenAiRequestSpec chat{OpenAiApi::kChat, "m", 7, true};
  const json b = json::parse(OpenAiRequestBody(chat, "hi \"there\"\n"));
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["messages"][0]["role"], "user");
  EXPECT_EQ(b["messages"][0]["content"], "hi \"there\"\n");
  EXPECT_EQ(b["max_tokens"], 7);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  OpenAiRequestSpec emb{OpenAiApi::kEmbeddings, "e", 16, true};
  const json e = json::parse(OpenAiRequestBody(emb, "text"));
  EXPECT_EQ(e["input"], "text");
  EXPECT_FALSE(e.contains("stream"));
  // Invalid UTF-8 in an input is replaced, never a throw or a body that is not JSON.
  OpenAiRequestSpec done{OpenAiApi::kCompletions, "m", 4, false};
  const json c = json::parse(OpenAiRequestBody(done, std::string("a\xff\xfe"
                                                                 "b")));
  EXPECT_EQ(c["stream"], false);
  EXPECT_FALSE(c.contains("stream_options"));
  EXPECT_EQ(c["prompt"].get<std::string>().front(), 'a');
}

TEST(OpenAiApi, WholeAnswers) {
  auto emb = ParseOpenAiBody(OpenAiApi::kEmbeddings, R"({"data":[{"embedding":[0.5,-1,2e3]}]})");
  EXPECT_TRUE(emb.ok);
  auto comp = ParseOpenAiBody(OpenAiApi::kCompletions,
                              R"({"choices":[{"text":"olleh"}],"usage":{"completion_tokens":6}})");
  EXPECT_TRUE(comp.ok);
  EXPECT_EQ(comp.output_tokens, 6u);
  auto chat =
      ParseOpenAiBody(OpenAiApi::kChat, R"({"choices":[{"message":{"role":"assistant","content":"x"}}]})");
  EXPECT_TRUE(chat.ok);
  EXPECT_EQ(chat.output_tokens, 0u);
  for (const char* bad : {"", "{", "not json", "[]", R"({"data":[]})", R"({"data":[{"embedding":["a"]}]})",
                          R"({"data":[{"embedding":[]}]})", R"({"choices":[{"text":"x"}]})"}) {
    auto a = ParseOpenAiBody(OpenAiApi::kEmbeddings, bad);
    EXPECT_FALSE(a.ok) << bad;
    EXPECT_EQ(a.reason, http_reason::kBadResponse) << bad;
  }
  // A completion's answer in the chat shape, and the reverse, are not the API's.
  EXPECT_FALSE(ParseOpenAiBody(OpenAiApi::kChat, R"({"choices":[{"text":"x"}]})").ok);
  EXPECT_FALSE(ParseOpenAiBody(OpenAiApi::kCompletions, R"({"choices":[{"message":{"content":"x"}}]})").ok);
  auto huge_usage = ParseOpenAiBody(OpenAiApi::kCompletions,
                                    R"({"choices":[{"text":"x"}],"usage":{"completion_tokens":40000}})");
  EXPECT_FALSE(huge_usage.ok);
  // Nesting deeper than pilot parses is refused, not recursed into.
  auto deep = ParseOpenAiBody(OpenAiApi::kChat, std::string(100000, '['));
  EXPECT_FALSE(deep.ok);
  EXPECT_EQ(deep.reason, http_reason::kBadResponse);
}

TEST(OpenAiApi, StreamCountsTokensAndTimes) {
  OpenAiStream s(OpenAiApi::kCompletions);
  // Split anywhere: the parser joins lines across reads, with \r\n or \n.
  const std::string whole = Chunk("a") + ": a comment\n\n" + "event: x\r\n" + Chunk("b").substr(0, 9);
  EXPECT_TRUE(s.Feed(whole, 1.0));
  EXPECT_TRUE(s.Feed(Chunk("b").substr(9), 2.5));
  EXPECT_TRUE(s.Feed(Chunk(""), 3.0));  // the finish chunk carries no text
  EXPECT_TRUE(
      s.Feed("data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\r\n\r\ndata: [DONE]\n\n", 4.0));
  EXPECT_TRUE(s.done());
  const OpenAiAnswer a = s.Finish();
  ASSERT_TRUE(a.ok) << a.detail;
  EXPECT_EQ(a.token_ms, (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(a.output_tokens, 3u);  // the server's usage, eos included, over the events counted
}

TEST(OpenAiApi, ChatStreamWithoutUsageCountsContentEvents) {
  OpenAiStream s(OpenAiApi::kChat);
  EXPECT_TRUE(s.Feed(ChatChunk({{"role", "assistant"}}), 1));
  EXPECT_TRUE(s.Feed(
      ChatChunk({{"content", "x"}}) + ChatChunk({{"content", nullptr}}) + ChatChunk({{"content", "y"}}), 2));
  EXPECT_TRUE(s.Feed("data: [DONE]\n\n", 3));
  const OpenAiAnswer a = s.Finish();
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.output_tokens, 2u);
  EXPECT_EQ(a.token_ms.size(), 2u);
}

TEST(OpenAiApi, NoMoreTokensThanAsked) {
  OpenAiStream s(OpenAiApi::kCompletions, 2);
  EXPECT_TRUE(s.Feed(Chunk("a") + Chunk("b"), 1));
  EXPECT_FALSE(s.Feed(Chunk("c"), 2));  // a third token of max_tokens 2
  EXPECT_EQ(s.Finish().reason, http_reason::kBadResponse);
  OpenAiStream usage(OpenAiApi::kCompletions, 2);
  EXPECT_FALSE(usage.Feed("data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n", 1));
  const auto whole = R"({"choices":[{"text":"abc"}],"usage":{"completion_tokens":3}})";
  EXPECT_FALSE(ParseOpenAiBody(OpenAiApi::kCompletions, whole, 2).ok);
  EXPECT_TRUE(ParseOpenAiBody(OpenAiApi::kCompletions, whole, 3).ok);
  // [DONE]'s time is kept: a stream whose body never ends is done then.
  OpenAiStream done(OpenAiApi::kCompletions, 4);
  EXPECT_TRUE(done.Feed(Chunk("a"), 1));
  EXPECT_TRUE(done.Feed("data: [DONE]\n\n", 7.5));
  EXPECT_TRUE(done.done());
  EXPECT_EQ(done.done_ms(), 7.5);
}

TEST(OpenAiApi, StreamFailures) {
  {
    OpenAiStream s(OpenAiApi::kCompletions);
    EXPECT_TRUE(s.Feed(Chunk("a"), 1));
    const OpenAiAnswer a = s.Finish();  // no [DONE]: cut off
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.reason, http_reason::kTruncated);
  }
  {
    OpenAiStream s(OpenAiApi::kCompletions);
    EXPECT_FALSE(s.Feed("data: {\"choices\": [ not json\n\n", 1));
    EXPECT_FALSE(s.Feed(Chunk("a"), 2));  // nothing more is read once bad
    EXPECT_EQ(s.Finish().reason, http_reason::kBadResponse);
  }
  {
    OpenAiStream s(OpenAiApi::kChat);
    EXPECT_FALSE(s.Feed(Chunk("a"), 1));  // a completion's chunk on the chat API
    EXPECT_EQ(s.Finish().reason, http_reason::kBadResponse);
  }
  {
    OpenAiStream s(OpenAiApi::kCompletions);
    EXPECT_FALSE(s.Feed("data: {\"error\": {\"message\": \"overloaded\"}}\n\n", 1));
    EXPECT_EQ(s.Finish().reason, http_reason::kBadResponse);
  }
  {
    // A line without an end, over 64 KiB, is refused before it grows further.
    OpenAiStream s(OpenAiApi::kCompletions);
    const std::string mib(1u << 15, 'x');
    EXPECT_TRUE(s.Feed("data: " + mib, 1));
    EXPECT_FALSE(s.Feed(mib + "x", 2));
    EXPECT_EQ(s.Finish().reason, http_reason::kTooLarge);
  }
  {
    // A stream over 16 MiB in all is too large, whatever its lines.
    OpenAiStream s(OpenAiApi::kCompletions);
    const std::string comments(1u << 20, '\n');
    bool ok = true;
    for (int k = 0; k < 17 && ok; ++k) ok = s.Feed(comments, k);
    EXPECT_FALSE(ok);
    EXPECT_EQ(s.Finish().reason, http_reason::kTooLarge);
  }
  {
    // A whole JSON answer where a stream was asked for: not a stream; nothing at all: cut off.
    OpenAiStream s(OpenAiApi::kCompletions);
    EXPECT_TRUE(s.Feed(R"({"choices":[{"text":"x"}]})", 1));
    EXPECT_EQ(s.Finish().reason, http_reason::kBadResponse);
    OpenAiStream empty(OpenAiApi::kCompletions);
    EXPECT_EQ(empty.Finish().reason, http_reason::kTruncated);
  }
  {
    // Anything after [DONE] is not read.
    OpenAiStream s(OpenAiApi::kCompletions);
    EXPECT_TRUE(s.Feed("data: [DONE]\n\ndata: garbage\n\n", 1));
    EXPECT_TRUE(s.Finish().ok);
  }
}

TEST(HttpTarget, UrlChecks) {
  EXPECT_EQ(CheckTargetUrl("http://127.0.0.1:8000").value(), "http://127.0.0.1:8000");
  EXPECT_EQ(CheckTargetUrl("https://host.example/v1/").value(), "https://host.example/v1");
  EXPECT_EQ(EndpointUrl("https://host.example/v1", "/v1/embeddings"), "https://host.example/v1/embeddings");
  EXPECT_EQ(EndpointUrl("http://h:1", "/v1/models"), "http://h:1/v1/models");
  for (const char* bad : {"", "127.0.0.1:8000", "ftp://h/", "file:///etc/passwd", "http://", "http://h/?x=1",
                          "http://h/#frag"}) {
    auto r = CheckTargetUrl(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().where, "--target");
    }
  }
  // Credentials are refused and never repeated.
  auto cred = CheckTargetUrl("http://user:hunter2secret@h:1/");
  ASSERT_FALSE(cred.ok());
  EXPECT_EQ(cred.error().what.find("hunter2secret"), std::string::npos);
  EXPECT_EQ(cred.error().hint.find("hunter2secret"), std::string::npos);
  auto query = CheckTargetUrl("http://h:1/?api_key=hunter2secret");
  ASSERT_FALSE(query.ok());
  EXPECT_EQ(query.error().what.find("hunter2secret"), std::string::npos);
}

TEST(HttpTarget, RecordRoundTrip) {
  HttpTargetSpec t;
  t.url = "http://127.0.0.1:9";
  t.api = OpenAiApi::kChat;
  t.model = "m";
  t.stream = true;
  t.max_tokens = 12;
  t.max_in_flight = 8;
  t.api_key_env = "SERVICE_KEY";
  const json j = HttpTargetToJson(t);
  auto back = HttpTargetFromJson(j, "run.json");
  ASSERT_TRUE(back.ok()) << back.error().what;
  EXPECT_EQ(json(HttpTargetToJson(back.value())), j);
  for (const char* key : {"url", "api", "model", "stream", "max_tokens", "max_in_flight"}) {
    json broken = j;
    broken.erase(key);
    EXPECT_FALSE(HttpTargetFromJson(broken, "run.json").ok()) << key;
  }
  json wrong = j;
  wrong["max_in_flight"] = 5000;
  EXPECT_FALSE(HttpTargetFromJson(wrong, "run.json").ok());
}

// Nothing listens on the port: the probe is exit 3 naming the target, with nothing echoed but it.
TEST(HttpTarget, UnreachableIsEnvironment) {
  HttpTargetSpec t;
  t.url = "http://127.0.0.1:9";
  auto r = ProbeTarget(t, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kEnvironment);
  EXPECT_NE(r.error().where.find("127.0.0.1:9"), std::string::npos);
}

}  // namespace
}  // namespace pilot
