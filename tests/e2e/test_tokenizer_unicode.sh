# The tokenizers' Unicode, code point by code point: pilot's components (ICU 72, cut by
# character age to the tables tokenizers was built on) against Hugging Face tokenizers 0.23.3
# for all 1,112,064 code points. The only differences allowed are at code points ICU 72 does
# not know (Unicode 16's, which tokenizers' Rust tables have). Skips without the test venv.
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
python3 "$SRC/tests/tokenizer/check-unicode.py" "$PILOT_TOKENIZER_PROBE" "$PILOT_PYTHON" >unicode.txt 2>&1 \
  || { cat unicode.txt; fail "pilot's Unicode differs from tokenizers' at a code point ICU knows"; }
cat unicode.txt
expect_in unicode.txt "1112064 code points compared with tokenizers 0.23.3"
expect_in unicode.txt "NFKC: 0 differ"
expect_in unicode.txt "BertPreTokenizer: 0 differ"
echo PASS
