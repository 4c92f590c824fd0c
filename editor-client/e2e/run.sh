#!/usr/bin/env bash
# `run.sh test` (npm run test:e2e): the end-to-end test of the extension in a real VS Code (one
# folder, then a multi-root window: folders.e2e.test.mjs, then Restricted Mode: trust.e2e.test.mjs,
# then two runs side by side in worktrees, one applied, one discarded: isolation.e2e.test.mjs),
# then the ACP agent (`aider-lsp acp`) driven by acpx, a headless ACP client (acp.e2e.test.mjs),
# then a new user's `uvx --from <wheel> aider-lsp acp` on empty caches: sign-in, first-run set-up
# and a green turn (uvx.e2e.test.mjs).
# `run.sh editor` (./scripts/run editor): code-server with the extension and the example open.
# Both install what is missing first (setup.sh, the repository's .venv) and build the .vsix
# (AIDER_LSP_E2E_VSIX: use that one instead).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
client=$(dirname "$here")
repo=$(dirname "$client")
mode=${1:-test}

bash "$here/setup.sh" >/dev/null
if [ ! -x "$repo/.venv/bin/aider-lsp" ]; then
  bash "$repo/scripts/bootstrap" >&2
fi
cd "$client"
[ -d node_modules ] || npm ci --no-audit --no-fund >&2
vsix=${AIDER_LSP_E2E_VSIX:-}
if [ -z "$vsix" ]; then
  npm run --silent package >&2
  vsix=$client/aider-lsp.vsix
fi

case "$mode" in
  # the extension in VS Code, then `aider-lsp acp` driven by acpx: one at a time (each starts Aider
  # and a scripted model; side by side they would compete for the cores and their timeouts)
  test) AIDER_LSP_E2E_VSIX=$vsix exec node --test --test-reporter=spec --test-concurrency=1 \
    "$here/aider.e2e.test.mjs" "$here/folders.e2e.test.mjs" "$here/trust.e2e.test.mjs" "$here/isolation.e2e.test.mjs" \
    "$here/acp.e2e.test.mjs" "$here/uvx.e2e.test.mjs" ;;
  editor) exec node "$here/editor.mjs" "$vsix" ;;
  *) echo "usage: $0 test|editor" >&2; exit 2 ;;
esac
