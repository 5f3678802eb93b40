#!/bin/sh
# The PMI-DECODE paper's Table-4 protocol, end to end, as faithkit commands:
#   1. fine-tune the generator (train.yaml: SmolLM2-135M on Topical-Chat valid_freq);
#   2. split the dev split into two halves by conversation (faithkit data export --half: stable, disjoint);
#   3. on the dev half, sweep each strategy's grid against plain greedy (dev-*.yaml) and keep its pick;
#   4. on the test half, decode the baselines (greedy, beam 4, beam sampling) and every pick (test.yaml
#      --chosen), judged with intervals and paired p against greedy; the table is OUT/test/sweep.csv.
# Every step resumes when rerun (training with --resume, exports are rewritten, sweeps continue).
#
#   sh configs/experiments/table4/run.sh                              # shared/data's valid_freq / valid_rare
#   TEST_SPLIT=test_rare CORPUS_PATH=~/Topical-Chat sh configs/experiments/table4/run.sh   # official test file
#   CORPUS=faithdial TRAIN_CONFIG=configs/train/faithdial.yaml SPLIT=valid TEST_SPLIT=test \
#     FAMILIES="pmi cad adacad" sh configs/experiments/table4/run.sh   # BART-Large (rerank needs a causal LM)
#   CORPUS=multidoc2dial TRAIN_CONFIG=configs/train/multidoc2dial.yaml SPLIT=validation \
#     CORPUS_PATH=~/multidoc2dial FAMILIES="pmi cad adacad" sh configs/experiments/table4/run.sh
#
# Variables: OUT (default runs/table4), CORPUS (topicalchat), CORPUS_PATH (the corpus's folder; default: its
# usual place), TRAIN_CONFIG (this folder's train.yaml), SPLIT (valid_rare: the split halved for dev and test),
# TEST_SPLIT (unset: SPLIT's test half; set: that whole split), FAMILIES (pmi cad adacad rerank), GENERATOR
# (skip step 1 and decode with this model), DEV_LIMIT / TEST_LIMIT (the first N rows of each half instead of the
# configs' 32 and 80, sized for a CPU run as docs/table4.md's measured one; larger on a GPU, e.g. 80 and 200).
# Each is checked before any work (exit 2 with one `error:` line); OUT may not lie inside a data folder.
set -eu
HERE=$(dirname "$0")
OUT=${OUT:-runs/table4}
CORPUS=${CORPUS:-topicalchat}
TRAIN_CONFIG=${TRAIN_CONFIG:-$HERE/train.yaml}
SPLIT=${SPLIT:-valid_rare}
FAMILIES=${FAMILIES:-pmi cad adacad rerank}
PATH_FLAG=${CORPUS_PATH:+--path $CORPUS_PATH}

# Every variable is checked before any work: a mistake found after training would cost its hours.
fail() { echo "error: run.sh: $*" >&2; exit 2; }
for name in DEV_LIMIT TEST_LIMIT; do
  eval "value=\${$name:-}"
  case $value in
    '') ;;
    *[!0-9]* | 0 | 0*) fail "$name must be a whole number of rows, at least 1, got '$value'" ;;
  esac
done
for family in $FAMILIES; do
  [ -f "$HERE/dev-$family.yaml" ] || fail "FAMILIES: no strategy family '$family'; choose from pmi cad adacad rerank"
done
[ -f "$TRAIN_CONFIG" ] || [ -n "${GENERATOR:-}" ] || fail "TRAIN_CONFIG: file not found: $TRAIN_CONFIG"
[ -z "${CORPUS_PATH:-}" ] || [ -d "$CORPUS_PATH" ] || fail "CORPUS_PATH: folder not found: $CORPUS_PATH"
DATA=${FAITHKIT_DATA:-$HERE/../../../../shared/data}
for data in "$DATA" ${CORPUS_PATH:+"$CORPUS_PATH"}; do
  [ -d "$data" ] || continue
  data=$(realpath "$data")
  case "$(realpath -m "$OUT")/" in
    "$data"/*) fail "OUT $OUT is inside the data folder $data, whose files it would sit among; choose another OUT" ;;
  esac
done
DEV_LIMIT_FLAG=${DEV_LIMIT:+--limit $DEV_LIMIT}
TEST_LIMIT_FLAG=${TEST_LIMIT:+--limit $TEST_LIMIT}

if [ -z "${GENERATOR:-}" ]; then
  if [ ! -d "$OUT/model/last" ]; then  # last/ is written when training ends; state/ as it goes
    faithkit train --config "$TRAIN_CONFIG" --output-dir "$OUT/model" ${CORPUS_PATH:+--corpus-path "$CORPUS_PATH"} \
      $( [ -d "$OUT/model/state" ] && echo --resume )
  fi
  GENERATOR=$OUT/model/best
fi

faithkit data export "$CORPUS" --split "$SPLIT" --half dev --output "$OUT/dev.jsonl" $PATH_FLAG
if [ -n "${TEST_SPLIT:-}" ]; then
  faithkit data export "$CORPUS" --split "$TEST_SPLIT" --output "$OUT/test.jsonl" $PATH_FLAG
else
  faithkit data export "$CORPUS" --split "$SPLIT" --half test --output "$OUT/test.jsonl" $PATH_FLAG
fi

CHOSEN=""
for family in $FAMILIES; do
  faithkit sweep --config "$HERE/dev-$family.yaml" --generator "$GENERATOR" --input "$OUT/dev.jsonl" \
    --out "$OUT/dev-$family" $DEV_LIMIT_FLAG
  CHOSEN="${CHOSEN:+$CHOSEN,}$OUT/dev-$family/best.json"
done

faithkit sweep --config "$HERE/test.yaml" --generator "$GENERATOR" --input "$OUT/test.jsonl" --out "$OUT/test" \
  --chosen "$CHOSEN" $TEST_LIMIT_FLAG
