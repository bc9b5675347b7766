#!/usr/bin/env bash
# Same bytes from two versions of the code: one log exported by two source trees (say a
# `git worktree` of main and this checkout), every file compared byte for byte. The bench
# docstrings' "Same bytes (check_identical.sh)" is this check.
#
#   bench/check_identical.sh LOG RUN TREE_A TREE_B [dataset export options...]
#
# Each export appends its dataset.exported event to LOG; the files do not depend on it.
set -euo pipefail
log=$(realpath "$1") run=$2 first=$(realpath "$3") second=$(realpath "$4")
shift 4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export_with() {  # from inside the tree: `python -m` puts the working directory first on sys.path
    (cd "$1" && PYTHONPATH="$1" python -c 'import eviscene, sys; assert eviscene.__file__.startswith(sys.argv[1]), eviscene.__file__' "$1" \
        && PYTHONPATH="$1" python -m eviscene --db "$log" dataset export --run "$run" --out "$2" "${@:3}" > /dev/null)
}
export_with "$first" "$out/first" "$@"
export_with "$second" "$out/second" "$@"
diff -r "$out/first" "$out/second" && echo "IDENTICAL: $(ls "$out/first" | wc -l) files, $(du -sh "$out/first" | cut -f1)"
