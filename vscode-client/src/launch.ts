/**
 * What to run for the server right now: the interpreter (and why that one), whether it can run
 * atenlint, the command line, its folder, and the initialization options. No process is started
 * here but the interpreter probe.
 */

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { ImportStrategy } from './constants';
import { EnvironmentProblem, evaluateProbe, Probe, runProbe } from './environment';
import { traceInfo, traceWarn } from './logging';
import { activeInterpreterFromExtension, discoverInterpreter, findOnPath, Interpreter, isExecutable, PythonEnvironmentsApi } from './python';
import { expandVariables, readSettings, ServerSettings, toServerSettings } from './settings';

export interface LaunchCommand {
    command: string;
    args: string[];
    cwd: string;
}

/** The process that runs the server: the bundled one, or the atenlint installed in the interpreter. */
export function launchCommand(python: string, strategy: ImportStrategy, extensionPath: string, cwd: string): LaunchCommand {
    if (strategy === 'fromEnvironment') {
        return { command: python, args: ['-m', 'atenlint', 'serve'], cwd };
    }
    return { command: python, args: [path.join(extensionPath, 'bundled', 'tool', 'run_server.py')], cwd };
}

export interface LaunchPlan {
    interpreter: Interpreter;
    probe: Probe;
    launch: LaunchCommand;
    trusted: boolean;
    initializationOptions: ServerSettings;
    /** Problems that do not stop the server (an untested torch version). */
    warnings: EnvironmentProblem[];
}

export interface LaunchFailure {
    /** One line for the status item. */
    failure: string;
    /** What to tell the user, with the command that fixes it when there is one. */
    problem: EnvironmentProblem;
    /** Identifies the situation, so the same notification is not shown at every restart. */
    key: string;
    interpreter?: Interpreter;
}

export interface LaunchContext {
    extensionPath: string;
    trusted: boolean;
    /** The Python extension's environments API, asked for only when the setting is empty. */
    pythonEnvironments: () => Promise<PythonEnvironmentsApi | undefined>;
    runProbe?: typeof runProbe;
    platform?: NodeJS.Platform;
}

/** Decides how to start the server, or why it cannot start. */
export async function planLaunch(context: LaunchContext): Promise<LaunchPlan | LaunchFailure> {
    const platform = context.platform ?? process.platform;
    const trusted = context.trusted;
    const folder = vscode.workspace.workspaceFolders?.[0];
    const { settings, problems: settingProblems } = readSettings(folder?.uri, trusted);
    for (const problem of settingProblems) {
        traceWarn(problem);
    }

    const expanded = expandVariables(settings.interpreter, { workspaceFolder: folder?.uri.fsPath });
    const discovery = await discoverInterpreter({
        setting: expanded.value ?? '',
        settingError: expanded.error,
        trusted,
        workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
        pythonExtension: async () => {
            const environments = await context.pythonEnvironments();
            return environments ? activeInterpreterFromExtension(environments, folder?.uri) : undefined;
        },
        findOnPath: (names) => findOnPath(names),
        isExecutable,
        platform,
    });
    for (const note of discovery.notes) {
        traceWarn(note);
    }
    const interpreter = discovery.interpreter;
    if (interpreter === undefined) {
        const why = discovery.notes.join('; ') || 'no Python found';
        return {
            failure: `No Python interpreter to run atenlint: ${why}`,
            key: 'no-interpreter',
            problem: {
                kind: 'not-runnable',
                blocking: true,
                message: `found no Python to run: ${why}. Set atenlint.interpreter or select an interpreter.`,
            },
        };
    }
    const source = { setting: 'atenlint.interpreter', pythonExtension: 'the Python extension', path: 'PATH' }[interpreter.source];
    traceInfo(`Interpreter: ${interpreter.path} (from ${source}).`);

    const probed = await (context.runProbe ?? runProbe)(interpreter.path, context.extensionPath);
    if (probed.probe === undefined) {
        const message = probed.error ?? `${interpreter.path} cannot run`;
        return { failure: message, key: interpreter.path, interpreter, problem: { kind: 'not-runnable', blocking: true, message } };
    }
    const probe = probed.probe;
    traceInfo(
        `${interpreter.path}: Python ${probe.python.join('.')}, torch ${probe.torch ?? '(none)'}, ` +
            `atenlint ${probe.atenlint ?? '(not installed there)'}; server: ${
                settings.importStrategy === 'useBundled' ? 'bundled with the extension' : 'from the environment'}.`,
    );
    const problems = evaluateProbe(probe, interpreter.path, settings.importStrategy, platform);
    const blocking = problems.find((p) => p.blocking);
    if (blocking) {
        return {
            failure: blocking.fix ? `${blocking.message} ${blocking.fix}` : blocking.message,
            key: interpreter.path,
            interpreter,
            problem: blocking,
        };
    }

    // Trusted: the server (and the workers it starts) run in the folder, as the user's own scripts
    // do. Untrusted: nowhere near it, so no file of the folder can be picked up from the cwd.
    const cwd = trusted && folder ? folder.uri.fsPath : context.extensionPath;
    const launch = launchCommand(interpreter.path, settings.importStrategy, context.extensionPath, cwd);
    if (settings.importStrategy === 'useBundled' && !fs.existsSync(launch.args[0])) {
        const message = `the bundled server is missing (${launch.args[0]}): this build of the extension is incomplete`;
        return { failure: message, key: 'no-bundle', interpreter, problem: { kind: 'not-runnable', blocking: true, message } };
    }
    return {
        interpreter,
        probe,
        launch,
        trusted,
        initializationOptions: toServerSettings(settings, { trusted, python: interpreter.path }),
        warnings: problems,
    };
}

export function isFailure(plan: LaunchPlan | LaunchFailure): plan is LaunchFailure {
    return 'failure' in plan;
}
