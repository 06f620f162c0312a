#!/usr/bin/env python3
"""Self test of tests/http/openai_server.py (standard library only).

Starts the server several times at once (a small replay, --trivial with every fault, a short
--lifetime-s, a slow one whose client leaves, and, when the pilot binary exists, --from-run
on a generation and an embedding run folder it makes with `pilot run`) and checks each
behaviour over HTTP. Exits 0 on success, 1 with a message naming the failed check.

  python3 tests/http/openai_server_selftest.py [--source-dir REPO] [--pilot PATH] [--python PY]

--python: the interpreter for the server (it needs aiohttp and numpy); by default this one
if it has aiohttp, else /usr/bin/python3 (Debian's python3-aiohttp).
"""

import argparse
import http.client
import importlib.util
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "openai_server.py")
MiB = 1 << 20
CHECKS = [0]


class Fail(Exception):
    pass


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        raise Fail(what)


class Server:
    def __init__(self, py, tmp, name, args):
        self.name = name
        self.port_file = os.path.join(tmp, name + ".port")
        self.err_path = os.path.join(tmp, name + ".stderr")
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([py, SERVER, "--port-file", self.port_file] + args,
                                     stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err)
        self.port = None

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_port(self, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    text = f.read()
                check(text.endswith("\n") and text.strip().isdigit(), "%s: port file holds %r" % (self.name, text))
                self.port = int(text)
                return self.port
            if self.proc.poll() is not None:
                raise Fail("%s: server exited %s before listening:\n%s" % (self.name, self.proc.returncode, self.stderr()))
            time.sleep(0.02)
        raise Fail("%s: no port file after %.0f s" % (self.name, timeout))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise Fail("%s: did not exit within 5 s of SIGTERM" % self.name)
            check(rc == 0, "%s: exit status %s after SIGTERM:\n%s" % (self.name, rc, self.stderr()))
        err = self.stderr()
        check("Traceback" not in err, "%s: traceback on stderr:\n%s" % (self.name, err))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def request(port, method, path, body=None, headers=None, timeout=10, read=True):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h, encode_chunked="Transfer-Encoding" in h)
    r = c.getresponse()
    if not read:
        return c, r
    raw = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, raw


def post(port, path, obj, **kw):
    return request(port, "POST", path, obj, **kw)


def stats(port, settle=True):
    for _ in range(100):
        status, _, raw = request(port, "GET", "/stats")
        doc = json.loads(raw)
        if not settle or doc["in_flight"] == 0:
            return doc
        time.sleep(0.02)
    return doc


PARTITION = ("completed", "refused_429", "unavailable_503", "truncated", "reset", "garbage", "huge",
             "bad_request", "client_gone")


def check_partition(name, st):
    total = sum(st[k] for k in PARTITION)
    check(total == st["posts"], "%s: outcomes sum to %d, posts %d: %s" % (name, total, st["posts"], st))


def events(raw):
    """The data lines of an SSE body, in order."""
    out = []
    for block in raw.split(b"\n\n"):
        if block.strip():
            check(block.startswith(b"data: "), "an SSE event does not start with 'data: ': %r" % block[:80])
            out.append(block[len(b"data: "):])
    return out


def stream_content(raw, chat):
    """(token texts, finish_reason, usage or None) of a well-formed stream; checks [DONE] last."""
    evs = events(raw)
    check(evs and evs[-1] == b"[DONE]", "stream does not end with data: [DONE]: %r" % raw[-80:])
    tokens, finish, usage = [], None, None
    for i, e in enumerate(evs[:-1]):
        doc = json.loads(e)
        check(doc["object"] == ("chat.completion.chunk" if chat else "text_completion"), "chunk object %r" % doc["object"])
        if not doc["choices"]:
            usage = doc["usage"]
            continue
        ch = doc["choices"][0]
        if ch["finish_reason"] is not None:
            finish = ch["finish_reason"]
            continue
        if chat:
            check(("role" in ch["delta"]) == (i == 0), "only the first delta carries the role: %r" % ch)
            tokens.append(ch["delta"]["content"])
        else:
            tokens.append(ch["text"])
    return tokens, finish, usage


