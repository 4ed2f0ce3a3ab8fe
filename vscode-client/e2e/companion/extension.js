// The end-to-end checks, run inside the real VS Code extension host next to the installed atenlint
// extension. The harness (../run.mjs) starts code-server with ATENLINT_E2E_SPEC=<spec.json>, which
// names the scenario, the workspace, and where to write the verdict and the screenshot handshake.
'use strict';

const fs = require('fs');
const path = require('path');
const vscode = require('vscode');

const ATENLINT = 'atenlint.atenlint';

function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns something truthy; throws with `what` after `timeoutMs`. */
async function waitFor(what, probe, timeoutMs, intervalMs = 250) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
        try {
            last = await probe();
            if (last) {
                return last;
            }
        } catch (error) {
            if (error && error.fatal) {
                throw error;
            }
            last = error;
        }
        if (Date.now() > deadline) {
            const detail = last instanceof Error ? `: ${last.message}` : '';
            throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${detail}`);
        }
        await sleep(intervalMs);
    }
}

function rangeJson(range) {
    return { start: { line: range.start.line, character: range.start.character }, end: { line: range.end.line, character: range.end.character } };
}

function sameRange(a, b) {
    return JSON.stringify(rangeJson(a)) === JSON.stringify(rangeJson(b));
}

function codeOf(diagnostic) {
    const code = diagnostic.code;
    return typeof code === 'object' && code !== null ? String(code.value) : String(code);
}

function hrefOf(diagnostic) {
    const code = diagnostic.code;
    return typeof code === 'object' && code !== null && code.target ? code.target.toString() : undefined;
}

function atenlintDiagnostics(uri) {
    return vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'atenlint');
}

function describe(diagnostics) {
    return diagnostics.map((d) => `${codeOf(d)}@${d.range.start.line}:${d.range.start.character}-${d.range.end.line}:${d.range.end.character}`).join(', ') || '(none)';
}

/** The range of `text` in `document`, searched from line `line` (0-based): where a call sits. */
function rangeOfText(document, line, text) {
    const column = document.lineAt(line).text.indexOf(text);
    if (column < 0) {
        throw new Error(`"${text}" is not on line ${line + 1} of ${document.fileName}`);
    }
    return new vscode.Range(line, column, line, column + text.length);
}

/** Runs a command, failing after `timeoutMs` rather than hanging the scenario. */
async function command(timeoutMs, id, ...args) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${id} did not finish in ${timeoutMs / 1000}s`)), timeoutMs);
    });
    try {
        return await Promise.race([vscode.commands.executeCommand(id, ...args), timeout]);
    } finally {
        clearTimeout(timer);
    }
}

function hoverText(hovers) {
    return hovers
        .flatMap((h) => h.contents)
        .map((c) => (typeof c === 'string' ? c : c.value))
        .join('\n');
}

class Abort extends Error {}

class Checks {
    constructor(spec) {
        this.spec = spec;
        this.results = [];
        this.started = Date.now();
    }

    /** Runs one check; when an essential one fails, the scenario stops (the rest would only time out). */
    async run(name, ...rest) {
        const body = rest.pop();
        const { essential = true } = rest[0] || {};
        const start = Date.now();
        this.progress(name);
        try {
            const detail = await body();
            this.results.push({ name, ok: true, seconds: (Date.now() - start) / 1000, detail: detail ?? '' });
            return true;
        } catch (error) {
            this.results.push({ name, ok: false, seconds: (Date.now() - start) / 1000, detail: error && error.stack ? error.stack : String(error) });
            if (essential) {
                throw new Abort(name);
            }
            return false;
        }
    }

    /** What has passed so far and what runs now, for the harness to report if the scenario hangs. */
    progress(running) {
        const file = path.join(path.dirname(this.spec.verdict), 'progress.json');
        fs.writeFileSync(`${file}.tmp`, JSON.stringify({ running, checks: this.results }, null, 2));
        fs.renameSync(`${file}.tmp`, file);
    }

    write(extra) {
        const verdict = {
            scenario: this.spec.scenario,
            passed: this.results.filter((r) => r.ok).length,
            failed: this.results.filter((r) => !r.ok).length,
            seconds: (Date.now() - this.started) / 1000,
            checks: this.results,
            ...extra,
        };
        fs.writeFileSync(`${this.spec.verdict}.tmp`, JSON.stringify(verdict, null, 2));
        fs.renameSync(`${this.spec.verdict}.tmp`, this.spec.verdict);
    }
}

