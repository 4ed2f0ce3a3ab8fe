// End-to-end test of the packaged extension in a real VS Code workbench: code-server 4.100.3
// (VS Code 1.100.3) in headless Debian Chromium driven by playwright-core.
//
// The checks run inside the real extension host, in a test-only companion extension
// (./companion) that writes a JSON verdict; this script sets up each scenario, opens the
// workbench, takes the screenshots the companion asks for, and reports.
//
//   node vscode-client/e2e/run.mjs [--vsix atenlint.vsix] [--scenario trusted|restricted|no-torch|cross-file]...
//
// Needs: `npm run package` (atenlint.vsix), vscode-client/e2e/install-code-server.sh, and a Python
// with torch in .venv (or $ATENLINT_E2E_PYTHON). Artifacts (screenshots, logs, verdicts) go to
// .ci/artifacts/. Ends with "N passed, N failed"; exits 1 if anything failed.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const work = path.join(root, '.ci', 'work', 'e2e');
const artifacts = path.join(root, '.ci', 'artifacts');
const { values: options } = parseArgs({
    options: {
        vsix: { type: 'string', default: path.join(root, 'atenlint.vsix') },
        scenario: { type: 'string', multiple: true, default: ['trusted', 'restricted', 'no-torch', 'cross-file'] },
        'code-server': { type: 'string', default: path.join(root, '.ci', 'work', 'code-server', 'node_modules', '.bin', 'code-server') },
        chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
        timeout: { type: 'string', default: '420' },
    },
});
const python = process.env.ATENLINT_E2E_PYTHON || path.join(root, '.venv', 'bin', 'python');
const started = Date.now();

