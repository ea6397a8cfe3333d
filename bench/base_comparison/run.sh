#!/usr/bin/env bash
# The measured comparison of issue 25: the tiny from-scratch preset vs SmolLM2-135M LoRA vs
# SmolLM2-135M full fine-tuning, on the same collected data at equal CPU time per arm.
#
#   bench/base_comparison/run.sh [BUDGET_S=300] [EVAL_N=120] [EVAL_OOD_N=80] [ARMS="tiny smollm2-lora smollm2-full"]
#
# Writes runs/cmp/<arm>/ (pipeline runs) and prints bench/base_comparison/summary.py's table.
# The data (runs/cmp/data) is collected once and reused. Greedy decoding in every arm.
set -euo pipefail
cd "$(dirname "$0")/../.."
budget=${1:-300}; eval_n=${2:-120}; eval_ood_n=${3:-80}; arms=${4:-"tiny smollm2-lora smollm2-full"}
here=bench/base_comparison
mkdir -p runs/cmp
if [ ! -s runs/cmp/data/episodes/ood.jsonl ]; then
    uv run agentworld run "$here/data.toml"
fi
cpt=$((budget / 4)); sft=$((budget - cpt))
for arm in $arms; do
    sed -e "s/CPT_S/$cpt/; s/SFT_S/$sft/; s/BUDGET/$budget/; s/EVAL_OOD_N/$eval_ood_n/; s/EVAL_N/$eval_n/" \
        "$here/$arm.toml" > "runs/cmp/$arm.toml"
    /usr/bin/time -f "$arm: %e s wall" uv run agentworld run "runs/cmp/$arm.toml" || echo "$arm: FAILED"
done
uv run python "$here/summary.py" runs/cmp $arms
