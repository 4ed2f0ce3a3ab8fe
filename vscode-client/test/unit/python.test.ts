import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from '../stub/vscode';
import {
    activeInterpreterFromExtension,
    discoverInterpreter,
    DiscoveryInput,
    findOnPath,
    getPythonEnvironments,
    isExecutable,
    PYTHON_EXTENSION_ID,
    PythonEnvironmentsApi,
} from '../../src/python';

/** A machine with these executables, a Python extension choosing `fromExtension`, and python3 on PATH. */
function machine(overrides: Partial<DiscoveryInput> & { executables?: string[]; onPath?: Record<string, string> } = {}) {
    const executables = new Set(overrides.executables ?? ['/usr/bin/python3', '/opt/venv/bin/python', '/work/proj/.venv/bin/python']);
    const onPath = overrides.onPath ?? { python3: '/usr/bin/python3' };
    const asked: string[][] = [];
    const input: DiscoveryInput = {
        setting: '',
        trusted: true,
        workspaceFolders: ['/work/proj'],
        pythonExtension: async () => undefined,
        findOnPath: async (names) => {
            asked.push(names);
            return names.map((n) => onPath[n]).find((p) => p !== undefined);
        },
        isExecutable: async (file) => executables.has(file),
        platform: 'linux',
        ...overrides,
    };
    return { input, asked };
}

describe('interpreter discovery', () => {
    test('the atenlint.interpreter setting wins over the Python extension and PATH', async () => {
        const { input } = machine({ setting: '/opt/venv/bin/python', pythonExtension: async () => '/work/proj/.venv/bin/python' });
        const result = await discoverInterpreter(input);
        assert.deepEqual(result.interpreter, { path: '/opt/venv/bin/python', source: 'setting' });
        assert.deepEqual(result.notes, []);
    });

    test("without the setting, the Python extension's active environment", async () => {
        const { input } = machine({ pythonExtension: async () => '/work/proj/.venv/bin/python' });
        assert.deepEqual((await discoverInterpreter(input)).interpreter, { path: '/work/proj/.venv/bin/python', source: 'pythonExtension' });
    });

    test('without the Python extension, python3 on PATH', async () => {
        const { input, asked } = machine();
        assert.deepEqual((await discoverInterpreter(input)).interpreter, { path: '/usr/bin/python3', source: 'path' });
        assert.deepEqual(asked, [['python3', 'python']]);
    });

    test('on Windows, python (or the py launcher) on PATH', async () => {
        const { input, asked } = machine({ platform: 'win32', onPath: { py: 'C:\\Windows\\py.exe' } });
        assert.deepEqual((await discoverInterpreter(input)).interpreter, { path: 'C:\\Windows\\py.exe', source: 'path' });
        assert.deepEqual(asked, [['python', 'py']]);
    });

    test('a relative setting is relative to the workspace folder; a bare name is looked up on PATH', async () => {
        const relative = machine({ setting: '.venv/bin/python' });
        assert.deepEqual((await discoverInterpreter(relative.input)).interpreter, { path: '/work/proj/.venv/bin/python', source: 'setting' });
        const bare = machine({ setting: 'python3.12', onPath: { 'python3.12': '/opt/venv/bin/python' } });
        assert.deepEqual((await discoverInterpreter(bare.input)).interpreter, { path: '/opt/venv/bin/python', source: 'setting' });
        assert.deepEqual(bare.asked, [['python3.12']]);
    });

    test('a setting that cannot be used is reported, not silently replaced by another Python', async () => {
        const { input } = machine({ setting: '/nowhere/python', pythonExtension: async () => '/opt/venv/bin/python' });
        const result = await discoverInterpreter(input);
        assert.equal(result.interpreter, undefined);
        assert.deepEqual(result.notes, ['atenlint.interpreter /nowhere/python does not exist or is not executable']);
        const unexpanded = machine({ settingError: '${workspaceFolder} has no value: no folder is open' });
        const second = await discoverInterpreter(unexpanded.input);
        assert.equal(second.interpreter, undefined);
        assert.match(second.notes[0], /^atenlint.interpreter: \$\{workspaceFolder\} has no value/);
    });

    test('in Restricted Mode an interpreter inside the untrusted folder is never chosen', async () => {
        const { input } = machine({ trusted: false, pythonExtension: async () => '/work/proj/.venv/bin/python' });
        const result = await discoverInterpreter(input);
        assert.deepEqual(result.interpreter, { path: '/usr/bin/python3', source: 'path' });
        assert.match(result.notes[0], /\/work\/proj\/.venv\/bin\/python is inside the untrusted folder \/work\/proj/);

        const setting = machine({ trusted: false, setting: '/work/proj/.venv/bin/python' });
        const refused = await discoverInterpreter(setting.input);
        assert.equal(refused.interpreter, undefined);
        assert.match(refused.notes[0], /not run in Restricted Mode/);

        // A folder named like a prefix of the interpreter's is not "inside".
        const sibling = machine({ trusted: false, workspaceFolders: ['/work/pro'], pythonExtension: async () => '/work/proj/.venv/bin/python' });
        assert.equal((await discoverInterpreter(sibling.input)).interpreter?.source, 'pythonExtension');
    });

    test('a Python extension that fails is noted and PATH is used', async () => {
        const { input } = machine({
            pythonExtension: async () => {
                throw new Error('environments not ready');
            },
        });
        const result = await discoverInterpreter(input);
        assert.deepEqual(result.interpreter, { path: '/usr/bin/python3', source: 'path' });
        assert.deepEqual(result.notes, ['the Python extension did not answer: environments not ready']);
    });

    test('no Python at all says what was tried', async () => {
        const { input } = machine({ onPath: {} });
        const result = await discoverInterpreter(input);
        assert.equal(result.interpreter, undefined);
        assert.deepEqual(result.notes, ['neither python3 nor python is on PATH']);
    });
});