async function atenlintApi() {
    const extension = vscode.extensions.getExtension(ATENLINT);
    if (!extension) {
        throw new Error(`${ATENLINT} is not installed`);
    }
    return extension.isActive ? extension.exports : extension.activate();
}

/** Waits for the server to report itself idle (it analysed what it had to). */
function serverIdle(api, timeoutMs) {
    return waitFor(
        'the atenlint server to be running and idle',
        () => {
            const status = api.status;
            if (status.phase === 'failed') {
                throw Object.assign(new Error(`the extension failed: ${status.failure}`), { fatal: true });
            }
            return status.phase === 'running' && status.server && status.server.state === 'idle' ? status : undefined;
        },
        timeoutMs,
    );
}

/**
 * Asks the harness to act in the browser (take a screenshot; click the Workspace Trust editor's
 * "Trust" button, as a user does) and waits until it has.
 */
async function askHarness(spec, name, request) {
    const file = path.join(spec.handshake, `${name}.request.json`);
    const done = path.join(spec.handshake, `${name}.done`);
    fs.writeFileSync(file, JSON.stringify(request));
    await waitFor(`the harness to do "${name}"`, () => fs.existsSync(done), 90_000, 200);
    const answer = fs.readFileSync(done, 'utf8');
    if (answer) {
        throw new Error(`the harness could not do "${name}": ${answer}`);
    }
}

function screenshot(spec, name, info) {
    return askHarness(spec, name, { action: 'screenshot', ...info });
}

async function openFile(relative) {
    const uri = vscode.Uri.file(path.join(spec().workspace, relative));
    const document = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(document, { preview: false });
    return { uri, document, editor };
}

let currentSpec;
function spec() {
    return currentSpec;
}

// --- scenarios ---------------------------------------------------------------------------------------

/** The two MPS fallbacks of examples/video/video_classifier.py, where the CLI reports them. */
const VIDEO_CLASSIFIER = {
    file: 'video/video_classifier.py',
    findings: [
        { code: 'MPS001', line: 28, text: 'self.pool(self.block(self.stem(clip)))', op: 'aten::_adaptive_avg_pool3d', severity: 'Warning' },
        { code: 'MPS002', line: 29, text: 'self.tags(tag_ids)', op: 'aten::embedding_renorm_', severity: 'Warning' },
    ],
};

