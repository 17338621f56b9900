# Sourced by scripts/test.sh and scripts/bench.sh (from the repository's root):
# installs the pinned npm trees of scripts/npm.
#
# npm_trees TREE... installs each tree scripts/npm/TREE (package.json and its
# package-lock.json, which names no download address) with npm ci into
# $CODEBRIDGE_TEST_NPM_DIR/TREE, and exports CODEBRIDGE_TEST_NPM_DIR. Unset, it
# is a folder in the cache named by the hash of the test trees' lockfiles
# (servers/ and clients/, apart as a user's npx keeps them), so a changed
# lockfile installs anew and nothing installed earlier is reused. Trees of other
# lockfiles are removed from the cache once unused for a week, not at once: two
# checkouts of different commits on one machine (a CI run beside a branch's
# tests) each keep their own while they run. A tree whose own files changed (its
# .codebridge-lock differs) is installed again, so other trees such as bench/
# share the folder without renaming it.
npm_trees() {
  if [ ! -d scripts/npm ]; then # elsewhere the lockfiles' hash would be that of nothing
    echo "npm_trees: run it from the repository's root (there is no scripts/npm in $PWD)" >&2
    return 1
  fi
  if [ -z "${CODEBRIDGE_TEST_NPM_DIR:-}" ]; then
    local hash cache
    hash=$(cat scripts/npm/{clients,servers}/package.json scripts/npm/{clients,servers}/package-lock.json | sha256sum | cut -c1-16)
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/codebridge
    if [ -d "$cache" ]; then
      find "$cache" -mindepth 1 -maxdepth 1 \( -name 'npm-*' -o -name npm \) ! -name "npm-$hash" -mtime +7 -exec rm -rf {} +
    fi
    export CODEBRIDGE_TEST_NPM_DIR=$cache/npm-$hash
    mkdir -p "$CODEBRIDGE_TEST_NPM_DIR" && touch "$CODEBRIDGE_TEST_NPM_DIR"
  fi
  local dir=$CODEBRIDGE_TEST_NPM_DIR tree want
  for tree in "$@"; do
    want=$(cat "scripts/npm/$tree/package.json" "scripts/npm/$tree/package-lock.json" | sha256sum | cut -c1-16)
    [ "$(cat "$dir/$tree/.codebridge-lock" 2>/dev/null)" = "$want" ] && continue
    command -v npm >/dev/null || { echo "npm is missing: install Node.js 20+ (Debian: apt-get install nodejs npm)" >&2; return 1; }
    echo "installing the pinned npm tree scripts/npm/$tree into $dir/$tree (npm ci)" >&2
    rm -rf "$dir/$tree.new" "$dir/$tree"
    mkdir -p "$dir/$tree.new"
    cp "scripts/npm/$tree/package.json" "scripts/npm/$tree/package-lock.json" "$dir/$tree.new/"
    (cd "$dir/$tree.new" && npm ci --no-audit --no-fund --loglevel=error >&2)
    printf '%s' "$want" >"$dir/$tree.new/.codebridge-lock"
    mv "$dir/$tree.new" "$dir/$tree"
  done
}
