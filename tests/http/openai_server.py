#!/usr/bin/env python3
"""A small OpenAI-compatible HTTP test server on loopback, for the end-to-end tests of
`pilot load --target` and for bench/http-bench.sh.

It does not run a model. It replays outputs of the project's bundled models that the real
`pilot run` computed: completions of reverse-gpt2 (byte level: each completion character is
one streamed token; the end-of-sequence token adds no text but counts in `usage`) and the
vectors of langid-embed. Those come from a replay file or straight from finished run
folders. It can also answer every request with a fixed tiny response (--trivial), and inject
faults on a deterministic schedule, so that a client's handling of each can be tested.

Endpoints (as vLLM serves them): POST /v1/embeddings, /v1/completions, /v1/chat/completions
(streaming as Server-Sent Events when "stream": true); GET /v1/models, /health, /stats;
POST /stats/reset. Binds 127.0.0.1 only. Standard library + aiohttp (+ numpy for --from-run).

Options:
  --port N              port to bind (default 0: any free port)
  --port-file F         once listening, write the port (text + newline) to F, atomically
  --lifetime-s S        exit by itself after S seconds (default 600); SIGTERM/SIGINT exit too
  --model-name NAME     the model GET /v1/models lists (default pilot-test); any request
                        `model` is served and echoed; the first 16 distinct ones go in /stats
  --replay FILE         {"completions": {PROMPT: {"text", "tokens", "completion_tokens",
                        "finish_reason"[, "prompt_tokens"]}}, "embeddings": {INPUT: [floats]}}
  --from-run RUN_DIR    (repeatable) build the replay from a finished `pilot run` folder: a
                        generation run's accepted completions or an embedding run's accepted
                        vectors, keyed by the text of each item's input file
  --dump-replay FILE    write the replay built from --replay/--from-run to FILE and exit
  --trivial             answer every POST at once with a fixed tiny valid response
  --token-ms MS         delay between streamed tokens (default 0)
  --X-every K           fault X on the n-th POST to /v1/* when n % K == 0 (0: off); the first
                        that applies wins, in this order: reset, refuse (429), unavailable (503),
                        truncate, garbage, huge, slow. On the wire: reset, a TCP RST before any
                        response; refuse, 429 + Retry-After: 1; unavailable, 503; truncate, 200
                        then half the token events (a whole answer: half a body shorter than its
                        Content-Length) and a FIN; garbage, 200 whose body (SSE: one event, then
                        [DONE]) is not JSON; huge, 200 with M MiB of "x"; slow, the normal answer
                        after --slow-ms. reset, refuse and unavailable come before the body is
                        read; the others only for a valid request (else 400)
  --huge-mb M           size of a `huge` body in MiB (default 64)
  --slow-ms MS          delay of a `slow` answer (default 1000)
  --verbose             one line per fault (and per vanished client) on stderr
  --tls-cert F, --tls-key F  serve HTTPS with this certificate and key (PEM)

In a replay, "tokens" defaults to the text's characters and "completion_tokens" to their
count (+1 for finish_reason "eos", whose token has no text); max_tokens below completion_tokens
cuts the answer there with finish_reason "length"; "eos" is answered as "stop", as vLLM says.
A prompt or input not in the replay is answered 400 (invalid_request_error). /stats holds
counters where every POST to /v1/* lands in exactly one of completed, refused_429,
unavailable_503, truncated, reset, garbage, huge, bad_request, client_gone (`slow` and
`streamed` count alongside).
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import signal
import socket
import struct
import sys
import time

from aiohttp import web

MiB = 1 << 20
MAX_BODY = MiB
MAX_MODELS = 16
ENDPOINTS = ("/v1/embeddings", "/v1/completions", "/v1/chat/completions")
FAULTS = ("reset", "refuse", "unavailable", "truncate", "garbage", "huge", "slow")
OUTCOMES = ("completed", "refused_429", "unavailable_503", "truncated", "reset", "garbage",
            "huge", "bad_request", "client_gone")
GARBAGE = b'{"choices": [ not json'
DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def sse(obj):
    return b"data: " + dumps(obj) + b"\n\n"


def error_body(status, message, kind="invalid_request_error"):
    return dumps({"error": {"message": message, "type": kind, "code": status}})


class BadRequest(Exception):
    pass


class Answer:
    """A rendered 200 answer: `body` (non-streaming) or `events` (SSE), whose first `ntok`
    events are the token events (what a truncated stream sends half of)."""
    __slots__ = ("body", "events", "ntok", "joined")

    def __init__(self, body=None, events=None, ntok=0):
        self.body, self.events, self.ntok = body, events, ntok
        self.joined = b"".join(events) if events is not None else None


# ---- the replay ----------------------------------------------------------------------------

class Replay:
    def __init__(self):
        self.completions = {}  # prompt -> (tokens, completion_tokens, finish_reason, prompt_tokens|None)
        self.embeddings = {}   # input -> (json text of the vector, float32 little-endian bytes)

    def add_completion(self, prompt, text, tokens, completion_tokens, finish_reason, prompt_tokens=None):
        if tokens is None:
            tokens = list(text)
        if "".join(tokens) != text:
            raise ValueError("tokens do not join to the text")
        if completion_tokens is None:
            completion_tokens = len(tokens) + (1 if finish_reason in ("eos", "stop") else 0)
        self.completions[prompt] = (tuple(tokens), int(completion_tokens), finish_reason, prompt_tokens)

    def add_embedding(self, text, values):
        values = [float(v) for v in values]
        self.embeddings[text] = (json.dumps(values), struct.pack("<%df" % len(values), *values), values)

    def load_file(self, path):
        with open(path, "rb") as f:
            doc = json.loads(f.read())
        if not isinstance(doc, dict):
            raise ValueError("the replay is not a JSON object")
        for prompt, c in (doc.get("completions") or {}).items():
            if not isinstance(c, dict) or not isinstance(c.get("text"), str):
                raise ValueError("completion for a prompt of %d bytes has no text" % len(prompt.encode()))
            tokens = c.get("tokens")
            if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
                raise ValueError("completion tokens must be a list of strings")
            ct, pt = c.get("completion_tokens"), c.get("prompt_tokens")
            for v in (ct, pt):
                if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                    raise ValueError("completion_tokens/prompt_tokens must be non-negative integers")
            self.add_completion(prompt, c["text"], tokens, ct, str(c.get("finish_reason", "eos")), pt)
        for text, vec in (doc.get("embeddings") or {}).items():
            if not isinstance(vec, list) or not vec or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in vec):
                raise ValueError("embedding for an input of %d bytes is not a list of numbers" % len(text.encode()))
            self.add_embedding(text, vec)

    def load_run(self, run_dir, warn):
        """A finished `pilot run` folder: data/run.json names the manifest copy (manifest_copy)
        and plan.inputs_root, the folder the manifest's item paths are relative to (the
        manifest's own folder); data/results.jsonl has one record per id; an embedding's
        accepted record carries `row`, its row in data/vectors.npy (plan.vectors)."""
        data = os.path.join(run_dir, "data")
        with open(os.path.join(data, "run.json"), "rb") as f:
            run = json.loads(f.read())
        kind = run.get("folder_kind", "run")
        if kind not in ("run", "merged"):
            raise ValueError("%s is a %s folder, not a run" % (run_dir, kind))
        results_path = os.path.join(data, "results.jsonl")
        if not os.path.exists(results_path):
            raise ValueError("%s has no data/results.jsonl (state %s): not a finished run"
                             % (run_dir, run.get("state", "?")))
        plan = run.get("plan") or {}
        if plan.get("output", "generation") not in ("generation", "embedding"):
            raise ValueError("%s is a %s run: only generation and embedding runs are replayed"
                             % (run_dir, plan["output"]))
        with open(os.path.join(run_dir, run.get("manifest_copy") or "data/manifest.json"), "rb") as f:
            items = {it["id"]: it for it in json.loads(f.read())["items"]}
        root = plan.get("inputs_root") or os.path.dirname(plan.get("manifest") or "")
        if not root or not os.path.isdir(root):
            raise ValueError("%s: the inputs root %r (run.json plan.inputs_root) is not a folder here"
                             % (run_dir, root))
        with open(results_path, "rb") as f:
            results = [json.loads(line) for line in f if line.strip()]
        vectors = None
        added = 0
        for r in results:
            if r.get("status") != "accepted":
                continue
            item = items.get(r.get("id"))
            if item is None:
                warn("%s: result %r is not in the manifest copy; skipped" % (run_dir, r.get("id")))
                continue
            try:
                with open(os.path.join(root, item["path"]), "rb") as f:
                    raw = f.read()
            except OSError as e:
                warn("%s: input of %s unreadable (%s); skipped" % (run_dir, r["id"], e.strerror))
                continue
            if item.get("sha256") and hashlib.sha256(raw).hexdigest() != item["sha256"]:
                warn("%s: input of %s changed since the run; skipped" % (run_dir, r["id"]))
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                warn("%s: input of %s is not UTF-8; skipped" % (run_dir, r["id"]))
                continue
            if "completion" in r:
                ids = r.get("completion_ids")
                tokens = None
                if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                    # reverse-gpt2 is byte level: an id < 256 is one byte, eos (256) no text.
                    import codecs
                    dec = codecs.getincrementaldecoder("utf-8")("replace")
                    tokens = [t for t in (dec.decode(bytes([i])) for i in ids if 0 <= i < 256) if t]
                    if "".join(tokens) != r["completion"]:
                        tokens = None
                self.add_completion(text, r["completion"], tokens, r.get("completion_tokens"),
                                    r.get("finish_reason", "eos"), r.get("tokens"))
                added += 1
            elif "row" in r:
                if vectors is None:
                    import numpy as np
                    vectors = np.load(os.path.join(run_dir, plan.get("vectors") or "data/vectors.npy"),
                                      mmap_mode="r", allow_pickle=False)
                row = vectors[int(r["row"])]
                if r.get("vector_sha256") and hashlib.sha256(row.tobytes()).hexdigest() != r["vector_sha256"]:
                    warn("%s: row %d of vectors.npy does not match %s's vector_sha256; skipped"
                         % (run_dir, r["row"], r["id"]))
                    continue
                self.add_embedding(text, row.astype("float64").tolist())
                added += 1
            else:
                raise ValueError("%s: %s is neither a generation nor an embedding result" % (run_dir, r["id"]))
        return added

    def to_json(self):
        return {"completions": {p: {"text": "".join(t), "tokens": list(t), "completion_tokens": ct,
                                    "finish_reason": fr, **({"prompt_tokens": pt} if pt is not None else {})}
                                for p, (t, ct, fr, pt) in self.completions.items()},
                "embeddings": {k: v[2] for k, v in self.embeddings.items()}}


# ---- rendering -----------------------------------------------------------------------------

def completion_answer(chat, rid, created, model, ptoks, tokens, ctoks, fr, stream, include_usage):
    usage = {"prompt_tokens": ptoks, "completion_tokens": ctoks, "total_tokens": ptoks + ctoks}
    if not stream:
        text = "".join(tokens)
        choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                   "finish_reason": fr} if chat else
                  {"index": 0, "text": text, "logprobs": None, "finish_reason": fr})
        return Answer(body=dumps({"id": rid, "object": "chat.completion" if chat else "text_completion",
                                  "created": created, "model": model, "choices": [choice], "usage": usage}))
    head = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
            "created": created, "model": model}

    def choice(t, finish, first):
        if chat:
            delta = {"role": "assistant", "content": t} if first else {"content": t}
            return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return [{"index": 0, "text": t, "logprobs": None, "finish_reason": finish}]

    events = [sse({**head, "choices": choice(t, None, i == 0)}) for i, t in enumerate(tokens)]
    ntok = len(events)
    events.append(sse({**head, "choices": choice("", fr, ntok == 0)}))
    if include_usage:
        events.append(sse({**head, "choices": [], "usage": usage}))
    events.append(DONE)
    return Answer(events=events, ntok=ntok)


def embedding_answer(model, inputs, vec_jsons):
    ptoks = sum(len(s.encode()) for s in inputs)
    data = ",".join('{"object":"embedding","index":%d,"embedding":%s}' % (i, v) for i, v in enumerate(vec_jsons))
    return Answer(body=('{"object":"list","data":[%s],"model":%s,"usage":{"prompt_tokens":%d,"total_tokens":%d}}'
                        % (data, json.dumps(model), ptoks, ptoks)).encode())


# ---- the server ----------------------------------------------------------------------------

class Server:
    def __init__(self, args, replay):
        self.a, self.replay = args, replay
        self.every = [(f, getattr(args, f + "_every")) for f in FAULTS if getattr(args, f + "_every") > 0]
        self.token_s = args.token_ms / 1000.0
        self.t0 = int(time.time())
        self.huge_chunk = None
        self.reset_stats()
        if args.trivial:
            self.prepare_trivial()

    def reset_stats(self):
        self.n = 0
        self.c = {k: 0 for k in ("posts",) + OUTCOMES + ("slow", "streamed")}
        self.by_endpoint = {e: 0 for e in ENDPOINTS}
        self.models = []

    def stats(self):
        doc = dict(self.c)
        doc["by_endpoint"] = dict(self.by_endpoint)
        doc["models"] = list(self.models)
        doc["in_flight"] = self.c["posts"] - sum(self.c[k] for k in OUTCOMES)
        return doc

    def log(self, n, path, what):
        if self.a.verbose:
            print("openai_server: POST #%d %s: %s" % (n, path, what), file=sys.stderr, flush=True)

    def note_model(self, model):
        if isinstance(model, str) and len(self.models) < MAX_MODELS and model not in self.models:
            self.models.append(model[:256])

    # --trivial: every answer rendered once, up front.
    def prepare_trivial(self):
        name, toks = self.a.model_name, ("o", "k")
        self.trivial = {}
        for ep, chat in (("/v1/completions", False), ("/v1/chat/completions", True)):
            rid = ("chatcmpl-" if chat else "cmpl-") + "trivial"
            for stream, usage in ((False, False), (True, False), (True, True)):
                self.trivial[ep, stream, usage] = completion_answer(chat, rid, self.t0, name, 1, toks, 2,
                                                                    "stop", stream, usage)
        self.trivial_vec = "[0.5,0.5,0.5,0.5]"
        self.trivial["/v1/embeddings", False, False] = embedding_answer(name, ["x"], [self.trivial_vec])

    RE_STREAM = re.compile(rb'"stream"\s*:\s*true')
    RE_USAGE = re.compile(rb'"include_usage"\s*:\s*true')
    RE_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,256})"')
    RE_LIST_INPUT = re.compile(rb'"input"\s*:\s*\[')

    def trivial_answer(self, path, body):
        if len(self.models) < MAX_MODELS:
            m = self.RE_MODEL.search(body)
            if m:
                self.note_model(m.group(1).decode("utf-8", "replace"))
        if path == "/v1/embeddings":
            if self.RE_LIST_INPUT.search(body):
                try:
                    k = min(max(len(json.loads(body)["input"]), 1), 2048)
                except Exception:
                    k = 1
                return embedding_answer(self.a.model_name, ["x"] * k, [self.trivial_vec] * k), False
            return self.trivial["/v1/embeddings", False, False], False
        stream = bool(self.RE_STREAM.search(body))
        usage = stream and bool(self.RE_USAGE.search(body))
        return self.trivial[path, stream, usage], stream

    # A replayed answer for a parsed request; raises BadRequest.
    def replay_answer(self, path, body, n):
        try:
            req = json.loads(body)
        except Exception:
            raise BadRequest("the request body is not valid JSON")
        if not isinstance(req, dict):
            raise BadRequest("the request body is not a JSON object")
        model = req.get("model", self.a.model_name)
        if not isinstance(model, str):
            raise BadRequest("'model' must be a string")
        if "model" in req:
            self.note_model(model)
        if path == "/v1/embeddings":
            inputs = req.get("input")
            if isinstance(inputs, str):
                inputs = [inputs]
            if not (isinstance(inputs, list) and 0 < len(inputs) <= 2048 and all(isinstance(s, str) for s in inputs)):
                raise BadRequest("'input' must be a string or a non-empty list of at most 2048 strings")
            fmt = req.get("encoding_format") or "float"
            if fmt not in ("float", "base64"):
                raise BadRequest("'encoding_format' must be float or base64")
            vecs = []
            for s in inputs:
                hit = self.replay.embeddings.get(s)
                if hit is None:
                    raise BadRequest("an input of %d bytes is not in the replay (%d inputs recorded)"
                                     % (len(s.encode()), len(self.replay.embeddings)))
                vecs.append(hit[0] if fmt == "float" else json.dumps(base64.b64encode(hit[1]).decode()))
            return embedding_answer(model, inputs, vecs), False
        chat = path == "/v1/chat/completions"
        if chat:
            msgs = req.get("messages")
            if not (isinstance(msgs, list) and msgs and all(isinstance(m, dict) for m in msgs)):
                raise BadRequest("'messages' must be a non-empty list of objects")
            users = [m for m in msgs if m.get("role") == "user"]
            if not users:
                raise BadRequest("'messages' has no user message")
            prompt = users[-1].get("content")
            if isinstance(prompt, list):  # content parts: their texts, joined
                if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                           for p in prompt):
                    raise BadRequest("only text content parts are served")
                prompt = "".join(p["text"] for p in prompt)
            max_tokens = req.get("max_completion_tokens", req.get("max_tokens"))
        else:
            prompt = req.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1:
                prompt = prompt[0]
            max_tokens = req.get("max_tokens")
        if not isinstance(prompt, str):
            raise BadRequest("the prompt must be a string" if not chat else "the user message's content must be a string")
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
            raise BadRequest("'max_tokens' must be an integer of at least 1")
        stream = req.get("stream", False)
        opts = req.get("stream_options")
        if not isinstance(stream, bool) or not (opts is None or isinstance(opts, dict)):
            raise BadRequest("'stream' must be a boolean and 'stream_options' an object")
        include_usage = bool(stream and opts and opts.get("include_usage") is True)
        hit = self.replay.completions.get(prompt)
        if hit is None:
            raise BadRequest("a prompt of %d bytes is not in the replay (%d prompts recorded)"
                             % (len(prompt.encode()), len(self.replay.completions)))
        tokens, ctoks, fr, ptoks = hit
        if max_tokens is not None and max_tokens < ctoks:
            tokens, ctoks, fr = tokens[:max_tokens], max_tokens, "length"
        fr = "stop" if fr == "eos" else fr  # what vLLM says for an end-of-sequence token
        if ptoks is None:
            ptoks = len(prompt.encode())
        rid = ("chatcmpl-%d" if chat else "cmpl-%d") % n
        return completion_answer(chat, rid, int(time.time()), model, ptoks, tokens, ctoks, fr,
                                 stream, include_usage), stream

    # ---- HTTP ----
    async def handle(self, request):
        method, path = request.method, request.path
        if method == "POST" and path.startswith("/v1/"):
            return await self.post(request, path)
        if method == "GET":
            if path == "/stats":
                return web.Response(body=dumps(self.stats()), content_type="application/json")
            if path == "/v1/models":
                return web.Response(body=dumps({"object": "list", "data": [
                    {"id": self.a.model_name, "object": "model", "created": self.t0, "owned_by": "pilot"}]}),
                    content_type="application/json")
            if path == "/health":
                return web.Response(status=200)
        if method == "POST" and path == "/stats/reset":
            self.reset_stats()
            return web.Response(body=b'{"reset":true}', content_type="application/json")
        return web.Response(status=404, body=error_body(404, "no such route", "not_found_error"),
                            content_type="application/json")

    async def send(self, request, status, body, ctype="application/json", headers=None, close=False):
        """Sends a whole response now; False when the client is gone."""
        resp = web.Response(status=status, body=body, content_type=ctype, headers=headers)
        if close:
            resp.force_close()
        try:
            await resp.prepare(request)
            await resp.write_eof()
            return resp, True
        except ConnectionError:
            return resp, False

    async def post(self, request, path):
        self.n += 1
        n = self.n
        self.c["posts"] += 1
        if path in self.by_endpoint:
            self.by_endpoint[path] += 1
        else:
            self.by_endpoint["other"] = self.by_endpoint.get("other", 0) + 1
        done = []

        def count(outcome):
            if not done:
                done.append(outcome)
                self.c[outcome] += 1

        try:
            return await self.serve(request, path, n, count)
        except asyncio.CancelledError:
            count("client_gone")
            raise
        except ConnectionError:
            count("client_gone")
            self.log(n, path, "client gone")
            return web.Response()
        except Exception as e:  # a bug here: never crash, never leave the request uncounted
            count("bad_request")
            print("openai_server: POST #%d %s: internal error %r" % (n, path, e), file=sys.stderr, flush=True)
            return web.Response(status=500, body=error_body(500, "internal error", "server_error"),
                                content_type="application/json")

    async def serve(self, request, path, n, count):
        if path not in ENDPOINTS:
            count("bad_request")
            return web.Response(status=404, body=error_body(404, "no such endpoint: %s" % path[:200], "not_found_error"),
                                content_type="application/json")
        fault = next((f for f, k in self.every if n % k == 0), None)
        if fault:
            self.log(n, path, fault)
        if fault == "reset":
            count("reset")
            tr = request.transport
            if tr is not None:
                try:
                    tr.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except (OSError, AttributeError):
                    pass
                tr.abort()
            return web.Response()  # never sent: the connection is gone
        if fault == "refuse":
            count("refused_429")
            return (await self.send(request, 429, error_body(429, "too many requests (injected)", "rate_limit_exceeded"),
                                    headers={"Retry-After": "1"}))[0]
        if fault == "unavailable":
            count("unavailable_503")
            return (await self.send(request, 503, error_body(503, "service unavailable (injected)", "service_unavailable")))[0]

        if request.content_length is not None and request.content_length > MAX_BODY:
            count("bad_request")
            return (await self.send(request, 413, error_body(413, "request body over %d bytes" % MAX_BODY), close=True))[0]
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            count("bad_request")
            return (await self.send(request, 413, error_body(413, "request body over %d bytes" % MAX_BODY), close=True))[0]
        except ConnectionError:
            raise
        except Exception:
            count("bad_request")
            return (await self.send(request, 400, error_body(400, "unreadable request body"), close=True))[0]

        if fault == "slow":
            self.c["slow"] += 1
            await asyncio.sleep(self.a.slow_ms / 1000.0)
            tr = request.transport
            if tr is None or tr.is_closing():
                count("client_gone")
                self.log(n, path, "slow: client gone")
                return web.Response()
        try:
            if self.a.trivial:
                answer, stream = self.trivial_answer(path, body)
            else:
                answer, stream = self.replay_answer(path, body, n)
        except BadRequest as e:
            count("bad_request")
            return (await self.send(request, 400, error_body(400, str(e))))[0]

        if fault == "garbage":
            count("garbage")
            if stream:
                self.c["streamed"] += 1
                return (await self.send(request, 200, b"data: " + GARBAGE + b"\n\n" + DONE, "text/event-stream"))[0]
            return (await self.send(request, 200, GARBAGE))[0]
        if fault == "huge":
            count("huge")
            return await self.huge(request, stream)
        if fault == "truncate":
            count("truncated")
            return await self.truncate(request, answer, stream)

        if not stream:
            resp, ok = await self.send(request, 200, answer.body)
        else:
            self.c["streamed"] += 1
            resp, ok = await self.stream(request, answer)
        count("completed" if ok else "client_gone")
        if not ok:
            self.log(n, path, "client gone")
        return resp

    async def start_stream(self, request):
        resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        return resp

    async def stream(self, request, answer):
        try:
            resp = await self.start_stream(request)
            if not self.token_s and len(answer.events) > 1 and self.a.trivial:
                await resp.write(answer.joined)
            else:
                for i, ev in enumerate(answer.events):
                    if self.token_s and 0 < i < answer.ntok:
                        await asyncio.sleep(self.token_s)
                    await resp.write(ev)
                    await request.writer.drain()
            await resp.write_eof()
            return resp, True
        except ConnectionError:
            return web.Response(), False

    async def truncate(self, request, answer, stream):
        try:
            if stream:
                self.c["streamed"] += 1
                resp = await self.start_stream(request)
                for i, ev in enumerate(answer.events[:max(1, answer.ntok // 2)]):
                    if self.token_s and i:
                        await asyncio.sleep(self.token_s)
                    await resp.write(ev)
                    await request.writer.drain()
            else:
                body = answer.body
                resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
                resp.content_length = len(body)
                await resp.prepare(request)
                await resp.write(body[:max(1, len(body) // 2)])
                await request.writer.drain()
        except ConnectionError:
            return web.Response()
        if request.transport is not None:
            request.transport.close()  # a FIN: no [DONE], no chunked terminator, or a short body
        return resp

    async def huge(self, request, stream):
        if self.huge_chunk is None:
            self.huge_chunk = b"x" * MiB
        try:
            if stream:
                self.c["streamed"] += 1
                resp = await self.start_stream(request)
                await resp.write(b"data: ")
            else:
                resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
                resp.content_length = self.a.huge_mb * MiB
                await resp.prepare(request)
            for _ in range(self.a.huge_mb):
                await resp.write(self.huge_chunk)
            if stream:
                await resp.write(b"\n\n")
            await resp.write_eof()
            return resp
        except ConnectionError:
            return web.Response()


# ---- main ----------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--lifetime-s", type=float, default=600.0)
    p.add_argument("--model-name", default="pilot-test")
    p.add_argument("--replay")
    p.add_argument("--from-run", action="append", default=[])
    p.add_argument("--dump-replay")
    p.add_argument("--trivial", action="store_true")
    p.add_argument("--token-ms", type=float, default=0.0)
    for f in FAULTS:
        p.add_argument("--%s-every" % f, type=int, default=0, metavar="K")
    p.add_argument("--huge-mb", type=int, default=64)
    p.add_argument("--slow-ms", type=float, default=1000.0)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    a = p.parse_args(argv)
    if bool(a.tls_cert) != bool(a.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if not 0 <= a.port <= 65535:
        p.error("--port must be 0..65535")
    if not a.lifetime_s > 0:
        p.error("--lifetime-s must be > 0")
    if a.token_ms < 0 or a.slow_ms < 0 or a.huge_mb < 1:
        p.error("--token-ms and --slow-ms must be >= 0, --huge-mb >= 1")
    if any(getattr(a, f + "_every") < 0 for f in FAULTS):
        p.error("--X-every must be >= 0")
    if not (a.trivial or a.replay or a.from_run):
        p.error("give --trivial, --replay FILE or --from-run RUN_DIR")
    return a


async def serve_forever(server, a):
    if a.port_file and os.path.exists(a.port_file):
        os.remove(a.port_file)  # a stale one would name another server's port
    app = web.Application(client_max_size=MAX_BODY + 1)  # aiohttp refuses a body of >= this
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", a.port))
    ssl_context = None
    if a.tls_cert:
        import ssl
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_context.load_cert_chain(a.tls_cert, a.tls_key)
    site = web.SockSite(runner, sock, shutdown_timeout=0.5, backlog=1024, ssl_context=ssl_context)
    await site.start()
    port = sock.getsockname()[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, a.port_file)
    if a.verbose:
        print("openai_server: listening on 127.0.0.1:%d" % port, file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), a.lifetime_s)
    except asyncio.TimeoutError:
        print("openai_server: lifetime of %g s over, exiting" % a.lifetime_s, file=sys.stderr, flush=True)
    await runner.cleanup()


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    import logging
    logging.getLogger("aiohttp").setLevel(logging.WARNING if a.verbose else logging.CRITICAL + 1)
    logging.getLogger("asyncio").setLevel(logging.WARNING if a.verbose else logging.CRITICAL + 1)
    replay = Replay()

    def warn(msg):
        print("openai_server: warning: " + msg, file=sys.stderr, flush=True)

    try:
        if a.replay:
            replay.load_file(a.replay)
        for run_dir in a.from_run:
            if replay.load_run(run_dir, warn) == 0:
                warn("%s: no accepted item to replay" % run_dir)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        print("openai_server: cannot build the replay: %s" % e, file=sys.stderr)
        return 2
    if a.dump_replay:
        with open(a.dump_replay + ".tmp", "w") as f:
            json.dump(replay.to_json(), f, ensure_ascii=False, indent=1)
        os.replace(a.dump_replay + ".tmp", a.dump_replay)
        return 0
    try:
        asyncio.run(serve_forever(Server(a, replay), a))
    except OSError as e:
        print("openai_server: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