async function trusted(checks, s) {
    let video;
    let api;

    await checks.run('the extension activates when a Python file opens', async () => {
        const extension = vscode.extensions.getExtension(ATENLINT);
        if (!extension) throw new Error(`${ATENLINT} is not installed`);
        if (extension.isActive) throw new Error('active before any Python file was opened');
        video = await openFile(VIDEO_CLASSIFIER.file);
        await waitFor('the atenlint extension to activate', () => extension.isActive, 30_000);
        api = extension.exports;
    });

    await checks.run('the server starts trusted, with the interpreter from the setting (${env:...} expanded), and reports torch', async () => {
        const status = await serverIdle(api, 120_000);
        if (!vscode.workspace.isTrusted) throw new Error('the workspace is not trusted');
        if (status.server.trusted !== true) throw new Error(`the server reports trusted=${status.server.trusted}`);
        if (status.interpreter.source !== 'setting' || status.interpreter.path !== s.python) throw new Error(`interpreter ${status.interpreter.path} from ${status.interpreter.source}, expected ${s.python}`);
        if (status.server.torch.split('+')[0] !== s.torch.split('+')[0]) throw new Error(`torch ${status.server.torch}, expected ${s.torch}`);
        if (!status.server.targets.includes('mps')) throw new Error(`targets ${status.server.targets}`);
        return `python ${status.interpreter.path}, torch ${status.server.torch}, targets ${status.server.targets.join(',')}`;
    });

    await checks.run('diagnostics for the MPS fallbacks appear on the calls, with codes, links and severities', async () => {
        const expected = VIDEO_CLASSIFIER.findings.map((f) => ({ ...f, range: rangeOfText(video.document, f.line, f.text) }));
        const found = await waitFor(
            `${expected.length} atenlint diagnostics in ${VIDEO_CLASSIFIER.file}`,
            () => {
                const diagnostics = atenlintDiagnostics(video.uri);
                return diagnostics.length >= expected.length ? diagnostics : undefined;
            },
            180_000,
        );
        if (found.length !== expected.length) throw new Error(`expected ${expected.length}, got ${describe(found)}`);
        for (const want of expected) {
            const match = found.find((d) => codeOf(d) === want.code && sameRange(d.range, want.range));
            if (!match) throw new Error(`no ${want.code} on ${JSON.stringify(rangeJson(want.range))}; got ${describe(found)}`);
            if (match.severity !== vscode.DiagnosticSeverity[want.severity]) throw new Error(`${want.code} has severity ${match.severity}`);
            if (!match.message.includes(want.op)) throw new Error(`${want.code}'s message does not name ${want.op}: ${match.message}`);
            const href = hrefOf(match);
            if (!href || !href.toLowerCase().includes(want.code.toLowerCase())) throw new Error(`${want.code} links to ${href}`);
        }
        return describe(found);
    });

    await checks.run('hovering the call shows the aten overload and its verdict', { essential: false }, async () => {
        const call = rangeOfText(video.document, 28, 'self.pool(');
        const hovers = await command(30_000, 'vscode.executeHoverProvider', video.uri, call.start.translate(0, 6));
        const text = hoverText(hovers || []);
        if (!text.includes('aten::_adaptive_avg_pool3d')) throw new Error(`hover: ${text || '(none)'}`);
        return text.split('\n').slice(0, 3).join(' | ');
    });

    await checks.run('screenshot: squiggles, hover and Problems panel', { essential: false }, async () => {
        await vscode.commands.executeCommand('workbench.actions.view.problems');
        await vscode.window.showTextDocument(video.document, { preview: false, preserveFocus: false });
        const call = rangeOfText(video.document, 28, 'self.pool(');
        video.editor.revealRange(call, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
        await screenshot(s, 'trusted', { line: call.start.line, character: call.start.character + 6, expect: 'aten::_adaptive_avg_pool3d' });
    });

    await checks.run('"Show Op Report for This File" opens the report as Markdown', { essential: false }, async () => {
        await vscode.window.showTextDocument(video.document, { preview: false });
        await command(120_000, 'atenlint.report.show');
        const report = await waitFor(
            'a Markdown op report',
            () => vscode.workspace.textDocuments.find((d) => d.languageId === 'markdown' && d.getText().includes('aten::_adaptive_avg_pool3d')),
            60_000,
        );
        return `${report.lineCount} lines: ${report.getText().split('\n')[0]}`;
    });

    await checks.run('a settings change reaches the running server: atenlint.severity {"mps": "error"}', { essential: false }, async () => {
        const config = vscode.workspace.getConfiguration('atenlint', video.uri);
        const severities = () => atenlintDiagnostics(video.uri).map((d) => d.severity);
        await config.update('severity', { mps: 'error' }, vscode.ConfigurationTarget.Workspace);
        try {
            await waitFor('the findings to become errors', () => {
                const now = severities();
                return now.length === VIDEO_CLASSIFIER.findings.length && now.every((x) => x === vscode.DiagnosticSeverity.Error);
            }, 30_000);
        } finally {
            await config.update('severity', undefined, vscode.ConfigurationTarget.Workspace);
        }
        await waitFor('the findings to be warnings again', () => {
            const now = severities();
            return now.length === VIDEO_CLASSIFIER.findings.length && now.every((x) => x === vscode.DiagnosticSeverity.Warning);
        }, 60_000);
        if (api.status.starts !== 1) throw new Error(`the server was restarted (${api.status.starts} starts): settings must reach it live`);
    });

    const applied = [];
    const insertedTexts = [];
    await checks.run('a quick fix is offered for each finding and applies', async () => {
        await vscode.window.showTextDocument(video.document, { preview: false });
        for (const want of VIDEO_CLASSIFIER.findings) {
            const diagnostic = atenlintDiagnostics(video.uri).find((d) => codeOf(d) === want.code);
            if (!diagnostic) throw new Error(`${want.code} is gone before its fix: ${describe(atenlintDiagnostics(video.uri))}`);
            const actions = await command(30_000, 'vscode.executeCodeActionProvider', video.uri, diagnostic.range, vscode.CodeActionKind.QuickFix.value);
            // vscode.executeCodeActionProvider drops CodeAction.diagnostics; no other installed extension
            // offers quick fixes for Python, so the actions with edits at this range are atenlint's.
            const ours = (actions || []).filter((a) => a.edit);
            if (ours.length === 0) throw new Error(`no atenlint quick fix for ${want.code}; offered: ${(actions || []).map((a) => a.title).join('; ') || '(none)'}`);
            // The preferred fix (an exact rewrite) when there is one, else the one that marks the
            // line `# atenlint: ignore[...]`: both must leave the re-check clean. (Others, such as
            // silencing the runtime warning, mitigate without removing the finding.)
            const editsThisFileOnly = (a) => a.edit.entries().every(([uri]) => uri.toString() === video.uri.toString());
            const ignoresLine = (a) => a.edit.entries().some(([, edits]) => edits.some((e) => /#\s*atenlint:\s*ignore\[/.test(e.newText) && e.range.start.line === want.line));
            const action = ours.find((a) => a.isPreferred && editsThisFileOnly(a)) || ours.find((a) => editsThisFileOnly(a) && ignoresLine(a));
            if (!action) throw new Error(`no exact rewrite or ignore comment for ${want.code}; offered: ${ours.map((a) => a.title).join('; ')}`);
            const before = video.document.getText();
            if (!(await vscode.workspace.applyEdit(action.edit))) throw new Error(`"${action.title}" was not applied`);
            if (action.command) await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments || []));
            if (video.document.getText() === before) throw new Error(`"${action.title}" changed nothing`);
            applied.push(`${want.code}: ${action.title} (of ${ours.length} offered)`);
            for (const [, edits] of action.edit.entries()) {
                insertedTexts.push(...edits.map((e) => e.newText.trim()).filter(Boolean));
            }
        }
        if (!(await video.document.save())) throw new Error('the file could not be saved');
        return applied.join('; ');
    });

    await checks.run('after the save, the re-check of the file is clean', async () => {
        await waitFor(
            `no atenlint diagnostics left in ${VIDEO_CLASSIFIER.file}`,
            () => atenlintDiagnostics(video.uri).length === 0,
            120_000,
        );
        await serverIdle(api, 60_000);
        await sleep(1500); // a late, stale result would show up now
        const left = atenlintDiagnostics(video.uri);
        if (left.length) throw new Error(`diagnostics came back: ${describe(left)}`);
        const edited = fs.readFileSync(video.uri.fsPath, 'utf8');
        const missing = insertedTexts.filter((t) => !edited.includes(t));
        if (missing.length) throw new Error(`the saved file lacks the fixes' text: ${missing.join('; ')}`);
        return `saved file has ${edited.split('\n').length} lines; fixes: ${applied.join('; ')}`;
    });

    await checks.run('"Check Workspace" reports files that were never opened (and imports them: canary written)', async () => {
        const fourier = vscode.Uri.file(path.join(s.workspace, 'video', 'fourier_field.py'));
        await command(180_000, 'atenlint.workspace.check');
        const found = await waitFor(
            'diagnostics for video/fourier_field.py',
            () => {
                const diagnostics = atenlintDiagnostics(fourier).filter((d) => codeOf(d) === 'MPS001');
                return diagnostics.length ? diagnostics : undefined;
            },
            180_000,
        );
        if (!found.some((d) => d.range.start.line === 8)) throw new Error(`no MPS001 on torch.logspace (line 9): ${describe(found)}`);
        if (!fs.existsSync(s.canary)) throw new Error('the canary module was not imported: the control for the Restricted Mode test fails');
        return describe(found);
    });
}

async function restricted(checks, s) {
    const api = await atenlintApi();

    await checks.run('the folder opens in Restricted Mode', async () => {
        if (vscode.workspace.isTrusted) throw new Error('the workspace is trusted');
    });

    await checks.run('the server starts with trusted: false, with the user-level interpreter, not the workspace one', async () => {
        const status = await serverIdle(api, 120_000);
        if (status.server.trusted !== false) throw new Error(`the server reports trusted=${status.server.trusted}`);
        if (status.interpreter.path !== s.python) throw new Error(`interpreter ${status.interpreter.path} (${status.interpreter.source}), expected ${s.python}`);
        return `python ${status.interpreter.path} (${status.interpreter.source})`;
    });

    let canary;
    await checks.run('static diagnostics still appear', async () => {
        canary = await openFile(s.canaryModule);
        const expected = rangeOfText(canary.document, s.canaryLine, 'self.pool(x)');
        const found = await waitFor(
            `atenlint diagnostics in ${s.canaryModule}`,
            () => {
                const diagnostics = atenlintDiagnostics(canary.uri);
                return diagnostics.length ? diagnostics : undefined;
            },
            180_000,
        );
        const pool = found.find((d) => codeOf(d) === 'MPS001' && sameRange(d.range, expected));
        if (!pool) throw new Error(`no MPS001 on self.pool(x) at ${JSON.stringify(rangeJson(expected))}: ${describe(found)}`);
        return `${describe(found)}: ${pool.message.slice(0, 160)}`;
    });

    await checks.run('screenshot: Restricted Mode', { essential: false }, async () => {
        await vscode.commands.executeCommand('workbench.actions.view.problems');
        await vscode.window.showTextDocument(canary.document, { preview: false });
        const call = rangeOfText(canary.document, s.canaryLine, 'self.pool(x)');
        await screenshot(s, 'restricted', { line: call.start.line, character: call.start.character + 6, expect: 'aten::' });
    });

    await checks.run('"Check Workspace" in Restricted Mode analyses statically', async () => {
        await command(180_000, 'atenlint.workspace.check');
        const video = vscode.Uri.file(path.join(s.workspace, VIDEO_CLASSIFIER.file));
        const found = await waitFor(
            `diagnostics for ${VIDEO_CLASSIFIER.file}`,
            () => {
                const diagnostics = atenlintDiagnostics(video);
                return diagnostics.length ? diagnostics : undefined;
            },
            180_000,
        );
        await serverIdle(api, 60_000);
        return describe(found);
    });

    await checks.run('no user module was imported and no workspace-chosen program ran', async () => {
        await sleep(2000);
        const present = [s.canary, s.interpreterCanary].filter((f) => fs.existsSync(f));
        if (present.length) throw new Error(`found ${present.join(', ')}`);
    });

    await checks.run('trusting the folder restarts the server trusted, with the workspace settings', async () => {
        const before = api.status.starts;
        await vscode.commands.executeCommand('workbench.trust.manage');
        await askHarness(s, 'grant-trust', { action: 'trust' });
        await waitFor('the workspace to be trusted', () => vscode.workspace.isTrusted, 30_000);
        const status = await waitFor(
            'a new server started trusted',
            () => {
                const current = api.status;
                if (current.phase === 'failed') {
                    throw Object.assign(new Error(`the extension failed: ${current.failure}`), { fatal: true });
                }
                return current.starts > before && current.phase === 'running' && current.server && current.server.trusted === true &&
                    current.server.state === 'idle' ? current : undefined;
            },
            120_000,
        );
        // Trusted now, the folder's own settings apply: its interpreter wrapper runs atenlint.
        if (!status.interpreter.path.endsWith(path.join('.tools', 'python'))) throw new Error(`interpreter ${status.interpreter.path}`);
        return `restart #${status.starts}, python ${status.interpreter.path}`;
    });

    await checks.run('once trusted, the full analysis imports the module (canary written)', async () => {
        await command(180_000, 'atenlint.workspace.check');
        await waitFor('the canary module to be imported', () => fs.existsSync(s.canary), 120_000);
        return 'canary written';
    });
}

async function noTorch(checks, s) {
    const api = await atenlintApi();
    let failure;
    await checks.run('an interpreter without torch: no server, and the status says why', async () => {
        const status = await waitFor('the extension to give up on this interpreter', () => (api.status.phase === 'failed' ? api.status : undefined), 60_000);
        failure = status.failure;
        if (!failure.includes('has no torch')) throw new Error(`failure: ${failure}`);
        if (!failure.includes(s.fix)) throw new Error(`the failure does not give the command ${s.fix}: ${failure}`);
        return failure;
    });
    await checks.run('a notification shows the exact command that installs torch', async () => {
        await askHarness(s, 'no-torch', { action: 'notification', contains: ['has no torch', s.fix] });
    });
}

// --- cross-file: the held-out editor scenarios of issue 19 -----------------------------------------

/** Where the atenlint extension's log channel (its messages, the server's and the LSP trace) is written. */
let atenlintLogFile;

function atenlintLog() {
    try {
        return fs.readFileSync(atenlintLogFile, 'utf8');
    } catch {
        return '';
    }
}

/**
 * How many checks of `file` imported it, from the server's `window/logMessage` lines in the log:
 * one "analysed a.py in N ms" per check that ran (a static pass adds "(static: ...)", an answer
 * from the result cache logs nothing). It counts with the worker's sandbox on, unlike a file
 * written by the module.
 */
function checksOf(file) {
    return checksLogged().filter((m) => m[1] === file && !m[2].includes('static')).length;
}

function checksLogged() {
    const line = /\[Info\s+-[^\]]*\] analysed (\S+) in \d+ ms(.*)$/;
    return atenlintLog()
        .split('\n')
        .map((l) => line.exec(l))
        .filter(Boolean);
}

