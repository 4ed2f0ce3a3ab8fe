/** The vscode-languageclient side: one LanguageClient per server process, behind a small interface. */

import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    ResponseError,
    RevealOutputChannelOn,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { CLIENT_ID, CLIENT_NAME, SETTINGS_SECTION, STATUS_NOTIFICATION } from './constants';
import { LaunchPlan } from './launch';
import { traceError, traceWarn } from './logging';
import { ServerSettings } from './settings';
import { parseStatus, ServerStatus } from './status';

/** What the server manager needs of a started server. */
export interface ServerConnection {
    start(): Promise<void>;
    stop(): Promise<void>;
    readonly running: boolean;
    executeCommand(command: string, args: unknown[]): Promise<unknown>;
    /** Sends the settings in `workspace/didChangeConfiguration` (the server then pulls them too). */
    pushSettings(settings: ServerSettings): Promise<void>;
}

export interface ConnectionHooks {
    log: vscode.LogOutputChannel;
    onStatus(status: ServerStatus): void;
    /** The process ended or the client gave up restarting it, without stop() being called. */
    onUnexpectedStop(message: string): void;
    /** The settings for a `workspace/configuration` request's scope. */
    settingsFor(scopeUri: string | undefined): ServerSettings;
}

export type ConnectionFactory = (plan: LaunchPlan, hooks: ConnectionHooks) => ServerConnection;

export const createLanguageClientConnection: ConnectionFactory = (plan, hooks) => {
    const serverOptions: ServerOptions = {
        command: plan.launch.command,
        args: plan.launch.args,
        options: { cwd: plan.launch.cwd, env: { ...process.env, PYTHONUTF8: '1', PYTHONIOENCODING: 'utf-8' } },
    };
    const clientOptions: LanguageClientOptions = {
        // Python files, and the Python cells of notebooks (the server syncs those as notebook
        // documents: diagnostics, quick fixes and pulls reach each cell through this filter).
        documentSelector: [{ scheme: 'file', language: 'python' }, { notebook: '*', language: 'python' }],
        outputChannel: hooks.log,
        traceOutputChannel: hooks.log,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        // No diagnosticCollectionName: the pull collection takes the server's identifier ('atenlint'),
        // and a push collection of the same name logs "DiagnosticCollection ... does already exist".
        initializationOptions: plan.initializationOptions,
        initializationFailedHandler: (error) => {
            traceError('The server failed to initialize:', error);
            hooks.onUnexpectedStop(`the server failed to initialize: ${error instanceof Error ? error.message : String(error)}`);
            return false;
        },
        middleware: {
            workspace: {
                // The server pulls its settings: answer in the shape of the initialization options.
                configuration: async (params, token, next) => {
                    const answered = await next(params, token);
                    if (answered instanceof ResponseError) {
                        return answered;
                    }
                    const values: unknown[] = answered;
                    return params.items.map((item, index): unknown =>
                        item.section === SETTINGS_SECTION ? hooks.settingsFor(item.scopeUri) : values[index],
                    );
                },
            },
        },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    let stopping = false;
    client.onNotification(STATUS_NOTIFICATION, (params: unknown) => {
        const status = parseStatus(params);
        if (status === undefined) {
            traceWarn(`Ignoring a malformed ${STATUS_NOTIFICATION} notification:`, params);
            return;
        }
        hooks.onStatus(status);
    });
    client.onDidChangeState((event) => {
        if (event.newState === State.Stopped && !stopping) {
            hooks.onUnexpectedStop('the atenlint server stopped; see the logs (atenlint: Show Logs)');
        }
    });
    return {
        start: () => client.start(),
        async stop() {
            stopping = true;
            try {
                if (client.state !== State.Stopped) {
                    await client.stop(5000);
                }
            } finally {
                await client.dispose().catch(() => undefined);
            }
        },
        get running() {
            return client.state === State.Running;
        },
        executeCommand: (command, args) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }),
        pushSettings: (settings) =>
            client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SETTINGS_SECTION]: settings } }),
    };
};
