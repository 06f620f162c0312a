#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Usage: tests/fuzz/make_corpus.py RUN_DIR
  RUN_DIR: a finished run folder of the bundled default pilot (`pilot run --runs-dir D`),
  whose data/journal.jsonl, data/results.jsonl, data/run.json and manifest-sha256.txt are
  taken as the realistic seeds; data/pilot/manifest.json and config/pilot.json come from
  the repository. Every other seed is written from this file: valid variants and hostile
  inputs (deep nesting, duplicate keys, secrets in values, invalid UTF-8, CRLF, NUL bytes,
  wrong types, huge numbers). Reproducers of findings (regress-*) are never touched.
Rerunning rewrites the seeds (seed-*) byte for byte; the corpus is committed.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SHA_A = "a" * 64
SHA_0 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
GHP = "ghp_" + "Zx8Kq2Lm9Pw4Rt7Yv1Bn3Cd5Fg6Hj0"  # a token-shaped value, not a real token
DEEP = 100000  # nesting levels of the one large file per corpus (<= 200 KiB)


def b(s):
    return s if isinstance(s, bytes) else s.encode("utf-8")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    data = b(data)
    limit = 200 * 1024 if name.startswith("deep-") else 64 * 1024
    assert len(data) <= limit, (target, name, len(data))
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def nested(depth, inner="0"):
    return "[" * depth + inner + "]" * depth


def common_json(target, deep=True):
    """Hostile inputs that every JSON parser entry point must refuse cleanly."""
    write(target, "empty", b"")
    write(target, "array", "[]")
    write(target, "scalar-null", "null")
    if deep:  # the one large file of the corpus
        write(target, "deep-open-brackets", "[" * DEEP)
    write(target, "depth-64", nested(63))
    write(target, "depth-65", nested(65))
    write(target, "nul-bytes", b'{"a\x00":"\x00"}\x00')
    write(target, "invalid-utf8", b'{"name":"\xff\xfe\xc0\xaf\xed\xa0\x80"}')
    write(target, "lone-surrogate", '{"name":"\\ud800"}')
    write(target, "number-overflow", '{"n":1e999,"m":-1e999}')
    write(target, "truncated-string", '{"name":"abc')
    write(target, "trailing-garbage", '{} {}')


def manifest_json(run_dir):
    t = "manifest_json"
    real = read(os.path.join(ROOT, "data", "pilot", "manifest.json"))
    write(t, "real-pilot-docs.json", real)
    doc = json.loads(real)
    write(t, "compact.json", json.dumps(doc, separators=(",", ":")))
    write(t, "one-item.json", json.dumps({"items": [{"id": "a", "path": "a.txt", "sha256": SHA_0}]}))
    common_json(t)
    item = '{"id":"a","path":"a.txt","sha256":"%s"}' % SHA_A
    write(t, "dup-top-key.json", '{"name":"a","name":"b","items":[%s]}' % item)
    write(t, "dup-item-key.json", '{"items":[{"id":"a","id":"b","path":"a","sha256":"%s"}]}' % SHA_A)
    write(t, "dup-id.json", '{"items":[%s,%s]}' % (item, item))
    write(t, "secret-in-expected.json",
          '{"items":[{"id":"a","path":"a","sha256":"%s","expected":"%s"}]}' % (SHA_A, GHP))
    write(t, "both-expected.json", '{"items":[{"id":"a","path":"a","sha256":"%s","expected":"en",'
          '"expected_rejection":"empty_input"}]}' % SHA_A)
    write(t, "wrong-types.json", '{"name":5,"items":{}}')
    write(t, "item-wrong-types.json", '{"items":[{"id":5,"path":[],"sha256":null}]}')
    write(t, "items-not-objects.json", '{"items":[1,"a",[],null]}')
    write(t, "no-items.json", '{"name":"x","items":[]}')
    write(t, "unknown-field.json", '{"items":[{"id":"a","path":"a","sha256":"%s","extra":1}]}' % SHA_A)
    write(t, "upper-hex.json", '{"items":[{"id":"a","path":"a","sha256":"%s"}]}' % SHA_A.upper())
    write(t, "id-129.json", '{"items":[{"id":"%s","path":"a","sha256":"%s"}]}' % ("a" * 129, SHA_A))
    write(t, "id-nul-escape.json", '{"items":[{"id":"a\\u0000","path":"a","sha256":"%s"}]}' % SHA_A)
    write(t, "crlf.json", json.dumps(doc, indent=1).replace("\n", "\r\n"))
    write(t, "huge-number.json", '{"items":[],"buckets":4294967296,"n":18446744073709551616}')
    write(t, "unknown-rejection.json",
          '{"items":[{"id":"a","path":"a","sha256":"%s","expected_rejection":"nope"}]}' % SHA_A)