function log(message) {
    console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${message}`);
}

function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

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

async function waitUntil(what, probe, timeoutMs, intervalMs = 250) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await probe().catch(() => undefined);
        if (value) {
            return value;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
        }
        await sleep(intervalMs);
    }
}

function writeJson(file, value) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

// --- one-time setup -----------------------------------------------------------------------------

function preflight() {
    for (const [what, file] of [['the packaged extension (npm run package)', options.vsix], ['code-server (install-code-server.sh)', options['code-server']],
        ['Chromium', options.chromium], ['a Python with torch', python]]) {
        if (!fs.existsSync(file)) {
            throw new Error(`missing ${what}: ${file}`);
        }
    }
    const torch = execFileSync(python, ['-c', 'from importlib.metadata import version; print(version("torch"))']).toString().trim();
    return { torch };
}

function installExtensions() {
    const companionVsix = path.join(work, 'companion.vsix');
    execFileSync(path.join(root, 'node_modules', '.bin', 'vsce'),
        ['package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--out', companionVsix],
        { cwd: path.join(root, 'vscode-client', 'e2e', 'companion'), stdio: ['ignore', 'ignore', 'inherit'] });
    const extensions = path.join(work, 'extensions');
    execFileSync(options['code-server'], [
        '--extensions-dir', extensions, '--user-data-dir', path.join(work, 'install-user-data'),
        '--install-extension', options.vsix, '--install-extension', companionVsix,
    ], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, XDG_CONFIG_HOME: path.join(work, 'xdg-config'), XDG_DATA_HOME: path.join(work, 'xdg-data') } });
    const installed = fs.readdirSync(extensions).filter((d) => !d.startsWith('.') && d !== 'extensions.json');
    log(`installed ${installed.join(', ')}`);
    return extensions;
}

// --- scenarios ----------------------------------------------------------------------------------

const CANARY_MODULE = 'canary/canary_model.py';

function canarySource(canaryFile) {
    // Importing this module leaves a file behind: Restricted Mode must never do it.
    return [
        '"""Writes a file when imported: the end-to-end test checks that Restricted Mode never imports it."""',
        '',
        'import pathlib',
        '',
        'import torch.nn as nn',
        '',
        `pathlib.Path(${JSON.stringify(canaryFile)}).write_text("imported")`,
        '',
        '',
        'class CanaryPool(nn.Module):',
        '    def __init__(self):',
        '        super().__init__()',
        '        self.pool = nn.AdaptiveAvgPool3d((2, 4, 4))',
        '',
        '    def forward(self, x):',
        '        return self.pool(x)',
        '',
    ].join('\n');
}
const CANARY_CALL_LINE = 15; // 0-based line of `return self.pool(x)`

// The issue-19 workspace: a.py's Encoder calls an op with no MPS kernel in torch 2.13-2.15
// (torch.special.ndtri), b.py's Model builds `self.enc = Encoder(8)`, so b.py's check places a
// finding in a.py. `counted` is a.py with a module-level line that appends to a file outside the
// workspace: the scenario counts how often a save imports a.py. (The worker's sandbox would refuse
// that write; ATENLINT_SANDBOX is off in this harness, see startCodeServer. The server's own log,
// one "analysed a.py" line per check, is the count that holds with the sandbox on.)
const ENCODER = [
    'import torch',
    'import torch.nn as nn',
    '',
    '',
    'class Encoder(nn.Module):',
    '    def __init__(self, dim):',
    '        super().__init__()',
    '        self.dim = dim',
    '',
    '    def forward(self, x):',
    '        return torch.special.ndtri(x)',
    '',
].join('\n');
const MODEL = [
    'import torch.nn as nn',
    'from a import Encoder',
    '',
    '',
    'class Model(nn.Module):',
    '    def __init__(self):',
    '        super().__init__()',
    '        self.enc = Encoder(8)',
    '',
    '    def forward(self, x):',
    '        return self.enc(x)',
    '',
].join('\n');

function crossFileWorkspace(dir) {
    const workspace = path.join(dir, 'workspace');
    fs.mkdirSync(workspace, { recursive: true });
    fs.writeFileSync(path.join(workspace, 'a.py'), ENCODER);
    fs.writeFileSync(path.join(workspace, 'b.py'), MODEL);
    const counter = path.join(dir, 'a-imports.txt');
    const counted = ENCODER.replace('import torch.nn as nn\n',
        `import torch.nn as nn\n\nwith open(${JSON.stringify(counter)}, "a") as imports:\n    imports.write("imported\\n")\n`);
    return {
        workspace,
        crossFile: {
            a: 'a.py',
            b: 'b.py',
            call: 'torch.special.ndtri(x)',
            code: 'MPS001',
            texts: { encoder: ENCODER, fixed: ENCODER.replace('torch.special.ndtri(x)', 'torch.erfinv(x)'), counted },
            counter,
        },
    };
}

function prepare(scenario, facts) {
    const dir = path.join(work, scenario);
    fs.rmSync(dir, { recursive: true, force: true });
    if (scenario === 'cross-file') {
        const { workspace, crossFile } = crossFileWorkspace(dir);
        // Auto-save off, as the issue's report had it: nothing is saved (so nothing runs) but by the scenario.
        return prepareEditor(scenario, facts, dir, workspace, {
            interpreter: '${env:ATENLINT_E2E_PYTHON}',
            settings: { 'files.autoSave': 'off' },
            spec: { crossFile },
        });
    }
    const workspace = path.join(dir, 'examples');
    fs.cpSync(path.join(root, 'examples'), workspace, { recursive: true, filter: (src) => !src.includes('__pycache__') });
    const canary = path.join(dir, 'canary-imported');
    fs.mkdirSync(path.join(workspace, 'canary'));
    fs.writeFileSync(path.join(workspace, CANARY_MODULE), canarySource(canary));

    const restricted = scenario === 'restricted';
    const interpreterCanary = path.join(dir, 'workspace-interpreter-ran');
    if (restricted) {
        // A folder's own settings choosing a program to run: ignored until the folder is trusted.
        const evil = path.join(workspace, '.tools', 'python');
        fs.mkdirSync(path.dirname(evil), { recursive: true });
        fs.writeFileSync(evil, `#!/bin/sh\necho ran > ${JSON.stringify(interpreterCanary)}\nexec ${JSON.stringify(python)} "$@"\n`, { mode: 0o755 });
        writeJson(path.join(workspace, '.vscode', 'settings.json'), {
            'atenlint.interpreter': '${workspaceFolder}/.tools/python',
            'atenlint.importStrategy': 'fromEnvironment',
        });
    }
    // no-torch: the same Python without its site-packages, so without torch.
    const noTorchPython = path.join(dir, 'python-without-torch');
    if (scenario === 'no-torch') {
        fs.writeFileSync(noTorchPython, `#!/bin/sh\nexec ${JSON.stringify(python)} -S "$@"\n`, { mode: 0o755 });
    }
    const interpreterSetting = { trusted: '${env:ATENLINT_E2E_PYTHON}', restricted: python, 'no-torch': noTorchPython }[scenario];
    return prepareEditor(scenario, facts, dir, workspace, {
        interpreter: interpreterSetting,
        restricted,
        spec: { canary, canaryModule: CANARY_MODULE, canaryLine: CANARY_CALL_LINE, interpreterCanary, fix: `${noTorchPython} -m pip install 'torch>=2.13,<2.16'` },
    });
}

