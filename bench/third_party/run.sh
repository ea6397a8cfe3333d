#!/usr/bin/env bash
# Fidelity on environments no one here wrote (issue 45 item 3): third-party targets from PyPI and
# Debian, collected with the default policies through each domain's "your own environment"
# option, then the quickstart's small training budget (tiny `copy` preset, BPE vocab 3072,
# cpt 100 + sft SFT_STEPS (default 500) steps, reasoning = "domain", greedy) and fidelity against
# copy-previous, empty and nearest, in and out of distribution.
#
#   bench/third_party/run.sh [STEPS="setup collect train eval summary"] [TARGETS="mcp search terminal web swe"]
#
# setup    own venvs for the PyPI packages (runs/third_party/venv/NAME) and scratch targets
#          (a git repository, a database, documentation trees) under runs/third_party/targets
# collect  one collection pipeline per target (bench/third_party/{mcp-*,search,...}.toml)
# train    one world model per domain (train.toml); mcp: ONE model on the built-in servers plus
#          mcp-server-git and mcp-server-sqlite, scored out of distribution on mcp-server-time
#          and mcp-server-calculator, which no training run saw (their tool schemas are in the prompt)
#          (each train run ends with its own [eval]; a finished cpt checkpoint is reused)
# eval     the baselines alone on each target's splits (eval.toml with backend copy-previous)
# summary  bench/third_party/summary.py: the collection and fidelity tables of bench/README.md
#
# Everything runs with nice -n 5, one target after another. Outputs: runs/third_party/.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/third_party
tp=$PWD/runs/third_party
WEBCOLORS=25.10.0   # the terminal's home: the files of webcolors' PyPI sdist
CACHETOOLS=8.0.3    # the swe target: cachetools' PyPI sdist (pure Python, 480 unittest tests in ~2 s)
steps=${1:-"setup collect train eval summary"}; targets=${2:-"mcp search terminal web swe"}
sft_steps=${SFT_STEPS:-500}  # the quickstart's small budget; SFT_STEPS=200 is what the table ran
run() { nice -n 5 uv run agentworld run "$1"; }
# A pipeline TOML of this folder with TP (the work folder) and KEY=VALUE words replaced.
render() { local src=$1 dst=$2; shift 2; local args=(-e "s#TP#$tp#g"); for kv in "$@"; do args+=(-e "s#${kv%%=*}#${kv#*=}#g"); done; sed "${args[@]}" "$src" > "$dst"; }
mkdir -p "$tp/targets" "$tp/pipelines" "$tp/data"