def manifest_jsonl(run_dir):
    t = "manifest_jsonl"
    doc = json.loads(read(os.path.join(ROOT, "data", "pilot", "manifest.json")))
    lines = [json.dumps(i, separators=(",", ":")) for i in doc["items"]]
    write(t, "real-pilot-docs.jsonl", "\n".join(lines) + "\n")
    write(t, "crlf.jsonl", "\r\n".join(lines[:3]) + "\r\n")
    write(t, "blank-lines.jsonl", "\n\n" + lines[0] + "\n \t\r\n\n" + lines[1] + "\n\n")
    write(t, "no-final-newline.jsonl", "\n".join(lines[:2]))
    write(t, "dup-id.jsonl", lines[0] + "\n" + lines[0] + "\n")
    common_json(t)
    write(t, "depth-70-second-line.jsonl", lines[0] + "\n" + nested(70) + "\n")
    write(t, "bad-second-line.jsonl", lines[0] + "\n{\"id\":\n" + lines[1] + "\n")
    write(t, "secret-in-path.jsonl", '{"id":"a","path":"%s","sha256":"%s"}\n' % (GHP, SHA_A))
    write(t, "dup-key.jsonl", '{"id":"a","id":"b","path":"a","sha256":"%s"}\n' % SHA_A)
    write(t, "wrong-types.jsonl", '{"id":1,"path":2,"sha256":3}\n[]\n{"type":5}\n')
    write(t, "invalid-utf8-line.jsonl", lines[0].encode() + b"\n\xff\xff\n")
    write(t, "nul-line.jsonl", lines[0].encode() + b"\n\x00\n")
    write(t, "id-quote-prefix.jsonl", '{"id":"a\\"b","path":"a","sha256":"%s"}\n' % SHA_A)


def params(run_dir):
    t = "params"
    real = read(os.path.join(ROOT, "config", "pilot.json"))
    write(t, "real-pilot.json", real)
    doc = json.loads(real)
    full = dict(doc)
    full["requires"] = {"backend": "cuda", "min_device_count": 1, "min_device_memory_mb": 40000,
                        "min_libtorch_version": "2.1", "min_free_disk_mb": 10000}
    full["acceptance"] = dict(doc["acceptance"], min_accepted_fraction=0.5)
    full["stage"] = dict(doc["stage"], options={"min_confidence": 0.5, "token_env": "HF_TOKEN"})
    write(t, "all-keys.json", json.dumps(full, indent=2))
    minimal = {"manifest": "m.json", "stage": {"kind": "k", "model": "m.pt"}, "allowed_categories": ["en"]}
    write(t, "minimal.json", json.dumps(minimal))
    common_json(t, deep=False)
    write(t, "deep-closed-in-description.json",
          '{"description":' + nested(DEEP - 10, "") + "}")
    write(t, "depth-65-in-options.json",
          '{"manifest":"m","stage":{"kind":"k","model":"m","options":{"x":%s}},"allowed_categories":["en"]}'
          % nested(65))
    write(t, "dup-key.json", '{"manifest":"a.json","manifest":"../../etc/passwd.json"}')
    write(t, "secret-value.json", json.dumps(dict(minimal, description=GHP)))
    write(t, "secret-key.json", json.dumps(dict(minimal, stage=dict(minimal["stage"], options={"api_key": "x"}))))
    write(t, "secret-url.json", json.dumps(dict(minimal, manifest="https://user:hunter2@example.com/m.json")))
    write(t, "private-key.json", json.dumps(dict(minimal, description="-----BEGIN RSA PRIVATE KEY-----")))
    write(t, "bad-env-name.json", json.dumps(dict(minimal, stage=dict(minimal["stage"], options={"hf_env": 5}))))
    write(t, "wrong-types.json", '{"manifest":1,"stage":[],"allowed_categories":"en","device":5}')
    write(t, "huge-numbers.json", json.dumps(dict(minimal, batch_size=4294967296, threads=-1,
                                                  seed=18446744073709551615)))
    write(t, "float-ints.json", json.dumps(dict(minimal, batch_size=1.5, seed=1e300,
                                                limits={"max_bytes": 1e12})))
    write(t, "versions.json", json.dumps(dict(minimal, requires={"min_libtorch_version": "99999999999.1.2+cu"})))
    write(t, "unknown-key.json", json.dumps(dict(minimal, devcie="cpu")))
    write(t, "dup-category.json", json.dumps(dict(minimal, allowed_categories=["en", "en", ""])))
    write(t, "crlf.json", json.dumps(doc, indent=2).replace("\n", "\r\n"))
    write(t, "invalid-utf8-value.json", b'{"manifest":"\xc3\x28.json","stage":{"kind":"k","model":"m"},'
          b'"allowed_categories":["en"]}')


