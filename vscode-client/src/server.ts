/**
 * The server's lifecycle: start, restart (on request, on a new interpreter, when the workspace
 * becomes trusted), stop; settings changes passed on; the status item kept current.
 */

import * as vscode from 'vscode';
import { ConnectionFactory, ServerConnection } from './client';
import { SETTINGS_SECTION } from './constants';
import { EnvironmentProblem } from './environment';
import { isFailure, planLaunch } from './launch';
import { traceError, traceInfo, traceWarn } from './logging';
import { getPythonEnvironments, Interpreter, PythonEnvironmentsApi } from './python';
import { needsRestart, readSettings, ServerSettings, toServerSettings } from './settings';
import { ClientPhase, ServerStatus, StatusInput } from './status';

/** The part of the state the companion test extension and other extensions may read. */
export interface StatusSnapshot {
    phase: ClientPhase;
    failure?: string;
    server?: ServerStatus;
    interpreter?: Interpreter;
    /** Whether the running (or last started) server was started trusted. */
    trusted: boolean;
    /** How many times a server process was started. */
    starts: number;
}

export interface ServerManagerOptions {
    extensionPath: string;
    log: vscode.LogOutputChannel;
    showStatus: (input: StatusInput) => void;
    connect: ConnectionFactory;
    /** The Python extension's API (or undefined without it); asked once, lazily. */
    pythonEnvironments?: () => Promise<PythonEnvironmentsApi | undefined>;
    planLaunch?: typeof planLaunch;
    /**
     * How long a restart waits for more reasons to restart (default 200 ms): granting trust also
     * changes the settings it unlocks, and one new server should serve both.
     */
    restartDelayMs?: number;
}

export class ServerManager implements vscode.Disposable {
    private connection: ServerConnection | undefined;
    private queue: Promise<void> = Promise.resolve();
    private restartQueued = false;
    private disposed = false;
    private environments: PythonEnvironmentsApi | undefined | null = null; // null: not asked yet
    private readonly disposables: vscode.Disposable[] = [];
    private readonly shownProblems = new Set<string>();
    private snapshot: StatusSnapshot = { phase: 'starting', trusted: vscode.workspace.isTrusted, starts: 0 };
    /** The interpreter and trust the running server was started with. */
    private runtime: { python: string; trusted: boolean } | undefined;
    private readonly statusEmitter = new vscode.EventEmitter<StatusSnapshot>();
    readonly onDidChangeStatus = this.statusEmitter.event;