def completion_req(path, prompt, stream=False, usage=False, max_tokens=None, model="test-model"):
    req = {"model": model, "stream": stream}
    if path.endswith("chat/completions"):
        req["messages"] = [{"role": "system", "content": "x"}, {"role": "user", "content": prompt}]
        if max_tokens is not None:
            req["max_completion_tokens"] = max_tokens
    else:
        req["prompt"] = prompt
        if max_tokens is not None:
            req["max_tokens"] = max_tokens
    if usage:
        req["stream_options"] = {"include_usage": True}
    return req


def completion_text(path, raw):
    doc = json.loads(raw)
    ch = doc["choices"][0]
    text = ch["message"]["content"] if path.endswith("chat/completions") else ch["text"]
    return doc, text, ch["finish_reason"]


# ---- a small replay -------------------------------------------------------------------------

REPLAY = {
    "completions": {
        "pilot=": {"text": "tolip", "tokens": list("tolip"), "completion_tokens": 6, "finish_reason": "eos"},
        "ab=": {"text": "ba", "tokens": ["b", "a"], "completion_tokens": 3, "finish_reason": "eos"},
    },
    "embeddings": {"doc one": [0.25, -0.5, 1.0, 0.125], "doc two": [1.5, 2.0, -3.25, 0.0]},
}


