#!/usr/bin/env bash
# Compiles every Rust snippet of README.md the way a user would: in a crate of its own made
# from the README's `Cargo.toml` block (with its `mcp` path pointed at this checkout), so a
# snippet that needs a dependency the README does not list fails here. The README's doc
# tests cannot catch that: they see mcp's own dependencies.
#
# Each ```rust block becomes one target, after rustdoc's rules for hidden lines (a leading
# `# ` is dropped, the line kept):
#   - a block that uses `TestClient` is a test (tests/, where dev-dependencies apply), its
#     code wrapped in a `#[test] fn`;
#   - a block with `fn main`, or whose `server!` writes `main`, is a binary as it stands;
#   - any other block is a binary with its code wrapped in `fn main`, as rustdoc does.
# `cargo check` compiles them all (type checks, macro expansion and the compile-time
# checks of `server!`; nothing is linked or run), sharing target/ with the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
crate=target/readme-snippets

rm -rf "$crate"
mkdir -p "$crate/src/bin" "$crate/tests"

# The first ```toml block holding a [package]: the README's Cargo.toml.
awk '
  /^```toml$/ { inside = 1; block = ""; next }
  /^```$/ && inside { inside = 0; if (block ~ /\[package\]/) { printf "%s", block; exit } next }
  inside { block = block $0 "\n" }
' README.md >"$crate/Cargo.toml"
# The README shows the crates.io form; here it is pointed at this checkout.
grep -q '^mcp = { package = "mcp-guarded", version = "0.1"' "$crate/Cargo.toml" || {
  echo "README.md: no Cargo.toml block with mcp = { package = \"mcp-guarded\", version = \"0.1\" ... }" >&2
  exit 1
}
sed -i "s|version = \"0.1\"|path = \"$root/mcp\"|" "$crate/Cargo.toml"
# Its own workspace root, not a member of the one it sits in.
printf '\n[workspace]\n' >>"$crate/Cargo.toml"
# The workspace's versions: nothing new to fetch or build.
cp Cargo.lock "$crate/"

# One file per ```rust block, hidden lines revealed.
awk -v dir="$crate/blocks" '
  BEGIN { system("mkdir -p " dir) }
  /^```rust$/ { n++; file = sprintf("%s/%02d.rs", dir, n); next }
  /^```$/ && file { close(file); file = ""; next }
  file {
    line = $0
    if (line ~ /^[ \t]*# /) sub(/# /, "", line)
    else if (line ~ /^[ \t]*#$/) sub(/#$/, "", line)
    print line > file
  }
' README.md

count=0
for block in "$crate"/blocks/*.rs; do
  count=$((count + 1))
  name="readme_$(basename "$block" .rs)"
  if grep -q 'TestClient' "$block"; then
    { echo '#![allow(unused)]'; echo '#[test]'; echo 'fn snippet() {'; cat "$block"; echo '}'; } \
      >"$crate/tests/$name.rs"
  elif grep -q 'fn main' "$block" || { grep -q 'server!' "$block" && ! grep -q 'main: false' "$block"; }; then
    { echo '#![allow(unused)]'; cat "$block"; } >"$crate/src/bin/$name.rs"
  else
    { echo '#![allow(unused)]'; echo 'fn main() {'; cat "$block"; echo '}'; } \
      >"$crate/src/bin/$name.rs"
  fi
done
if [ "$count" -eq 0 ]; then
  echo "README.md: no \`\`\`rust blocks found" >&2
  exit 1
fi

echo "checking $count README snippets as a user's crate ($crate)"
CARGO_TARGET_DIR="$root/target" cargo check --quiet --manifest-path "$crate/Cargo.toml" \
  --bins --tests
echo "README snippets compile: $count of $count"
