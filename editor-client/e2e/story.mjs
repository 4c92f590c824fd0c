// What every code-server story shares: its numbered steps (each needs the one before, starts
// without notifications and ends with a screenshot) and its end (the browser, code-server and
// the scripted model stopped, the processes code-server left noted in the run folder).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';

/** The story's `step(n, title, lastShot, body)`; `wbOf` gives the Workbench once it is open. */
export function storySteps(wbOf, passed) {
    return function step(n, title, lastShot, body) {
        it(`${n}. ${title}`, async () => {
            if (n > 1) {
                assert.ok(passed.has(n - 1), `the story stops: step ${n - 1} failed`);
                await wbOf().clearToasts();
            }
            await body();
            await wbOf().screenshot(lastShot);
            passed.add(n);
        });
    };
}

/** Stop what the story started (each part may be missing: `before` may have failed early). */
export async function endStory({ run, wb, browser, codeServer, llm }) {
    if (wb) await wb.screenshot('end').catch(() => {});
    await browser?.context.close().catch(() => {});
    const stopped = await codeServer?.stop();
    if (stopped) {
        fs.writeFileSync(path.join(run, 'processes.txt'), stopped.map((p) => `${p.pid} ${p.command}`).join('\n'));
    }
    await llm?.stop();
    fs.rmSync(path.join(run, 'chromium-profile'), { recursive: true, force: true }); // a fresh one each run
    console.log(`e2e screenshots: ${path.join(run, 'screenshots')}`);
}
