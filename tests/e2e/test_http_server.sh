#!/usr/bin/env bash
# The loopback test server that e2e.load_http and bench/http-bench.sh drive
# (tests/http/openai_server.py): its own behaviour checked first, so that a fault in the server is
# never read as pilot's. Every endpoint, every fault on the wire, /stats adding up, --from-run on
# real run folders of this pilot, its lifetime and its exit (tests/http/openai_server_selftest.py).
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 "$SRC/tests/http/openai_server_selftest.py" --python /usr/bin/python3 --pilot "$PILOT" \
  --source-dir "$SRC"
