# Token-id parity on 10,000 texts per family (tests/tokenizer/parity.py): a WordPiece (BERT),
# a byte-level BPE (RoBERTa) and a Unigram (NFKC, Metaspace) tokenizer.json trained here by
# Hugging Face tokenizers; a SentencePiece unigram .model trained by sentencepiece 0.1.99; and
# that .model read with XLM-R's (fairseq's) ids. All from Debian's licence and copyright texts;
# pilot's ids must equal the reference's on every text. Skips without the test venv.
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
"$PILOT_PYTHON" "$SRC/tests/tokenizer/parity.py" "$PILOT_TOKENIZER_PROBE" "$WORK/parity" >parity.txt 2>&1 \
  || { cat parity.txt; fail "pilot's token ids differ from the reference"; }
cat parity.txt
for family in bert roberta spm unigram xlmr; do
  expect_in parity.txt "parity $family: 10000/10000 texts identical"
done
expect_in parity.txt "xlmr against transformers' fast tokenizer (XLMRobertaConverter):"
echo PASS