/** The `workspace/didChangeWatchedFiles` notifications VS Code's file watcher sent about `uri` (LSP trace). */
function watcherEventsFor(uri) {
    const lines = atenlintLog().split('\n');
    let count = 0;
    for (let i = 0; i < lines.length; i++) {
        if (!lines[i].includes("Sending notification 'workspace/didChangeWatchedFiles'")) continue;
        let params = '';
        for (let j = i + 1; j < lines.length && lines[j].trim() !== ''; j++) params += lines[j];
        count += params.includes(JSON.stringify(uri.toString())) ? 1 : 0;
    }
    return count;
}

function countedImports(counter) {
    return fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').split('\n').filter(Boolean).length : 0;
}

/**
 * What atenlint must show on `text` (a.py's): one finding on the op's call when the text calls it,
 * none otherwise; and each of `notes` (findings that no edit here touches, such as ATL003 on the
 * class whose constructor needs an argument) on the line with the same text as where it was first.
 */
function expectedOn(text, x, notes = []) {
    const lines = text.split('\n');
    const expected = [];
    const line = lines.findIndex((l) => l.includes(x.call));
    if (line >= 0) {
        const column = lines[line].indexOf(x.call);
        expected.push({ code: x.code, range: new vscode.Range(line, column, line, column + x.call.length) });
    }
    for (const note of notes) {
        const at = lines.indexOf(note.lineText);
        if (at >= 0) expected.push({ code: note.code, range: new vscode.Range(at, note.start, at, note.end) });
    }
    return expected;
}

