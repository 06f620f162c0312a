# Hostile parameter files: `pilot run --params proj/config/p.json --runs-dir runs`.
# Anything that does not parse, breaks a cap, has a wrong type, an unknown key, or looks like
# a credential is refused before any work (exit 2, no run folder), naming the file and the
# key — and a secret is never echoed: not at a parse error, not as a duplicate key's first
# value, not as a key name. Ordinary values (a sha256 pin, prose with a file path, labels)
# must pass. Sourced by catalogue.sh; each hc_params__NAME function is one case.

PF=proj/config/p.json
# pp [SED-EXPR [PREPEND-FRAGMENT]]: p.json from the bundled parameters, edited by SED-EXPR,
# with FRAGMENT inserted as the first member of the top-level object.
pp() {
  local body
  body=$(sed -e "${1:-}" "$P")
  [ -n "${2:-}" ] && body="{ $2,${body#\{}"
  printf '%s\n' "$body" >"$PF"
}
# desc TEXT: p.json with the description replaced by TEXT (already JSON-escaped).
desc() { pp '/"description"/d' "\"description\": \"$1\""; }
runp() { hrun run --params "$PF" --runs-dir runs "$@"; }
# A credential refusal: exit 2, no folder, naming KEY-REGEX and saying "credential".
cred() { refuse 'p\.json' "$1" 'credential'; }

# --- secrets: refused, never echoed -----------------------------------------------------
hc_params__notjson_secret_at_error() {
  printf '{"description": "sk-proj-%s0123456789abcdefABCDEF" ,, }\n' "$MARKER" >"$PF"
  refuse 'p\.json' 'not valid JSON' 'line [0-9]+' 'column [0-9]+'
  runp
}
hc_params__notjson_secret_before_bad_escape() {
  printf '{"description": "token %s0123456789abcdefABCDEF \\q"}\n' "$MARKER" >"$PF"
  refuse 'p\.json' 'not valid JSON'
  runp
}
hc_params__notjson_secret_then_bad_utf8() {
  printf '{"description": "%s0123456789abcdefABCDEF\xff"}\n' "$MARKER" >"$PF"
  refuse 'p\.json'
  runp
}
hc_params__notjson_secret_unterminated() {
  printf '{"description": "sk-proj-%s0123456789abcdefABCDEF\n' "$MARKER" >"$PF"
  refuse 'p\.json' 'not valid JSON'
  runp
}
hc_params__duplicate_key_secret_first() {
  # The last value is harmless; the first, a secret, must neither pass nor be echoed.
  pp '/"description"/d;$s/}$/, "description": "ok"}/' "\"description\": \"sk-proj-${MARKER}0123456789abcdef\""
  refuse 'p\.json' 'description' 'duplicate'
  runp
}
hc_params__duplicate_key_nested() {
  pp 's/"kind": "torchscript-classifier",/"kind": "torchscript-classifier", "kind": "other",/'
  refuse 'p\.json' 'stage\.kind|kind' 'duplicate'
  runp
}
hc_params__secret_as_key() {
  pp '' "\"sk-proj-${MARKER}0123456789abcdef\": 1"
  refuse 'p\.json'
  runp
}
hc_params__secret_as_nested_key() {
  pp 's/"min_confidence": 0.5/"min_confidence": 0.5, "ghp_'"$MARKER"'0123456789abcdefghijklmn": true/'
  refuse 'p\.json'
  runp
}
hc_params__aws_secret_with_slash() {
  desc "wJalrXUtnFEMI/K7MDENG/bPxRfiCY${MARKER}"
  cred 'description'
  runp
}
hc_params__aws_secret_40_chars() {
  # Exactly the 40 base64 characters of an AWS secret access key, with '/' in it.
  desc "wJalrXUtnFEMI/K7MDENG/bPxRf${MARKER}Y"
  cred 'description'
  runp
}
hc_params__aws_secret_in_key_value_text() {
  desc "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRf${MARKER}Y"
  cred 'description'
  runp
}
hc_params__symlink_to_secret() {
  # The parameter file a symlink to a non-JSON secret: refused, nothing of it echoed.
  ln -s "$C/outside/secret.txt" "$PF"
  refuse 'p\.json'
  runp
}
hc_params__sk_in_free_text() {
  desc "my key is sk-${MARKER}0123456789abcdefgh ok"
  cred 'description'
  runp
}
hc_params__github_token() {
  desc "ghp_${MARKER}0123456789abcdefghijklmn"
  cred 'description'
  runp
}
hc_params__hf_token() {
  desc "hf_${MARKER}0123456789abcdefghijkl"
  cred 'description'
  runp
}
hc_params__jwt() {
  desc "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${MARKER}dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
  cred 'description'
  runp
}
hc_params__pem_private_key() {
  desc "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEA${MARKER}w0PlxzzK3jLz9GmQ\\n-----END RSA PRIVATE KEY-----"
  cred 'description'
  runp
}
hc_params__url_with_password() {
  desc "mirror at https://alice:${MARKER}hunter2@data.example.com/corpus"
  cred 'description'
  runp
}
hc_params__password_key() {
  pp '' "\"password\": \"${MARKER}-hunter2\""
  refuse 'p\.json' 'password' 'credential'
  runp
}
hc_params__api_key_nested() {
  pp 's/"max_peak_rss_mb": 2048/"max_peak_rss_mb": 2048, "api_key": "'"$MARKER"'-value"/'
  refuse 'p\.json' 'api_key' 'credential'
  runp
}
hc_params__secret_in_allowed_categories() {
  # A label that is a token: "not a label of the model" must not quote it.
  pp 's/"ja"\]/"ja", "ghp_'"$MARKER"'0123456789abcdefghijklmn"]/'
  refuse 'p\.json' 'allowed_categories'
  runp
}
hc_params__secret_as_model_path() {
  pp 's#"model": "../data/models/langid/langid.pt"#"model": "../data/models/sk-'"$MARKER"'0123456789abcdefgh.pt"#'
  refuse 'p\.json'
  runp
}
hc_params__env_key_bad_name() {
  pp 's/"min_confidence": 0.5/"min_confidence": 0.5, "token_env": "not a var name!"/'
  refuse 'p\.json' 'token_env'
  runp
}
hc_params__env_key_holding_secret() {
  pp 's/"min_confidence": 0.5/"min_confidence": 0.5, "hf_token_env": "hf_'"$MARKER"'0123456789abcdefghijkl"/'
  refuse 'p\.json' 'hf_token_env'
  runp
}
hc_params__env_key_not_string() {
  pp 's/"min_confidence": 0.5/"min_confidence": 0.5, "token_env": ["HF_TOKEN"]/'
  refuse 'p\.json' 'token_env'
  runp
}

