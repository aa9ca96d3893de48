#!/bin/sh
# base_tree.sh: writes revision REV's files (git archive, no .git) into .base/ (ignored), the
# second source tree that bench/device_run.sh measures beside the working tree when the device
# call carries it (BASE=.base, carry [".deps", ".base"]): a branch and its base timed in one
# call, on one GPU at one clock, instead of figures from different sessions side by side.
# usage: sh bench/base_tree.sh [REV]   (default main)
set -eu
cd "$(dirname "$0")/.."
rev=${1:-main}
git rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "base_tree.sh: no revision '$rev'" >&2; exit 2; }
rm -rf .base
mkdir .base
git archive "$rev" | tar -x -C .base
grep -qx '/.base/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.base/' >> .git/info/exclude; }
echo "base_tree.sh: .base holds $rev ($(git rev-parse --short "$rev")), $(du -sh .base | cut -f1)"