    constructor(private readonly options: ServerManagerOptions) {
        this.disposables.push(
            this.statusEmitter,
            vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart('the workspace is now trusted')),
            vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
        );
    }

    get status(): StatusSnapshot {
        return { ...this.snapshot };
    }

    /**
     * Restarts the server (or starts it). Requests made while a restart is waiting are folded into
     * that one, and restarts never overlap.
     */
    restart(reason: string, options: { explicit?: boolean } = {}): Promise<void> {
        if (options.explicit) {
            this.shownProblems.clear();
        }
        if (this.restartQueued) {
            traceInfo(`Restart requested (${reason}); one is already pending.`);
            return this.queue;
        }
        this.restartQueued = true;
        this.queue = this.queue.then(async () => {
            const delay = this.options.restartDelayMs ?? 200;
            if (delay > 0) {
                await new Promise((resolve) => setTimeout(resolve, delay));
            }
            this.restartQueued = false;
            if (this.disposed) {
                return;
            }
            traceInfo(`Starting the server: ${reason}.`);
            try {
                await this.stopConnection();
                await this.start();
            } catch (error) {
                traceError('Starting the server failed:', error);
                await this.stopConnection();
                this.setPhase('failed', error instanceof Error ? error.message : String(error));
            }
        });
        return this.queue;
    }

    /** Runs one of the server's `workspace/executeCommand` commands. */
    async executeServerCommand(command: string, args: unknown[] = []): Promise<unknown> {
        const connection = this.connection;
        if (connection === undefined || !connection.running) {
            throw new Error(`the atenlint server is not running (${this.snapshot.failure ?? this.snapshot.phase})`);
        }
        return connection.executeCommand(command, args);
    }

    async dispose(): Promise<void> {
        if (this.disposed) {
            return;
        }
        this.disposed = true;
        for (const disposable of this.disposables.splice(0)) {
            disposable.dispose();
        }
        await this.queue.catch(() => undefined);
        await this.stopConnection();
    }

    // --- internals ------------------------------------------------------------------------------

    private setPhase(phase: ClientPhase, failure?: string): void {
        this.snapshot = { ...this.snapshot, phase, failure };
        if (phase !== 'running') {
            this.snapshot.server = undefined;
        }
        this.refreshStatus();
    }

    private refreshStatus(): void {
        const trusted = this.runtime?.trusted ?? vscode.workspace.isTrusted;
        const settings = readSettings(vscode.workspace.workspaceFolders?.[0]?.uri, trusted).settings;
        this.options.showStatus({
            phase: this.snapshot.phase,
            failure: this.snapshot.failure,
            server: this.snapshot.server,
            targets: settings.targets,
            trusted,
        });
        this.statusEmitter.fire(this.status);
    }

    private async pythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
        if (this.environments === null) {
            this.environments = await (this.options.pythonEnvironments ?? getPythonEnvironments)();
            if (this.environments) {
                traceInfo('The Python extension is installed: following its selected environment.');
                this.disposables.push(
                    this.environments.onDidChangeActiveEnvironmentPath((event) => {
                        const folder = vscode.workspace.workspaceFolders?.[0];
                        const resource = event.resource && 'uri' in event.resource ? event.resource.uri : event.resource;
                        const concerned = resource === undefined || folder === undefined || resource.toString() === folder.uri.toString();
                        const overridden = readSettings(folder?.uri, vscode.workspace.isTrusted).settings.interpreter !== '';
                        if (concerned && !overridden) {
                            void this.restart(`the Python extension selected ${event.path}`);
                        }
                    }),
                );
            }
        }
        return this.environments ?? undefined;
    }

    private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
        if (!event.affectsConfiguration(SETTINGS_SECTION)) {
            return;
        }
        if (needsRestart(event)) {
            void this.restart('the interpreter settings changed');
            return;
        }
        this.refreshStatus();
        const connection = this.connection;
        if (connection?.running && this.runtime) {
            const settings = this.serverSettings(undefined);
            traceInfo('Settings changed; sending them to the server:', settings);
            connection.pushSettings(settings).catch((error) => traceError('Sending the settings failed:', error));
        }
    }

    /** The server's settings for a scope (a workspace folder or file URI), for the running server. */
    private serverSettings(scopeUri: string | undefined): ServerSettings {
        const runtime = this.runtime ?? { python: '', trusted: false };
        const scope = scopeUri ? vscode.Uri.parse(scopeUri) : vscode.workspace.workspaceFolders?.[0]?.uri;
        const { settings, problems } = readSettings(scope, runtime.trusted);
        for (const problem of problems) {
            traceWarn(problem);
        }
        return toServerSettings(settings, runtime);
    }

    private async stopConnection(): Promise<void> {
        const connection = this.connection;
        this.connection = undefined;
        this.runtime = undefined;
        if (connection === undefined) {
            return;
        }
        try {
            await connection.stop();
        } catch (error) {
            traceWarn('The server did not stop cleanly:', error);
        }
        this.setPhase('stopped');
    }

    private async start(): Promise<void> {
        const trusted = vscode.workspace.isTrusted;
        this.snapshot = { phase: 'starting', trusted, starts: this.snapshot.starts };
        this.refreshStatus();

        const plan = await (this.options.planLaunch ?? planLaunch)({
            extensionPath: this.options.extensionPath,
            trusted,
            pythonEnvironments: () => this.pythonEnvironments(),
        });
        this.snapshot.interpreter = plan.interpreter;
        if (isFailure(plan)) {
            this.setPhase('failed', plan.failure);
            void this.notifyProblem(plan.problem, plan.key);
            return;
        }
        for (const warning of plan.warnings) {
            void this.notifyProblem(warning, plan.interpreter.path);
        }
        this.runtime = { python: plan.interpreter.path, trusted };
        traceInfo(`Server: ${[plan.launch.command, ...plan.launch.args].join(' ')} (in ${plan.launch.cwd}); ${
            trusted ? 'trusted' : 'Restricted Mode: static analysis only, no module is imported'}.`);
        traceInfo('Initialization options:', plan.initializationOptions);

        const connection = this.options.connect(plan, {
            log: this.options.log,
            onStatus: (status) => {
                if (connection !== this.connection) {
                    return;
                }
                if (status.lastError && status.lastError !== this.snapshot.server?.lastError) {
                    traceError(`Server error: ${status.lastError}`);
                }
                this.snapshot = { ...this.snapshot, phase: 'running', failure: undefined, server: status };
                this.refreshStatus();
            },
            onUnexpectedStop: (message) => {
                if (connection === this.connection) {
                    this.setPhase('failed', message);
                }
            },
            settingsFor: (scopeUri) => this.serverSettings(scopeUri),
        });
        this.connection = connection;
        this.snapshot.starts += 1;
        await connection.start();
        traceInfo('The server is running.');
        if (connection === this.connection && this.snapshot.phase === 'starting') {
            this.setPhase('running');
        }
    }

    /** Tells the user what is wrong with the environment, with the command that fixes it. */
    private async notifyProblem(problem: EnvironmentProblem, key: string): Promise<void> {
        const id = `${key}:${problem.kind}`;
        const text = problem.fix ? `atenlint: ${problem.message} ${problem.fix}` : `atenlint: ${problem.message}`;
        (problem.blocking ? traceError : traceWarn)(text);
        if (this.shownProblems.has(id)) {
            return;
        }
        this.shownProblems.add(id);
        // Three buttons at most: a fourth gets its label cut. The status item links to the logs.
        const actions = problem.fix ? ['Run in Terminal', 'Copy Command', 'Select Interpreter'] : ['Select Interpreter', 'Show Logs'];
        const choice = problem.blocking
            ? await vscode.window.showErrorMessage(text, ...actions)
            : await vscode.window.showWarningMessage(text, ...actions);
        if (choice === 'Run in Terminal' && problem.fix) {
            const terminal = vscode.window.createTerminal({ name: 'atenlint: install' });
            terminal.show();
            terminal.sendText(problem.fix);
            const after = await vscode.window.showInformationMessage(
                'atenlint: when the install has finished, restart the server.',
                'Restart Server',
            );
            if (after === 'Restart Server') {
                await this.restart('the environment was fixed', { explicit: true });
            }
        } else if (choice === 'Copy Command' && problem.fix) {
            await vscode.env.clipboard.writeText(problem.fix);
        } else if (choice === 'Select Interpreter') {
            if ((await this.pythonEnvironments()) !== undefined) {
                await vscode.commands.executeCommand('python.setInterpreter');
            } else {
                await vscode.commands.executeCommand('workbench.action.openSettings', `${SETTINGS_SECTION}.interpreter`);
            }
        } else if (choice === 'Show Logs') {
            this.options.log.show(true);
        }
    }
}