/** The user settings, the handshake folder and spec.json of a scenario whose workspace is laid out. */
function prepareEditor(scenario, facts, dir, workspace, { interpreter, restricted = false, settings = {}, spec: scenarioSpec }) {
    const userData = path.join(dir, 'user-data');
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
        'editor.minimap.enabled': false,
        'editor.hover.delay': 150,
        'chat.commandCenter.enabled': false,
        'git.enabled': false,
        'git.openRepositoryInParentFolders': 'never',
        'files.exclude': { '**/__pycache__': true, '.tools': true },
        'security.workspace.trust.enabled': restricted,
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.banner': 'always',
        'atenlint.interpreter': interpreter,
        // The LSP trace goes to the extension's log, copied to .ci/artifacts/ for whoever reads a failure.
        'atenlint.trace.server': 'verbose',
        ...settings,
    });
    const handshake = path.join(dir, 'handshake');
    fs.mkdirSync(handshake);
    const spec = {
        scenario,
        workspace,
        verdict: path.join(dir, 'verdict.json'),
        handshake,
        torch: facts.torch,
        python,
        ...scenarioSpec,
    };
    writeJson(path.join(dir, 'spec.json'), spec);
    return { dir, workspace, userData, spec, specPath: path.join(dir, 'spec.json'), restricted };
}

