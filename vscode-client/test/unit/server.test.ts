import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import * as vscode from '../stub/vscode';
import { ConnectionHooks, ServerConnection } from '../../src/client';
import { isFailure, LaunchPlan, launchCommand, planLaunch } from '../../src/launch';
import { ServerManager } from '../../src/server';
import { ServerSettings } from '../../src/settings';
import { StatusInput } from '../../src/status';

const log = vscode.window.createOutputChannel('atenlint') as any;

/** A fake extension folder with the bundled server in place, and a fake interpreter that has torch. */
function extensionFolder(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-ext-'));
    fs.mkdirSync(path.join(dir, 'bundled', 'tool'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'bundled', 'tool', 'run_server.py'), '');
    return dir;
}

function interpreter(dir: string, torch: string | null = '2.13.0'): string {
    const python = path.join(dir, 'python');
    const json = JSON.stringify({ python: [3, 11, 7], executable: python, torch, atenlint: null });
    fs.writeFileSync(python, `#!/bin/sh\necho '${json}'\n`, { mode: 0o755 });
    return python;
}

class FakeConnection implements ServerConnection {
    running = false;
    stopped = false;
    pushed: ServerSettings[] = [];
    executed: [string, unknown[]][] = [];
    constructor(readonly plan: LaunchPlan, readonly hooks: ConnectionHooks) {}
    async start() {
        this.running = true;
    }
    async stop() {
        this.running = false;
        this.stopped = true;
    }
    async executeCommand(command: string, args: unknown[]) {
        this.executed.push([command, args]);
        return { files: 3 };
    }
    async pushSettings(settings: ServerSettings) {
        this.pushed.push(settings);
    }
}

