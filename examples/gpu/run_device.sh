#!/usr/bin/env bash
# The GPU recipe on a lent accelerator machine, in one call (examples/gpu/README.md):
#
#   here:    uv run python examples/gpu/prepare.py       # fills examples/gpu/carry (ignored by git)
#   device:  run(command="bash examples/gpu/run_device.sh", carry=["examples/gpu/carry"],
#                timeout_s=600)
#
# Installs the carried wheels with no network (pip --no-index --no-deps into $SITE, first on
# PYTHONPATH), then runs device_run.py: train + evaluate, engine benchmark, simulated vs real.
# Everything for the report lands in $OUT (log, summary.md, results.json, report.md,
# metrics.json, run.json, fidelity.png). Arguments go to device_run.py (--tiny: the CPU dry run).
# PYTHON (default python3), CARRY (default examples/gpu/carry) and SITE may be set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
CARRY=${CARRY:-$here/carry}
SITE=${SITE:-/tmp/agentworld-site}
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log") 2>&1
start=$(date +%s)
shopt -s nullglob
wheels=("$CARRY"/wheels/*.whl)
if [ ${#wheels[@]} -eq 0 ]; then
    echo "no wheels in $CARRY/wheels: run examples/gpu/prepare.py first" >&2
    exit 2
fi
"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${wheels[@]}"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
echo "installed ${#wheels[@]} wheels into $SITE in $(( $(date +%s) - start )) s"
cd "$here/../.."
status=0
"$PYTHON" "$here/device_run.py" --carry "$CARRY" --out "$OUT" "$@" || status=$?
echo "device_run.py exit $status after $(( $(date +%s) - start )) s in all"
exit $status
