#!/usr/bin/env bash
# Check the import contract (.importlinter: base < trace < features < models < consumers < cli, one-way
# edges among the consumers) on the package laid out as it is installed. In a default editable install
# features/, models/ and evaluation/ are mapped into acmemodel/ by a path hook that import-linter's
# graph builder does not see, so the package is first laid out whole by setuptools' own build_py
# (pure-Python files only, no C compile) in a scratch directory, and linted there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
(cd "$root" && python setup.py -q build_py --build-lib "$out" > "$out/build.log" 2>&1) \
    || { cat "$out/build.log"; echo "error: could not lay out the package for lint-imports"; exit 1; }
for sub in features models evaluation; do
    [ -f "$out/acmemodel/$sub/__init__.py" ] || { echo "error: acmemodel/$sub missing from the layout"; exit 1; }
done
cd "$out" && PYTHONPATH="$out" lint-imports --no-cache "$root/.importlinter"