# --- caps -------------------------------------------------------------------------------------
hc_params__nested_in_description() {
  pp '/"description"/d' "\"description\": $(nest 100000)"
  refuse 'p\.json' 'nested deeper'
  quick
  runp
}
hc_params__nested_in_stage_options() {
  pp 's/"min_confidence": 0.5/"min_confidence": 0.5, "extra": NEST/'
  python3 - "$PF" <<'EOF'
import sys
p = sys.argv[1]
t = open(p).read()
open(p, "w").write(t.replace("NEST", "[" * 100000 + "]" * 100000))
EOF
  refuse 'p\.json' 'nested deeper'
  quick
  runp
}
hc_params__nested_objects() {
  { printf '{"description":'; repeat 100000 '{' | sed 's/{/{"a":/g'; printf '1'; repeat 100000 '}'; printf '}\n'; } >"$PF"
  refuse 'p\.json' 'nested deeper'
  quick
  runp
}
hc_params__fifo() {
  mkfifo "$PF"
  refuse 'p\.json' 'not a regular file'
  quick
  runp
}
hc_params__dev_zero() {
  ln -s /dev/zero "$PF"
  refuse 'p\.json'
  quick
  bounded
  runp
}
hc_params__dev_urandom() {
  ln -s /dev/urandom "$PF"
  refuse 'p\.json'
  quick
  bounded
  runp
}
hc_params__directory() {
  mkdir "$PF"
  refuse 'p\.json'
  quick
  runp
}
hc_params__over_1_mib() {
  # Valid JSON, harmless content, 1.1 MiB of spaces: over the parameters' size cap.
  { head -c 1 "$P"; repeat 1200000 ' '; tail -c +2 "$P"; } >"$PF"
  refuse 'p\.json'
  bounded
  runp
}
hc_params__missing() {
  refuse 'nope\.json'
  hrun run --params proj/config/nope.json --runs-dir runs
}
hc_params__empty_file() {
  : >"$PF"
  refuse 'p\.json'
  runp
}
hc_params__top_level_array() {
  echo '[]' >"$PF"
  refuse 'p\.json'
  runp
}
hc_params__invalid_utf8_value() {
  desc 'cafX au lait'
  sed -i 's/cafX/caf\xe9/' "$PF"
  refuse 'p\.json' 'utf-?8|line [0-9]+, column [0-9]+'
  runp
}

