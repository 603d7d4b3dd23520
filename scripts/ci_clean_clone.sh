#!/usr/bin/env bash
# Run CI exactly as it runs on main: a fresh clone of the current commit, CI=true bash .ci/run.
#
# The result is recorded in .cache/ci-clean/<commit>.{log,ok}: scripts/check_ci_record.sh (the pre-push hook
# of .pre-commit-config.yaml) refuses to push a commit that has no passing record. A green working tree can
# hide a missing install step or a result that only this checkout's results/ holds; a clean clone cannot.
#
#   bash scripts/ci_clean_clone.sh            # the checked-out commit (uncommitted changes are NOT tested)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
commit=$(git rev-parse HEAD)
if ! git diff --quiet HEAD -- . ':!.cache'; then
    echo "note: uncommitted changes are not part of this run (it tests $commit)" >&2
fi
record=$root/.cache/ci-clean
mkdir -p "$record"
work=$(mktemp -d /tmp/specdec-ci.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/repo"
git -C "$work/repo" checkout -q "$commit"
start=$(date +%s)
status=0
(cd "$work/repo" && CI=true bash .ci/run) > "$record/$commit.log" 2>&1 || status=$?
seconds=$(( $(date +%s) - start ))
tail -n 5 "$record/$commit.log"
if [ "$status" -eq 0 ]; then
    echo "$commit passed in ${seconds} s on $(nproc) cores ($(date -u +%FT%TZ))" | tee "$record/$commit.ok"
else
    rm -f "$record/$commit.ok"
    echo "$commit FAILED (exit $status) after ${seconds} s: see $record/$commit.log" >&2
    exit "$status"
fi
