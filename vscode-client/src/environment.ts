/**
 * Whether the chosen interpreter can run atenlint: its Python version, torch (and atenlint itself
 * when the server is not the bundled one), and the exact command that fixes what is missing.
 */

import { execFile } from 'child_process';
import { ImportStrategy, PYTHON_MIN, TORCH_BELOW, TORCH_MIN, TORCH_REQUIREMENT } from './constants';

export interface Probe {
    python: number[];
    executable: string;
    torch: string | null;
    atenlint: string | null;
}

export type ProblemKind = 'not-runnable' | 'python-too-old' | 'no-torch' | 'torch-unsupported' | 'no-atenlint';

export interface EnvironmentProblem {
    kind: ProblemKind;
    /** Whether the server can still start (only an untested torch version lets it). */
    blocking: boolean;
    message: string;
    /** A command to paste into a terminal that fixes it, when there is one. */
    fix?: string;
}

/**
 * Runs in the user's interpreter. It imports nothing but the standard library: torch's version
 * comes from its metadata, so the probe takes milliseconds and cannot run user code.
 */
export const PROBE_SCRIPT = [
    'import json, sys',
    'import importlib.util',
    'from importlib import metadata',
    'def found(name):',
    '    try:',
    '        return importlib.util.find_spec(name) is not None',
    '    except Exception:',
    '        return False',
    'def version(name):',
    '    if not found(name):',
    '        return None',
    '    try:',
    '        return metadata.version(name)',
    '    except Exception:',
    '        return "unknown"',
    'print(json.dumps({"python": list(sys.version_info[:3]), "executable": sys.executable,',
    '                  "torch": version("torch"), "atenlint": version("atenlint")}))',
].join('\n');

/** Quotes one argument for the shell a user would paste the command into. */
export function shellQuote(arg: string, platform: NodeJS.Platform): string {
    if (platform === 'win32') {
        return /^[A-Za-z0-9_\-.\\:/]+$/.test(arg) ? arg : `"${arg.replace(/"/g, '`"')}"`;
    }
    return /^[A-Za-z0-9_\-./:=@+,%]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** `python -m pip install REQUIREMENT`, for POSIX shells or (on Windows) PowerShell. */
export function pipInstallCommand(python: string, requirement: string, platform: NodeJS.Platform): string {
    const quotedPython = shellQuote(python, platform);
    const prefix = platform === 'win32' && quotedPython.startsWith('"') ? '& ' : '';
    return `${prefix}${quotedPython} -m pip install ${shellQuote(requirement, platform)}`;
}

/** "2.13.0+cpu" -> [2, 13]; undefined for a version that is not major.minor[...]. */
export function parseMajorMinor(version: string): [number, number] | undefined {
    const match = /^(\d+)\.(\d+)/.exec(version);
    return match ? [Number(match[1]), Number(match[2])] : undefined;
}

function lessThan(a: readonly number[], b: readonly number[]): boolean {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
        const x = a[i] ?? 0;
        const y = b[i] ?? 0;
        if (x !== y) {
            return x < y;
        }
    }
    return false;
}

/** The problems of an environment, most serious first (empty: it can run atenlint). */
export function evaluateProbe(
    probe: Probe,
    python: string,
    strategy: ImportStrategy,
    platform: NodeJS.Platform,
): EnvironmentProblem[] {
    const problems: EnvironmentProblem[] = [];
    if (lessThan(probe.python, PYTHON_MIN)) {
        problems.push({
            kind: 'python-too-old',
            blocking: true,
            message:
                `${python} is Python ${probe.python.join('.')}; atenlint needs Python ${PYTHON_MIN.join('.')} or newer. ` +
                'Select another interpreter.',
        });
        return problems;
    }
    if (probe.torch === null) {
        problems.push({
            kind: 'no-torch',
            blocking: true,
            message: `${python} has no torch, which atenlint needs to judge your operators. Install it:`,
            fix: pipInstallCommand(python, TORCH_REQUIREMENT, platform),
        });
    } else {
        const version = parseMajorMinor(probe.torch);
        if (version === undefined || lessThan(version, TORCH_MIN) || !lessThan(version, TORCH_BELOW)) {
            problems.push({
                kind: 'torch-unsupported',
                blocking: false,
                message:
                    `${python} has torch ${probe.torch}; atenlint reads torch ${TORCH_MIN.join('.')} up to ` +
                    `${TORCH_BELOW[0]}.${TORCH_BELOW[1] - 1}, so its verdicts may be wrong. To use a supported torch:`,
                fix: pipInstallCommand(python, TORCH_REQUIREMENT, platform),
            });
        }
    }
    if (strategy === 'fromEnvironment' && probe.atenlint === null) {
        problems.push({
            kind: 'no-atenlint',
            blocking: true,
            message:
                `${python} has no atenlint, and atenlint.importStrategy is "fromEnvironment". ` +
                'Install it, or set atenlint.importStrategy to "useBundled":',
            fix: pipInstallCommand(python, 'atenlint', platform),
        });
    }
    return problems.sort((a, b) => Number(b.blocking) - Number(a.blocking));
}

/** Parses the probe's output; undefined when it is not what the probe prints. */
export function parseProbe(stdout: string): Probe | undefined {
    const line = stdout.trim().split(/\r?\n/).pop() ?? '';
    try {
        const value = JSON.parse(line) as Partial<Probe>;
        if (
            Array.isArray(value.python) &&
            value.python.every((n) => typeof n === 'number') &&
            typeof value.executable === 'string' &&
            (value.torch === null || typeof value.torch === 'string') &&
            (value.atenlint === null || typeof value.atenlint === 'string')
        ) {
            return value as Probe;
        }
    } catch {
        // fall through
    }
    return undefined;
}

/** Runs the probe in `python` (with `cwd` a folder that holds no user code). */
export function runProbe(python: string, cwd: string, timeoutMs = 20_000): Promise<{ probe?: Probe; error?: string }> {
    return new Promise((resolve) => {
        execFile(
            python,
            ['-c', PROBE_SCRIPT],
            { cwd, timeout: timeoutMs, windowsHide: true, env: { ...process.env, PYTHONIOENCODING: 'utf-8' } },
            (error, stdout, stderr) => {
                const probe = parseProbe(String(stdout));
                if (probe !== undefined) {
                    resolve({ probe });
                    return;
                }
                const detail = String(stderr).trim().split(/\r?\n/).slice(-3).join(' ') || (error ? error.message : '');
                resolve({ error: `${python} cannot run as Python 3${detail ? `: ${detail}` : ''}` });
            },
        );
    });
}