def test_replay(port):
    st, h, raw = request(port, "GET", "/health")
    check(st == 200 and raw == b"", "GET /health: %s %r" % (st, raw))
    st, h, raw = request(port, "GET", "/v1/models")
    check(st == 200 and json.loads(raw)["data"][0]["id"] == "test-model" and json.loads(raw)["object"] == "list",
          "GET /v1/models: %s %r" % (st, raw))

    st, h, raw = post(port, "/v1/embeddings", {"model": "emb-model", "input": "doc one", "encoding_format": "float"})
    doc = json.loads(raw)
    check(st == 200 and doc["data"][0]["embedding"] == REPLAY["embeddings"]["doc one"] and doc["data"][0]["index"] == 0
          and doc["model"] == "emb-model" and doc["usage"]["prompt_tokens"] == 7 and doc["object"] == "list",
          "embedding of one string: %s %r" % (st, raw))
    st, h, raw = post(port, "/v1/embeddings", {"model": "emb-model", "input": ["doc two", "doc one"]})
    doc = json.loads(raw)
    check(st == 200 and [d["index"] for d in doc["data"]] == [0, 1]
          and doc["data"][0]["embedding"] == REPLAY["embeddings"]["doc two"]
          and doc["data"][1]["embedding"] == REPLAY["embeddings"]["doc one"], "embeddings of a list: %r" % raw)

    for path in ("/v1/completions", "/v1/chat/completions"):
        chat = "chat" in path
        st, h, raw = post(port, path, completion_req(path, "pilot="))
        doc, text, fr = completion_text(path, raw)
        check(st == 200 and text == "tolip" and fr == "stop" and doc["usage"] == {
            "prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}
              and doc["object"] == ("chat.completion" if chat else "text_completion") and doc["model"] == "test-model",
              "%s non-streaming: %s %r" % (path, st, raw))
        st, h, raw = post(port, path, completion_req(path, "pilot=", max_tokens=3))
        doc, text, fr = completion_text(path, raw)
        check(text == "tol" and fr == "length" and doc["usage"]["completion_tokens"] == 3,
              "%s max_tokens 3: %r" % (path, raw))
        st, h, raw = post(port, path, completion_req(path, "pilot=", max_tokens=6))
        doc, text, fr = completion_text(path, raw)
        check(text == "tolip" and fr == "stop", "%s max_tokens 6 (eos included): %r" % (path, raw))

        t0 = time.monotonic()
        st, h, raw = post(port, path, completion_req(path, "pilot=", stream=True, usage=True))
        took = time.monotonic() - t0
        check(st == 200 and h.get("content-type", "").startswith("text/event-stream")
              and h.get("transfer-encoding") == "chunked", "%s stream headers: %s %r" % (path, st, h))
        tokens, fr, usage = stream_content(raw, chat)
        check(tokens == list("tolip") and fr == "stop" and usage == {
            "prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}, "%s stream: %r" % (path, raw))
        check(took >= 0.035, "%s stream with --token-ms 10 took only %.3f s" % (path, took))
        st, h, raw = post(port, path, completion_req(path, "ab=", stream=True, max_tokens=1))
        tokens, fr, usage = stream_content(raw, chat)
        check(tokens == ["b"] and fr == "length" and usage is None, "%s stream, max_tokens 1, no usage: %r" % (path, raw))

    # Requests that must be refused with 400 (or 404, 413), each counted bad_request.
    secret = "a prompt that is not there " * 3
    st, h, raw = post(port, "/v1/completions", completion_req("/v1/completions", secret))
    err = json.loads(raw)["error"]
    check(st == 400 and err["type"] == "invalid_request_error" and err["code"] == 400 and secret not in err["message"]
          and str(len(secret)) in err["message"], "unknown prompt: %s %r" % (st, raw))
    st, h, raw = post(port, "/v1/embeddings", {"input": ["doc one", "nope"]})
    check(st == 400, "unknown embedding input: %s %r" % (st, raw))
    bad = [b"{not json", b"[1,2]", b"", json.dumps({"prompt": 3}).encode(), json.dumps({"messages": []}).encode(),
           json.dumps({"prompt": "pilot=", "max_tokens": 0}).encode(), json.dumps({"prompt": "pilot=", "stream": "yes"}).encode(),
           b"[" * 100000, b"\xff\xfe"]
    paths = ["/v1/completions", "/v1/completions", "/v1/embeddings", "/v1/completions", "/v1/chat/completions",
             "/v1/completions", "/v1/completions", "/v1/chat/completions", "/v1/embeddings"]
    for body, path in zip(bad, paths):
        st, h, raw = post(port, path, body)
        check(st == 400 and json.loads(raw)["error"]["code"] == 400, "malformed %r to %s: %s %r" % (body[:20], path, st, raw))
    st, h, raw = post(port, "/v1/nope", {"prompt": "pilot="})
    check(st == 404, "unknown endpoint: %s" % st)
    big = b'{"prompt": "' + b"a" * (MiB + 100) + b'"}'
    st, h, raw = post(port, "/v1/completions", big)
    check(st == 413 and json.loads(raw)["error"]["code"] == 413, "oversize body (Content-Length): %s %r" % (st, raw[:200]))
    st, h, raw = post(port, "/v1/completions", iter([big[:600000], big[600000:]]), headers={"Transfer-Encoding": "chunked"})
    check(st == 413, "oversize body (chunked): %s %r" % (st, raw[:200]))
    edge = b'{"prompt": "' + b"a" * (MiB - 14) + b'"}'  # exactly 1 MiB: read (and 400, not in the replay)
    st, h, raw = post(port, "/v1/completions", edge)
    check(len(edge) == MiB and st == 400, "a body of exactly 1 MiB: %s %r" % (st, raw[:200]))
    st, h, raw = post(port, "/v1/completions", iter([edge, b" "]), headers={"Transfer-Encoding": "chunked"})
    check(st == 413, "a chunked body of 1 MiB + 1: %s %r" % (st, raw[:200]))

    s = stats(port)
    check_partition("replay", s)
    check(s["posts"] == 28 and s["completed"] == 12 and s["bad_request"] == 16 and s["streamed"] == 4,
          "replay stats: %r" % s)
    check(s["by_endpoint"]["/v1/embeddings"] == 5 and s["by_endpoint"]["/v1/completions"] == 15
          and s["by_endpoint"]["/v1/chat/completions"] == 7
          and s["by_endpoint"].get("other") == 1, "replay by_endpoint: %r" % s["by_endpoint"])
    check(s["models"] == ["emb-model", "test-model"], "replay models: %r" % s["models"])
    st, h, raw = request(port, "POST", "/stats/reset")
    s = stats(port)
    check(st == 200 and s["posts"] == 0 and s["completed"] == 0 and s["models"] == [], "after /stats/reset: %r" % s)


# ---- --trivial with every fault -----------------------------------------------------------

FAULT_ARGS = ["--trivial", "--reset-every", "8", "--refuse-every", "7", "--unavailable-every", "6",
              "--truncate-every", "5", "--garbage-every", "4", "--huge-every", "9", "--huge-mb", "2",
              "--slow-every", "11", "--slow-ms", "300"]
EVERY = [("reset", 8), ("refuse", 7), ("unavailable", 6), ("truncate", 5), ("garbage", 4), ("huge", 9), ("slow", 11)]
ROUND = ["/v1/embeddings", "/v1/completions", "/v1/chat/completions", "/v1/completions", "/v1/chat/completions",
         "/v1/embeddings", "/v1/completions", "/v1/chat/completions", "/v1/completions", "/v1/completions",
         "/v1/chat/completions", "/v1/embeddings"]
OUTCOME = {None: "completed", "slow": "completed", "reset": "reset", "refuse": "refused_429",
           "unavailable": "unavailable_503", "truncate": "truncated", "garbage": "garbage", "huge": "huge"}


def expected_fault(n):
    return next((f for f, k in EVERY if n % k == 0), None)


def raw_post(port, path, obj):
    body = json.dumps(obj).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % (path.encode(), len(body)) + body)
    return s


def one_faulted(port, n, path, stream):
    fault = expected_fault(n)
    chat = "chat" in path
    req = {"model": "m", "input": "x"} if path == "/v1/embeddings" else completion_req(path, "anything", stream, usage=stream)
    what = "request %d (%s, %s): expected %s" % (n, path, "stream" if stream else "whole", fault or "no fault")
    if fault == "reset":
        s = raw_post(port, path, req)
        try:
            got = s.recv(65536)
            raise Fail("%s, got %r instead of a connection reset" % (what, got[:80]))
        except ConnectionResetError:
            pass
        finally:
            s.close()
        return
    t0 = time.monotonic()
    c, r = request(port, "POST", path, req, read=False)
    try:
        if fault == "truncate":
            try:
                got = r.read()
                raise Fail("%s, read %d bytes completely" % (what, len(got)))
            except http.client.IncompleteRead as e:
                part = e.partial
            check(r.status == 200, "%s: status %s" % (what, r.status))
            if stream:
                evs = [e for e in part.split(b"\n\n") if e]
                check(len(evs) >= 1 and evs[0].startswith(b"data: {") and b"[DONE]" not in part,
                      "%s: partial stream %r" % (what, part))
            else:
                check(int(r.getheader("Content-Length")) > len(part) > 0, "%s: partial body %r" % (what, part))
            return
        raw = r.read()
        st = r.status
        if fault == "refuse":
            check(st == 429 and r.getheader("Retry-After") == "1" and json.loads(raw)["error"]["code"] == 429,
                  "%s: %s %r" % (what, st, raw))
        elif fault == "unavailable":
            check(st == 503 and json.loads(raw)["error"]["code"] == 503, "%s: %s %r" % (what, st, raw))
        elif fault == "garbage":
            check(st == 200, "%s: status %s" % (what, st))
            if stream:
                evs = events(raw)
                check(evs[-1] == b"[DONE]" and len(evs) == 2, "%s: %r" % (what, raw))
                data = evs[0]
            else:
                check(r.getheader("Content-Type", "").startswith("application/json"), "%s: content type" % what)
                data = raw
            try:
                json.loads(data)
                raise Fail("%s: the garbage parses as JSON: %r" % (what, data))
            except ValueError:
                pass
        elif fault == "huge":
            check(st == 200 and len(raw) >= 2 * MiB, "%s: %s, %d bytes" % (what, st, len(raw)))
            if not stream:
                check(int(r.getheader("Content-Length")) == 2 * MiB, "%s: Content-Length %s" % (what, r.getheader("Content-Length")))
        else:
            check(st == 200, "%s: status %s %r" % (what, st, raw))
            if path == "/v1/embeddings":
                check(json.loads(raw)["data"][0]["embedding"] == [0.5] * 4, "%s: %r" % (what, raw))
            elif stream:
                tokens, fr, usage = stream_content(raw, chat)
                check("".join(tokens) == "ok" and len(tokens) == 2 and fr == "stop" and usage is not None,
                      "%s: %r" % (what, raw))
            else:
                check(completion_text(path, raw)[1] == "ok", "%s: %r" % (what, raw))
            if fault == "slow":
                check(time.monotonic() - t0 >= 0.29, "%s: answered after %.3f s" % (what, time.monotonic() - t0))
    finally:
        c.close()


def test_faults(port):
    for rnd in range(2):
        if rnd:
            request(port, "POST", "/stats/reset")
        counts = {k: 0 for k in PARTITION}
        slow = streamed = 0
        for i, path in enumerate(ROUND):
            n = i + 1
            stream = path != "/v1/embeddings" and (n % 2 == 1) != bool(rnd)
            one_faulted(port, n, path, stream)
            f = expected_fault(n)
            counts[OUTCOME[f]] += 1
            slow += f == "slow"
            streamed += stream and f not in ("reset", "refuse", "unavailable")
        s = stats(port)
        check_partition("faults round %d" % rnd, s)
        got = {k: s[k] for k in PARTITION}
        check(got == counts and s["posts"] == len(ROUND) and s["slow"] == slow and s["streamed"] == streamed,
              "faults round %d: stats %r, expected %r, slow %d, streamed %d" % (rnd, s, counts, slow, streamed))
    check(s["models"] == ["m", "test-model"], "trivial models: %r" % s["models"])
    # A list input gets one vector per item even in --trivial.
    request(port, "POST", "/stats/reset")
    st, h, raw = post(port, "/v1/embeddings", {"input": ["a", "b", "c"]})
    check(st == 200 and len(json.loads(raw)["data"]) == 3, "trivial list embedding: %r" % raw)


def test_slow_client_gone(port):
    s = raw_post(port, "/v1/completions", {"prompt": "x"})
    s.close()
    time.sleep(0.45)
    st, h, raw = post(port, "/v1/completions", {"prompt": "x"})
    check(st == 200, "slow request after a vanished one: %s" % st)
    s = stats(port)
    check_partition("slow", s)
    check(s["posts"] == 2 and s["slow"] == 2 and s["client_gone"] == 1 and s["completed"] == 1,
          "slow with a vanished client: %r" % s)


# ---- --from-run on real run folders -------------------------------------------------------

def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    check(data[:6] == b"\x93NUMPY", "%s is not .npy" % path)
    hlen = struct.unpack("<H", data[8:10])[0]
    import ast
    head = ast.literal_eval(data[10:10 + hlen].decode("latin-1"))
    rows, dim = head["shape"]
    code = {"<f4": "f", "<f2": "e"}[head["descr"]]
    size = struct.calcsize(code)
    flat = struct.unpack("<%d%s" % (rows * dim, code), data[10 + hlen:10 + hlen + rows * dim * size])
    return [list(flat[r * dim:(r + 1) * dim]) for r in range(rows)]


def make_run(pilot, source_dir, params, runs_dir):
    p = subprocess.run([pilot, "run", "--params", params, "--runs-dir", runs_dir], cwd=source_dir,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    check(p.returncode == 0, "pilot run --params %s: exit %s\n%s" % (params, p.returncode, p.stdout.decode(errors="replace")))
    folders = os.listdir(runs_dir)
    check(len(folders) == 1, "pilot run made %r in %s" % (folders, runs_dir))
    return os.path.join(runs_dir, folders[0])


def run_items(run_dir):
    """(prompt text or None, result) per result of a run folder, read the way the run recorded them."""
    with open(os.path.join(run_dir, "data", "run.json")) as f:
        root = json.load(f)["plan"]["inputs_root"]
    with open(os.path.join(run_dir, "data", "manifest.json")) as f:
        paths = {it["id"]: it["path"] for it in json.load(f)["items"]}
    out = []
    with open(os.path.join(run_dir, "data", "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            with open(os.path.join(root, paths[r["id"]]), "rb") as g:
                raw = g.read()
            try:
                out.append((raw.decode("utf-8"), r))
            except UnicodeDecodeError:
                out.append((None, r))
    return out


def test_from_run(port, gen_dir, emb_dir):
    served = 0
    for text, r in run_items(gen_dir):
        if text is None:
            continue
        for path in ("/v1/completions", "/v1/chat/completions"):
            st, h, raw = post(port, path, completion_req(path, text))
            if r["status"] != "accepted":
                check(st == 400, "a prompt the run rejected (%s) is served: %s" % (r["id"], st))
                continue
            doc, got, fr = completion_text(path, raw)
            check(st == 200 and got == r["completion"] and doc["usage"]["completion_tokens"] == r["completion_tokens"]
                  and fr == {"eos": "stop"}.get(r["finish_reason"], r["finish_reason"]),
                  "from-run %s %s: %r, run said %r" % (r["id"], path, raw, r))
            st, h, raw = post(port, path, completion_req(path, text, stream=True, usage=True))
            tokens, fr, usage = stream_content(raw, "chat" in path)
            check(tokens == list(r["completion"]) and usage["completion_tokens"] == r["completion_tokens"],
                  "from-run %s %s stream: %r" % (r["id"], path, raw))
            served += 1
    check(served >= 2, "from-run: only %d completions served" % served)
    vectors = read_npy(os.path.join(emb_dir, "data", "vectors.npy"))
    texts, want = [], []
    for text, r in run_items(emb_dir):
        if text is None or r["status"] != "accepted":
            continue
        texts.append(text)
        want.append(vectors[r["row"]])
    check(len(texts) >= 2, "from-run: only %d accepted embedding items" % len(texts))
    st, h, raw = post(port, "/v1/embeddings", {"model": "langid-embed", "input": texts})
    check(st == 200, "from-run embeddings: %s %r" % (st, raw[:300]))
    got = [d["embedding"] for d in json.loads(raw)["data"]]
    check(got == want, "from-run embeddings differ from data/vectors.npy")
    st, h, raw = post(port, "/v1/embeddings", {"input": texts[0] + " (changed)"})
    check(st == 400, "from-run: an input not in the run is served: %s" % st)
    check_partition("from-run", stats(port))


# ---- main ---------------------------------------------------------------------------------

def pick_python(arg):
    if arg:
        return arg
    if importlib.util.find_spec("aiohttp") is not None:
        return sys.executable
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3"
    raise Fail("no Python with aiohttp: give --python")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(HERE)))
    p.add_argument("--pilot")
    p.add_argument("--python")
    a = p.parse_args()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="openai-server-selftest-")
    servers = []
    try:
        py = pick_python(a.python)
        replay = os.path.join(tmp, "replay.json")
        with open(replay, "w") as f:
            json.dump(REPLAY, f)

        def start(name, args):
            s = Server(py, tmp, name, args + (["--lifetime-s", "60"] if "--lifetime-s" not in args else []))
            servers.append(s)
            return s

        replay_srv = start("replay", ["--replay", replay, "--model-name", "test-model", "--token-ms", "10"])
        fault_srv = start("faults", FAULT_ARGS)
        slow_srv = start("slow", ["--trivial", "--slow-every", "1", "--slow-ms", "300", "--verbose"])
        life_srv = start("lifetime", ["--trivial", "--lifetime-s", "1"])
        life_t0 = time.monotonic()

        pilot = a.pilot or os.path.join(a.source_dir, "build", "dev", "pilot")
        runs = None
        if os.path.exists(pilot):
            gen_dir = make_run(pilot, a.source_dir, "config/generate.json", os.path.join(tmp, "runs-gen"))
            emb_dir = make_run(pilot, a.source_dir, "config/embed.json", os.path.join(tmp, "runs-emb"))
            runs = start("from-run", ["--from-run", gen_dir, "--from-run", emb_dir])
        else:
            print("openai_server selftest: note: %s not found; --from-run not tested" % pilot)

        for s in servers:
            s.wait_port()
        test_replay(replay_srv.port)
        test_faults(fault_srv.port)
        test_slow_client_gone(slow_srv.port)
        check("slow: client gone" in slow_srv.stderr(), "--verbose logs no vanished client: %r" % slow_srv.stderr())
        if runs:
            test_from_run(runs.port, gen_dir, emb_dir)

        try:
            rc = life_srv.proc.wait(max(0.1, life_t0 + 6 - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise Fail("lifetime: a server with --lifetime-s 1 still runs after 6 s")
        check(rc == 0 and "lifetime" in life_srv.stderr(), "lifetime: exit %s, stderr %r" % (rc, life_srv.stderr()))
        check(not os.path.exists(life_srv.port_file + ".tmp"), "lifetime: a port .tmp file is left")
        for s in servers:
            s.stop()
        took = time.monotonic() - t0
        check(took < 20, "the self test took %.1f s (limit 20)" % took)
        print("openai_server selftest: ok, %d checks in %.1f s%s" % (CHECKS[0], took, "" if runs else " (without --from-run)"))
        return 0
    except Fail as e:
        print("openai_server selftest: FAILED: %s" % e, file=sys.stderr)
        for s in servers:
            if s.proc.poll() is not None or "Traceback" in s.stderr():
                print("--- %s server stderr:\n%s" % (s.name, s.stderr()[-3000:]), file=sys.stderr)
        return 1
    finally:
        for s in servers:
            s.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
