# Hostile manifests: `pilot run --params proj/config/pilot.json --manifest FILE --runs-dir runs`.
# A manifest that does not parse or breaks a rule is refused as a whole (exit 2, no run
# folder, naming the file and the key or id); an item whose path escapes the manifest's
# folder or is not a regular file is rejected (path_outside_root / unreadable) while the run
# goes on (exit 0, or 4 as the acceptance criteria may then be unmet).
# Sourced by catalogue.sh; each hc_manifest__NAME function is one case.

# mf NAME: writes stdin to proj/data/pilot/NAME.
mf() { cat >"$D/$1"; }
# runm NAME: the case's command on that manifest.
runm() { hrun run --params "$P" --manifest "$D/$1" --runs-dir runs; }
S1() { sha "$D/doc-01.txt"; }
# one ID PATH [EXTRA-FIELDS] [SHA]: a manifest with one item.
one() { printf '{"name":"h","items":[{"id":"%s","path":"%s","sha256":"%s"%s}]}\n' "$1" "$2" "${4:-$(S1)}" "${3:-}"; }
# with_good ITEM-JSON: a manifest of doc-01 (a good item) and ITEM-JSON.
with_good() { printf '{"name":"h","items":[{"id":"doc-01","path":"doc-01.txt","sha256":"%s","expected":"en"},%s]}\n' "$(S1)" "$1"; }
# The bundled manifest as JSON Lines (id, path, sha256 of each document).
bundled_jsonl() {
  local f
  for f in "$D"/doc-*; do
    printf '{"id":"%s","path":"%s","sha256":"%s"}\n' "$(basename "${f%.*}")" "$(basename "$f")" "$(sha "$f")"
  done
}

# --- does not parse ----------------------------------------------------------------------
hc_manifest__not_json() {
  echo 'this is not json' | mf m.json
  refuse 'm\.json' 'not valid JSON'
  runm m.json
}
hc_manifest__truncated() {
  head -c 200 "$M" | mf m.json
  refuse 'm\.json' 'not valid JSON'
  runm m.json
}
hc_manifest__empty_file() {
  : | mf m.json
  refuse 'm\.json'
  runm m.json
}
hc_manifest__secret_at_parse_error() {
  # The parser's "last read" text must not carry the file's content into the message.
  printf '{"name":"h","items":[ password=hunter2-%s-0123456789abcdef ]}\n' "$MARKER" | mf m.json
  refuse 'm\.json' 'not valid JSON'
  runm m.json
}
hc_manifest__symlink_to_secret() {
  # The manifest itself a symlink to a non-JSON secret file: refused, the secret not echoed.
  ln -s "$C/outside/secret.txt" "$D/m.json"
  refuse 'm\.json'
  runm m.json
}
hc_manifest__invalid_utf8_in_string() {
  printf '{"name":"bad\xff\xfename","items":[{"id":"doc-01","path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'utf-?8|line [0-9]+, column [0-9]+'
  runm m.json
}
hc_manifest__trailing_garbage() {
  { cat "$M"; printf 'trailing garbage\n'; } | mf m.json
  refuse 'm\.json'
  runm m.json
}

# --- wrong shape ---------------------------------------------------------------------------
hc_manifest__empty_array() {
  echo '[]' | mf m.json
  refuse 'm\.json'
  runm m.json
}
hc_manifest__items_not_array() {
  printf '{"name":"h","items":{"id":"doc-01","path":"doc-01.txt","sha256":"%s"}}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'items'
  runm m.json
}
hc_manifest__items_empty() {
  echo '{"name":"h","items":[]}' | mf m.json
  refuse 'm\.json' 'no items|items'
  runm m.json
}
hc_manifest__item_is_string() {
  echo '{"name":"h","items":["doc-01.txt"]}' | mf m.json
  refuse 'm\.json' 'item'
  runm m.json
}
hc_manifest__name_not_string() {
  printf '{"name":{"x":1},"items":[{"id":"doc-01","path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' "name"
  runm m.json
}
hc_manifest__unknown_top_field() {
  printf '{"name":"h","colour":"red","items":[{"id":"doc-01","path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'colour'
  runm m.json
}

