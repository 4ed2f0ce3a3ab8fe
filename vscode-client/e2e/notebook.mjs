// End-to-end test of atenlint in a Jupyter notebook in the real VS Code workbench: code-server
// 4.100.3 (VS Code 1.100.3, whose built-in ipynb serializer renders the cells; no Jupyter
// extension, no kernel) in headless Debian Chromium driven by playwright-core.
//
// It opens notebook-workspace/volume_pool.ipynb from the Explorer, as a user would, and reads the
// workbench's DOM: the squiggle must sit under `self.pool(x)` in the model's cell and in no other
// cell, the hover and the Problems panel must name the op, Ctrl+. must offer atenlint's quick fix;
// applying it and saving the notebook must clear the squiggle and write the fix into the .ipynb.
//
//   node vscode-client/e2e/notebook.mjs [--vsix atenlint.vsix] [--code-server PATH] [--chromium PATH] [--timeout 480]
//
// Needs what run.mjs needs: `npm run package` (atenlint.vsix), vscode-client/e2e/install-code-server.sh,
// and a Python with torch in .venv (or $ATENLINT_E2E_PYTHON). Screenshots, logs and the verdict go to
// .ci/artifacts/ (vscode-notebook*). Ends with "notebook e2e: N passed, N failed"; exits 1 on a failure.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const work = path.join(root, '.ci', 'work', 'e2e-notebook'); // not run.mjs's .ci/work/e2e: it clears that
const artifacts = path.join(root, '.ci', 'artifacts');
const { values: options } = parseArgs({
    options: {
        vsix: { type: 'string', default: path.join(root, 'atenlint.vsix') },
        'code-server': { type: 'string', default: path.join(root, '.ci', 'work', 'code-server', 'node_modules', '.bin', 'code-server') },
        chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
        timeout: { type: 'string', default: '480' },
    },
});
const python = process.env.ATENLINT_E2E_PYTHON || path.join(root, '.venv', 'bin', 'python');
const started = Date.now();
const deadline = started + Number(options.timeout) * 1000;

// What the fixture must show (the CLI reports it as volume_pool.ipynb:cell 3:7:16).
const NOTEBOOK = 'volume_pool.ipynb';
const MODEL_CELL_MARK = 'class VolumePool';
const FLAGGED_LINE = 'return self.pool(x)';
const FLAGGED_CALL = 'self.pool(x)';
const CODE = 'MPS001';
const OP = 'aten::_adaptive_avg_pool3d';
const FIX_TITLE = 'Run it on the CPU explicitly';
const FIXED_TEXT = 'self.pool(x.cpu()).to(x.device)';

