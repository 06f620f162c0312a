# Bad input before any work exits 2, names the file, id or key, and creates no run folder.
source "$(dirname "$0")/lib.sh"
copy_project
P=proj/config/pilot.json
M=proj/data/pilot/manifest.json
no_runs() { [ ! -e runs ] || [ -z "$(ls -A runs)" ] || fail "a run folder was created"; }

# Duplicate id.
sed 's/"id": "doc-02"/"id": "doc-01"/' $M >proj/data/pilot/dup.json
run_pilot 2 run --params $P --manifest proj/data/pilot/dup.json --runs-dir runs
expect_in err "pilot: error: duplicate id 'doc-01'"
expect_in err "dup.json"
no_runs

# Unparseable manifest.
head -c 200 $M >proj/data/pilot/broken.json
run_pilot 2 run --params $P --manifest proj/data/pilot/broken.json --runs-dir runs
expect_in err "not valid JSON"
expect_in err "broken.json"
no_runs

# Missing manifest.
run_pilot 2 run --params $P --manifest proj/data/pilot/nope.json --runs-dir runs
expect_in err "nope.json"
no_runs

# Unknown key in the parameters.
sed 's/"batch_size"/"batch_sise"/' $P >proj/config/typo.json
run_pilot 2 run --params proj/config/typo.json --runs-dir runs
expect_in err "unknown key 'batch_sise'"
no_runs

# A credential in the parameters: refused, value never echoed.
sed 's/"seed": 1234,/"seed": 1234, "hf_token": "hf_SuperSecretValue0123456789",/' $P >proj/config/secret.json
run_pilot 2 run --params proj/config/secret.json --runs-dir runs --json
expect_in err "looks like a credential at key 'hf_token'"
expect_in err "environment"
expect_not_in err "SuperSecretValue"
expect_not_in out "SuperSecretValue"
expect_in out '"exit_code": 2'
no_runs

# A model whose sha256 differs from the pinned one.
cp proj/data/models/langid/langid.pt proj/data/models/langid/other.pt
printf 'x' >>proj/data/models/langid/other.pt
sed 's#langid/langid.pt#langid/other.pt#' $P >proj/config/othermodel.json
run_pilot 2 run --params proj/config/othermodel.json --runs-dir runs
expect_in err "model sha256 is"
expect_in err "other.pt"
no_runs

# An allowed category the model does not know.
sed 's/"ja"\]/"ja", "xx"]/' $P >proj/config/badlabel.json
run_pilot 2 run --params proj/config/badlabel.json --runs-dir runs
expect_in err "allowed category 'xx' is not a label of the model"
no_runs

# Usage errors.
run_pilot 2 run --params $P --device tpu --runs-dir runs
run_pilot 2 frobnicate
run_pilot 2 verify
run_pilot 2 verify does-not-exist
expect_in err "does-not-exist"
no_runs
echo PASS
