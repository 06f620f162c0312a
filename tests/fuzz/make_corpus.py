#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Usage: tests/fuzz/make_corpus.py RUN_DIR [EMBED_RUN_DIR]
       tests/fuzz/make_corpus.py --embedding EMBED_RUN_DIR
       tests/fuzz/make_corpus.py --generation   (the generator's seeds alone, gen-*)
       tests/fuzz/make_corpus.py --load         (a load folder's seeds alone, load_records/)
       tests/fuzz/make_corpus.py --openai       (a service's answers' seeds alone, openai_stream/)
  RUN_DIR: a finished run folder of the bundled default pilot (`pilot run --runs-dir D`),
  whose data/journal.jsonl, data/results.jsonl, data/run.json and manifest-sha256.txt are
  taken as the realistic seeds; data/pilot/manifest.json and config/pilot.json come from
  the repository. EMBED_RUN_DIR: a finished run folder of the embedding pilot (`pilot run
  --params config/embed.json --runs-dir D`), whose data/vectors.npy, data/vectors.sidecar,
  bag-info.txt, journal, results and run.json are the realistic seeds of the npy_header and
  sidecar_header targets and the embed-* seeds of the others (format 2: journal version 2,
  folder kind and format, plan.output and plan.dim). --embedding writes only those.
  Every other seed is written from this file: valid variants and hostile inputs (deep
  nesting, duplicate keys, secrets in values, invalid UTF-8, CRLF, NUL bytes, wrong types,
  huge numbers). Reproducers of findings (regress-*) are never touched.
Rerunning rewrites the seeds (seed-*) byte for byte; the corpus is committed.
"""
import json
import os
import struct
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
    # The line scanner's edges (it must decline each, leaving it to the JSON parser): bytes
    # JSON forbids or allows only outside strings, a BOM, spaces everywhere, escapes.
    plain = '{"id":"a","path":"a","sha256":"%s"}' % SHA_A
    write(t, "scanner-spaces.jsonl", ' { "id" : "a" ,\t"path":"a" , "sha256" : "%s" }\r\n' % SHA_A)
    write(t, "scanner-bom.jsonl", b"\xef\xbb\xbf" + plain.encode() + b"\n")
    write(t, "scanner-del-in-string.jsonl", plain.replace('"path":"a"', '"path":"a\x7f"').encode() + b"\n")
    write(t, "scanner-vt-ff.jsonl", b"\x0b" + plain.encode() + b"\x0c\n")
    write(t, "scanner-escape.jsonl", plain.replace('"path":"a"', '"path":"\\u0061"') + "\n")
    write(t, "scanner-optional-fields.jsonl", plain[:-1] + ',"expected":"fr"}\n' + plain.replace('"a"', '"b"', 1)[:-1] + ',"expected_rejection":"empty_input"}\n')


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


def npy(dict_text, length=None, version=b"\x01\x00", data=b""):
    """An .npy file: magic, version, u16 header length, the dict padded with spaces and a
    newline to `length` (default: the next 64-byte boundary, as pilot and numpy write it)."""
    d = b(dict_text)
    if length is None:
        length = (10 + len(d) + 1 + 63) // 64 * 64 - 10
    pad = length - len(d) - 1
    return b"\x93NUMPY" + version + struct.pack("<H", length) + d + b" " * max(pad, 0) + b"\n" + data


def npy_dict(descr="<f4", fortran="False", shape="10, 16"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, shape)


def sidecar(version=1, dim=16, magic=b"PILOTVEC"):
    return magic + struct.pack("<II", version, dim)


def npy_header(embed_dir):
    t = "npy_header"
    real = read(os.path.join(embed_dir, "data", "vectors.npy"))
    write(t, "real-vectors.npy", real)
    length = struct.unpack("<H", real[8:10])[0]
    write(t, "real-header-only.npy", real[: 10 + length])
    write(t, "rows-0.npy", npy(npy_dict(shape="0, 16")))
    write(t, "dim-65536.npy", npy(npy_dict(shape="1, 65536"), data=b"\x00" * 64))
    write(t, "rows-18-digits.npy", npy(npy_dict(shape="999999999999999999, 999999999999999999")))
    write(t, "rows-19-digits.npy", npy(npy_dict(shape="9999999999999999999, 16")))
    write(t, "cols-over-u32.npy", npy(npy_dict(shape="1, 4294967296")))
    write(t, "cols-0.npy", npy(npy_dict(shape="10, 0")))
    write(t, "leading-zeros.npy", npy(npy_dict(shape="010, 0016")))
    write(t, "f8.npy", npy(npy_dict(descr="<f8")))
    write(t, "big-endian.npy", npy(npy_dict(descr=">f4")))
    write(t, "descr-quote.npy", npy("{'descr': '<f4'', 'fortran_order': False, 'shape': (10, 16), }"))
    write(t, "fortran.npy", npy(npy_dict(fortran="True")))
    write(t, "shape-1d.npy", npy(npy_dict(shape="10,")))
    write(t, "shape-3d.npy", npy(npy_dict(shape="10, 4, 4")))
    write(t, "shape-negative.npy", npy(npy_dict(shape="-1, 16")))
    write(t, "no-trailing-comma.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (10, 16)}"))
    write(t, "keys-reordered.npy", npy("{'fortran_order': False, 'descr': '<f4', 'shape': (10, 16), }"))
    write(t, "version-2.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 118) + b(npy_dict()) + b" " * 55 + b"\n")
    write(t, "unpadded.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(npy_dict()) + 1) + b(npy_dict()) + b"\n")
    write(t, "no-newline.npy", npy(npy_dict())[:-1] + b" ")
    write(t, "length-past-end.npy", npy(npy_dict())[:100])
    write(t, "length-zero.npy", b"\x93NUMPY\x01\x00\x00\x00" + b"\x00" * 54)
    write(t, "length-max.npy", b"\x93NUMPY\x01\x00\xff\xff" + b(npy_dict()) + b"\n")
    write(t, "nul-in-dict.npy", npy(npy_dict(descr="<f4\x00")))
    write(t, "invalid-utf8.npy", npy(b"{'descr': '\xff\xfe', 'fortran_order': False, 'shape': (10, 16), }"))
    write(t, "crlf.npy", npy(npy_dict())[:-1] + b"\r\n")
    write(t, "magic-only", b"\x93NUMPY")
    write(t, "not-npy.json", b'{"descr": "<f4", "shape": [10, 16]}\n')
    write(t, "empty", b"")


def sidecar_header(embed_dir):
    t = "sidecar_header"
    real = read(os.path.join(embed_dir, "data", "vectors.sidecar"))
    write(t, "real-vectors.sidecar", real)
    write(t, "real-header-only.sidecar", real[:16])
    write(t, "dim-1.sidecar", sidecar(dim=1))
    write(t, "dim-65536.sidecar", sidecar(dim=65536))
    write(t, "dim-65537.sidecar", sidecar(dim=65537))
    write(t, "dim-0.sidecar", sidecar(dim=0))
    write(t, "dim-u32-max.sidecar", sidecar(dim=0xFFFFFFFF))
    write(t, "version-0.sidecar", sidecar(version=0))
    write(t, "version-2.sidecar", sidecar(version=2))
    write(t, "bad-magic.sidecar", sidecar(magic=b"PILOTVEc"))
    write(t, "short-15.sidecar", sidecar()[:15])
    write(t, "big-endian-dim.sidecar", b"PILOTVEC" + struct.pack(">II", 1, 16))
    info = read(os.path.join(embed_dir, "bag-info.txt"))
    write(t, "real-bag-info.txt", info)
    write(t, "bag-info-kind-sweep.txt", info.replace(b"Pilot-Folder-Kind: run", b"Pilot-Folder-Kind: sweep"))
    write(t, "bag-info-crlf.txt", info.replace(b"\n", b"\r\n"))
    write(t, "bag-info-no-space.txt", b"Pilot-Folder-Kind:run\nPilot-Format-Version:2")
    write(t, "bag-info-empty-values.txt", b"Pilot-Folder-Kind:\nPilot-Format-Version:   \r\n")
    write(t, "bag-info-trailing-spaces.txt", b"Pilot-Folder-Kind:   run \r \nPilot-Format-Version: 2\t\n")
    write(t, "bag-info-dup-label.txt", b"Pilot-Folder-Kind: run\nPilot-Folder-Kind: sweep\n")
    write(t, "bag-info-prefix-label.txt", b"Pilot-Folder-Kinds: sweep\nPilot: x\nPilot-Folder-Kind\n")
    write(t, "bag-info-indented.txt", b" Pilot-Folder-Kind: sweep\n\tPilot-Format-Version: 99\n")
    write(t, "bag-info-nul.txt", b"Pilot-Folder-Kind: ru\x00n\nPilot-Format-Version: \xff\n")
    write(t, "bag-info-cr-only.txt", b"Pilot-Folder-Kind: run\rPilot-Format-Version: 2\r")
    write(t, "header-then-bag-info", sidecar() + b"\nPilot-Folder-Kind: run\n")
    write(t, "empty", b"")


def embed_result_record(embed_dir):
    t = "result_record"
    lines = read(os.path.join(embed_dir, "data", "results.jsonl")).split(b"\n")
    write(t, "embed-real-accepted.json", next(l for l in lines if b'"accepted"' in l))
    jl = read(os.path.join(embed_dir, "data", "journal.jsonl")).split(b"\n")
    write(t, "embed-real-journal-result.json", next(l for l in jl if b'"vector_at"' in l))
    base = '{"id":"a","status":"accepted",%s,"model":"sha256:%s","latency_ms":1.5}'
    write(t, "embed-dim-0.json", base % ('"row":0,"dim":0', SHA_A))
    write(t, "embed-dim-65536.json", base % ('"row":0,"dim":65536,"vector_at":16', SHA_A))
    write(t, "embed-dim-65537.json", base % ('"row":0,"dim":65537', SHA_A))
    write(t, "embed-dim-wrong-types.json", base % ('"row":"0","dim":16.0', SHA_A))
    write(t, "embed-row-int64.json", base % ('"row":9223372036854775807,"dim":16,"vector_at":9223372036854775808', SHA_A))
    write(t, "embed-row-negative.json", base % ('"row":-1,"dim":16', SHA_A))
    write(t, "embed-row-without-dim.json", base % ('"row":3,"vector_at":16', SHA_A))
    write(t, "embed-rejected-with-dim.json",
          '{"id":"a","status":"rejected","reason":"stage_error","detail":"x","row":0,"dim":16,"vector_at":16}')


def embed_journal(embed_dir):
    t = "journal"
    real = read(os.path.join(embed_dir, "data", "journal.jsonl"))
    write(t, "embed-real-run.jsonl", real)
    lines = real.split(b"\n")[:-1]
    header, session = lines[0], lines[1]
    results = [l for l in lines if b'"vector_at"' in l]
    failure = b'{"type":"batch_failure","batch_size":8,"out_of_memory":true,"error":"CUDA out of memory"}'
    batch = b'{"type":"batch","at_unix":1796000000.5,"items":2,"peak_rss_mb":170.0,"device_peak_mb":512.0}'
    write(t, "embed-v2-batch-failure.jsonl", b"\n".join(
        [header, session, failure, failure.replace(b"8", b"4").replace(b"true", b"false"),
         results[0], results[1], batch]) + b"\n")
    v1 = header.replace(b'"version":2,', b'"version":1,')
    write(t, "embed-v1-batch-failure.jsonl", b"\n".join([v1, session, failure, results[0]]) + b"\n")
    write(t, "header-version-3.jsonl", header.replace(b'"version":2,', b'"version":3,') + b"\n")
    write(t, "batch-failure-wrong-types.jsonl", b"\n".join(
        [header, session, b'{"type":"batch_failure","batch_size":"8","out_of_memory":"yes","error":5}',
         b'{"type":"batch_failure","batch_size":-1,"error":"x"}']) + b"\n")
    write(t, "batch-failures-70.jsonl", header + b"\n" + session + b"\n" + (failure + b"\n") * 70)
    r0 = results[0].decode()
    at_max = r0.replace('"dim":16,"vector_at":16', '"dim":65536,"vector_at":281474976710656')
    at_over = r0.replace('"vector_at":16', '"vector_at":281474976710657')
    write(t, "embed-vector-at-max.jsonl", "\n".join([header.decode(), session.decode(), at_max]) + "\n")
    write(t, "embed-vector-at-over.jsonl", "\n".join([header.decode(), session.decode(), at_over]) + "\n")
    write(t, "embed-vector-at-without-dim.jsonl", b"\n".join(
        [header, session, results[0].replace(b'"dim":16,', b""), results[1]]) + b"\n")
    write(t, "embed-dim-without-vector-at.jsonl", b"\n".join(
        [header, session, results[0].replace(b'"vector_at":16,', b""), results[1]]) + b"\n")


def embed_run_record(embed_dir):
    t = "run_record"
    real = read(os.path.join(embed_dir, "data", "run.json"))
    write(t, "embed-real-run.json", real)
    doc = json.loads(real)
    def with_plan(**kw):
        return json.dumps(dict(doc, plan=dict(doc["plan"], **kw)), separators=(",", ":"))
    write(t, "embed-dim-0.json", with_plan(dim=0))
    write(t, "embed-dim-string.json", with_plan(dim="16"))
    write(t, "embed-dim-65537.json", with_plan(dim=65537))
    write(t, "embed-no-dim.json", json.dumps(dict(doc, plan={k: v for k, v in doc["plan"].items() if k != "dim"})))
    write(t, "output-unknown.json", with_plan(output="regression"))
    write(t, "classification-with-dim.json", with_plan(output="classification", dim=4294967296))
    write(t, "kind-sweep-format-99.json", json.dumps(dict(doc, folder_kind="sweep", format_version=99)))
    write(t, "format-wrong-types.json", json.dumps(dict(doc, folder_kind=1, format_version="2")))
    write(t, "format-huge.json", json.dumps(dict(doc, format_version=4294967298)))
    write(t, "format-without-kind.json", json.dumps({k: v for k, v in doc.items() if k != "folder_kind"}))


def generation_seeds():
    """Seeds of a generator's records, parameters and package metadata (docs/generation.md)."""
    t = "result_record"
    good = ('{"id":"p","status":"accepted","completion":"olleh","completion_tokens":6,"finish_reason":"eos",'
            '"completion_ids":[111,108,108,101,104,256],"ttft_ms":4.5,"tpot_ms":0.25,"prefill_ms":1.5,'
            '"decode_ms":1.25,"kv_cache_bytes":4096,"model":"sha256:%s","latency_ms":9,"tokens":6}' % SHA_A)
    write(t, "gen-accepted.json", good)
    write(t, "gen-count-not-ids.json", good.replace('"completion_tokens":6', '"completion_tokens":7'))
    write(t, "gen-id-negative.json", good.replace("[111,", "[-1,"))
    write(t, "gen-finish-other.json", good.replace('"eos"', '"done"'))
    write(t, "gen-tpot-one-token.json", good.replace("[111,108,108,101,104,256]", "[256]").replace(
        '"completion_tokens":6', '"completion_tokens":1'))
    write(t, "gen-with-dim.json", good.replace('"completion":"olleh"', '"dim":4,"row":0,"completion":"olleh"'))
    write(t, "gen-text-escapes.json", good.replace('"olleh"', '"\\u0000\\ud800\\n\\t\\u001b[31m"'))
    slots = good.replace('"kv_cache_bytes":4096', '"kv_cache_bytes":4096,"slot_steps":7.5,"near_tie_steps":[1,3]')
    write(t, "gen-slots-ties.json", slots)
    write(t, "gen-ties-falling.json", slots.replace("[1,3]", "[3,1]"))
    write(t, "gen-ties-past-end.json", slots.replace("[1,3]", "[6]"))
    write(t, "gen-slot-steps-negative.json", slots.replace("7.5", "-1e308"))
    t = "params"
    p = json.loads(read(os.path.join(ROOT, "config", "generate.json")))
    write(t, "gen-real.json", json.dumps(p, indent=2))
    for name, change in (("gen-sampling", {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "seed": 3}),
                         ("gen-static", {"batching": "static", "ignore_eos": True}),
                         ("gen-batching-bad", {"batching": 7, "ignore_eos": "yes"}),
                         ("gen-max-huge", {"max_new_tokens": 10 ** 30}),
                         ("gen-stop-many", {"stop": ["s"] * 17}), ("gen-stop-ids-bad", {"stop_token_ids": [-1, "2"]}),
                         ("gen-token-key", {"api_token": "x"})):
        q = json.loads(json.dumps(p))
        q["generation"].update(change)
        write(t, name + ".json", json.dumps(q))
    t = "sweep_records"  # the first byte picks the parser: 0 a cell, 3 the settings
    cell = {"group": 1, "batch_size": 2, "repeats": 1, "group_items": 2, "cycled": False, "batches": 1,
            "completed": 2, "failed": 0, "wall_seconds": 0.5, "items_per_second": 4.0,
            "latency_ms": {"p50": 1, "p90": 1, "p95": 1, "p99": 1},
            "generation": {"prompt_tokens": 9, "completion_tokens": 10, "completion_tokens_per_second": 20.0,
                           "ttft_ms": {"p50": 0.5, "p99": 0.7}, "tpot_ms": {"p50": 0.2, "p99": 0.3},
                           "kv_cache_bytes": 98304, "slot_occupancy": 0.8},
            "rss_after_load_mb": 100, "peak_rss_mb": 120, "peak_device_mb": None, "limit": "tpot_budget",
            "error": "p99 time per output token", "repeat_mismatches": 0,
            "outcomes": [{"id": "a", "ok": True, "completion_ids": [5, 6, 7, 256], "near_tie_steps": [2]},
                         {"id": "b", "ok": True, "completion_ids": [8, 256], "near_tie_steps": []}]}
    write(t, "gen-cell.json", "\0" + json.dumps(cell))
    bad = json.loads(json.dumps(cell))
    bad["generation"]["completion_tokens_per_second"] = 1e308
    bad["outcomes"][0]["near_tie_steps"] = [9, 2]
    write(t, "gen-cell-bad.json", "\0" + json.dumps(bad))
    write(t, "gen-settings.json", "\3" + json.dumps({"groups": 2, "batch_sizes": [1, 2, 4], "repeats": 1,
                                                      "latency_budget_ms": None, "max_memory_mb": None,
                                                      "max_ttft_ms": 5.0, "max_tpot_ms": -1}))
    t = "package_metadata"
    pairs = [("pilot.generator_contract", "1"), ("pilot.layers", "2"), ("pilot.kv_heads", "2"), ("pilot.head_dim", "8"),
             ("pilot.context", "64"), ("pilot.vocab", "300"), ("pilot.eos_token_ids", "[5, 7]"),
             ("pilot.kv_dtype", "float32"), ("pilot.input_kind", "token_ids")]
    write(t, "gen-contract", "\0".join(k + "\0" + v for k, v in pairs))
    write(t, "gen-eos-bad", "pilot.eos_token_ids\0[-1, 2147483648, \"5\", 1.5]\0pilot.layers\099999999999999999999")


def load_seeds():
    """Seeds of a load folder's request lines and service (docs/load.md); the first byte picks the parser."""
    t = "load_records"
    done = {"step": 0, "request": 0, "item": "doc-01", "outcome": "completed", "arrived_ms": 2.5,
            "started_ms": 4.5, "finished_ms": 4.9, "batch": 2, "output_tokens": 0}
    gen = dict(done, output_tokens=4, ttft_ms=2.1, tpot_ms=0.2, itl_ms=[0.2, 0.19, 0.21])
    lines = [done, gen,
             {"step": 0, "request": 2, "item": "doc-11", "outcome": "rejected", "reason": "too_large",
              "arrived_ms": 7.5, "started_ms": 7.5, "finished_ms": 7.5, "batch": 0},
             {"step": 0, "request": 3, "item": "doc-02", "outcome": "over_capacity", "arrived_ms": 10,
              "started_ms": 10, "finished_ms": 10, "batch": 0},
             {"step": 0, "request": 4, "item": "doc-03", "outcome": "timed_out", "arrived_ms": 12.5,
              "started_ms": 1012.5, "finished_ms": 1012.5, "batch": 0},
             {"step": 0, "request": 5, "item": "doc-04", "outcome": "failed", "reason": "stage_error",
              "arrived_ms": 15, "started_ms": 16, "finished_ms": 30, "batch": 3}]
    write(t, "line", b"\0" + json.dumps(done).encode())
    write(t, "line-gen", b"\0" + json.dumps(gen).encode())
    write(t, "line-huge", b"\0" + json.dumps(done).replace('2.5', '1e400').encode())
    write(t, "line-order", b"\0" + json.dumps(dict(done, started_ms=1)).encode())
    write(t, "line-itl", b"\0" + json.dumps(dict(gen, itl_ms=["x", -1])).encode())
    svc = {"max_request_bytes": 65536, "max_batch": 8, "max_wait_ms": 2, "queue_bound": 64,
           "at_capacity": "refuse", "deadline_ms": 1000, "slo": {"percentile": 0.99, "confidence": 0.9, "e2e_ms": 50}}
    write(t, "service", b"\1" + json.dumps(svc).encode())
    grow = dict(svc, at_capacity="grow", grow_bound=256, slo={"e2e_ms": 100, "ttft_ms": 50, "tpot_ms": 5})
    write(t, "service-gen", b"\2" + json.dumps(grow).encode())
    write(t, "service-least", b"\1" + json.dumps({"slo": {"e2e_ms": 1}}).encode())
    write(t, "service-bad", b"\1" + json.dumps(dict(svc, max_batch=10**30, slo={})).encode())
    write(t, "step", b"\3" + "\n".join(json.dumps(l) for l in lines).encode())


def openai_seeds():
    """Seeds of what a service over HTTP answers (pilot load --target): byte 0 picks the parser, byte 1 the API
    (0 embeddings, 1 completions, 2 chat)."""
    t = "openai_stream"
    emb = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -1.5, 3e-3]}],
           "usage": {"prompt_tokens": 5, "total_tokens": 5}}
    comp = {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": "olleh", "finish_reason": "eos"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}}
    chat = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}]}
    write(t, "body-embeddings", b"\0\0" + json.dumps(emb).encode())
    write(t, "body-completions", b"\0\1" + json.dumps(comp).encode())
    write(t, "body-chat", b"\0\2" + json.dumps(chat).encode())
    write(t, "body-garbage", b"\0\1" + b'{"choices": [ not json')
    write(t, "body-usage-huge", b"\0\1" + json.dumps(dict(comp, usage={"completion_tokens": 10**30})).encode())

    def ev(obj):
        return "data: " + json.dumps(obj) + "\n\n"
    toks = "".join(ev({"choices": [{"index": 0, "text": c, "finish_reason": None}]}) for c in "olleh")
    fin = ev({"choices": [{"index": 0, "text": "", "finish_reason": "eos"}]})
    usage = ev({"choices": [], "usage": {"completion_tokens": 6}})
    write(t, "stream-completions", b"\1\1" + (toks + fin + usage + "data: [DONE]\n\n").encode())
    deltas = ev({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}) + "".join(
        ev({"choices": [{"index": 0, "delta": {"content": c}}]}) for c in "ab")
    write(t, "stream-chat-crlf", b"\1\2" + (deltas + ": keep-alive\r\n\r\nevent: x\r\n" + "data: [DONE]\r\n\r\n").encode())
    write(t, "stream-truncated", b"\1\1" + toks[: len(toks) // 2].encode())
    write(t, "stream-garbage", b"\1\2" + b"data: {\"choices\": [ not json\n\ndata: [DONE]\n\n")
    write(t, "stream-error", b"\1\1" + ev({"error": {"message": "overloaded", "code": 503}}).encode())
    write(t, "stream-nul", b"\1\1" + b"data: \0\xff\xfe\n\n" + b"data: [DONE]\n\n")
    target = {"url": "http://127.0.0.1:8000", "api": "chat", "endpoint": "/v1/chat/completions", "model": "m",
              "stream": True, "max_tokens": 16, "max_in_flight": 256, "api_key_env": None}
    write(t, "target", b"\2\2" + json.dumps(target).encode())
    write(t, "target-cacert", b"\2\2" + json.dumps(dict(target, url="https://10.0.0.5", cacert={"file": "/etc/ca.pem", "sha256": SHA_A})).encode())
    write(t, "target-bad", b"\2\0" + json.dumps(dict(target, api="embeddings", max_in_flight=10**9)).encode())
    for name, url in (("url", "http://127.0.0.1:8000/v1/"), ("url-cred", "http://u:" + GHP + "@h/"),
                      ("url-query", "https://h/?key=" + GHP), ("url-scheme", "file:///etc/passwd")):
        write(t, name, b"\3\0" + url.encode())


def main():
    args = sys.argv[1:]
    if args == ["--openai"]:
        openai_seeds()
        return
    if args == ["--generation"]:
        generation_seeds()
        return
    if args == ["--load"]:
        load_seeds()
        return
    if len(args) == 2 and args[0] == "--embedding":
        run_dir, embed_dir = None, args[1]
    elif len(args) in (1, 2) and not args[0].startswith("-"):
        run_dir, embed_dir = args[0], (args[1] if len(args) == 2 else None)
    else:
        sys.exit(__doc__)
    if run_dir:
        for make in (manifest_json, manifest_jsonl, params, journal, manifest_lines, result_record, run_record):
            make(run_dir)
    if embed_dir:
        for make in (npy_header, sidecar_header, embed_result_record, embed_journal, embed_run_record):
            make(embed_dir)
    generation_seeds()
    load_seeds()
    openai_seeds()
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        assert len(files) <= 60, (target, len(files))
        print("%-16s %2d files" % (target, len(files)))


if __name__ == "__main__":
    main()