function log(message) {
    console.log(`[notebook e2e ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${message}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds left for a step: its own allowance, never past the whole run's deadline. */
const budget = (ms) => Math.max(1000, Math.min(ms, deadline - Date.now()));

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

async function waitUntil(what, probe, timeoutMs, intervalMs = 300) {
    const until = Date.now() + budget(timeoutMs);
    let last;
    for (;;) {
        last = await probe().catch((error) => ({ error }));
        if (last && !last.error) {
            return last;
        }
        if (Date.now() > until) {
            const why = last && last.error ? `: ${last.error.message.split('\n')[0]}` : '';
            throw new Error(`timed out after ${Math.round(budget(timeoutMs) / 1000)}s waiting for ${what}${why}`);
        }
        await sleep(intervalMs);
    }
}

function writeJson(file, value) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

class Checks {
    constructor() {
        this.results = [];
    }

    /** Runs one check; an essential one that fails skips the rest (they depend on it). */
    async run(name, body, { essential = true } = {}) {
        const t0 = Date.now();
        if (this.aborted) {
            this.results.push({ name, ok: false, seconds: 0, detail: `skipped: ${this.aborted} failed` });
            return undefined;
        }
        try {
            const detail = await body();
            this.results.push({ name, ok: true, seconds: (Date.now() - t0) / 1000, detail: typeof detail === 'string' ? detail : '' });
            log(`ok ${name}`);
            return detail;
        } catch (error) {
            this.results.push({ name, ok: false, seconds: (Date.now() - t0) / 1000, detail: error.message });
            log(`FAILED ${name}: ${error.message.split('\n')[0]}`);
            if (essential) this.aborted = name;
            return undefined;
        }
    }
}

// --- setup --------------------------------------------------------------------------------------

function prepare() {
    for (const [what, file] of [['the packaged extension (npm run package)', options.vsix], ['code-server (install-code-server.sh)', options['code-server']],
        ['Chromium', options.chromium], ['a Python with torch', python]]) {
        if (!fs.existsSync(file)) throw new Error(`missing ${what}: ${file}`);
    }
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    fs.mkdirSync(artifacts, { recursive: true });
    const workspace = path.join(work, 'notebook-workspace');
    fs.cpSync(path.join(here, 'notebook-workspace'), workspace, { recursive: true });
    const extensions = path.join(work, 'extensions');
    const xdg = { XDG_CONFIG_HOME: path.join(work, 'xdg-config'), XDG_DATA_HOME: path.join(work, 'xdg-data') };
    execFileSync(options['code-server'], ['--extensions-dir', extensions, '--user-data-dir', path.join(work, 'install-user-data'),
        '--install-extension', options.vsix], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...xdg } });
    const userData = path.join(work, 'user-data');
    writeJson(path.join(userData, 'User', 'settings.json'), {
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.colorTheme': 'Default Dark Modern',
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'extensions.ignoreRecommendations': true,
        'chat.commandCenter.enabled': false,
        'git.enabled': false,
        'editor.hover.delay': 150,
        // code-server saves ~1 s after typing by default: the fix must reach the disk by our save only.
        'files.autoSave': 'off',
        'notebook.lineNumbers': 'on',
        'atenlint.interpreter': python,
        'atenlint.trace.server': 'verbose',
    });
    return { workspace, extensions, userData, xdg };
}

async function startCodeServer(setup, port) {
    const logFile = fs.openSync(path.join(work, 'code-server.log'), 'w');
    const config = path.join(work, 'code-server.yaml');
    fs.writeFileSync(config, 'auth: none\ncert: false\n');
    const child = spawn(options['code-server'], [
        '--config', config, '--user-data-dir', setup.userData, '--extensions-dir', setup.extensions,
        '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
        '--disable-getting-started-override', '--ignore-last-opened', '--disable-workspace-trust', setup.workspace,
    ], { env: { ...process.env, ...setup.xdg }, detached: true, stdio: ['ignore', logFile, logFile] });
    fs.closeSync(logFile);
    // Its own process group: code-server leaves a file watcher behind unless the group is stopped.
    const stop = async () => {
        for (const signal of ['SIGTERM', 'SIGKILL']) {
            try {
                process.kill(-child.pid, signal);
            } catch {
                return;
            }
            for (const until = Date.now() + 5000; Date.now() < until;) {
                try {
                    process.kill(-child.pid, 0);
                } catch {
                    return;
                }
                await sleep(100);
            }
        }
    };
    try {
        await waitUntil('code-server /healthz', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60_000);
    } catch (error) {
        await stop();
        throw error;
    }
    return stop;
}

// --- reading the notebook editor ----------------------------------------------------------------

/**
 * Every code cell the notebook editor shows: its lines (by position) and its squiggles, each
 * squiggle with the line it is drawn under and the text it covers (from the glyphs' boxes).
 */
function readCells(page) {
    return page.evaluate(() => {
        const box = (r) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
        return [...document.querySelectorAll('.notebook-editor .code-cell-row')].map((row) => {
            const editor = row.querySelector('.monaco-editor');
            if (!editor) return { lines: [], squiggles: [] };
            const lines = [...editor.querySelectorAll('.view-lines .view-line')].map((line) => {
                // One box per character, to tell which characters a squiggle covers.
                const chars = [];
                const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (let i = 0; i < node.length; i++) {
                        const range = document.createRange();
                        range.setStart(node, i);
                        range.setEnd(node, i + 1);
                        chars.push({ ch: node.data[i] === '\u00a0' ? ' ' : node.data[i], ...box(range.getBoundingClientRect()) });
                    }
                }
                return { text: chars.map((c) => c.ch).join(''), chars, ...box(line.getBoundingClientRect()) };
            }).sort((a, b) => a.top - b.top);
            const squiggles = [...editor.querySelectorAll('.squiggly-error, .squiggly-warning, .squiggly-info')].map((s) => {
                const r = box(s.getBoundingClientRect());
                const middle = (r.top + r.bottom) / 2;
                const line = lines.find((l) => l.top <= middle && middle <= l.bottom);
                const covered = line ? line.chars.filter((c) => (c.left + c.right) / 2 > r.left && (c.left + c.right) / 2 < r.right).map((c) => c.ch).join('') : '';
                return { kind: [...s.classList].find((c) => c.startsWith('squiggly-')), line: line ? line.text : null, covered, ...r };
            });
            return { text: lines.map((l) => l.text).join('\n'), lines: lines.map(({ chars, ...l }) => l), squiggles };
        });
    });
}

const modelCellOf = (cells) => cells.find((c) => c.text.includes(MODEL_CELL_MARK));

async function shoot(page, name) {
    const file = path.join(artifacts, `vscode-notebook-${name}.png`);
    await page.screenshot({ path: file }).catch(() => undefined);
    return path.relative(root, file);
}

/** Runs a command from the palette by its title, as a user would. */
async function palette(page, title) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    await input.fill(`>${title}`);
    await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first().waitFor({ state: 'visible', timeout: 15_000 });
    // Enter runs the focused row, which may be a longer title ("File: Compare Active File with
    // Saved" for "File: Save"): arrow down to the command itself.
    for (let i = 0; i < 15; i++) {
        const focused = await page.locator('.quick-input-list .monaco-list-row.focused').first().innerText().catch(() => '');
        if (focused.split('\n')[0].trim() === title) {
            await page.keyboard.press('Enter');
            return;
        }
        await page.keyboard.press('ArrowDown');
        await sleep(100);
    }
    throw new Error(`the command palette has no "${title}"`);
}

// --- the scenario -------------------------------------------------------------------------------

async function scenario(page, checks, setup) {
    await checks.run(`${NOTEBOOK} opens from the Explorer in VS Code's notebook editor`, async () => {
        const item = page.locator('.explorer-folders-view .monaco-list-row').filter({ hasText: NOTEBOOK }).first();
        await item.waitFor({ state: 'visible', timeout: budget(60_000) });
        const rendered = async () => {
            const shown = await readCells(page);
            return shown.length >= 3 && modelCellOf(shown) ? shown : undefined;
        };
        // The Explorer's "Open With..." lists the editors registered for the file: until the
        // extension host has registered the built-in ipynb serializer, only the text editor.
        // Opened before that, the .ipynb would show as JSON; a user sees the notebook later on.
        const openWith = async () => {
            await item.click({ button: 'right' });
            const entry = page.locator('.context-view .action-label').filter({ hasText: 'Open With' }).first();
            await entry.hover({ timeout: 10_000 });
            // The menu runs an item on the mouse's release over it, which a synthetic click does
            // not always deliver (Chromium 156 leaves the menu open, the item highlighted): the
            // keyboard runs the highlighted item, as a user's Enter would.
            await page.keyboard.press('Enter');
            const picker = page.locator('.quick-input-widget');
            await picker.locator('.quick-input-list .monaco-list-row').first().waitFor({ state: 'visible', timeout: 10_000 });
            return (await picker.innerText()).replace(/\s+/g, ' ');
        };
        const editors = await waitUntil('"Open With..." to offer the Jupyter Notebook editor', async () => {
            let offered;
            try {
                offered = await openWith();
            } catch (error) {
                throw new Error(`${error.message.split('\n')[0]} (see ${await shoot(page, 'open-with')})`);
            } finally {
                await page.keyboard.press('Escape');
            }
            return offered.includes('Jupyter Notebook') ? offered : undefined;
        }, 180_000, 2000);
        await item.dblclick();
        let how = 'double-click opened it in the notebook editor';
        let cells = await waitUntil('the notebook editor to render the code cells', rendered, 30_000).catch(() => undefined);
        if (!cells) {
            await openWith();
            await page.locator('.quick-input-widget input').fill('Jupyter Notebook');
            await page.locator('.quick-input-list .monaco-list-row.focused').filter({ hasText: 'Jupyter Notebook' }).first().waitFor({ state: 'visible', timeout: 10_000 });
            await page.keyboard.press('Enter');
            how = `double-click opened it as text (editors offered: ${editors}); "Open With... > Jupyter Notebook" did`;
            cells = await waitUntil('the notebook editor to render the code cells', rendered, 60_000).catch(() => undefined);
        }
        if (!cells) throw new Error(`the notebook editor never rendered the cells (see ${await shoot(page, 'open')})`);
        return `${how}: ${cells.length} code cells rendered; model cell: ${JSON.stringify(modelCellOf(cells).text.split('\n')[0])}`;
    });

    let squiggle;
    await checks.run(`a squiggle appears under ${FLAGGED_CALL} in the model's cell, and in no other cell`, async () => {
        const cells = await waitUntil(`a squiggle in the cell with ${MODEL_CELL_MARK}`, async () => {
            const shown = await readCells(page);
            const model = modelCellOf(shown);
            return model && model.squiggles.length ? shown : undefined;
        }, 360_000, 1000);
        await shoot(page, 'squiggle');
        const model = modelCellOf(cells);
        squiggle = model.squiggles.find((s) => s.line && s.line.includes(FLAGGED_LINE));
        if (!squiggle) throw new Error(`the model cell's squiggles are not on "${FLAGGED_LINE}": ${JSON.stringify(model.squiggles)}`);
        if (!squiggle.covered.includes('self.pool')) throw new Error(`the squiggle covers ${JSON.stringify(squiggle.covered)}, not ${FLAGGED_CALL}`);
        const elsewhere = cells.filter((c) => c !== model && c.squiggles.length);
        if (elsewhere.length) throw new Error(`squiggles in other cells: ${JSON.stringify(elsewhere.map((c) => [c.text.split('\n')[0], c.squiggles]))}`);
        return `${squiggle.kind} under ${JSON.stringify(squiggle.covered)} on line ${JSON.stringify(squiggle.line.trim())}; ` +
            `other cells: ${cells.length - 1} without squiggles`;
    });

    await checks.run('hovering the squiggle shows the finding', async () => {
        await page.mouse.move(squiggle.left + Math.min(30, (squiggle.right - squiggle.left) / 2), (squiggle.top + squiggle.bottom) / 2, { steps: 5 });
        const hover = page.locator('.monaco-hover:visible').filter({ hasText: OP });
        await hover.first().waitFor({ state: 'visible', timeout: budget(20_000) });
        await sleep(300);
        await shoot(page, 'hover');
        const text = (await hover.first().innerText()).replace(/\s+/g, ' ');
        if (!text.includes(CODE)) throw new Error(`the hover lacks ${CODE}: ${text}`);
        return text.slice(0, 220);
    }, { essential: false });

    await checks.run('the Problems panel lists the finding under the notebook', async () => {
        await page.mouse.move(5, 5);
        await page.keyboard.press('Escape');
        await palette(page, 'Problems: Focus on Problems View').catch(async () => {
            await page.keyboard.press('Escape');
            await page.keyboard.press('Control+Shift+M');
        });
        const panel = page.locator('.markers-panel');
        const text = await waitUntil('the Problems panel to list the finding', async () => {
            const shown = (await panel.first().innerText()).replace(/\s+/g, ' ');
            return shown.includes(CODE) && shown.includes(OP) ? shown : undefined;
        }, 30_000);
        await shoot(page, 'problems');
        if (!text.includes(NOTEBOOK)) throw new Error(`the Problems panel does not name ${NOTEBOOK}: ${text}`);
        // A cell's diagnostics are positioned within the cell: line 7, column 16 of cell 3.
        if (!/Ln 7, Col 16/.test(text)) throw new Error(`the Problems panel gives another position: ${text}`);
        return text.slice(0, 300);
    }, { essential: false });

    let offered;
    await checks.run(`Ctrl+. on ${FLAGGED_CALL} offers atenlint's quick fix`, async () => {
        await page.keyboard.press('Escape');
        // Put the cursor in the flagged call, inside the cell's editor, as a user would.
        await page.mouse.click(squiggle.left + Math.min(20, (squiggle.right - squiggle.left) / 2), (squiggle.top + squiggle.bottom) / 2);
        await sleep(300);
        await page.keyboard.press('Control+Period');
        const widget = page.locator('.action-widget');
        await widget.filter({ hasText: FIX_TITLE }).first().waitFor({ state: 'visible', timeout: budget(30_000) });
        await shoot(page, 'quick-fix');
        offered = (await widget.first().locator('.monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim()).filter(Boolean);
        return offered.join(' | ');
    });

    await checks.run('the quick fix applies in the cell; after saving, the squiggle is gone and the .ipynb holds the fix', async () => {
        // Arrow to the fix (rows can be group headers), then Enter: clicking a row was flaky.
        for (let i = 0; i < 12; i++) {
            const focused = await page.locator('.action-widget .monaco-list-row.focused').first().innerText().catch(() => '');
            if (focused.includes(FIX_TITLE)) break;
            await page.keyboard.press('ArrowDown');
            await sleep(100);
        }
        await page.keyboard.press('Enter');
        await waitUntil('the fix in the cell', async () => ((modelCellOf(await readCells(page)) || {}).text || '').includes(FIXED_TEXT), 20_000);
        await page.keyboard.press('Control+S');
        const file = path.join(setup.workspace, NOTEBOOK);
        const saved = async () => fs.readFileSync(file, 'utf8').includes(FIXED_TEXT);
        if (!(await waitUntil(`${NOTEBOOK} saved by Ctrl+S`, saved, 10_000).catch(() => false))) {
            await palette(page, 'File: Save');
            await waitUntil(`${NOTEBOOK} saved with the fix`, saved, 30_000);
        }
        await waitUntil('the squiggle to go after the re-check of the saved notebook', async () => {
            const model = modelCellOf(await readCells(page));
            return model && model.squiggles.length === 0;
        }, 300_000, 1000);
        await sleep(2000); // a late, stale result would bring it back now
        const model = modelCellOf(await readCells(page));
        await shoot(page, 'fixed');
        if (model.squiggles.length) throw new Error(`the squiggle came back: ${JSON.stringify(model.squiggles)}`);
        const notebook = JSON.parse(fs.readFileSync(file, 'utf8'));
        const cell = notebook.cells.find((c) => [].concat(c.source).join('').includes(MODEL_CELL_MARK));
        return `saved cell: ${JSON.stringify([].concat(cell.source).join('').split('\n').find((l) => l.includes('return')).trim())}`;
    });

    await checks.run('the client synced the notebook with notebookDocument/* (LSP trace)', async () => {
        const found = [];
        const walk = (dir) => {
            for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
                const full = path.join(dir, entry.name);
                if (entry.isDirectory()) walk(full);
                else if (/atenlint/i.test(full)) {
                    const text = fs.readFileSync(full, 'utf8');
                    for (const method of ['notebookDocument/didOpen', 'notebookDocument/didChange', 'notebookDocument/didSave']) {
                        if (text.includes(method) && !found.includes(method)) found.push(method);
                    }
                }
            }
        };
        walk(path.join(setup.userData, 'logs'));
        if (!found.includes('notebookDocument/didOpen')) throw new Error(`no notebookDocument/didOpen in the atenlint log (found ${found.join(', ') || 'nothing'})`);
        return found.join(', ');
    }, { essential: false });
}