# --- bad items ------------------------------------------------------------------------------
hc_manifest__missing_id() {
  printf '{"items":[{"path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' "'id'|\"id\"|\bid\b"
  runm m.json
}
hc_manifest__missing_path() {
  printf '{"items":[{"id":"doc-01","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'path'
  runm m.json
}
hc_manifest__missing_sha256() {
  echo '{"items":[{"id":"doc-01","path":"doc-01.txt"}]}' | mf m.json
  refuse 'm\.json' 'sha256'
  runm m.json
}
hc_manifest__id_with_slash() {
  one 'a/b' doc-01.txt | mf m.json
  refuse 'm\.json' 'a/b'
  runm m.json
}
hc_manifest__id_with_space() {
  one 'a b' doc-01.txt | mf m.json
  refuse 'm\.json' 'a b'
  runm m.json
}
hc_manifest__id_129_chars() {
  one "$(repeat 129 a)" doc-01.txt | mf m.json
  refuse 'm\.json' '\bid\b'
  runm m.json
}
hc_manifest__id_128_chars_ok() {
  # The limit itself is allowed.
  one "$(repeat 128 a)" doc-01.txt ',"expected":"en"' | mf m.json
  want_rc 0 4
  runm m.json
}
hc_manifest__id_empty() {
  one '' doc-01.txt | mf m.json
  refuse 'm\.json' '\bid\b'
  runm m.json
}
hc_manifest__id_not_string() {
  printf '{"items":[{"id":5,"path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' '\bid\b'
  runm m.json
}
hc_manifest__id_non_ascii() {
  one 'caf\u00e9' doc-01.txt | mf m.json
  refuse 'm\.json' '\bid\b'
  runm m.json
}
hc_manifest__duplicate_id() {
  with_good "{\"id\":\"doc-01\",\"path\":\"doc-02.txt\",\"sha256\":\"$(sha "$D/doc-02.txt")\"}" | mf m.json
  refuse 'm\.json' "duplicate id 'doc-01'"
  runm m.json
}
hc_manifest__duplicate_key_in_item() {
  # {"id":"a","id":"b",...}: which one counts would be the parser's whim; refused, naming the key.
  printf '{"items":[{"id":"a","id":"b","path":"doc-01.txt","sha256":"%s"}]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'duplicate' "'id'|\"id\"|\bid\b"
  runm m.json
}
hc_manifest__duplicate_items_key() {
  printf '{"items":[{"id":"a","path":"doc-01.txt","sha256":"%s"}],"items":[]}\n' "$(S1)" | mf m.json
  refuse 'm\.json' 'duplicate' 'items'
  runm m.json
}
hc_manifest__unknown_item_field() {
  one doc-01 doc-01.txt ',"colour":"red"' | mf m.json
  refuse 'm\.json' 'colour'
  runm m.json
}
hc_manifest__sha256_upper_case() {
  one doc-01 doc-01.txt '' "$(S1 | tr a-f A-F)" | mf m.json
  refuse 'm\.json' 'sha256'
  runm m.json
}
hc_manifest__sha256_short() {
  one doc-01 doc-01.txt '' "$(S1 | cut -c1-63)" | mf m.json
  refuse 'm\.json' 'sha256'
  runm m.json
}
hc_manifest__path_empty() {
  one doc-01 '' | mf m.json
  refuse 'm\.json' 'path'
  runm m.json
}
hc_manifest__path_with_nul() {
  # A NUL inside a path would cut it short at the system call: refused outright.
  one doc-01 'doc-01.txt\u0000../../../outside/secret.txt' | mf m.json
  refuse 'm\.json' 'path'
  runm m.json
}
hc_manifest__expected_not_string() {
  one doc-01 doc-01.txt ',"expected":5' | mf m.json
  refuse 'm\.json' 'expected'
  runm m.json
}
hc_manifest__expected_and_expected_rejection() {
  one doc-01 doc-01.txt ',"expected":"en","expected_rejection":"empty_input"' | mf m.json
  refuse 'm\.json' 'expected_rejection'
  runm m.json
}
hc_manifest__unknown_expected_rejection() {
  one doc-01 doc-01.txt ',"expected_rejection":"bogus_reason"' | mf m.json
  refuse 'm\.json' 'expected_rejection'
  runm m.json
}

