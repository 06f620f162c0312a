// `pilot load --target URL` (http_target.h): libcurl's multi interface on one thread.
#include "pilot/load/http_target.h"

#include <curl/curl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <unordered_map>

#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/json_util.h"

namespace pilot {

namespace {

using ojson = nlohmann::ordered_json;
constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr std::size_t kMaxErrorBody = 1u << 20;  // a refusal's body: counted up to this, never kept
// What all open whole answers of a step may hold at once: past it, the answer that would pass it
// fails `response_too_large` (a server answering every request with 16 MiB cannot take 64 GiB).
constexpr std::size_t kMaxBufferedBytes = 256u << 20;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UrlHandle {
  CURLU* h = curl_url();
  ~UrlHandle() { curl_url_cleanup(h); }
  std::optional<std::string> Get(CURLUPart part) const {
    char* out = nullptr;
    if (curl_url_get(h, part, &out, 0) != CURLUE_OK || !out) return std::nullopt;
    std::string s(out);
    curl_free(out);
    return s;
  }
};

// One request on the wire.
struct Transfer {
  CURL* easy = nullptr;
  std::uint64_t id = 0;
  std::string body;
  std::string response;
  std::optional<OpenAiStream> stream;
  bool too_large = false;
  std::size_t dropped = 0;          // a refusal's bytes, counted, not kept
  std::size_t* buffered = nullptr;  // the step's bytes held by all open answers
  std::size_t charged = 0;          // this answer's share of them (its buffer's capacity)
  std::uint32_t sends = 0;          // the request went out this many times (a resend after a dead reuse)
  LoadClock* clock = nullptr;
  double start = 0;  // the step's start on the clock
  double deadline_ms = 0;
};

int OnSend(void* user, char*, char*, int, int) {
  ++static_cast<Transfer*>(user)->sends;
  return CURL_PREREQFUNC_OK;
}

long StatusOf(CURL* easy) {
  long code = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

std::size_t OnBody(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t bytes = size * n;
  const long status = StatusOf(t->easy);
  if (status == 200 && t->stream) {
    // A token's time: when its bytes reached the client.
    return t->stream->Feed(std::string_view(data, bytes), t->clock->NowMs() - t->start) ? bytes : 0;
  }
  if (status != 200) {
    // A refusal or an error: its status is the outcome; its body is not read into memory.
    t->dropped += bytes;
    if (t->dropped > kMaxErrorBody) {
      t->too_large = true;
      return 0;
    }
    return bytes;
  }
  const std::size_t need = t->response.size() + bytes;
  if (need > kMaxResponseBytes) {
    t->too_large = true;
    return 0;
  }
  if (need > t->response.capacity()) {
    // The memory taken, not the bytes kept, is charged to the step's budget.
    const std::size_t grow = std::min(std::max(need, 2 * t->response.capacity()), kMaxResponseBytes);
    if (t->buffered && *t->buffered + (grow - t->charged) > kMaxBufferedBytes) {
      t->too_large = true;
      return 0;
    }
    t->response.reserve(grow);
    if (t->buffered) *t->buffered += t->response.capacity() - t->charged;
    t->charged = t->response.capacity();
  }
  t->response.append(data, bytes);
  return bytes;
}

// The outcome of a transfer that ended with `code`.
void Settle(Transfer& t, CURLcode code, OpenAiApi api, std::uint64_t max_tokens, RequestRecord& r) {
  const long status = StatusOf(t.easy);
  auto fail = [&](std::string reason) {
    r.outcome = RequestOutcome::kFailed;
    r.reason = std::move(reason);
  };
  // A refusal is a refusal, however its body ended.
  if (status == 429 || status == 503) {
    r.outcome = RequestOutcome::kOverCapacity;
    r.reason = "http_" + std::to_string(status);
    return;
  }
  if (code == CURLE_OPERATION_TIMEDOUT && t.stream && t.stream->done() && !t.stream->failed()) {
    // The whole stream arrived ([DONE]); only the body's end did not: done when [DONE] came.
    code = CURLE_OK;
    r.finished_ms = std::max(r.started_ms, std::min(r.finished_ms, t.stream->done_ms()));
  } else if (code == CURLE_OPERATION_TIMEDOUT) {
    // At its deadline (libcurl's timer keeps milliseconds, and may fire a little before it); a
    // timeout settled well before the deadline is recorded when it was settled.
    r.outcome = RequestOutcome::kTimedOut;
    r.reason.clear();
    const double deadline = r.arrived_ms + t.deadline_ms;
    r.finished_ms = std::max(r.started_ms, r.finished_ms >= deadline - 5.0 ? deadline : r.finished_ms);
    return;
  }
  if (status != 0 && status != 200) {
    // The service judged the item itself (too long, unprocessable): rejected; any other status
    // (a wrong path or model, an internal error) fails the request.
    const bool item = status == 400 || status == 413 || status == 422;
    r.outcome = item ? RequestOutcome::kRejected : RequestOutcome::kFailed;
    r.reason = "http_" + std::to_string(status);
    return;
  }
  if (t.too_large) return fail(http_reason::kTooLarge);
  if (t.stream && t.stream->failed()) return fail(t.stream->Finish().reason);
  switch (code) {
    case CURLE_OK:
      break;
    case CURLE_PARTIAL_FILE:
      return fail(http_reason::kTruncated);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return fail(http_reason::kConnectFailed);
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return fail(http_reason::kConnectionReset);
    default:
      return fail(http_reason::kTransport);
  }
  if (status != 200) return fail(http_reason::kTransport);
  const OpenAiAnswer a = t.stream ? t.stream->Finish() : ParseOpenAiBody(api, t.response, max_tokens);
  if (!a.ok) return fail(a.reason);
  r.outcome = RequestOutcome::kCompleted;
  r.reason.clear();
  r.output_tokens = a.output_tokens;
  if (!a.token_ms.empty()) {
    r.ttft_ms = a.token_ms.front() - r.arrived_ms;
    for (std::size_t k = 1; k < a.token_ms.size(); ++k) r.itl_ms.push_back(a.token_ms[k] - a.token_ms[k - 1]);
    if (!r.itl_ms.empty())
      r.tpot_ms = (a.token_ms.back() - a.token_ms.front()) / static_cast<double>(a.token_ms.size() - 1);
  }
}

// --cacert: the bytes read when the option was checked, not the file again.
void SetCertificates(CURL* easy, const HttpTargetSpec& spec) {
  if (spec.cacert_pem.empty()) return;
  curl_blob blob{const_cast<char*>(spec.cacert_pem.data()), spec.cacert_pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob);
}

struct Headers {
  curl_slist* list = nullptr;
  Headers(const std::string& api_key, bool stream) {
    list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Expect:");
    if (stream) list = curl_slist_append(list, "Accept: text/event-stream");
    if (!api_key.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + api_key).c_str());
  }
  ~Headers() { curl_slist_free_all(list); }
};

}  // namespace

std::string LibcurlVersion() { return curl_version(); }

Result<std::string> CheckTargetUrl(const std::string& url) {
  auto bad = [](const std::string& what) {
    return BadInput("--target " + what, "--target",
                    "give the service's base URL, such as http://127.0.0.1:8000 (docs/load.md)");
  };
  if (url.empty() || url.size() > 2048) return bad("is empty or longer than 2048 characters");
  GlobalInit();
  UrlHandle u;
  if (!u.h || curl_url_set(u.h, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return bad("is not a URL with a scheme and a host");
  const auto scheme = u.Get(CURLUPART_SCHEME);
  if (!scheme || (*scheme != "http" && *scheme != "https")) return bad("is not http:// or https://");
  if (u.Get(CURLUPART_USER) || u.Get(CURLUPART_PASSWORD)) {
    return BadInput("--target carries a user name or password (not repeated here)", "--target",
                    "put a bearer token in an environment variable and name it with --api-key-env");
  }
  if (u.Get(CURLUPART_QUERY) || u.Get(CURLUPART_FRAGMENT))
    return bad("has a query or a fragment (not repeated here): give the base URL alone");
  if (!u.Get(CURLUPART_HOST)) return bad("has no host");
  auto whole = u.Get(CURLUPART_URL);
  if (!whole) return bad("is not a URL with a scheme and a host");
  std::string base = *whole;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string EndpointUrl(const std::string& base, const std::string& path) {
  const std::string v1 = "/v1";
  if (base.size() >= v1.size() && base.compare(base.size() - v1.size(), v1.size(), v1) == 0 &&
      path.rfind(v1, 0) == 0)
    return base + path.substr(v1.size());
  return base + path;
}

ojson HttpTargetToJson(const HttpTargetSpec& spec) {
  ojson j = {{"url", spec.url},
             {"api", OpenAiApiName(spec.api)},
             {"endpoint", OpenAiApiPath(spec.api)},
             {"model", spec.model}};
  if (spec.api != OpenAiApi::kEmbeddings) {
    j["stream"] = spec.stream;
    j["max_tokens"] = spec.max_tokens;
  }
  j["max_in_flight"] = spec.max_in_flight;
  j["api_key_env"] = spec.api_key_env.empty() ? ojson(nullptr) : ojson(spec.api_key_env);
  j["cacert"] = spec.cacert_file.empty() ? ojson(nullptr)
                                         : ojson{{"file", spec.cacert_file}, {"sha256", spec.cacert_sha256}};
  return j;
}

Result<HttpTargetSpec> HttpTargetFromJson(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& what) { return BadInput("its target " + what, where); };
  if (!j.is_object()) return bad("is not an object");
  HttpTargetSpec s;
  const auto url = StringAt(j, "url");
  if (!url || url->size() > 2048) return bad("has no url");
  s.url = *url;
  const auto api = StringAt(j, "api");
  const auto parsed = api ? OpenAiApiFromName(*api) : std::nullopt;
  if (!parsed) return bad("has no api of embeddings, completions or chat");
  s.api = *parsed;
  const auto model = StringAt(j, "model");
  if (!model || model->size() > 256) return bad("has no model");
  s.model = *model;
  if (s.api != OpenAiApi::kEmbeddings) {
    if (!j.contains("stream") || !j["stream"].is_boolean()) return bad("has no stream");
    s.stream = j["stream"].get<bool>();
    const auto max_tokens = UnsignedAt(j, "max_tokens");
    if (!max_tokens || *max_tokens == 0 || *max_tokens > 1000000) return bad("has no max_tokens");
    s.max_tokens = *max_tokens;
  } else {
    s.stream = false;
  }
  const auto in_flight = UnsignedAt(j, "max_in_flight");
  if (!in_flight || *in_flight == 0 || *in_flight > kMaxInFlight) return bad("has no max_in_flight");
  s.max_in_flight = static_cast<std::size_t>(*in_flight);
  if (j.contains("api_key_env") && j["api_key_env"].is_string())
    s.api_key_env = j["api_key_env"].get<std::string>();
  if (j.contains("cacert") && !j["cacert"].is_null()) {
    const auto file = StringAt(j["cacert"], "file");
    const auto sha = StringAt(j["cacert"], "sha256");
    if (!file || file->empty() || file->size() > 4096 || !sha || !IsSha256Hex(*sha))
      return bad("has a cacert without its file and sha256");
    s.cacert_file = *file;
    s.cacert_sha256 = *sha;
  }
  return s;
}

Result<TargetProbe> ProbeTarget(const HttpTargetSpec& spec, const std::string& api_key) {
  GlobalInit();
  std::unique_ptr<CURL, void (*)(CURL*)> easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) return EnvironmentError("libcurl could not make a handle", "--target");
  Transfer t;
  t.easy = easy.get();
  Headers headers(api_key, false);
  const std::string url = EndpointUrl(spec.url, "/v1/models");
  curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(t.easy, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(t.easy, CURLOPT_PROTOCOLS_STR, "http,https");
  // Never a proxy from the environment: the key goes to --target alone.
  curl_easy_setopt(t.easy, CURLOPT_PROXY, "");
  SetCertificates(t.easy, spec);
  const CURLcode code = curl_easy_perform(t.easy);
  const long status = StatusOf(t.easy);
  if (status == 0) {
    return EnvironmentError("the target cannot be reached: " + std::string(curl_easy_strerror(code)),
                            "--target " + spec.url,
                            "start the service first, or check the host, port and scheme; no load folder "
                            "was created");
  }
  TargetProbe probe;
  probe.status = status;
  std::vector<std::string>& ids = probe.models;
  if (status != 200 || t.too_large) return probe;
  auto parsed = ParseJson(t.response, "the target's /v1/models");
  if (!parsed.ok() || !parsed.value().is_object() || !parsed.value().contains("data") ||
      !parsed.value()["data"].is_array())
    return probe;
  for (const auto& m : parsed.value()["data"]) {
    if (ids.size() >= 64) break;
    if (auto id = m.is_object() ? StringAt(m, "id") : std::nullopt; id && !id->empty() && id->size() <= 256)
      ids.push_back(*id);
  }
  return probe;
}

LoadStepResult RunHttpStep(const LoadStep& step, const HttpTargetSpec& spec, const std::string& api_key,
                           const std::vector<std::string>& texts, const std::vector<std::string>& rejection,
                           double deadline_ms, LoadClock& clock, const std::function<bool()>& should_stop,
                           const LoadTick& on_tick) {
  LoadStepResult out;
  auto& records = out.records;
  const std::size_t items = rejection.size();
  if (items == 0 || texts.size() != items) return out;
  GlobalInit();
  // A socket per open request: the soft limit on open files raised toward the hard one, so that
  // the bound, not the default 1,024 descriptors, limits the requests open at once.
  if (struct rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const rlim_t want = static_cast<rlim_t>(std::max(step.concurrency, spec.max_in_flight) + 256);
    if (files.rlim_cur < want) {
      files.rlim_cur = files.rlim_max == RLIM_INFINITY ? want : std::min(want, files.rlim_max);
      setrlimit(RLIMIT_NOFILE, &files);
    }
  }
  const double cpu_start = ThreadCpuSeconds();
  const double limit_ms = deadline_ms > 0 ? deadline_ms : kNoDeadlineLimitMs;
  const std::size_t bound =
      step.mode == LoadMode::kConcurrency ? std::max<std::size_t>(1, step.concurrency) : spec.max_in_flight;
  std::unique_ptr<CURLM, CURLMcode (*)(CURLM*)> multi(curl_multi_init(), curl_multi_cleanup);
  curl_multi_setopt(multi.get(), CURLMOPT_MAXCONNECTS, static_cast<long>(bound));
  Headers headers(api_key, spec.stream && spec.api != OpenAiApi::kEmbeddings);
  const std::string url = EndpointUrl(spec.url, OpenAiApiPath(spec.api));
  OpenAiRequestSpec request{spec.api, spec.model, spec.max_tokens,
                            spec.stream && spec.api != OpenAiApi::kEmbeddings};
  // Each item's body, made once.
  std::vector<std::string> bodies(items);
  for (std::size_t i = 0; i < items; ++i) {
    if (rejection[i].empty()) bodies[i] = OpenAiRequestBody(request, texts[i]);
  }
  // Handles are kept and reused (with the multi handle's connections).
  std::vector<std::unique_ptr<Transfer>> idle;
  std::size_t buffered = 0;  // bytes held by the open whole answers
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> open;
  auto cleanup = [&] {
    for (auto& [easy, t] : open) {
      curl_multi_remove_handle(multi.get(), easy);
      curl_easy_cleanup(easy);
    }
    for (auto& t : idle) curl_easy_cleanup(t->easy);
  };

  StepIssuing is(step, bound);
  const double start = clock.NowMs();
  double reached = 0;
  auto now_rel = [&] { return std::max(clock.NowMs() - start, reached); };
  double stopped_at = kNever;
  auto may_issue = [&](double at) { return is.May(at, records.size()); };
  double& next_arrival = is.next_arrival;
  auto& clients = is.clients;
  std::size_t done = 0;
  auto ended = [&](double at) {
    ++done;
    is.Ended(at);
  };
  auto issue = [&](double at) {
    RequestRecord r;
    r.id = records.size();
    r.item = static_cast<std::size_t>(r.id % items);
    r.arrived_ms = r.started_ms = r.finished_ms = at;
    out.issue_ms = std::max(out.issue_ms, at);
    const double now = now_rel();
    if (!rejection[r.item].empty()) {
      r.outcome = RequestOutcome::kRejected;
      r.reason = rejection[r.item];
    } else if (now - at >= limit_ms) {
      // The client fell behind by a whole deadline: the request could only time out.
      r.outcome = RequestOutcome::kTimedOut;
      r.started_ms = r.finished_ms = at + limit_ms;
    } else if (open.size() >= spec.max_in_flight && step.mode == LoadMode::kRate) {
      r.outcome = RequestOutcome::kFailed;
      r.reason = http_reason::kClientBound;
    } else {
      std::unique_ptr<Transfer> t;
      if (!idle.empty()) {
        t = std::move(idle.back());
        idle.pop_back();
        curl_easy_reset(t->easy);
      } else {
        t = std::make_unique<Transfer>();
        t->easy = curl_easy_init();
      }
      if (!t->easy) {
        r.outcome = RequestOutcome::kFailed;
        r.reason = http_reason::kTransport;
        const double end = r.finished_ms;
        records.push_back(std::move(r));
        ended(end);
        return;
      }
      t->id = r.id;
      t->too_large = false;
      t->dropped = 0;
      t->buffered = &buffered;
      t->sends = 0;
      t->stream.reset();
      if (request.stream) t->stream.emplace(spec.api, spec.max_tokens);
      t->clock = &clock;
      t->start = start;
      t->deadline_ms = limit_ms;
      const std::string& body = bodies[r.item];
      CURL* e = t->easy;
      curl_easy_setopt(e, CURLOPT_URL, url.c_str());
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.list);
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(e, CURLOPT_PROXY, "");  // never a proxy from the environment
      SetCertificates(e, spec);
      // The connection, the request and its answer: all within the request's deadline.
      const long remaining = std::max(1L, static_cast<long>(std::ceil(limit_ms - (now - at))));
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, remaining);
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, remaining);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnBody);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
      curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
      curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, OnSend);
      curl_easy_setopt(e, CURLOPT_PREREQDATA, t.get());
      r.started_ms = now;
      if (curl_multi_add_handle(multi.get(), e) != CURLM_OK) {
        r.outcome = RequestOutcome::kFailed;
        r.reason = http_reason::kTransport;
        r.finished_ms = now;
        idle.push_back(std::move(t));
      } else {
        open.emplace(e, std::move(t));
        records.push_back(std::move(r));
        return;
      }
    }
    const double end = r.finished_ms;
    records.push_back(std::move(r));
    ended(end);
  };
  auto finish = [&](CURL* easy, CURLcode code, bool aborted) {
    auto it = open.find(easy);
    if (it == open.end()) return;
    std::unique_ptr<Transfer> t = std::move(it->second);
    open.erase(it);
    curl_multi_remove_handle(multi.get(), easy);
    RequestRecord& r = records[t->id];
    r.finished_ms = now_rel();
    r.batch = 1;
    r.resent = t->sends > 1 ? t->sends - 1 : 0;
    if (aborted) {
      r.outcome = RequestOutcome::kFailed;
      r.reason = http_reason::kInterrupted;
    } else {
      Settle(*t, code, spec.api, spec.max_tokens, r);
    }
    // The answer's memory goes back at once: an idle handle holds none.
    buffered -= std::min(buffered, t->charged);
    t->charged = 0;
    std::string().swap(t->response);
    if (r.outcome != RequestOutcome::kCompleted) r.batch = 0;
    const double end = r.finished_ms;
    idle.push_back(std::move(t));
    ended(end);
  };
  auto harvest = [&] {
    int running = 0;
    curl_multi_perform(multi.get(), &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi.get(), &left)) {
      if (m->msg == CURLMSG_DONE) finish(m->easy_handle, m->data.result, false);
    }
  };
  double next_tick = kLoadTickMs;
  while (true) {
    if (is.issuing() && should_stop && should_stop()) {
      stopped_at = now_rel();
      out.interrupted = is.Stop(stopped_at, records.size());
    }
    double now = now_rel();
    if (step.mode == LoadMode::kRate) {
      while (next_arrival <= now && may_issue(next_arrival)) {
        issue(next_arrival);
        is.Advance();
      }
      if (!may_issue(next_arrival)) next_arrival = kNever;
    } else {
      while (!clients.empty() && clients.top() <= now) {
        const double at = clients.top();
        clients.pop();
        if (may_issue(at)) issue(at);
      }
      if (!is.issuing() || records.size() >= is.most()) clients = {};
    }
    harvest();
    now = now_rel();
    if (now - stopped_at >= kStopGraceMs && !open.empty()) {
      std::vector<CURL*> left;
      for (auto& [easy, t] : open) left.push_back(easy);
      std::sort(left.begin(), left.end(), [&](CURL* a, CURL* b) { return open[a]->id < open[b]->id; });
      for (CURL* easy : left) finish(easy, CURLE_OK, true);
    }
    if (on_tick && now >= next_tick) {
      on_tick(now, records.size(), done);
      next_tick = now + kLoadTickMs;
    }
    double next = next_arrival;
    if (step.mode == LoadMode::kConcurrency && !clients.empty()) next = std::min(next, clients.top());
    if (!(next < kNever) && open.empty()) break;  // nothing open, nothing more to issue
    if (on_tick) next = std::min(next, next_tick);
    const double wait = next - now;
    if (open.empty()) {
      clock.SleepUntilMs(start + next);
      if (clock.NowMs() - start >= next - 1e-6) reached = std::max(reached, next);
    } else if (wait >= 2.0) {
      // Sockets, or the next arrival less a millisecond (the rest slept on the clock).
      int ready = 0;
      curl_multi_poll(multi.get(), nullptr, 0, static_cast<int>(std::min(wait - 1.0, 50.0)), &ready);
    } else if (wait > 0) {
      clock.SleepUntilMs(start + next);
      if (clock.NowMs() - start >= next - 1e-6) reached = std::max(reached, next);
    }
  }
  cleanup();
  for (const RequestRecord& r : records) out.duration_ms = std::max(out.duration_ms, r.finished_ms);
  out.client_cpu_ms = (ThreadCpuSeconds() - cpu_start) * 1000.0;
  return out;
}

}  // namespace pilot
