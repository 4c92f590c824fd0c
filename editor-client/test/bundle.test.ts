/** The esbuild bundle the .vsix ships: self-contained (only `vscode` and Node built-ins are required) and loadable. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { isBuiltin, Module } from 'node:module';
import * as path from 'node:path';
import { it } from 'node:test';
import * as fakeVscode from './mocks/vscode';

const bundle = path.resolve(__dirname, '..', '..', 'dist', 'extension.js');

it('the bundle loads with only vscode and Node built-ins, and exports activate/deactivate', { skip: fs.existsSync(bundle) ? false : 'run `npm run bundle` first' }, () => {
    const loader = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
    const originalLoad = loader._load;
    const requested = new Set<string>();
    // the language client subclasses a few VS Code classes at load time: any missing member is a class
    class Placeholder {
        readonly placeholder = true;
    }
    const vscode = new Proxy<Record<string, unknown>>(fakeVscode, {
        get: (target, key: string) => (key in target ? target[key] : Placeholder),
    });
    loader._load = (request: string, parent: unknown, isMain: boolean): unknown => {
        if (parent !== null && (parent as { filename?: string }).filename === bundle) {
            requested.add(request);
        }
        return request === 'vscode' ? vscode : originalLoad(request, parent, isMain);
    };
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- the bundle is CommonJS, loaded by path
        const loaded = require(bundle) as { activate?: unknown; deactivate?: unknown };
        assert.equal(typeof loaded.activate, 'function');
        assert.equal(typeof loaded.deactivate, 'function');
    } finally {
        loader._load = originalLoad;
    }
    const outside = [...requested].filter((name) => name !== 'vscode' && !isBuiltin(name));
    assert.deepEqual(outside, [], 'everything else is bundled');
    assert.ok(requested.has('vscode'));
});