// --- main ---------------------------------------------------------------------------------------

const checks = new Checks();
let setup;
let stopCodeServer;
let context;
try {
    setup = prepare();
    log(`installed ${path.relative(root, options.vsix)}; workspace ${path.relative(root, setup.workspace)}`);
    const port = await freePort();
    stopCodeServer = await startCodeServer(setup, port);
    context = await chromium.launchPersistentContext(path.join(work, 'chromium-profile'), {
        executablePath: options.chromium,
        headless: true,
        viewport: { width: 1400, height: 900 },
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
            '--disable-component-update', '--disable-sync'],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(setup.workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: budget(90_000) });
    log('workbench loaded');
    await scenario(page, checks, setup);
    await shoot(page, 'final');
} catch (error) {
    checks.results.push({ name: 'notebook scenario', ok: false, seconds: 0, detail: error.stack ?? String(error) });
} finally {
    await context?.close().catch(() => undefined);
    await stopCodeServer?.();
    const logs = path.join(artifacts, 'vscode-notebook-logs');
    fs.rmSync(logs, { recursive: true, force: true });
    fs.mkdirSync(logs, { recursive: true });
    if (fs.existsSync(path.join(work, 'code-server.log'))) fs.copyFileSync(path.join(work, 'code-server.log'), path.join(logs, 'code-server.log'));
    if (setup && fs.existsSync(path.join(setup.userData, 'logs'))) fs.cpSync(path.join(setup.userData, 'logs'), path.join(logs, 'vscode'), { recursive: true });
    writeJson(path.join(logs, 'verdict.json'), { checks: checks.results });
}
let passed = 0;
let failed = 0;
for (const check of checks.results) {
    console.log(`${check.ok ? 'ok    ' : 'FAILED'} notebook: ${check.name} [${check.seconds.toFixed(1)}s]${check.detail ? `\n         ${check.detail.split('\n').join('\n         ')}` : ''}`);
    check.ok ? passed++ : failed++;
}
log(`done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
console.log(`notebook e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
