// Fuzzes what pilot load --target reads from a service (openai_api.h, http_target.h): the first
// byte picks the parser, the second the API (embeddings, completions, chat). 0: a whole answer's
// body (ParseOpenAiBody); 1: a stream fed in pieces whose lengths the next bytes give
// (OpenAiStream); 2: a target as run.json records it (HttpTargetFromJson); 3: a --target URL
// (CheckTargetUrl).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pilot/load/http_target.h"
#include "pilot/load/openai_api.h"

namespace {

using namespace pilot;

void CheckAnswer(const OpenAiAnswer& a) {
  if (a.ok) {
    PILOT_FUZZ_CHECK(a.reason.empty());
    PILOT_FUZZ_CHECK(a.output_tokens <= kMaxAnswerTokens);
    PILOT_FUZZ_CHECK(a.token_ms.size() <= kMaxAnswerTokens);
  } else {
    const std::string& r = a.reason;
    PILOT_FUZZ_CHECK(r == http_reason::kBadResponse || r == http_reason::kTruncated ||
                     r == http_reason::kTooLarge);
    PILOT_FUZZ_CHECK(!a.detail.empty());
  }
  for (std::size_t k = 1; k < a.token_ms.size(); ++k) PILOT_FUZZ_CHECK(a.token_ms[k - 1] <= a.token_ms[k]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int which = data[0] % 4;
  const OpenAiApi api = static_cast<OpenAiApi>(data[1] % 3);
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  if (which == 0) {
    CheckAnswer(ParseOpenAiBody(api, text));
  } else if (which == 1) {
    OpenAiStream stream(api);
    // Pieces of 1..64 bytes, from the text itself, so that lines are split everywhere.
    double now = 0;
    std::size_t k = 0;
    while (k < text.size()) {
      const std::size_t len = 1 + static_cast<unsigned char>(text[k]) % 64;
      const bool fed = stream.Feed(text.substr(k, len), now);
      now += 0.5;
      k += len;
      if (!fed) {
        PILOT_FUZZ_CHECK(stream.failed());
        break;
      }
    }
    const bool done = stream.done();
    const OpenAiAnswer a = stream.Finish();
    CheckAnswer(a);
    if (a.ok) PILOT_FUZZ_CHECK(done);
  } else if (which == 2) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return 0;
    auto t = HttpTargetFromJson(j, "fuzz/run.json");
    if (!t.ok()) {
      PILOT_FUZZ_CHECK(t.error().kind == ErrorKind::kBadInput && !t.error().what.empty());
      return 0;
    }
    PILOT_FUZZ_CHECK(t.value().max_in_flight >= 1 && t.value().max_in_flight <= kMaxInFlight);
    auto again = HttpTargetFromJson(nlohmann::json(HttpTargetToJson(t.value())), "fuzz/run.json");
    PILOT_FUZZ_CHECK(again.ok());
  } else {
    auto url = CheckTargetUrl(std::string(text));
    if (url.ok()) {
      PILOT_FUZZ_CHECK(url.value().rfind("http://", 0) == 0 || url.value().rfind("https://", 0) == 0);
      // No query, and no credentials in the authority (an '@' in the path is a path's).
      const std::string& u = url.value();
      const std::size_t host = u.find("://") + 3;
      const std::string authority = u.substr(host, u.find('/', host) - host);
      PILOT_FUZZ_CHECK(u.find('?') == std::string::npos && authority.find('@') == std::string::npos);
    } else {
      PILOT_FUZZ_CHECK(url.error().where == "--target");
    }
  }
  return 0;
}