/** `uri`'s findings other than the op's, anchored to the text of their line (see expectedOn). */
function notesOn(document, x) {
    return atenlintDiagnostics(document.uri)
        .filter((d) => codeOf(d) !== x.code && d.range.isSingleLine)
        .map((d) => ({ code: codeOf(d), lineText: document.lineAt(d.range.start.line).text, start: d.range.start.character, end: d.range.end.character }));
}

/** '' when `uri`'s atenlint diagnostics are exactly `expected` (codes and ranges), else what differs. */
function mismatch(uri, expected) {
    const shown = atenlintDiagnostics(uri);
    const same = shown.length === expected.length &&
        expected.every((want) => shown.some((d) => codeOf(d) === want.code && sameRange(d.range, want.range)));
    return same ? '' : `shows ${describe(shown)}, the text calls for ${describe(expected)}`;
}

/**
 * Resolves once `uri`'s diagnostics are exactly `expected`, on VS Code's own diagnostics-changed
 * events; the timeout only turns a squiggle that never updates into a failure.
 */
function diagnosticsBecome(uri, expected, timeoutMs) {
    return new Promise((resolve, reject) => {
        const started = Date.now();
        let listener;
        const finish = (error) => {
            clearTimeout(timer);
            listener.dispose();
            if (error) reject(error);
            else resolve(Date.now() - started);
        };
        const timer = setTimeout(() => finish(new Error(`after ${timeoutMs / 1000}s ${path.basename(uri.fsPath)} ${mismatch(uri, expected)}`)), timeoutMs);
        listener = vscode.languages.onDidChangeDiagnostics((event) => {
            if (event.uris.some((u) => u.toString() === uri.toString()) && !mismatch(uri, expected)) finish();
        });
        if (!mismatch(uri, expected)) finish();
    });
}

