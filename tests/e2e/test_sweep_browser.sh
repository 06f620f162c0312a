#!/usr/bin/env bash
# report.html in a real browser: Debian's chromium renders a sweep's page and a load test's headless to a PNG,
# which must not be blank (the charts' colours are there), and any console message or script
# error it logs fails the test. A control page with a deliberate script error shows that the
# check can fail.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
BROWSER=$(command -v chromium || true)
[ -n "$BROWSER" ] || fail "chromium is missing: the test command installs it (scripts/deps.sh --test)"

# render HTML PNG LOG: headless, no sandbox when root (a container), fixed window size.
render() {
  local sandbox=()
  [ "$(id -u)" -eq 0 ] && sandbox=(--no-sandbox)
  HOME="$WORK/home" timeout 120 "$BROWSER" --headless=new "${sandbox[@]}" --disable-gpu --hide-scrollbars \
    --no-first-run --user-data-dir="$WORK/profile" --window-size=1280,1600 --screenshot="$2" \
    --enable-logging=stderr --v=0 "file://$1" >"$3.out" 2>"$3" || fail "chromium failed on $1 (see $3)"
  [ -s "$2" ] || fail "chromium wrote no screenshot of $1"
}
# console_errors LOG: the page's console messages and uncaught errors chromium logged.
console_errors() { grep -E ':CONSOLE[:(]|Uncaught' "$1" || true; }

# The check can fail: a page with a script error is caught.
mkdir -p "$WORK/home"
printf '<!DOCTYPE html><html><body><p>control</p><script>noSuchFunction();</script></body></html>\n' >"$WORK/bad.html"
render "$WORK/bad.html" "$WORK/bad.png" "$WORK/bad.log"
[ -n "$(console_errors "$WORK/bad.log")" ] || fail "the control page's script error was not detected in chromium's log"

# A sweep's report.
"$PY" "$SRC/bench/sweep-corpus.py" 60 "$WORK/corpus" >/dev/null
write_params "$WORK/params.json" "$WORK/corpus/manifest.jsonl" 4
PILOT_TEST_SWEEP_KILL_CELL=3:4 run_pilot 0 sweep --params "$WORK/params.json" --batch-sizes 1,2,4,8 --repeats 1 \
  --out "$WORK/sw" -q
render "$WORK/sw/data/report.html" "$WORK/report.png" "$WORK/report.log"
errors=$(console_errors "$WORK/report.log")
[ -z "$errors" ] || fail "chromium logged console errors for report.html: $errors"

# not_blank PNG: decode the PNG (zlib, PNG row filters) and count what is not background: the
# charts' colours, and the limit's red (a sweep's cross, a load's SLO line).
not_blank() {
"$PY" - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, depth, colour = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and colour in (2, 6), (depth, colour)
        bpp = 3 if colour == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
colours, ink, red = set(), 0, 0
for y in range(height):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = tuple(line[x:x + 3])
        colours.add(px)
        if px != (255, 255, 255): ink += 1
        if px[0] > 180 and px[1] < 80 and px[2] < 80: red += 1  # the limit's cross (#d62728)
    prev = line
share = ink / (width * height)
print(f"report.png: {width}x{height}, {len(colours)} colours, {share:.1%} non-white, {red} limit-red pixels")
assert share > 0.02, "the page rendered (nearly) blank"
assert len(colours) >= 8, "too few colours for charts with a line per group"
assert red > 20, "the limit's mark is not on the page"
EOF
}
not_blank "$WORK/report.png"

# A load test's report (a short ladder): its latency CDF and rate-against-latency curve, the SLO's
# bound drawn in red on both.
"$PY" - "$SRC" "$WORK/load.json" <<'EOF'
import json, sys
src = sys.argv[1]
d = json.load(open(src + "/config/pilot.json"))
d["manifest"] = src + "/data/pilot/manifest.json"
d["stage"]["model"] = src + "/data/models/langid/langid.pt"
d["device"] = "cpu"
d["service"]["slo"]["e2e_ms"] = 5
open(sys.argv[2], "w").write(json.dumps(d))
EOF
rc=0  # the SLO met or missed (0 or 4), as the shared machine's timing decides: the page is the same
"$PILOT" load --params "$WORK/load.json" --rate-ladder --duration 0.3 --max-steps 4 --out "$WORK/ld" -q \
  >"$WORK/ld.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || { cat "$WORK/ld.out"; fail "pilot load exited $rc"; }
render "$WORK/ld/data/report.html" "$WORK/load.png" "$WORK/load.log"
errors=$(console_errors "$WORK/load.log")
[ -z "$errors" ] || fail "chromium logged console errors for the load's report.html: $errors"
not_blank "$WORK/load.png"
echo "sweep_browser: ok"