# --- paths that escape, or are not regular files: the item is rejected, the run goes on ------
hc_manifest__path_dotdot() {
  with_good "{\"id\":\"esc\",\"path\":\"../../../outside/secret.txt\",\"sha256\":\"$(sha "$C/outside/secret.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_dotdot_inside() {
  # ../pilot/doc-02.txt lands inside again, but a `..` component is refused by rule all the same.
  with_good "{\"id\":\"esc\",\"path\":\"../pilot/doc-02.txt\",\"sha256\":\"$(sha "$D/doc-02.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_absolute() {
  with_good "{\"id\":\"esc\",\"path\":\"$C/outside/secret.txt\",\"sha256\":\"$(sha "$C/outside/secret.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_symlink_out_absolute() {
  ln -s "$C/outside/secret.txt" "$D/link.txt"
  with_good "{\"id\":\"esc\",\"path\":\"link.txt\",\"sha256\":\"$(sha "$C/outside/secret.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_symlink_out_relative() {
  ln -s ../../../outside/secret.txt "$D/link.txt"
  with_good "{\"id\":\"esc\",\"path\":\"link.txt\",\"sha256\":\"$(sha "$C/outside/secret.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_through_symlinked_dir() {
  ln -s "$C/outside" "$D/sub"
  with_good "{\"id\":\"esc\",\"path\":\"sub/secret.txt\",\"sha256\":\"$(sha "$C/outside/secret.txt")\"}" | mf m.json
  want_rc 0 4
  runm m.json
  expect_reason esc path_outside_root
}
hc_manifest__path_symlink_dev_zero() {
  ln -s /dev/zero "$D/zero.txt"
  with_good "{\"id\":\"zero\",\"path\":\"zero.txt\",\"sha256\":\"$(S1)\"}" | mf m.json
  want_rc 0 4
  quick
  runm m.json
  expect_reason zero path_outside_root
}
hc_manifest__path_fifo() {
  mkfifo "$D/fifo.txt"
  with_good "{\"id\":\"fifo\",\"path\":\"fifo.txt\",\"sha256\":\"$(S1)\"}" | mf m.json
  want_rc 0 4
  quick
  runm m.json
  expect_reason fifo unreadable
}
hc_manifest__path_directory() {
  mkdir "$D/adir"
  with_good "{\"id\":\"dir\",\"path\":\"adir\",\"sha256\":\"$(S1)\"}" | mf m.json
  want_rc 0 4
  quick
  runm m.json
  expect_reason dir unreadable
}

# --- caps: nesting, line length, endless and non-regular manifests --------------------------
hc_manifest__nested_100000() {
  { printf '{"name":"h","items":'; nest 100000; printf '}\n'; } | mf m.json
  refuse 'm\.json' 'nested deeper'
  quick
  runm m.json
}
hc_manifest__nested_in_item() {
  { printf '{"items":[{"id":"doc-01","path":"doc-01.txt","sha256":"%s","expected":' "$(S1)"; nest 100000; printf '}]}\n'; } | mf m.json
  refuse 'm\.json' 'nested deeper'
  quick
  runm m.json
}
hc_manifest__jsonl_nested_line() {
  # 10000 levels: 20 KB, under the 64 KiB line cap, so the nesting cap is what refuses it.
  { bundled_jsonl | head -3; nest 10000; echo; } | mf m.jsonl
  refuse 'm\.jsonl' 'nested deeper'
  quick
  runm m.jsonl
}
hc_manifest__jsonl_line_over_64k() {
  { bundled_jsonl | head -3
    printf '{"id":"long","path":"doc-01.txt","sha256":"%s","expected":"%s"}\n' "$(S1)" "$(repeat 70000 e)"; } | mf m.jsonl
  refuse 'm\.jsonl'
  bounded
  runm m.jsonl
}
hc_manifest__jsonl_one_line_no_newline_huge() {
  # 20 MB without a newline: the line cap stops the read long before the end.
  { printf '{"id":"x","path":"'; head -c 20000000 /dev/zero | tr '\0' a; } | mf m.jsonl
  refuse 'm\.jsonl'
  quick
  bounded
  runm m.jsonl
}
hc_manifest__fifo() {
  mkfifo "$D/m.json"
  refuse 'm\.json' 'not a regular file'
  quick
  runm m.json
}
hc_manifest__directory() {
  mkdir "$D/m.json"
  refuse 'm\.json'
  quick
  runm m.json
}
hc_manifest__dev_zero_jsonl() {
  ln -s /dev/zero "$D/m.jsonl"
  refuse 'm\.jsonl'
  quick
  bounded
  runm m.jsonl
}
hc_manifest__dev_zero_json() {
  ln -s /dev/zero "$D/m.json"
  refuse 'm\.json'
  quick
  bounded
  runm m.json
}
hc_manifest__dev_urandom_jsonl() {
  ln -s /dev/urandom "$D/m.jsonl"
  refuse 'm\.jsonl'
  quick
  bounded
  runm m.jsonl
}

# --- JSON Lines variants ------------------------------------------------------------------
hc_manifest__jsonl_crlf() {
  # CRLF line ends are an editor's habit, not an attack: the run works.
  bundled_jsonl | sed 's/$/\r/' | mf m.jsonl
  want_rc 0 4
  runm m.jsonl
  local run
  run=$(only_run) || return
  [ "$(wc -l <"$run/data/results.jsonl")" = 12 ] || bad "results.jsonl does not hold 12 lines"
}
hc_manifest__jsonl_blank_lines() {
  { echo; bundled_jsonl | sed '4{p;s/.*//}'; echo; echo '   '; } | mf m.jsonl
  want_rc 0 4
  runm m.jsonl
  local run
  run=$(only_run) || return
  [ "$(wc -l <"$run/data/results.jsonl")" = 12 ] || bad "results.jsonl does not hold 12 lines"
}
hc_manifest__jsonl_bad_middle_line() {
  { bundled_jsonl | head -3; echo '{"id":"x",'; bundled_jsonl | tail -3; } | mf m.jsonl
  refuse 'm\.jsonl'
  runm m.jsonl
}
hc_manifest__jsonl_line_is_array() {
  { bundled_jsonl | head -3; echo '["doc-09","doc-09.txt"]'; } | mf m.jsonl
  refuse 'm\.jsonl'
  runm m.jsonl
}
hc_manifest__jsonl_duplicate_id() {
  { bundled_jsonl; bundled_jsonl | head -1; } | mf m.jsonl
  refuse 'm\.jsonl' 'duplicate' 'doc-01'
  runm m.jsonl
}
hc_manifest__jsonl_duplicate_key() {
  { bundled_jsonl | head -3; printf '{"id":"doc-09","id":"doc-99","path":"doc-09.txt","sha256":"%s"}\n' "$(sha "$D/doc-09.txt")"; } | mf m.jsonl
  refuse 'm\.jsonl' 'duplicate'
  runm m.jsonl
}
hc_manifest__jsonl_fast_path_spoof() {
  # A line shaped like {"id":"…" for a fast path, with a bad tail: still refused.
  { bundled_jsonl | head -3; printf '{"id":"doc-09","path":"doc-09.txt","sha256":"%s"} garbage\n' "$(sha "$D/doc-09.txt")"; } | mf m.jsonl
  refuse 'm\.jsonl'
  runm m.jsonl
}
hc_manifest__jsonl_invalid_utf8() {
  { bundled_jsonl | head -3; printf '{"id":"doc-09","path":"doc-09.txt","sha256":"%s","expected":"e\xc3\x28n"}\n' "$(sha "$D/doc-09.txt")"; } | mf m.jsonl
  refuse 'm\.jsonl' 'utf-?8|line [0-9]+, column [0-9]+|:[0-9]+'
  runm m.jsonl
}
hc_manifest__jsonl_escaped_duplicate_id() {
  # "doc\u002d01" is "doc-01": the same id however it is spelled.
  { bundled_jsonl; printf '{"id":"doc\\u002d01","path":"doc-01.txt","sha256":"%s"}\n' "$(S1)"; } | mf m.jsonl
  refuse 'm\.jsonl' 'duplicate' 'doc-01'
  runm m.jsonl
}
hc_manifest__json_escaped_duplicate_id() {
  with_good "{\"id\":\"doc\\u002d01\",\"path\":\"doc-02.txt\",\"sha256\":\"$(sha "$D/doc-02.txt")\"}" | mf m.json
  refuse 'm\.json' 'duplicate' 'doc-01'
  runm m.json
}
