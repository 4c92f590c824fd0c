// Builds the server's wheel (aider_lsp + the bundled aider_mcp) into server/ for the .vsix.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const repoRoot = path.resolve(__dirname, '..', '..');
const outDir = path.resolve(__dirname, '..', 'server');
const venvPython = path.join(repoRoot, '.venv', 'bin', 'python');
const python = process.env.PYTHON || (fs.existsSync(venvPython) ? venvPython : 'python3');

fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });
execFileSync(python, ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '-w', outDir, repoRoot], { stdio: 'inherit' });
const wheels = fs.readdirSync(outDir).filter((name) => /^aider_lsp-.*\.whl$/.test(name));
if (wheels.length !== 1) {
    throw new Error(`expected one aider_lsp wheel in ${outDir}, found: ${wheels.join(', ') || 'none'}`);
}
console.log(`server wheel: ${path.join('server', wheels[0])}`);