async function startCodeServer(setup, extensions, port) {
    const logFile = fs.openSync(path.join(setup.dir, 'code-server.log'), 'w');
    const env = {
        ...process.env,
        ATENLINT_E2E_SPEC: setup.specPath,
        XDG_CONFIG_HOME: path.join(setup.dir, 'xdg-config'),
        XDG_DATA_HOME: path.join(setup.dir, 'xdg-data'),
        // Trusted: the user setting names the interpreter through ${env:ATENLINT_E2E_PYTHON} (the
        // remote extension host takes PATH from a login shell, so PATH cannot carry the venv).
        ATENLINT_E2E_PYTHON: python,
        // The canary module (and cross-file's counted a.py) proves an import by writing a file, which
        // the worker's sandbox refuses (tests/worker/test_sandbox.py covers that); here only trust
        // decides imports.
        ATENLINT_SANDBOX: 'off',
        // The run's own cache (registries, results), emptied with the run's folder: a stored
        // result would answer "Check Workspace" without importing the canary module, so a
        // second run on the same build would fail the import checks.
        ATENLINT_CACHE_DIR: path.join(work, 'atenlint-cache'),
    };
    const config = path.join(setup.dir, 'code-server.yaml');
    fs.writeFileSync(config, 'auth: none\ncert: false\n');
    const args = [
        '--config', config, '--user-data-dir', setup.userData, '--extensions-dir', extensions,
        '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
        '--disable-getting-started-override', '--ignore-last-opened',
        ...(setup.restricted ? [] : ['--disable-workspace-trust']),
        setup.workspace,
    ];
    // Its own process group: code-server leaves a file watcher behind unless the group is stopped.
    const child = spawn(options['code-server'], args, { env, detached: true, stdio: ['ignore', logFile, logFile] });
    fs.closeSync(logFile);
    const stop = async () => {
        for (const signal of ['SIGTERM', 'SIGKILL']) {
            try {
                process.kill(-child.pid, signal);
            } catch {
                return;
            }
            const deadline = Date.now() + 5000;
            while (Date.now() < deadline) {
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

/** Hovers the squiggle on the requested line and takes the screenshot the companion asked for. */
async function takeScreenshot(page, name, request, notes) {
    const squiggles = page.locator('.monaco-editor .squiggly-warning, .monaco-editor .squiggly-error, .monaco-editor .squiggly-info');
    let hovered = false;
    try {
        await squiggles.first().waitFor({ state: 'attached', timeout: 30_000 });
        await sleep(500);
        const boxes = (await Promise.all((await squiggles.all()).map((s) => s.boundingBox()))).filter(Boolean);
        boxes.sort((a, b) => a.y - b.y || a.x - b.x);
        const box = boxes[0];
        await page.mouse.move(box.x + Math.min(40, box.width / 2), box.y + box.height / 2, { steps: 5 });
        const hover = page.locator('.monaco-hover:visible').filter({ hasText: request.expect });
        await hover.first().waitFor({ state: 'visible', timeout: 15_000 });
        await sleep(400);
        hovered = true;
    } catch (error) {
        notes.push(`screenshot ${name}: no hover (${error.message.split('\n')[0]})`);
    }
    const file = path.join(artifacts, `vscode-${name}.png`);
    await page.screenshot({ path: file });
    log(`screenshot ${path.relative(root, file)}${hovered ? ' (squiggle + hover + Problems panel)' : ' (without hover)'}`);
    // The language status item ("{}" next to Python): targets, torch, state, "Open logs".
    try {
        await page.mouse.move(5, 5);
        await page.keyboard.press('Escape');
        await page.locator('#status\\.languageStatus').click({ timeout: 10_000 });
        const status = page.locator('.context-view .hover-language-status').filter({ hasText: 'atenlint' });
        await status.first().waitFor({ state: 'visible', timeout: 10_000 });
        await sleep(400); // the hover fades in
        await page.screenshot({ path: path.join(artifacts, `vscode-${name}-status.png`) });
        await page.keyboard.press('Escape');
    } catch (error) {
        notes.push(`status item ${name}: not shown (${error.message.split('\n')[0]})`);
    }
    return hovered;
}

/** Waits for a notification toast that contains every one of `texts`; screenshots it. */
async function expectNotification(page, name, texts) {
    let toast = page.locator('.notification-toast');
    for (const text of texts) {
        toast = toast.filter({ hasText: text });
    }
    try {
        await toast.first().waitFor({ state: 'visible', timeout: 30_000 });
        await sleep(300);
        await page.screenshot({ path: path.join(artifacts, `vscode-${name}.png`) });
        log(`notification "${(await toast.first().innerText()).split('\n')[0].slice(0, 100)}..."`);
        return '';
    } catch {
        await page.screenshot({ path: path.join(artifacts, `vscode-${name}.png`) }).catch(() => undefined);
        const shown = await page.locator('.notification-toast').allInnerTexts().catch(() => []);
        return `no notification with ${JSON.stringify(texts)}; shown: ${JSON.stringify(shown)}`;
    }
}

/** Waits for the Problems view (opened by the companion) to list every one of `texts`; screenshots it. */
async function expectProblems(page, name, texts) {
    let panel = page.locator('.markers-panel');
    for (const text of texts) {
        panel = panel.filter({ hasText: text });
    }
    try {
        await panel.first().waitFor({ state: 'visible', timeout: 30_000 });
        await page.screenshot({ path: path.join(artifacts, `vscode-${name}.png`) });
        log(`Problems view: ${(await panel.first().innerText()).split('\n').filter(Boolean).slice(0, 3).join(' | ').slice(0, 160)}`);
        return '';
    } catch {
        await page.screenshot({ path: path.join(artifacts, `vscode-${name}.png`) }).catch(() => undefined);
        const shown = await page.locator('.markers-panel').allInnerTexts().catch(() => []);
        return `the Problems view does not list ${JSON.stringify(texts)}; it shows: ${JSON.stringify(shown)}`;
    }
}

/** In the Workspace Trust editor (opened by the companion), clicks "Trust", as a user would. */
async function clickTrust(page) {
    try {
        const button = page.locator('.workspace-trust-editor .monaco-button').filter({ hasText: /^Trust/ }).first();
        await button.waitFor({ state: 'visible', timeout: 30_000 });
        await page.screenshot({ path: path.join(artifacts, 'vscode-restricted-trust-editor.png') });
        await button.click();
        log('clicked "Trust" in the Workspace Trust editor');
        return '';
    } catch (error) {
        await page.screenshot({ path: path.join(artifacts, 'vscode-restricted-trust-editor.png') }).catch(() => undefined);
        return error.message.split('\n')[0];
    }
}

async function runScenario(scenario, facts, extensions) {
    const setup = prepare(scenario, facts);
    const port = await freePort();
    log(`${scenario}: code-server on 127.0.0.1:${port}, folder ${path.relative(root, setup.workspace)}`);
    const stopCodeServer = await startCodeServer(setup, extensions, port);
    const notes = [];
    let verdict;
    let context;
    try {
        context = await chromium.launchPersistentContext(path.join(setup.dir, 'chromium-profile'), {
            executablePath: options.chromium,
            headless: true,
            viewport: { width: 1400, height: 860 },
            args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
                '--disable-component-update', '--disable-sync'],
        });
        const page = context.pages()[0] ?? (await context.newPage());
        await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(setup.workspace)}`);
        await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
        log(`${scenario}: workbench loaded`);
        const deadline = Date.now() + Number(options.timeout) * 1000;
        const done = new Set();
        while (!fs.existsSync(setup.spec.verdict)) {
            if (Date.now() > deadline) {
                notes.push(`no verdict after ${options.timeout}s`);
                break;
            }
            const crash = path.join(setup.dir, 'companion-crash.txt');
            if (fs.existsSync(crash)) {
                notes.push(`the companion crashed: ${fs.readFileSync(crash, 'utf8')}`);
                break;
            }
            for (const file of fs.readdirSync(setup.spec.handshake)) {
                const match = /^(.+)\.request\.json$/.exec(file);
                if (match && !done.has(match[1])) {
                    done.add(match[1]);
                    const request = JSON.parse(fs.readFileSync(path.join(setup.spec.handshake, file), 'utf8'));
                    let problem = '';
                    if (request.action === 'screenshot') {
                        await takeScreenshot(page, match[1], request, notes);
                    } else if (request.action === 'notification') {
                        problem = await expectNotification(page, match[1], request.contains);
                    } else if (request.action === 'problems') {
                        problem = await expectProblems(page, match[1], request.contains);
                    } else if (request.action === 'trust') {
                        problem = await clickTrust(page);
                    } else {
                        problem = `unknown request ${JSON.stringify(request)}`;
                    }
                    fs.writeFileSync(path.join(setup.spec.handshake, `${match[1]}.done`), problem);
                }
            }
            await sleep(200);
        }
        await page.screenshot({ path: path.join(artifacts, `vscode-${scenario}-final.png`) }).catch(() => undefined);
        if (fs.existsSync(setup.spec.verdict)) {
            verdict = JSON.parse(fs.readFileSync(setup.spec.verdict, 'utf8'));
        } else if (fs.existsSync(path.join(setup.dir, 'progress.json'))) {
            // Hung: report what passed, and the check that never finished as failed.
            const progress = JSON.parse(fs.readFileSync(path.join(setup.dir, 'progress.json'), 'utf8'));
            verdict = {
                incomplete: true,
                checks: [...progress.checks, { name: progress.running, ok: false, seconds: 0, detail: 'did not finish before the scenario timed out' }],
            };
        }
    } finally {
        await context?.close().catch(() => undefined);
        await stopCodeServer();
        // The extension's log (server stderr, LSP trace) and code-server's, for whoever reads a failure.
        const logs = path.join(artifacts, `vscode-${scenario}-logs`);
        fs.rmSync(logs, { recursive: true, force: true });
        fs.mkdirSync(logs, { recursive: true });
        for (const file of ['code-server.log', 'verdict.json', 'progress.json', 'spec.json']) {
            if (fs.existsSync(path.join(setup.dir, file))) fs.copyFileSync(path.join(setup.dir, file), path.join(logs, file));
        }
        const vscodeLogs = path.join(setup.userData, 'logs');
        if (fs.existsSync(vscodeLogs)) fs.cpSync(vscodeLogs, path.join(logs, 'vscode'), { recursive: true });
    }
    return { scenario, verdict, notes };
}

// --- main ---------------------------------------------------------------------------------------

let passed = 0;
let failed = 0;
try {
    const facts = preflight();
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    fs.mkdirSync(artifacts, { recursive: true });
    const extensions = installExtensions();
    for (const scenario of options.scenario) {
        const t0 = Date.now();
        const { verdict, notes } = await runScenario(scenario, facts, extensions);
        for (const check of verdict?.checks ?? []) {
            console.log(`${check.ok ? 'ok    ' : 'FAILED'} ${scenario}: ${check.name} [${check.seconds.toFixed(1)}s]${check.detail ? `\n         ${check.detail.split('\n').join('\n         ')}` : ''}`);
            check.ok ? passed++ : failed++;
        }
        for (const note of notes) {
            console.log(`note   ${scenario}: ${note}`);
        }
        if (!verdict) {
            console.log(`FAILED ${scenario}: no verdict from the companion extension (see .ci/artifacts/vscode-${scenario}-logs/)`);
            failed++;
        } else if (verdict.incomplete) {
            console.log(`FAILED ${scenario}: the companion did not finish (see .ci/artifacts/vscode-${scenario}-logs/)`);
        } else if (notes.some((n) => n.startsWith('screenshot'))) {
            failed++;
        }
        log(`${scenario}: ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    }
} catch (error) {
    console.log(`FAILED e2e: ${error.stack ?? error}`);
    failed++;
}
log(`done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