describe('PATH search', () => {
    test('finds the first executable in PATH order, skipping non-executable files and folders', async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-path-'));
        try {
            const [a, b, c] = ['a', 'b', 'c'].map((d) => path.join(dir, d));
            for (const d of [a, b, c]) {
                fs.mkdirSync(d);
            }
            fs.writeFileSync(path.join(a, 'python3'), '#!/bin/sh\n', { mode: 0o644 }); // not executable
            fs.mkdirSync(path.join(b, 'python3')); // a folder
            fs.writeFileSync(path.join(c, 'python3'), '#!/bin/sh\n', { mode: 0o755 });
            const env = { PATH: [a, b, c].join(':') };
            assert.equal(await findOnPath(['python3'], env, 'linux'), path.join(c, 'python3'));
            assert.equal(await findOnPath(['python4'], env, 'linux'), undefined);
            assert.equal(await isExecutable(path.join(a, 'python3')), false);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    test('on Windows, PATHEXT extensions and ; separators', async () => {
        const seen: string[] = [];
        const found = await findOnPath(['python'], { Path: 'C:\\A;C:\\B', PATHEXT: '.COM;.EXE' }, 'win32', async (f) => {
            seen.push(f);
            return f === 'C:\\B\\python.EXE';
        });
        assert.equal(found, 'C:\\B\\python.EXE');
        assert.deepEqual(seen, ['C:\\A\\python.COM', 'C:\\A\\python.EXE', 'C:\\B\\python.COM', 'C:\\B\\python.EXE']);
    });
});

describe('the Python extension', () => {
    beforeEach(() => vscode.reset());

    function pythonExtension(environments: Partial<PythonEnvironmentsApi> | undefined, active = false) {
        let activations = 0;
        const extension = {
            id: PYTHON_EXTENSION_ID,
            isActive: active,
            exports: { ready: Promise.resolve(), environments },
            activate: async () => {
                activations += 1;
                return extension.exports;
            },
        };
        vscode.installedExtensions.set(PYTHON_EXTENSION_ID, extension);
        return () => activations;
    }

    test('absent: no API, and nothing is activated', async () => {
        assert.equal(await getPythonEnvironments(), undefined);
    });

    test('present: activated once and its active environment resolved to an executable', async () => {
        const changes = new vscode.EventEmitter<unknown>();
        const asked: unknown[] = [];
        const activations = pythonExtension({
            getActiveEnvironmentPath: (resource?: unknown) => {
                asked.push(resource);
                return { id: 'venv', path: '/work/proj/.venv' };
            },
            resolveEnvironment: async (env) => {
                assert.deepEqual(env, { id: 'venv', path: '/work/proj/.venv' });
                return { executable: { uri: vscode.Uri.file('/work/proj/.venv/bin/python') as any } };
            },
            onDidChangeActiveEnvironmentPath: changes.event as any,
        });
        const environments = await getPythonEnvironments();
        assert.ok(environments);
        assert.equal(activations(), 1);
        const folder = vscode.Uri.file('/work/proj');
        assert.equal(await activeInterpreterFromExtension(environments, folder as any), '/work/proj/.venv/bin/python');
        assert.deepEqual(asked, [folder]);
    });

    test('an environment that cannot be resolved gives no interpreter', async () => {
        pythonExtension(
            {
                getActiveEnvironmentPath: () => ({ id: 'gone', path: '/gone' }),
                resolveEnvironment: async () => undefined,
                onDidChangeActiveEnvironmentPath: new vscode.EventEmitter<unknown>().event as any,
            },
            true,
        );
        const environments = await getPythonEnvironments();
        assert.ok(environments);
        assert.equal(await activeInterpreterFromExtension(environments, undefined), undefined);
    });

    test('an old Python extension without the environments API is not used', async () => {
        pythonExtension(undefined);
        assert.equal(await getPythonEnvironments(), undefined);
    });
});
