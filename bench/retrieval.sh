#!/usr/bin/env bash
# Retrieval-augmented SFT against plain SFT at equal training steps (issue 47 item 1), on the
# same collected episodes and the same CPT checkpoint: the two arms differ only in
# [sft] retrieval. Each arm is evaluated with the copy-previous, empty and nearest baselines on
# held-out, out-of-distribution, realistic and hand-written transitions; the per-split tables are
# in runs/retrieval/{off,on}/report.md, and bench/retrieval_table.py prints them side by side.
#
#   nice -n 5 bench/retrieval.sh                               # terminal, issue budgets
#   CPT_STEPS=50 SFT_STEPS=200 BEAMS=1 nice -n 5 bench/retrieval.sh   # what a busy host allows
#
# Env: EPISODES (1000), CPT_STEPS (100), SFT_STEPS (500), K (4), MAX_CHARS (120),
# MAX_TOKENS (128), BEAMS (3), N (250: held-out transitions; the other splits get N/2),
# OUT (runs/retrieval), ARMS ("off on": the arms to (re)run). Steps already done (episodes, cpt checkpoint) are reused.
set -euo pipefail
EPISODES=${EPISODES:-1000} CPT_STEPS=${CPT_STEPS:-100} SFT_STEPS=${SFT_STEPS:-500}
K=${K:-4} MAX_CHARS=${MAX_CHARS:-120} MAX_TOKENS=${MAX_TOKENS:-128} BEAMS=${BEAMS:-3}
N=${N:-250} OUT=${OUT:-runs/retrieval}
mkdir -p "$OUT/data"
if [ ! -f "$OUT/data/episodes/train.jsonl" ]; then  # the quickstart's collection, 1,000 episodes
  cat > "$OUT/collect.toml" <<TOML
[run]
dir = "$OUT/data"
seed = 0
domain = "terminal"
[collect]
episodes = $EPISODES
policies = { scripted = 0.35, random = 0.35, real = 0.3 }
max_steps = 12
heldout_fraction = 0.2
workers = 2
ood_task_kinds = ["status", "compare"]
ood_commands = ["paste", "nl", "rev", "expr"]
realistic_sources = ["info:grep", "info:diffutils", "info:gzip", "man:column", "man:comm",
                     "man:basename", "man:dirname"]
eval_sets = ["handwritten"]
eval_max_steps = 40
TOML
  uv run agentworld run "$OUT/collect.toml"
fi
if [ ! -f "$OUT/data/checkpoints/cpt/agentworld.json" ]; then  # one CPT checkpoint, both arms
  cat > "$OUT/cpt.toml" <<TOML
[run]
dir = "$OUT/data"
seed = 0
domain = "terminal"
[cpt]
trainer = "cpt"
model = "copy"
tokenizer = "train"
vocab_size = 3072
max_steps = $CPT_STEPS
mixed_precision = "auto"
TOML
  uv run agentworld run "$OUT/cpt.toml"
fi
arm() {  # arm NAME RETRIEVAL_TOML
  mkdir -p "$OUT/$1"
  ln -sfn "$(realpath "$OUT/data/episodes")" "$OUT/$1/episodes"
  cat > "$OUT/$1.toml" <<TOML
[run]
dir = "$OUT/$1"
seed = 0
domain = "terminal"
[sft]
trainer = "sft"
model = "$OUT/data/checkpoints/cpt"
max_steps = $SFT_STEPS
batch_size = 2
max_seq_len = 2048
mixed_precision = "auto"
weight_decay = 0.1
reasoning = "domain"
$2
[eval]
backend = "hf"
baselines = ["copy-previous", "empty", "nearest"]
rewards = ["exact_match", "edit_similarity", "domain", "format_validity"]
eval_sets = ["handwritten"]
max_transitions = $N
ood_max_transitions = $((N / 2))
realistic_max_transitions = $((N / 2))
num_beams = $BEAMS
TOML
  uv run agentworld run "$OUT/$1.toml" > "$OUT/$1.log" 2>&1
}
for name in ${ARMS:-off on}; do  # in parallel: the same host load for both
  if [ "$name" = on ]; then
    arm on "retrieval = { k = $K, max_chars = $MAX_CHARS, max_tokens = $MAX_TOKENS }" &
  else
    arm off "" &
  fi
done
wait
uv run python bench/retrieval_table.py "$OUT/off" "$OUT/on"
