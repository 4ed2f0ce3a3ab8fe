/**
 * Which Python runs the server: the `atenlint.interpreter` setting when set, else the environment
 * selected in the Python extension (ms-python) when it is installed, else `python3` on PATH.
 */

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { traceDebug, traceWarn } from './logging';

export type InterpreterSource = 'setting' | 'pythonExtension' | 'path';

export interface Interpreter {
    /** Absolute path of the executable. */
    path: string;
    source: InterpreterSource;
}

export interface DiscoveryResult {
    interpreter?: Interpreter;
    /** Why candidates were passed over, for the log and the error message. */
    notes: string[];
}

export interface DiscoveryInput {
    /** The `atenlint.interpreter` setting with its variables expanded ('' when unset). */
    setting: string;
    /** Set when the setting names a variable that has no value. */
    settingError?: string;
    trusted: boolean;
    /** File-system paths of the workspace folders. */
    workspaceFolders: string[];
    /** The Python extension's active interpreter, or undefined without that extension. */
    pythonExtension: () => Promise<string | undefined>;
    /** The first of these names found on PATH, as an absolute path. */
    findOnPath: (names: string[]) => Promise<string | undefined>;
    isExecutable: (file: string) => Promise<boolean>;
    platform: NodeJS.Platform;
}

function isInside(file: string, folder: string, platform: NodeJS.Platform): boolean {
    const p = platform === 'win32' ? path.win32 : path.posix;
    const norm = (s: string) => (platform === 'win32' ? p.normalize(s).toLowerCase() : p.normalize(s));
    const relative = p.relative(norm(folder), norm(file));
    return relative !== '' && !relative.startsWith('..') && !p.isAbsolute(relative);
}

/**
 * Picks the interpreter. In an untrusted workspace an interpreter inside a workspace folder is
 * never run (a folder can ship a `.venv/bin/python` that is not Python at all).
 */
export async function discoverInterpreter(input: DiscoveryInput): Promise<DiscoveryResult> {
    const notes: string[] = [];
    const p = input.platform === 'win32' ? path.win32 : path.posix;
    const acceptable = (file: string, what: string): boolean => {
        if (!input.trusted) {
            const folder = input.workspaceFolders.find((f) => isInside(file, f, input.platform));
            if (folder !== undefined) {
                notes.push(`${what} ${file} is inside the untrusted folder ${folder}: not run in Restricted Mode`);
                return false;
            }
        }
        return true;
    };

    if (input.settingError !== undefined) {
        notes.push(`atenlint.interpreter: ${input.settingError}`);
        return { notes };
    }
    if (input.setting !== '') {
        let candidate: string | undefined = input.setting;
        if (!p.isAbsolute(candidate)) {
            if (candidate.includes('/') || candidate.includes('\\')) {
                // A relative path: relative to the (first) workspace folder, as VS Code's own settings are.
                candidate = input.workspaceFolders.length > 0 ? p.resolve(input.workspaceFolders[0], candidate) : undefined;
                if (candidate === undefined) {
                    notes.push(`atenlint.interpreter ${input.setting} is a relative path and no folder is open`);
                }
            } else {
                const found = await input.findOnPath([candidate]);
                if (found === undefined) {
                    notes.push(`atenlint.interpreter ${input.setting} is not on PATH`);
                }
                candidate = found;
            }
        }
        if (candidate !== undefined) {
            if (!(await input.isExecutable(candidate))) {
                notes.push(`atenlint.interpreter ${candidate} does not exist or is not executable`);
            } else if (acceptable(candidate, 'atenlint.interpreter')) {
                return { interpreter: { path: candidate, source: 'setting' }, notes };
            }
        }
        // An explicit setting that cannot be used is an error the user must see, not something to
        // silently replace by another Python with other packages.
        return { notes };
    }

    let fromExtension: string | undefined;
    try {
        fromExtension = await input.pythonExtension();
    } catch (error) {
        notes.push(`the Python extension did not answer: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (fromExtension !== undefined) {
        if (!(await input.isExecutable(fromExtension))) {
            notes.push(`the Python extension's interpreter ${fromExtension} does not exist or is not executable`);
        } else if (acceptable(fromExtension, "the Python extension's interpreter")) {
            return { interpreter: { path: fromExtension, source: 'pythonExtension' }, notes };
        }
    }

    const names = input.platform === 'win32' ? ['python', 'py'] : ['python3', 'python'];
    const onPath = await input.findOnPath(names);
    if (onPath === undefined) {
        notes.push(`neither ${names.join(' nor ')} is on PATH`);
    } else if (acceptable(onPath, `${p.basename(onPath)} on PATH,`)) {
        return { interpreter: { path: onPath, source: 'path' }, notes };
    }
    return { notes };
}