describe('launch plan', { skip: process.platform === 'win32' }, () => {
    let dir: string;
    beforeEach(() => {
        vscode.reset();
        dir = extensionFolder();
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    test('trusted: the bundled server in the workspace folder, trusted: true, the interpreter for workers', async () => {
        const python = interpreter(dir);
        vscode.settings.global['atenlint.interpreter'] = python;
        vscode.setWorkspaceFolders([dir]);
        const plan = await planLaunch({ extensionPath: dir, trusted: true, pythonEnvironments: async () => undefined });
        assert.ok(!isFailure(plan));
        assert.deepEqual(plan.launch, { command: python, args: [path.join(dir, 'bundled', 'tool', 'run_server.py')], cwd: dir });
        assert.equal(plan.initializationOptions.trusted, true);
        assert.equal(plan.initializationOptions.python, python);
        assert.deepEqual(plan.warnings, []);
    });

    test('untrusted: trusted: false, and the server does not run in the folder', async () => {
        const python = interpreter(dir);
        vscode.settings.global['atenlint.interpreter'] = python;
        const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-ws-'));
        try {
            vscode.setWorkspaceFolders([folder]);
            vscode.workspace.isTrusted = false;
            const plan = await planLaunch({ extensionPath: dir, trusted: false, pythonEnvironments: async () => undefined });
            assert.ok(!isFailure(plan));
            assert.equal(plan.initializationOptions.trusted, false);
            assert.equal(plan.launch.cwd, dir);
        } finally {
            fs.rmSync(folder, { recursive: true, force: true });
        }
    });

    test('no torch: no server, and the failure carries the pip command', async () => {
        const python = interpreter(dir, null);
        vscode.settings.global['atenlint.interpreter'] = python;
        const plan = await planLaunch({ extensionPath: dir, trusted: true, pythonEnvironments: async () => undefined });
        assert.ok(isFailure(plan));
        assert.equal(plan.problem.kind, 'no-torch');
        assert.equal(plan.problem.fix, `${python} -m pip install 'torch>=2.13,<2.16'`);
        assert.ok(plan.failure.endsWith(plan.problem.fix));
    });

    test('a build without bundled/ says so instead of starting a server that cannot run', async () => {
        vscode.settings.global['atenlint.interpreter'] = interpreter(dir);
        fs.rmSync(path.join(dir, 'bundled'), { recursive: true });
        const plan = await planLaunch({ extensionPath: dir, trusted: true, pythonEnvironments: async () => undefined });
        assert.ok(isFailure(plan));
        assert.match(plan.failure, /the bundled server is missing/);
    });

    test('fromEnvironment runs `python -m atenlint serve`', () => {
        assert.deepEqual(launchCommand('/p', 'fromEnvironment', '/ext', '/ws'), { command: '/p', args: ['-m', 'atenlint', 'serve'], cwd: '/ws' });
    });
});

describe('server manager', { skip: process.platform === 'win32' }, () => {
    let dir: string;
    let connections: FakeConnection[];
    let shown: StatusInput[];
    let manager: ServerManager;

    beforeEach(() => {
        vscode.reset();
        dir = extensionFolder();
        vscode.settings.global['atenlint.interpreter'] = interpreter(dir);
        vscode.setWorkspaceFolders([dir]);
        connections = [];
        shown = [];
        manager = new ServerManager({
            extensionPath: dir,
            log,
            showStatus: (input) => shown.push(input),
            connect: (plan, hooks) => {
                const connection = new FakeConnection(plan, hooks);
                connections.push(connection);
                return connection;
            },
            pythonEnvironments: async () => undefined,
            restartDelayMs: 0,
        });
    });
    afterEach(async () => {
        await manager.dispose();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    test('Restricted Mode starts the server untrusted, and granting trust restarts it trusted', async (t) => {
        // The interpreter must live outside the untrusted folder to be run at all.
        const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-ws-'));
        t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
        vscode.setWorkspaceFolders([folder]);
        vscode.workspace.isTrusted = false;
        await manager.restart('test');
        assert.equal(connections.length, 1);
        assert.equal(connections[0].plan.initializationOptions.trusted, false);
        assert.equal(shown.at(-1)?.trusted, false);

        vscode.grantTrust();
        await new Promise((resolve) => setImmediate(resolve));
        await manager.restart('settle'); // queued behind the trust restart, which is already running
        assert.ok(connections[0].stopped, 'the untrusted server was stopped');
        const trusted = connections.filter((c) => c.plan.initializationOptions.trusted);
        assert.ok(trusted.length >= 1);
        assert.equal(connections.filter((c) => c.running).length, 1);
        assert.equal(connections.at(-1)?.plan.initializationOptions.trusted, true);
    });

    test('granting trust and the settings change it brings give one new server, not two', async (t) => {
        const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-ws-'));
        t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
        vscode.setWorkspaceFolders([folder]);
        vscode.workspace.isTrusted = false;
        await manager.dispose(); // only the manager under test listens to the events
        const mine: FakeConnection[] = [];
        const debounced = new ServerManager({
            extensionPath: dir,
            log,
            showStatus: () => undefined,
            connect: (plan, hooks) => {
                const connection = new FakeConnection(plan, hooks);
                mine.push(connection);
                return connection;
            },
            pythonEnvironments: async () => undefined,
            restartDelayMs: 30,
        });
        t.after(() => debounced.dispose());
        await debounced.restart('test');
        assert.equal(mine.length, 1);
        vscode.grantTrust();
        vscode.fireConfigurationChange(['atenlint.interpreter']);
        await debounced.restart('settle');
        assert.equal(mine.length, 2);
        assert.equal(mine[1].plan.initializationOptions.trusted, true);
        assert.equal(debounced.status.starts, 2);
    });

    test('restarts requested while one is pending are folded into it', async () => {
        const first = manager.restart('a');
        const second = manager.restart('b');
        const third = manager.restart('c');
        await Promise.all([first, second, third]);
        assert.equal(connections.length, 1);
        await manager.restart('d');
        assert.equal(connections.length, 2);
        assert.ok(connections[0].stopped);
        assert.equal(manager.status.starts, 2);
    });

    test('a settings change reaches the running server; an interpreter change restarts it', async () => {
        await manager.restart('test');
        vscode.settings.global['atenlint.severity'] = { mps: 'error' };
        vscode.fireConfigurationChange(['atenlint.severity']);
        assert.equal(connections.length, 1);
        assert.deepEqual(connections[0].pushed.map((s) => s.severity), [{ mps: 'error' }]);
        assert.equal(connections[0].pushed[0].trusted, true);
        assert.equal(connections[0].hooks.settingsFor(undefined).severity.mps, 'error');

        vscode.fireConfigurationChange(['atenlint.interpreter']);
        await new Promise((resolve) => setImmediate(resolve));
        await manager.restart('settle');
        assert.ok(connections.length >= 2);
        assert.ok(connections[0].stopped);
        vscode.fireConfigurationChange(['python.analysis.typeCheckingMode']);
        assert.equal(connections[0].pushed.length, 1);
    });

    test('status notifications drive the status item; stale connections are ignored', async () => {
        await manager.restart('test');
        const hooks = connections[0].hooks;
        const status = { state: 'busy' as const, targets: ['mps'], torch: '2.13.0', python: 'p', trusted: true, lastError: null, message: 'x.py' };
        hooks.onStatus(status);
        assert.deepEqual(shown.at(-1), { phase: 'running', failure: undefined, server: status, targets: undefined, trusted: true });
        await manager.restart('again');
        const count = shown.length;
        hooks.onStatus({ ...status, state: 'idle' });
        assert.equal(shown.length, count, 'a stopped server cannot change the status');
        connections[1].hooks.onUnexpectedStop('the atenlint server stopped');
        assert.equal(manager.status.phase, 'failed');
        assert.equal(shown.at(-1)?.failure, 'the atenlint server stopped');
    });

    test('without torch: no server, an error notification with the fix, shown once per interpreter', async () => {
        const python = interpreter(dir, null);
        vscode.settings.global['atenlint.interpreter'] = python;
        vscode.chooseNext('Copy Command');
        await manager.restart('test');
        assert.equal(connections.length, 0);
        assert.equal(manager.status.phase, 'failed');
        assert.equal(vscode.messages.length, 1);
        assert.equal(vscode.messages[0].level, 'error');
        assert.match(vscode.messages[0].message, /has no torch/);
        assert.deepEqual(vscode.messages[0].actions, ['Run in Terminal', 'Copy Command', 'Select Interpreter']);
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(vscode.clipboard, [`${python} -m pip install 'torch>=2.13,<2.16'`]);

        await manager.restart('automatic');
        assert.equal(vscode.messages.length, 1, 'not shown again at an automatic restart');
        vscode.chooseNext('Run in Terminal');
        await manager.restart('user', { explicit: true });
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(vscode.messages.length, 3, 'shown again when the user restarts, then "restart when done"');
        assert.deepEqual(vscode.terminals.map((t) => t.sent), [[`${python} -m pip install 'torch>=2.13,<2.16'`]]);
    });

    test('server commands need a running server', async () => {
        await assert.rejects(manager.executeServerCommand('atenlint.checkWorkspace'), /not running/);
        await manager.restart('test');
        assert.deepEqual(await manager.executeServerCommand('atenlint.report', ['file:///x.py']), { files: 3 });
        assert.deepEqual(connections[0].executed, [['atenlint.report', ['file:///x.py']]]);
    });

    test('the Python extension selecting another environment restarts the server, unless the setting overrides it', async () => {
        const changes = new vscode.EventEmitter<any>();
        const python = interpreter(dir);
        delete vscode.settings.global['atenlint.interpreter'];
        const other = new ServerManager({
            extensionPath: dir,
            log,
            showStatus: () => undefined,
            connect: (plan, hooks) => {
                const connection = new FakeConnection(plan, hooks);
                connections.push(connection);
                return connection;
            },
            pythonEnvironments: async () => ({
                getActiveEnvironmentPath: () => ({ id: 'x', path: python }),
                resolveEnvironment: async () => ({ executable: { uri: vscode.Uri.file(python) as any } }),
                onDidChangeActiveEnvironmentPath: changes.event as any,
            }),
            restartDelayMs: 0,
        });
        try {
            await other.restart('test');
            assert.equal(connections.length, 1);
            assert.equal(other.status.interpreter?.source, 'pythonExtension');
            changes.fire({ id: 'y', path: '/other/python', resource: undefined });
            await new Promise((resolve) => setImmediate(resolve));
            await other.restart('settle');
            assert.ok(connections.length >= 2);
            const count = connections.length;
            vscode.settings.global['atenlint.interpreter'] = python;
            changes.fire({ id: 'z', path: '/third/python', resource: undefined });
            await new Promise((resolve) => setImmediate(resolve));
            assert.equal(connections.length, count);
        } finally {
            await other.dispose();
        }
    });
});