def journal(run_dir):
    t = "journal"
    real = read(os.path.join(run_dir, "data", "journal.jsonl"))
    write(t, "real-run.jsonl", real)
    lines = real.split(b"\n")[:-1]
    header, session = lines[0], lines[1]
    results = [l for l in lines if b'"type":"result"' in l]
    batches = [l for l in lines if b'"type":"batch"' in l]
    write(t, "torn-last.jsonl", real[:-15])
    write(t, "torn-mid-header.jsonl", header[: len(header) // 2])
    write(t, "header-only.jsonl", header + b"\n")
    write(t, "crlf.jsonl", real.replace(b"\n", b"\r\n"))
    write(t, "blank-lines.jsonl", header + b"\n\n" + session + b"\n\n")
    write(t, "damaged-mid.jsonl", header + b"\n" + session + b"\n{garbage\n" + results[0] + b"\n")
    write(t, "two-results.jsonl", header + b"\n" + session + b"\n" + results[0] + b"\n" + results[0] + b"\n")
    write(t, "resumed.jsonl", real + session.replace(b'"resumed":false', b'"resumed":true') + b"\n")
    write(t, "no-header.jsonl", session + b"\n" + results[0] + b"\n")
    hdr = json.loads(header)
    write(t, "header-items-huge.jsonl", json.dumps(dict(hdr, items=18446744073709551616)) + "\n")
    write(t, "header-items-negative.jsonl", json.dumps(dict(hdr, items=-1)) + "\n")
    write(t, "header-wrong-types.jsonl", json.dumps(dict(hdr, run_id=5, plan=[])) + "\n")
    write(t, "header-dup-key.jsonl", header[:-1] + b',"run_id":"other"}\n')
    write(t, "type-number.jsonl", header + b'\n{"type":5}\n' + session + b"\n")
    write(t, "type-missing.jsonl", header + b'\n{"id":"a","status":"accepted"}\n')
    write(t, "at-unix-string.jsonl", header + b'\n{"type":"session","at_unix":"x"}\n'
          b'{"type":"batch","at_unix":"x","peak_rss_mb":"y","device_peak_mb":"z"}\n')
    write(t, "at-unix-extremes.jsonl", header + b'\n{"type":"session","at_unix":1e308}\n'
          b'{"type":"batch","at_unix":1.7e308,"peak_rss_mb":-5}\n{"type":"batch","at_unix":-1e308}\n')
    write(t, "result-wrong-types.jsonl", header + b"\n" + session +
          b'\n{"type":"result","id":5,"status":true}\n{"type":"result","id":"","status":"accepted"}\n')
    write(t, "result-fastpath-odd.jsonl", header + b"\n" + session +
          b'\n{"type":"result","id":"x","status":"accepted"\n{"type":"result","id":"y","status":"rejected"}\n')
    write(t, "array-record.jsonl", header + b"\n[]\n")
    write(t, "deep-open-brackets-record.jsonl", header + b"\n" + b"[" * (DEEP - 1000) + b"\n")
    write(t, "depth-65-record.jsonl", header + b"\n" + b'{"type":"session","x":' + nested(65).encode() + b"}\n")
    write(t, "nul-bytes.jsonl", header + b"\n\x00\n")
    write(t, "invalid-utf8.jsonl", header + b'\n{"type":"result","id":"\xff","status":"accepted"}\n')
    write(t, "secret-in-record.jsonl", header + b'\n{"type":"session","token":"' + GHP.encode() + b'"}\n')
    write(t, "empty", b"")
    write(t, "newline-only", b"\n")


def manifest_lines(run_dir):
    t = "manifest_lines"
    real = read(os.path.join(run_dir, "manifest-sha256.txt"))
    write(t, "real-manifest-sha256.txt", real)
    tag = os.path.join(run_dir, "tagmanifest-sha256.txt")
    if os.path.exists(tag):
        write(t, "real-tagmanifest-sha256.txt", read(tag))
    first = real.split(b"\n")[0]
    sha, path = first.split(b"  ", 1)
    write(t, "crlf.txt", real.replace(b"\n", b"\r\n"))
    write(t, "binary-marker.txt", sha + b" *" + path + b"\n")
    write(t, "tab-separated.txt", sha + b"\t" + path + b"\n")
    write(t, "blank-lines.txt", b"\n\n" + first + b"\n\n\r\n" + first + b"\n")
    write(t, "no-final-newline.txt", first)
    write(t, "percent-encoded.txt", sha + b"  data/a%0Ab%0D%25c%0a%2\n" + sha + b"  data/%\n")
    write(t, "upper-hex.txt", sha.upper() + b"  " + path + b"\n")
    write(t, "short-hash.txt", sha[:63] + b"  " + path + b"\n")
    write(t, "no-path.txt", sha + b"  \n")
    write(t, "star-only-path.txt", sha + b" **\n")
    write(t, "nul-bytes.txt", sha + b"  data/\x00x\n\x00\n")
    write(t, "invalid-utf8-path.txt", sha + b"  data/\xff\xfe\n")
    write(t, "dot-dot-path.txt", sha + b"  ../../etc/passwd\n" + sha + b"  /abs\n")
    write(t, "cr-only.txt", first + b"\r" + first + b"\r")
    write(t, "long-path.txt", sha + b"  data/" + b"%0A" * 20000 + b"\n")
    write(t, "empty", b"")


def result_record(run_dir):
    t = "result_record"
    lines = read(os.path.join(run_dir, "data", "results.jsonl")).split(b"\n")
    accepted = next(l for l in lines if b'"accepted"' in l)
    rejected = [l for l in lines if b'"rejected"' in l]
    write(t, "real-accepted.json", accepted)
    for i, l in enumerate(rejected[:3]):
        write(t, "real-rejected-%d.json" % i, l)
    jl = read(os.path.join(run_dir, "data", "journal.jsonl")).split(b"\n")
    write(t, "real-journal-result.json", next(l for l in jl if b'"type":"result"' in l))
    common_json(t)
    write(t, "crlf.json", accepted + b"\r\n")
    write(t, "dup-key.json", '{"id":"a","id":"b","status":"accepted","status":"rejected"}')
    write(t, "wrong-types.json", '{"id":1,"status":true,"confidence":"x","latency_ms":[]}')
    write(t, "accepted-wrong-types.json", '{"id":"a","status":"accepted","category":5,"confidence":"0.9"}')
    write(t, "huge-numbers.json", '{"id":"a","status":"accepted","confidence":1.7976931348623157e308,'
          '"latency_ms":-4294967296}')
    write(t, "int-numbers.json", '{"id":"a","status":"accepted","confidence":18446744073709551615,'
          '"latency_ms":-9223372036854775808}')
    write(t, "secret-in-detail.json", '{"id":"a","status":"rejected","reason":"stage_error","detail":"%s"}' % GHP)
    write(t, "unknown-status.json", '{"id":"a","status":"maybe"}')
    write(t, "empty-id.json", '{"id":"","status":"accepted"}')
    write(t, "id-escapes.json", '{"id":"\\u0000\\n\\"","status":"rejected"}')


def run_record(run_dir):
    t = "run_record"
    real = read(os.path.join(run_dir, "data", "run.json"))
    write(t, "real-run.json", real)
    doc = json.loads(real)
    write(t, "running.json", json.dumps(dict(doc, state="running"), separators=(",", ":")))
    write(t, "jsonl-copy.json", json.dumps(dict(doc, manifest_copy="data/manifest.jsonl")))
    minimal = {k: doc[k] for k in ("run_id", "state", "manifest_copy", "manifest_sha256",
                                   "params_sha256", "model_sha256")}
    write(t, "minimal.json", json.dumps(minimal))
    common_json(t)
    write(t, "state-number.json", json.dumps(dict(minimal, state=1)))
    write(t, "state-only-number.json", '{"state":1}')
    write(t, "plan-wrong-type.json", json.dumps(dict(minimal, plan=[])))
    write(t, "inputs-root-number.json", json.dumps(dict(minimal, plan={"inputs_root": 5})))
    write(t, "copy-outside.json", json.dumps(dict(minimal, manifest_copy="../manifest.json")))
    write(t, "dup-key.json", json.dumps(minimal)[:-1] + ',"state":"finished"}')
    write(t, "secret-in-command-line.json", json.dumps(dict(minimal, command_line=["pilot", "--token", GHP])))
    write(t, "huge-numbers.json", json.dumps(dict(minimal, warmup_ms=1e308, buckets=4294967296)))
    write(t, "crlf.json", real.replace(b"\n", b"\r\n"))
    write(t, "invalid-utf8-run-id.json", json.dumps(minimal).encode().replace(
        doc["run_id"].encode(), b"\xff\xfe"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run_dir = sys.argv[1]
    for make in (manifest_json, manifest_jsonl, params, journal, manifest_lines, result_record, run_record):
        make(run_dir)
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        assert len(files) <= 40, (target, len(files))
        print("%-16s %2d files" % (target, len(files)))


if __name__ == "__main__":
    main()