# --- wrong types and values: named by key ----------------------------------------------------
hc_params__batch_size_string() { pp 's/"batch_size": 4/"batch_size": "8"/'; refuse 'p\.json' 'batch_size'; runp; }
hc_params__batch_size_zero() { pp 's/"batch_size": 4/"batch_size": 0/'; refuse 'p\.json' 'batch_size'; runp; }
hc_params__batch_size_1e300() { pp 's/"batch_size": 4/"batch_size": 1e300/'; refuse 'p\.json' 'batch_size'; runp; }
hc_params__batch_size_fraction() { pp 's/"batch_size": 4/"batch_size": 4.5/'; refuse 'p\.json' 'batch_size'; runp; }
hc_params__batch_size_huge_integer() {
  pp 's/"batch_size": 4/"batch_size": 184467440737095516160/'
  refuse 'p\.json' 'batch_size'
  runp
}
hc_params__threads_negative() { pp 's/"threads": 2/"threads": -1/'; refuse 'p\.json' 'threads'; runp; }
hc_params__seed_negative() { pp 's/"seed": 1234/"seed": -5/'; refuse 'p\.json' 'seed'; runp; }
hc_params__allowed_categories_string() {
  pp 's/"allowed_categories": \[[^]]*\]/"allowed_categories": "en"/'
  refuse 'p\.json' 'allowed_categories'
  runp
}
hc_params__allowed_categories_empty() {
  pp 's/"allowed_categories": \[[^]]*\]/"allowed_categories": []/'
  refuse 'p\.json' 'allowed_categories'
  runp
}
hc_params__stage_array() {
  python3 - "$P" "$PF" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["stage"] = []
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
  refuse 'p\.json' 'stage'
  runp
}
hc_params__stage_options_not_object() {
  pp 's/"options": { "min_confidence": 0.5 }/"options": 0.5/'
  refuse 'p\.json' 'options'
  runp
}
hc_params__min_confidence_string() {
  pp 's/"min_confidence": 0.5/"min_confidence": "high"/'
  refuse 'min_confidence'
  runp
}
hc_params__min_confidence_out_of_range() {
  pp 's/"min_confidence": 0.5/"min_confidence": 7/'
  refuse 'min_confidence'
  runp
}
hc_params__device_unknown() { pp 's/"device": "auto"/"device": "tpu"/'; refuse 'p\.json' 'device'; runp; }
hc_params__max_bytes_zero() { pp 's/"max_bytes": 65536/"max_bytes": 0/'; refuse 'p\.json' 'max_bytes'; runp; }
hc_params__min_accuracy_2() { pp 's/"min_accuracy": 0.9/"min_accuracy": 2/'; refuse 'p\.json' 'min_accuracy'; runp; }
hc_params__kind_unknown() {
  pp 's/"kind": "torchscript-classifier"/"kind": "shell-command"/'
  refuse 'kind|shell-command'
  runp
}
hc_params__model_missing_key() {
  pp '/"model": /d'
  refuse 'p\.json' 'stage\.model|model'
  runp
}
hc_params__requires_wrong_type() {
  pp '' '"requires": {"min_device_count": "two"}'
  refuse 'p\.json' 'min_device_count'
  runp
}
hc_params__requires_nested() {
  pp '' "\"requires\": {\"backend\": NEST}"
  python3 - "$PF" <<'EOF'
import sys
p = sys.argv[1]
t = open(p).read()
open(p, "w").write(t.replace("NEST", "[" * 100000 + "]" * 100000))
EOF
  refuse 'p\.json' 'nested deeper'
  quick
  runp
}
hc_params__unknown_key() { pp '' '"batch_sise": 8'; refuse 'p\.json' 'batch_sise'; runp; }
hc_params__unknown_nested_key() {
  pp 's/"max_bytes": 65536/"max_bytes": 65536, "max_items": 3/'
  refuse 'p\.json' 'max_items'
  runp
}
hc_params__manifest_dev_zero() {
  ln -s /dev/zero proj/config/zero.json
  pp 's#"manifest": "../data/pilot/manifest.json"#"manifest": "zero.json"#'
  refuse 'zero\.json'
  quick
  bounded
  runp
}
hc_params__manifest_fifo() {
  mkfifo proj/config/fifo.jsonl
  pp 's#"manifest": "../data/pilot/manifest.json"#"manifest": "fifo.jsonl"#'
  refuse 'fifo\.jsonl'
  quick
  runp
}

