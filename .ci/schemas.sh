#!/usr/bin/env bash
# The vendored schemas (tests/schema) must be the reference ones: when the reference copy
# sits beside the checkout (../shared/mcp-schema), every file in it must be in tests/schema,
# byte for byte. Without it there is nothing to compare against; say so and pass.
set -euo pipefail
cd "$(dirname "$0")/.."
reference=../shared/mcp-schema
if [ ! -d "$reference" ]; then
  echo "schemas: no $reference beside the checkout; nothing to compare the vendored copy with"
  exit 0
fi
if ! diff -r -q --exclude README.md "$reference" tests/schema; then
  echo "schemas: tests/schema differs from $reference; copy it again (cp -r $reference/* tests/schema/)" >&2
  exit 1
fi
echo "schemas: tests/schema matches $reference"