export async function isExecutable(file: string): Promise<boolean> {
    try {
        const stat = await fs.promises.stat(file);
        if (!stat.isFile()) {
            return false;
        }
        if (process.platform !== 'win32') {
            await fs.promises.access(file, fs.constants.X_OK);
        }
        return true;
    } catch {
        return false;
    }
}

/** Searches PATH like a shell would (with PATHEXT on Windows). */
export async function findOnPath(
    names: string[],
    env: Record<string, string | undefined> = process.env,
    platform: NodeJS.Platform = process.platform,
    check: (file: string) => Promise<boolean> = isExecutable,
): Promise<string | undefined> {
    const p = platform === 'win32' ? path.win32 : path.posix;
    const dirs = (env.PATH ?? env.Path ?? '').split(platform === 'win32' ? ';' : ':').filter((d) => d !== '');
    const extensions = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean) : [''];
    for (const name of names) {
        for (const dir of dirs) {
            for (const ext of extensions) {
                const candidate = p.join(dir, name + ext);
                if (await check(candidate)) {
                    return candidate;
                }
            }
        }
    }
    return undefined;
}

// --- The Python extension (ms-python.python), when installed -----------------------------------
// The subset of its public environments API this extension uses (the API is documented by the
// extension's own `@vscode/python-extension` package; only these members are relied on).

export interface EnvironmentPath {
    readonly id: string;
    readonly path: string;
}

export interface ActiveEnvironmentPathChangeEvent extends EnvironmentPath {
    readonly resource: vscode.WorkspaceFolder | undefined;
}

interface ResolvedEnvironment {
    readonly executable: { readonly uri: vscode.Uri | undefined };
}

export interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    readonly onDidChangeActiveEnvironmentPath: vscode.Event<ActiveEnvironmentPathChangeEvent>;
}

interface PythonExtensionExports {
    readonly ready?: Promise<void>;
    readonly environments?: PythonEnvironmentsApi;
}

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The Python extension's environments API, or undefined when it is not installed or too old. */
export async function getPythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionExports>(PYTHON_EXTENSION_ID);
    if (extension === undefined) {
        return undefined;
    }
    try {
        const exports = extension.isActive ? extension.exports : await extension.activate();
        await exports?.ready;
        const environments = exports?.environments;
        if (environments && typeof environments.getActiveEnvironmentPath === 'function') {
            return environments;
        }
        traceWarn('The Python extension is installed but offers no environments API; not using it.');
    } catch (error) {
        traceWarn('The Python extension could not be activated:', error);
    }
    return undefined;
}

/** The executable of the active environment for a resource, per the Python extension. */
export async function activeInterpreterFromExtension(
    environments: PythonEnvironmentsApi,
    resource: vscode.Uri | undefined,
): Promise<string | undefined> {
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = await environments.resolveEnvironment(active);
    const executable = resolved?.executable.uri?.fsPath;
    traceDebug(`Python extension: active environment ${active.path} -> ${executable ?? '(not resolved)'}`);
    return executable;
}