# --- must pass: ordinary values are not credentials --------------------------------------------
hc_params__pass_bundled() {
  cp "$P" "$PF"
  want_rc 0 4
  runp
}
hc_params__pass_sha256_in_description() {
  desc "model pinned at 7b16f402dbe6262c15187c30913dc639dd0a2aaf1c3f1643d5b0010da7803ae3"
  want_rc 0 4
  runp
}
hc_params__pass_git_revision_in_description() {
  desc "built from f46a5573e2c1b9d0a4f6e8b7c3d2a1f0e9d8c7b6 on 2024-05-01"
  want_rc 0 4
  runp
}
hc_params__pass_prose_and_path() {
  desc "Pilot of 2024-05-01 on /data/corpora/news_2024/en/part-00017.jsonl; see https://example.com/docs/pilot#setup for details."
  want_rc 0 4
  runp
}
hc_params__pass_labels() {
  pp 's/"allowed_categories": \[[^]]*\]/"allowed_categories": ["en", "de"]/'
  want_rc 0 4
  runp
}

# --- generation: the settings of a generator, from config/generate.json ------------------------
GPF=proj/config/g.json
# gp 'python on d': g.json from the bundled generation parameters, edited.
gp() {
  python3 - "proj/config/generate.json" "$GPF" "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, indent=2) + "\n")
PYEOF
}
rung() { hrun run --params "$GPF" --runs-dir runs "$@"; }
hc_params__generation_control() {
  gp 'pass'
  want_rc 0
  rung --run-id g
}
hc_params__generation_secret_stop_string() {
  # A stop string that is a secret: refused as one, never echoed.
  gp 'd["generation"]["stop"] = ["sk-proj-'"$MARKER"'0123456789abcdefABCDEF"]'
  refuse 'g\.json' 'generation\.stop' 'credential'
  rung
}
hc_params__generation_token_key_is_a_credential() {
  gp 'd["generation"]["api_token"] = "x"'
  refuse 'g\.json' 'generation\.api_token' 'credential'
  rung
}
hc_params__generation_max_new_tokens_huge() {
  gp 'd["generation"]["max_new_tokens"] = 10**30'
  refuse 'g\.json' 'generation\.max_new_tokens'
  rung
}
hc_params__generation_max_new_tokens_negative() {
  gp 'd["generation"]["max_new_tokens"] = -1'
  refuse 'g\.json' 'generation\.max_new_tokens'
  rung
}
hc_params__generation_max_new_tokens_missing() {
  gp 'del d["generation"]["max_new_tokens"]'
  refuse 'g\.json' 'generation\.max_new_tokens' 'required'
  rung
}
hc_params__generation_temperature_too_high() {
  gp 'd["generation"]["temperature"] = 101'
  refuse 'g\.json' 'generation\.temperature'
  rung
}
hc_params__generation_top_k_huge() {
  gp 'd["generation"].update(temperature=0.7, top_k=2**63)'
  refuse 'g\.json' 'generation\.top_k'
  rung
}
hc_params__generation_top_p_above_one() {
  gp 'd["generation"].update(temperature=0.7, top_p=1.5)'
  refuse 'g\.json' 'generation\.top_p'
  rung
}
hc_params__generation_batching_unknown() {
  gp 'd["generation"]["batching"] = "continuous"'
  refuse 'g\.json' 'generation\.batching' 'in-flight, static'
  rung
}
hc_params__generation_ignore_eos_not_boolean() {
  gp 'd["generation"]["ignore_eos"] = "yes"'
  refuse 'g\.json' 'generation\.ignore_eos' 'true or false'
  rung
}
hc_params__generation_seed_past_2_53() {
  gp 'd["generation"].update(temperature=0.7, seed=2**53)'
  refuse 'g\.json' 'generation\.seed'
  rung
}
hc_params__generation_temperature_nan_string() {
  gp 'd["generation"]["temperature"] = "NaN"'
  refuse 'g\.json' 'generation\.temperature'
  rung
}
hc_params__generation_stop_strings_too_many() {
  gp 'd["generation"]["stop"] = ["s%d" % i for i in range(1000)]'
  refuse 'g\.json' 'generation\.stop'
  rung
}
hc_params__generation_stop_string_huge() {
  gp 'd["generation"]["stop"] = ["x" * 100000]'
  refuse 'g\.json' 'generation\.stop'
  rung
}
hc_params__generation_stop_ids_nested() {
  gp 'd["generation"]["stop_token_ids"] = [[1]]'
  refuse 'g\.json' 'generation\.stop_token_ids'
  rung
}
hc_params__generation_stop_id_outside_vocab() {
  # Known only once the model is loaded: refused then, named, nothing written.
  gp 'd["generation"]["stop_token_ids"] = [2147483647]'
  refuse 'generation\.stop_token_ids' 'vocabulary of 257'
  rung --run-id gv
}
hc_params__generation_not_an_object() {
  gp 'd["generation"] = 16'
  refuse 'g\.json' 'generation'
  rung
}
hc_params__generation_for_a_classifier() {
  pp '' '"generation": {"max_new_tokens": 4}'
  refuse 'generation' 'only to a stage that generates'
  runp --run-id gc
}
hc_params__generation_context_left_for_no_prompt() {
  gp 'd["generation"]["max_new_tokens"] = 48'
  refuse 'generation\.max_new_tokens' 'context of 48'
  rung --run-id gx
}

