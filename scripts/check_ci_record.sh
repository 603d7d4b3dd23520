#!/usr/bin/env bash
# pre-push hook: the commit being pushed must have passed scripts/ci_clean_clone.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
commit=$(git rev-parse HEAD)
if [ -f ".cache/ci-clean/$commit.ok" ]; then
    cat ".cache/ci-clean/$commit.ok"
    exit 0
fi
echo "HEAD $commit has not passed a clean-clone CI run: run 'make ci-clean' (bash scripts/ci_clean_clone.sh) first." >&2
exit 1