/** Replaces the whole text of an open document and saves it, as a user's edit and Ctrl+S would. */
async function replaceAndSave(document, text) {
    const edit = new vscode.WorkspaceEdit();
    edit.replace(document.uri, new vscode.Range(0, 0, document.lineCount, 0), text);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`the edit of ${document.fileName} was not applied`);
    if (document.getText() !== text) throw new Error(`${document.fileName} does not hold the new text after the edit`);
    if (!(await document.save())) throw new Error(`${document.fileName} could not be saved`);
}

/**
 * Resolves when the server has been idle, finishing no check, for `quietMs`. (The log itself never
 * rests: VS Code re-pulls the workspace's diagnostics every 2 s.)
 */
async function quiet(api, quietMs, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let last = checksLogged().length;
    let since = Date.now();
    for (;;) {
        await sleep(200);
        const now = checksLogged().length;
        const status = api.status;
        const idle = status.phase === 'running' && status.server && status.server.state === 'idle';
        if (now !== last || !idle) {
            last = now;
            since = Date.now();
        } else if (Date.now() - since >= quietMs) {
            return;
        }
        if (Date.now() > deadline) throw new Error(`the server was still checking files after ${timeoutMs / 1000}s`);
    }
}

async function crossFile(checks, s) {
    const x = s.crossFile;
    const aUri = vscode.Uri.file(path.join(s.workspace, x.a));
    let api;
    let b;

    await checks.run('opening b.py (alone) starts the server; its log is readable', async () => {
        const extension = vscode.extensions.getExtension(ATENLINT);
        if (!extension) throw new Error(`${ATENLINT} is not installed`);
        b = await openFile(x.b);
        await waitFor('the atenlint extension to activate', () => extension.isActive, 30_000);
        api = extension.exports;
        await serverIdle(api, 120_000);
        await waitFor(`the atenlint log at ${atenlintLogFile}`, () => fs.existsSync(atenlintLogFile), 30_000);
    });

    // The three checks below are not essential: each one's failure is its own bug, and the next
    // still tells whether it has the other.
    await checks.run('with only b.py open, the finding its model reaches in a.py is shown on a.py', { essential: false }, async () => {
        const expected = expectedOn(fs.readFileSync(aUri.fsPath, 'utf8'), x);
        const ms = await diagnosticsBecome(aUri, expected, 120_000).catch((error) => {
            throw new Error(`${error.message}: b.py's check places nothing in a.py that VS Code shows (or torch ${s.torch} has an MPS kernel for ${x.call} now)`);
        });
        const open = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === 'file' && d.languageId === 'python').map((d) => path.basename(d.fileName));
        if (open.join() !== x.b) throw new Error(`open Python documents: ${open.join(', ')}; the check needs b.py alone`);
        if (atenlintDiagnostics(b.uri).length) throw new Error(`b.py shows ${describe(atenlintDiagnostics(b.uri))}: the finding belongs on a.py`);
        const message = atenlintDiagnostics(aUri)[0].message;
        if (!message.includes('ndtri')) throw new Error(`the finding on a.py does not name the op: ${message}`);
        return `a.py: ${describe(atenlintDiagnostics(aUri))} (${ms} ms after the server's first idle status): ${message.slice(0, 120)}`;
    });

    await checks.run('the Problems view lists the finding on a.py, which is not open', { essential: false }, async () => {
        await vscode.commands.executeCommand('workbench.actions.view.problems');
        await askHarness(s, 'cross-file-problems', { action: 'problems', contains: [x.a, 'ndtri', x.code] });
    });

    let a;
    let notes = [];
    const steps = [];
    await checks.run('both open: 6 alternating removals and put-backs of the op in a.py leave 0 stale squiggles', { essential: false }, async () => {
        a = await openFile(x.a);
        // a.py's own check adds what it finds on its own (the CLI reports the same for `atenlint check
        // a.py`); once it has, those findings are part of what every step must show.
        await waitFor('the check of a.py', () => checksOf(x.a) > 0, 90_000);
        await quiet(api, 1500, 60_000);
        notes = notesOn(a.document, x);
        const opened = mismatch(a.uri, expectedOn(a.document.getText(), x, notes));
        if (opened) throw new Error(`a.py, opened: ${opened}`);
        const before = checksOf(x.a);
        let stale = 0;
        for (let step = 1; step <= 6; step++) {
            const removal = step % 2 === 1;
            const text = removal ? x.texts.fixed : x.texts.encoder;
            const expected = expectedOn(text, x, notes);
            await replaceAndSave(a.document, text);
            let detail;
            try {
                const ms = await diagnosticsBecome(a.uri, expected, 30_000);
                // Answered: the check ran (or the cache answered) and the pulls came back. A late,
                // stale report would arrive before the server reports itself idle again.
                await serverIdle(api, 60_000);
                const late = mismatch(a.uri, expected);
                if (late) {
                    stale++;
                    detail = `stale after the server went idle: ${late}`;
                } else {
                    detail = `${describe(atenlintDiagnostics(a.uri))} in ${ms} ms`;
                }
            } catch (error) {
                stale++;
                detail = `STALE: ${error.message}`;
            }
            steps.push(`${step} ${removal ? 'erfinv' : 'ndtri'}: ${detail}`);
        }
        const detail = `${stale} stale of 6 (a.py's other findings: ${notes.map((n) => n.code).join(', ') || 'none'}); ` +
            `checks of a.py run: ${checksOf(x.a) - before} (a put-back is answered from the cache); ${steps.join('; ')}`;
        if (stale) throw new Error(detail);
        return detail;
    });

    await checks.run('one save and the file watcher\'s event for the same content import a.py once per check', async () => {
        a = a || (await openFile(x.a));
        await quiet(api, 1500, 60_000);
        const checksA = checksOf(x.a);
        const checksB = checksOf(x.b);
        const watched = watcherEventsFor(a.uri);
        const imported = countedImports(x.counter);
        // New content (never checked, so the cache cannot answer), with a line that counts imports.
        await replaceAndSave(a.document, x.texts.counted);
        await waitFor('the file watcher\'s event for the saved a.py (workspace/didChangeWatchedFiles)', () => watcherEventsFor(a.uri) > watched, 30_000);
        await waitFor('the checks of a.py and b.py', () => checksOf(x.a) > checksA && checksOf(x.b) > checksB, 90_000);
        const shown = await diagnosticsBecome(a.uri, expectedOn(x.texts.counted, x, notes), 30_000).then(() => '', (error) => error.message);
        // A second run would start when the watcher's event is handled, ~0.4 s after the save, and
        // be logged when it ends: wait until the server has been idle, logging nothing, for longer
        // than a check of these files takes.
        await quiet(api, 3000, 90_000);
        const runs = { a: checksOf(x.a) - checksA, b: checksOf(x.b) - checksB };
        const imports = countedImports(x.counter) - imported;
        const detail = `watcher events for a.py: ${watcherEventsFor(a.uri) - watched}; checks run: a.py ${runs.a}, b.py ${runs.b}; ` +
            `a.py imported ${imports} times (its own check and b.py's, which imports it)`;
        if (runs.a !== 1 || runs.b !== 1 || imports !== runs.a + runs.b) throw new Error(detail);
        if (shown) throw new Error(`${detail}; but ${shown}`);
        return detail;
    });
}

async function main(specPath) {
    currentSpec = JSON.parse(fs.readFileSync(specPath, 'utf8'));
    const s = currentSpec;
    const checks = new Checks(s);
    try {
        await ({ trusted, restricted, 'no-torch': noTorch, 'cross-file': crossFile })[s.scenario](checks, s);
    } catch (error) {
        if (!(error instanceof Abort)) {
            checks.results.push({ name: 'scenario', ok: false, detail: error && error.stack ? error.stack : String(error) });
        }
    }
    let api;
    try {
        api = (await atenlintApi()).status;
    } catch {
        api = undefined;
    }
    checks.write({ finalStatus: api });
}

function activate(context) {
    const specPath = process.env.ATENLINT_E2E_SPEC;
    if (!specPath) {
        return;
    }
    // Each extension's log folder is a sibling of this one's (…/exthost1/<extension id>/).
    atenlintLogFile = path.join(path.dirname(context.logUri.fsPath), ATENLINT, 'atenlint.log');
    main(specPath).catch((error) => {
        fs.writeFileSync(path.join(path.dirname(specPath), 'companion-crash.txt'), String(error && error.stack ? error.stack : error));
    });
}

module.exports = { activate, deactivate() {} };
