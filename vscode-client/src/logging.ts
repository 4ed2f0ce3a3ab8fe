/** The "atenlint" log output channel: the extension's own messages, the server's stderr and the LSP trace. */

import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

export function createLogChannel(): vscode.LogOutputChannel {
    channel = vscode.window.createOutputChannel('atenlint', { log: true });
    return channel;
}

function format(parts: unknown[]): string {
    return parts
        .map((part) => {
            if (part instanceof Error) {
                return part.stack ?? `${part.name}: ${part.message}`;
            }
            return typeof part === 'string' ? part : JSON.stringify(part);
        })
        .join(' ');
}

export function traceError(...parts: unknown[]): void {
    channel?.error(format(parts));
}

export function traceWarn(...parts: unknown[]): void {
    channel?.warn(format(parts));
}

export function traceInfo(...parts: unknown[]): void {
    channel?.info(format(parts));
}

export function traceDebug(...parts: unknown[]): void {
    channel?.debug(format(parts));
}

export function showLogs(): void {
    channel?.show(true);
}
