/** Entry point: wires the log channel, the status item, the server and the commands together. */

import * as vscode from 'vscode';
import { createLanguageClientConnection } from './client';
import { registerCommands } from './commands';
import { createLogChannel, traceInfo } from './logging';
import { ServerManager, StatusSnapshot } from './server';
import { StatusItem } from './status';

/** What `vscode.extensions.getExtension('atenlint.atenlint').exports` offers (read-only). */
export interface AtenlintApi {
    /** The extension's and its server's current state. */
    readonly status: StatusSnapshot;
    readonly onDidChangeStatus: vscode.Event<StatusSnapshot>;
}

let manager: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): AtenlintApi {
    const log = createLogChannel();
    context.subscriptions.push(log);
    const manifest = context.extension.packageJSON as { version?: string };
    traceInfo(`atenlint ${manifest.version ?? '?'} in ${vscode.env.appName} ${vscode.version}; ` +
        `workspace ${vscode.workspace.isTrusted ? 'trusted' : 'not trusted (Restricted Mode)'}.`);

    const statusItem = new StatusItem();
    context.subscriptions.push(statusItem);
    const server = new ServerManager({
        extensionPath: context.extensionUri.fsPath,
        log,
        showStatus: (input) => statusItem.show(input),
        connect: createLanguageClientConnection,
    });
    manager = server;
    registerCommands(context, server);

    void server.restart('the extension started');
    return {
        get status() {
            return server.status;
        },
        onDidChangeStatus: server.onDidChangeStatus,
    };
}

export async function deactivate(): Promise<void> {
    await manager?.dispose();
    manager = undefined;
}