# --- service: what `pilot load` drives, from config/pilot.json -------------------------------------
LPF=proj/config/l.json
# lp 'python on d': l.json from the bundled parameters, edited.
lp() {
  python3 - "proj/config/pilot.json" "$LPF" "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, indent=2) + "\n")
PYEOF
}
runl() { hrun load --params "$LPF" --runs-dir runs --rate 1000 --requests 24 "$@"; }
hc_params__service_control() {
  # A generous SLO at the median: 18 served requests show it at 50% confidence.
  lp 'd["service"]["slo"] = {"percentile": 0.5, "confidence": 0.5, "e2e_ms": 60000}'
  want_rc 0
  runl
}
hc_params__service_missing() {
  lp 'del d["service"]'
  refuse 'l\.json' 'service'
  runl
}
hc_params__service_not_an_object() {
  lp 'd["service"] = "fast"'
  refuse 'l\.json' 'service' 'object'
  runl
}
hc_params__service_max_batch_huge() {
  lp 'd["service"]["max_batch"] = 10**30'
  refuse 'l\.json' 'service\.max_batch'
  runl
}
hc_params__service_queue_bound_zero() {
  lp 'd["service"]["queue_bound"] = 0'
  refuse 'l\.json' 'service\.queue_bound'
  runl
}
hc_params__service_wait_a_string() {
  lp 'd["service"]["max_wait_ms"] = "2"'
  refuse 'l\.json' 'service\.max_wait_ms'
  runl
}
hc_params__service_grow_below_the_queue() {
  lp 'd["service"].update(at_capacity="grow", grow_bound=1)'
  refuse 'l\.json' 'service\.grow_bound'
  runl
}
hc_params__service_at_capacity_unknown() {
  lp 'd["service"]["at_capacity"] = "drop-oldest"'
  refuse 'l\.json' 'service\.at_capacity'
  runl
}
hc_params__service_slo_without_a_bound() {
  lp 'd["service"]["slo"] = {"percentile": 0.99}'
  refuse 'l\.json' 'service\.slo\.e2e_ms'
  runl
}
hc_params__service_slo_percentile_one() {
  lp 'd["service"]["slo"]["percentile"] = 1'
  refuse 'l\.json' 'service\.slo\.percentile'
  runl
}
hc_params__service_ttft_on_a_classifier() {
  lp 'd["service"]["slo"]["ttft_ms"] = 5'
  refuse 'l\.json' 'service\.slo\.ttft_ms' 'generates'
  runl
}
hc_params__service_deadline_huge() {
  lp 'd["service"]["deadline_ms"] = 1e300'
  refuse 'l\.json' 'service\.deadline_ms'
  runl
}
hc_params__service_secret_key() {
  lp 'd["service"]["api_key"] = "sk-proj-'"$MARKER"'0123456789abcdefABCDEF"'
  refuse 'l\.json' 'service\.api_key' 'credential'
  runl
}
hc_params__service_unknown_key() {
  lp 'd["service"]["replicas"] = 3'
  refuse 'l\.json' 'replicas'
  runl
}
hc_params__service_concurrency_past_the_queue() {
  lp 'd["service"]["queue_bound"] = 4'
  refuse 'concurrency'
  hrun load --params "$LPF" --runs-dir runs --concurrency 5 --requests 10
}
