/** What the Marketplace / Open VSX listing shows comes from package.json: check it is all there. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const client = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(client, 'package.json'), 'utf8')) as {
    version: string;
    icon: string;
    keywords: string[];
    activationEvents: string[];
};

describe('the listing', () => {
    it('has a 128×128 PNG icon (the Marketplace refuses SVG icons)', () => {
        const png = fs.readFileSync(path.join(client, manifest.icon));
        assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
        assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [128, 128]);
    });

    it('has a CHANGELOG entry for this version, keywords and a license', () => {
        assert.match(fs.readFileSync(path.join(client, 'CHANGELOG.md'), 'utf8'), new RegExp(`^## ${manifest.version.replaceAll('.', '\\.')}$`, 'm'));
        assert.ok(manifest.keywords.includes('aider'));
        assert.ok(fs.existsSync(path.join(client, 'LICENSE')));
    });

    it('activates once the window has started, so the status item and the Runs view are there before a command', () => {
        assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
    });
});
