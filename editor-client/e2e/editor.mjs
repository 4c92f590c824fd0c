// `./scripts/run editor`: a real VS Code (code-server) on 127.0.0.1 with the extension installed
// and a temp copy of the example calculator open, for trying the extension on this machine or
// on a remote one (forward the port over ssh). Without a configured model (AIDER_LSP_MODEL) the
// models are the offline scripted ones of the end-to-end test; Aider is always the real one.
// Ctrl-C stops code-server, its extension host, the language server and Aider.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { copyExample, serverEnvironment, startScriptedLlm, writeWorkspaceSettings } from './project.mjs';
import { CodeServer } from './workbench.mjs';

const vsix = process.argv[2];
const port = Number(process.env.AIDER_LSP_EDITOR_PORT || 0);
const run = fs.mkdtempSync(path.join(os.tmpdir(), 'aider-lsp-editor-'));
const project = path.join(run, 'calculator');
copyExample(project);

const scripted = !process.env.AIDER_LSP_MODEL;
const llm = scripted ? await startScriptedLlm(project, { hold: false }) : undefined;
writeWorkspaceSettings(project, { baseUrl: llm?.baseUrl });
const codeServer = new CodeServer(path.join(run, 'code-server'), serverEnvironment({ scripted }), port);
codeServer.writeUserSettings({});
codeServer.installExtension(vsix);
const url = await codeServer.start(project);

console.log(`\naider-lsp editor: ${url}`);
console.log(`  project: ${project} (a copy of the example calculator; its tests fail on purpose)`);
if (scripted) {
    console.log('  models: OFFLINE DEMO (scripted, 127.0.0.1); set AIDER_LSP_MODEL and AIDER_LSP_AIDER_MODEL to use yours.');
    console.log('  try: F1 → "Aider: Run Workflow…" → "Make the tests pass"; select `add` → "Aider: Edit with Aider…" → "Add a docstring to add"');
} else {
    console.log(`  models: ${process.env.AIDER_LSP_MODEL} (plans, analyses) and Aider's ${process.env.AIDER_LSP_AIDER_MODEL ?? '(aiderModel unset)'}`);
}
console.log('  remote machine: ssh -L PORT:127.0.0.1:PORT you@host, then open the URL here. Ctrl-C stops everything.\n');

let stopping = false;
async function stop() {
    if (stopping) return;
    stopping = true;
    const stopped = await codeServer.stop();
    await llm?.stop();
    console.log(`aider-lsp editor: stopped ${stopped.length} processes; the project copy stays in ${project}`);
    process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
