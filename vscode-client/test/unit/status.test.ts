import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { describeStatus, parseStatus, ServerStatus } from '../../src/status';

const status = (overrides: Partial<ServerStatus> = {}): ServerStatus => ({
    state: 'idle',
    targets: ['mps'],
    torch: '2.13.0',
    python: '/opt/venv/bin/python',
    trusted: true,
    lastError: null,
    message: null,
    ...overrides,
});

describe('status notification', () => {
    test('parses the contract, filling absent optional fields', () => {
        assert.deepEqual(parseStatus({ state: 'busy', targets: ['mps'], torch: '2.13.0', python: '/p', trusted: false, lastError: null, message: 'video.py' }), {
            state: 'busy', targets: ['mps'], torch: '2.13.0', python: '/p', trusted: false, lastError: null, message: 'video.py',
            notes: [], workspaceChecks: 0,
        });
        assert.deepEqual(parseStatus({ state: 'starting', targets: [] }), {
            state: 'starting', targets: [], torch: null, python: '', trusted: true, lastError: null, message: null,
            notes: [], workspaceChecks: 0,
        });
    });

    test('starting: no "torch not found" before the workers have said which torch they have', () => {
        const view = describeStatus({ phase: 'running', server: status({ state: 'starting', torch: null }), targets: undefined, trusted: true });
        assert.equal(view.detail, 'starting…');
        assert.ok(view.busy);
    });

    test('Check Workspace shows as a running check, and run-level notes stay in the item', () => {
        const view = describeStatus({
            phase: 'running',
            server: status({ state: 'idle', workspaceChecks: 1, notes: ['coremltools is not installed: coreml is not checked'] }),
            targets: undefined,
            trusted: true,
        });
        assert.ok(view.busy);
        assert.match(view.detail, /checking the workspace…/);
        assert.match(view.detail, /coremltools is not installed/);
        assert.doesNotMatch(view.detail, /idle/);
    });

    test('rejects what is not a status', () => {
        for (const bad of [null, 'idle', { state: 'sleeping', targets: [] }, { state: 'idle', targets: 'mps' }, { state: 'idle', targets: [], torch: 2 }]) {
            assert.equal(parseStatus(bad), undefined, JSON.stringify(bad));
        }
    });
});

describe('status item', () => {
    test('idle: targets, torch version, idle', () => {
        assert.deepEqual(describeStatus({ phase: 'running', server: status(), targets: undefined, trusted: true }), {
            text: 'atenlint: mps', detail: 'torch 2.13.0 · idle', severity: 'information', busy: false,
        });
    });

    test('busy: spinning, with what the server is doing', () => {
        const view = describeStatus({ phase: 'running', server: status({ state: 'busy', message: 'checking video_classifier.py' }), targets: undefined, trusted: true });
        assert.equal(view.busy, true);
        assert.equal(view.detail, 'torch 2.13.0 · checking video_classifier.py');
    });

    test('the last error stays visible after the server is idle again', () => {
        const view = describeStatus({ phase: 'running', server: status({ lastError: 'worker died: killed (out of memory)' }), targets: undefined, trusted: true });
        assert.equal(view.severity, 'error');
        assert.equal(view.detail, 'torch 2.13.0 · idle · last error: worker died: killed (out of memory)');
        const errored = describeStatus({ phase: 'running', server: status({ state: 'error', lastError: 'no torch' }), targets: undefined, trusted: true });
        assert.equal(errored.detail, 'torch 2.13.0 · error: no torch');
    });

    test('Restricted Mode is in the text and the detail, as a warning', () => {
        const view = describeStatus({ phase: 'running', server: status({ trusted: false }), targets: undefined, trusted: false });
        assert.equal(view.text, 'atenlint: mps (Restricted Mode)');
        assert.match(view.detail, /static analysis only/);
        assert.equal(view.severity, 'warning');
    });

    test('before the server speaks: the settings targets, starting; failures as errors', () => {
        assert.deepEqual(describeStatus({ phase: 'starting', targets: ['mps'], trusted: true }), {
            text: 'atenlint: mps', detail: 'starting…', severity: 'information', busy: true,
        });
        assert.equal(describeStatus({ phase: 'starting', targets: undefined, trusted: true }).text, 'atenlint');
        const failed = describeStatus({ phase: 'failed', failure: '/usr/bin/python3 has no torch. Install it:\n  pip install torch', targets: undefined, trusted: true });
        assert.deepEqual(failed, {
            text: 'atenlint', detail: '/usr/bin/python3 has no torch. Install it: pip install torch', severity: 'error', busy: false,
        });
    });

    test('long messages are cut to one line', () => {
        const view = describeStatus({ phase: 'failed', failure: 'x'.repeat(500), targets: undefined, trusted: true });
        assert.equal(view.detail.length, 120);
        assert.ok(view.detail.endsWith('…'));
    });
});