setup() {
    for spec in "git:mcp-server-git" "sqlite:mcp-server-sqlite mcp<2" "time:mcp-server-time" \
                "calculator:mcp-server-calculator" "datasette:datasette"; do
        local name=${spec%%:*}
        [ -x "$tp/venv/$name/bin/python" ] && continue
        uv venv -q "$tp/venv/$name"
        # shellcheck disable=SC2086
        uv pip install -q --python "$tp/venv/$name/bin/python" ${spec#*:}
    done
    local sdist
    for sdist in "webcolors==$WEBCOLORS" "cachetools==$CACHETOOLS"; do
        [ -s "$tp/targets/${sdist%%==*}-${sdist#*==}.tar.gz" ] || python3 -m pip download -q --no-deps \
            --no-binary :all: "$sdist" -d "$tp/targets"
    done
    local repo=$tp/targets/repo
    if [ ! -d "$repo/.git" ]; then  # the git server's scratch repository: one commit, then changes
        mkdir -p "$repo" && git -C "$repo" init -q
        printf 'hello\n' > "$repo/README.md"; printf 'print(1)\n' > "$repo/main.py"
        git -C "$repo" add . && git -C "$repo" -c user.name=me -c user.email=me@example.com commit -qm init
        printf 'print(2)\n' > "$repo/main.py"; for f in notes.txt todo.md setup.cfg; do echo "$f" > "$repo/$f"; done
    fi
}

collect_mcp() {
    for name in builtin git sqlite time calculator; do
        [ -s "$tp/data/mcp-$name/episodes/heldout.jsonl" ] && continue
        render "$here/mcp-$name.toml" "$tp/pipelines/mcp-$name.toml"
        run "$tp/pipelines/mcp-$name.toml" 2>&1 | tee "$tp/data/mcp-$name.log"
    done
}

collect_one() {  # NAME [WORD=VALUE...]: bench/third_party/NAME.toml -> TP/data/NAME (once)
    [ -s "$tp/data/$1/episodes/heldout.jsonl" ] && return 0
    render "$here/$1.toml" "$tp/pipelines/$1.toml" "${@:2}"
    /usr/bin/time -f "$1: %e s wall" nice -n 5 uv run agentworld run "$tp/pipelines/$1.toml" > "$tp/data/$1.log" 2>&1 \
        || { echo "$1: collection FAILED (see $tp/data/$1.log)"; return 1; }
    tail -3 "$tp/data/$1.log"
}

collect_search() {
    [ -d "$tp/targets/pip-docs" ] || cp -r /usr/share/doc/python3-pip/html "$tp/targets/pip-docs"
    collect_one search
}

# A bash history from the EXAMPLES of Debian's git manual pages (the `$ git ...` lines of
# /usr/share/man/man1/git-*.1.gz, continued lines dropped): one episode per 7 lines of a page,
# each opened by `git init` and a first commit of the home (time stamps 1 h apart between
# episodes, so that the history parser cuts them there). $1: pages to take (a grep -E pattern),
# $2: -v to take the others.
git_history() {
    local ts=1700000000 f n
    for f in /usr/share/man/man1/git-*.1.gz; do
        echo "$f" | grep -qE $2 "$1" || continue
        MANWIDTH=200 man -l "$f" 2>/dev/null | grep -E '^\s+\$ git ' | sed 's/^\s*\$ //' | grep -v '\\$' \
            | awk -v ts="$ts" 'NR % 7 == 1 { ts += 3600; printf "#%d\ngit init -q && git add -A && git commit -qm \"initial import\"\n", ts }
                               { ts += 10; printf "#%d\n%s\n", ts, $0 }' || true  # a page without examples
        ts=$((ts + 86400))
    done
}

collect_terminal() {
    local home=$tp/targets/webcolors-home
    if [ ! -d "$home" ]; then  # a real project's files and a git identity for the commits
        mkdir -p "$home" && tar -xzf "$tp/targets/webcolors-$WEBCOLORS.tar.gz" -C "$home" --strip-components=1
        printf '[user]\n\tname = Agent\n\temail = agent@example.com\n[init]\n\tdefaultBranch = main\n' > "$home/.gitconfig"
    fi
    # held out (a second target): the pages of bisect, stash, worktree and rebase
    local ood='git-(bisect|stash|worktree|rebase)\.'
    [ -s "$tp/targets/git-history.txt" ] || git_history "$ood" -v > "$tp/targets/git-history.txt"
    [ -s "$tp/targets/git-history-ood.txt" ] || git_history "$ood" "" > "$tp/targets/git-history-ood.txt"
    collect_one terminal && collect_one terminal-ood
}

collect_web() {
    local db=$tp/targets/packages.db port=${PORT:-8765}
    if [ ! -s "$db" ]; then  # this host's Debian packages: real data, not ours
        dpkg-query -W -f='${Package}\t${Version}\t${Section}\t${Installed-Size}\t${Architecture}\t${Priority}\n' \
            | python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("create table packages (name text primary key, version text, section text, installed_kb integer, architecture text, priority text)")
db.executemany("insert or ignore into packages values (?, ?, ?, ?, ?, ?)", (l.rstrip("\n").split("\t") for l in sys.stdin))
db.commit()' "$db"
    fi
    "$tp/venv/datasette/bin/datasette" serve "$db" -h 127.0.0.1 -p "$port" > "$tp/data/datasette.log" 2>&1 &
    local server=$!
    for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.2; done
    collect_one web-datasette PORT="$port" || true
    kill "$server"
    collect_one web-site
}

collect_swe() {
    local repo=$tp/targets/cachetools
    if [ ! -d "$repo/.git" ]; then  # the sdist as a git repository of one commit
        mkdir -p "$repo" && tar -xzf "$tp/targets/cachetools-$CACHETOOLS.tar.gz" -C "$repo" --strip-components=1
        git -C "$repo" init -q && git -C "$repo" add . && \
            git -C "$repo" -c user.name=me -c user.email=me@example.com commit -qm "cachetools $CACHETOOLS sdist"
    fi
    collect_one swe
}

# Shuffled with a fixed seed, so that the first EVAL_N transitions mix the sources.
shuffled() { cat "$@" | shuf --random-source=<(yes 0); }

train() {  # NAME DOMAIN DATA SEQ EVAL_N EVAL_OOD_N
    [ -s "$tp/runs/$1/metrics.json" ] && return 0
    render "$here/train.toml" "$tp/pipelines/$1.toml" NAME="$1" DOMAIN="$2" DATA="$3" SEQ="$4" \
        EVAL_OOD_N="$6" EVAL_N="$5" SFT_STEPS="$sft_steps"
    local cpt=$tp/runs/$1/checkpoints/cpt
    if [ -s "$cpt/model.safetensors" ]; then  # a finished cpt stage of an earlier run: sft from it
        sed -i -e '/^\[cpt\]/,/^$/d' -e "s#^\[sft\]#[sft]\nmodel = \"$cpt\"#" "$tp/pipelines/$1.toml"
    fi
    mkdir -p "$tp/runs/$1"
    /usr/bin/time -f "$1: %e s wall, %U s user" nice -n 5 uv run agentworld run "$tp/pipelines/$1.toml" \
        >> "$tp/runs/$1.log" 2>&1 || { echo "$1: FAILED (see $tp/runs/$1.log)"; return 1; }
    tail -1 "$tp/runs/$1.log"
}

# One model for several servers: trained on the built-in servers, mcp-server-git and
# mcp-server-sqlite (their held-out episodes are in distribution), scored out of distribution on
# mcp-server-time and mcp-server-calculator, which no training run saw.
train_mcp() {
    local d=$tp/data/mcp-pool/episodes s
    mkdir -p "$d"
    for s in train heldout; do
        shuffled "$tp"/data/mcp-{builtin,git,sqlite}/episodes/$s.jsonl > "$d/$s.jsonl"
    done
    shuffled "$tp"/data/mcp-{time,calculator}/episodes/{train,heldout}.jsonl > "$d/ood.jsonl"
    train mcp mcp "$tp/data/mcp-pool" 2048 90 90
}

pool() {  # NAME SOURCES OOD_SOURCES: TP/data/NAME/episodes from other collections (shuffled)
    local d=$tp/data/$1/episodes s
    mkdir -p "$d"
    for s in train heldout; do shuffled $(for n in $2; do echo "$tp/data/$n/episodes/$s.jsonl"; done) > "$d/$s.jsonl"; done
    shuffled $(for n in $3; do ls "$tp/data/$n/episodes/"{train,heldout,ood}.jsonl 2>/dev/null \
        | grep -v "^$tp/data/$n/episodes/ood.jsonl$" || true; done) \
        $(for n in $2; do ls "$tp/data/$n/episodes/ood.jsonl" 2>/dev/null || true; done) > "$d/ood.jsonl"
}

baselines() {  # NAME DOMAIN DATA: copy-previous, empty and nearest alone on DATA's splits
    [ -s "$tp/runs/$1/metrics.json" ] && return 0
    render "$here/eval.toml" "$tp/pipelines/$1.toml" NAME="$1" DOMAIN="$2" BACKEND=copy-previous \
        MODEL=none TRAIN="$3/episodes/train.jsonl" DATA="$3" EVAL_OOD_N=200 EVAL_N=200
    nice -n 5 uv run agentworld run "$tp/pipelines/$1.toml" > "$tp/runs/$1.log" 2>&1 \
        || { echo "$1: FAILED (see $tp/runs/$1.log)"; return 1; }
}

train_search() { train search search "$tp/data/search" 2048 120 120; }
train_terminal() { pool terminal-pool terminal terminal-ood; train terminal terminal "$tp/data/terminal-pool" 2048 90 90; }
train_web() { pool web-pool "web-datasette web-site" ""; train web web "$tp/data/web-pool" 2048 80 80; }
train_swe() { train swe swe "$tp/data/swe" 4096 80 80; }
eval_search() { baselines search-baselines search "$tp/data/search"; }
eval_terminal() { pool terminal-pool terminal terminal-ood; baselines terminal-baselines terminal "$tp/data/terminal-pool"; }
eval_web() { pool web-pool "web-datasette web-site" ""; baselines web-baselines web "$tp/data/web-pool"; }
eval_swe() { baselines swe-baselines swe "$tp/data/swe"; }
summary() { nice -n 5 uv run python "$here/summary.py" "$tp"; }

[[ " $steps " == *" setup "* ]] && setup
for step in $steps; do
    for target in $targets; do
        case "$step" in
            setup) ;;
            *) fn="${step}_${target}"; if declare -F "$fn" >/dev/null; then "$fn"; fi ;;
        esac
    done
done
if [[ " $steps " == *" summary "* ]]; then summary; fi
