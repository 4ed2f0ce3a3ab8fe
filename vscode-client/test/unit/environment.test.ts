import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import {
    evaluateProbe,
    parseMajorMinor,
    parseProbe,
    pipInstallCommand,
    Probe,
    PROBE_SCRIPT,
    runProbe,
    shellQuote,
} from '../../src/environment';

const probe = (overrides: Partial<Probe> = {}): Probe => ({
    python: [3, 11, 7],
    executable: '/opt/venv/bin/python',
    torch: '2.13.0+cpu',
    atenlint: null,
    ...overrides,
});

describe('what the interpreter lacks, and the command that fixes it', () => {
    test('torch and Python in range, bundled server: nothing to say', () => {
        assert.deepEqual(evaluateProbe(probe(), '/opt/venv/bin/python', 'useBundled', 'linux'), []);
        assert.deepEqual(evaluateProbe(probe({ torch: '2.13.0' }), 'p', 'useBundled', 'linux'), []);
        assert.deepEqual(evaluateProbe(probe({ torch: '2.14.1' }), 'p', 'useBundled', 'linux'), []);
        assert.deepEqual(evaluateProbe(probe({ torch: '2.15.0' }), 'p', 'useBundled', 'linux'), []);
    });

    test('no torch: blocking, with the exact pip command for that interpreter', () => {
        const [problem, ...rest] = evaluateProbe(probe({ torch: null }), '/opt/venv/bin/python', 'useBundled', 'linux');
        assert.deepEqual(rest, []);
        assert.equal(problem.kind, 'no-torch');
        assert.equal(problem.blocking, true);
        assert.equal(problem.fix, "/opt/venv/bin/python -m pip install 'torch>=2.13,<2.16'");
        assert.match(problem.message, /^\/opt\/venv\/bin\/python has no torch/);
    });

    test('a torch outside the supported range: a warning, and the server still starts', () => {
        for (const torch of ['2.12.1', '2.16.0', '3.0.0', 'nightly']) {
            const [problem] = evaluateProbe(probe({ torch }), '/usr/bin/python3', 'useBundled', 'linux');
            assert.equal(problem.kind, 'torch-unsupported', torch);
            assert.equal(problem.blocking, false);
            assert.match(problem.message, new RegExp(`has torch ${torch.replace('.', '\\.')}; atenlint reads torch 2\\.13 up to 2\\.15`));
        }
    });

    test('Python older than 3.10: blocking, and nothing else is asked of it', () => {
        const problems = evaluateProbe(probe({ python: [3, 9, 18], torch: null }), '/usr/bin/python3', 'useBundled', 'linux');
        assert.deepEqual(problems.map((p) => p.kind), ['python-too-old']);
        assert.match(problems[0].message, /is Python 3\.9\.18; atenlint needs Python 3\.10 or newer/);
    });

    test('fromEnvironment without atenlint installed: blocking, pip install atenlint', () => {
        const problems = evaluateProbe(probe({ torch: '2.20.0' }), '/usr/bin/python3', 'fromEnvironment', 'linux');
        assert.deepEqual(problems.map((p) => [p.kind, p.blocking]), [['no-atenlint', true], ['torch-unsupported', false]]);
        assert.equal(problems[0].fix, '/usr/bin/python3 -m pip install atenlint');
        assert.deepEqual(evaluateProbe(probe({ atenlint: '0.1.0' }), 'p', 'fromEnvironment', 'linux'), []);
    });

    test('paths with spaces and quotes are quoted for POSIX shells and PowerShell', () => {
        assert.equal(
            pipInstallCommand("/Users/Ann O'Neil/venv/bin/python", 'torch>=2.4,<2.15', 'darwin'),
            `'/Users/Ann O'\\''Neil/venv/bin/python' -m pip install 'torch>=2.4,<2.15'`,
        );
        assert.equal(
            pipInstallCommand('C:\\Program Files\\Python312\\python.exe', 'torch>=2.4,<2.15', 'win32'),
            '& "C:\\Program Files\\Python312\\python.exe" -m pip install "torch>=2.4,<2.15"',
        );
        assert.equal(pipInstallCommand('C:\\Python312\\python.exe', 'atenlint', 'win32'), 'C:\\Python312\\python.exe -m pip install atenlint');
        assert.equal(shellQuote('plain-path/bin/python3.11', 'linux'), 'plain-path/bin/python3.11');
        assert.equal(shellQuote('$HOME', 'linux'), "'$HOME'");
    });

    test('versions and probe output are parsed strictly', () => {
        assert.deepEqual(parseMajorMinor('2.13.0+cu128'), [2, 13]);
        assert.deepEqual(parseMajorMinor('2.6.0a0+git1234'), [2, 6]);
        assert.equal(parseMajorMinor('unknown'), undefined);
        assert.deepEqual(parseProbe('noise from sitecustomize\n{"python":[3,12,1],"executable":"/p","torch":null,"atenlint":"0.1.0"}\n'), {
            python: [3, 12, 1],
            executable: '/p',
            torch: null,
            atenlint: '0.1.0',
        });
        assert.equal(parseProbe('{"python":"3.12","executable":"/p","torch":null,"atenlint":null}'), undefined);
        assert.equal(parseProbe('Traceback (most recent call last):'), undefined);
    });
});

describe('the probe, run in a real interpreter', () => {
    const root = path.resolve(__dirname, '..', '..', '..', '..', '..');
    const python = process.env.ATENLINT_TEST_PYTHON ?? path.join(root, '.venv', 'bin', 'python');

    test('reports the Python version and torch from metadata, without importing torch', { skip: !fs.existsSync(python) && 'no .venv' }, async () => {
        const result = await runProbe(python, os.tmpdir());
        assert.equal(result.error, undefined);
        const version = execFileSync(python, ['-c', 'import sys; print(list(sys.version_info[:3]))']).toString().trim();
        assert.deepEqual(result.probe?.python, JSON.parse(version));
        const torch = execFileSync(python, ['-c', 'from importlib.metadata import version; print(version("torch"))']).toString().trim();
        assert.equal(result.probe?.torch, torch);
        const imported = execFileSync(python, ['-c', `${PROBE_SCRIPT}\nprint("torch" in sys.modules)`]).toString().trim().split('\n').pop();
        assert.equal(imported, 'False');
    });

    test('an interpreter without torch says so', { skip: process.platform === 'win32' }, async () => {
        // The same Python without site-packages (-S) has no torch.
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-probe-'));
        try {
            const bare = path.join(dir, 'python');
            const real = fs.existsSync(python) ? python : 'python3';
            fs.writeFileSync(bare, `#!/bin/sh\nexec "${real}" -S "$@"\n`, { mode: 0o755 });
            const result = await runProbe(bare, dir);
            assert.equal(result.probe?.torch, null);
            assert.equal(result.probe?.atenlint, null);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    test('something that is not Python is reported with what it printed', { skip: process.platform === 'win32' }, async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atenlint-probe-'));
        try {
            const fake = path.join(dir, 'python');
            fs.writeFileSync(fake, '#!/bin/sh\necho "python: broken install" >&2\nexit 3\n', { mode: 0o755 });
            const result = await runProbe(fake, dir);
            assert.equal(result.probe, undefined);
            assert.match(result.error ?? '', /cannot run as Python 3: python: broken install/);
            const missing = await runProbe(path.join(dir, 'nothing'), dir);
            assert.match(missing.error ?? '', /cannot run as Python 3: .*ENOENT/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
