/**
 * The language status item next to "Python" in the status bar: targets, torch version, whether a
 * check is running, the last error, and "Open logs".
 */

import * as vscode from 'vscode';
import { COMMANDS } from './constants';

/** The `atenlint/status` notification's parameters (the server contract). */
export interface ServerStatus {
    state: 'starting' | 'busy' | 'idle' | 'error';
    targets: string[];
    torch: string | null;
    python: string;
    trusted: boolean;
    lastError: string | null;
    message: string | null;
    /** Notes about the whole run, said once (e.g. "coremltools is not installed"). */
    notes?: string[];
    /** Check Workspace runs in the server (its checks do not show as per-file "busy"). */
    workspaceChecks?: number;
}

/** Where the extension is with its server, whether or not the server has said anything yet. */
export type ClientPhase = 'starting' | 'running' | 'stopped' | 'failed';

export interface StatusInput {
    phase: ClientPhase;
    /** Why the server is not running (phase 'failed'). */
    failure?: string;
    /** The latest `atenlint/status` of the running server. */
    server?: ServerStatus;
    /** The targets from the settings (if set), shown until the server says which it uses. */
    targets: string[] | undefined;
    trusted: boolean;
}

export interface StatusView {
    text: string;
    detail: string;
    severity: 'information' | 'warning' | 'error';
    busy: boolean;
}

const STATES = ['starting', 'busy', 'idle', 'error'];

/** Checks a notification's parameters; undefined when they are not a status. */
export function parseStatus(params: unknown): ServerStatus | undefined {
    if (typeof params !== 'object' || params === null) {
        return undefined;
    }
    const p = params as Record<string, unknown>;
    const optionalString = (v: unknown) => v === null || v === undefined || typeof v === 'string';
    if (
        typeof p.state !== 'string' ||
        !STATES.includes(p.state) ||
        !Array.isArray(p.targets) ||
        !p.targets.every((t) => typeof t === 'string') ||
        !optionalString(p.torch) ||
        !optionalString(p.python) ||
        !optionalString(p.lastError) ||
        !optionalString(p.message)
    ) {
        return undefined;
    }
    return {
        state: p.state as ServerStatus['state'],
        targets: p.targets,
        torch: p.torch ?? null,
        python: p.python ?? '',
        trusted: p.trusted !== false,
        lastError: p.lastError ?? null,
        message: p.message ?? null,
        notes: Array.isArray(p.notes) ? p.notes.filter((n): n is string => typeof n === 'string') : [],
        workspaceChecks: typeof p.workspaceChecks === 'number' ? p.workspaceChecks : 0,
    };
}

function oneLine(text: string, max = 120): string {
    const line = text.replace(/\s+/g, ' ').trim();
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** What the item shows for a state of the extension and its server. */
export function describeStatus(input: StatusInput): StatusView {
    const server = input.server;
    const targets = server?.targets.length ? server.targets : input.targets;
    const trusted = server ? server.trusted : input.trusted;
    const restricted = trusted ? '' : ' (Restricted Mode)';
    const text = `atenlint${targets?.length ? `: ${targets.join(', ')}` : ''}${restricted}`;
    const parts: string[] = [];
    let severity: StatusView['severity'] = 'information';
    let busy = false;

    switch (input.phase) {
        case 'failed':
            return { text, detail: oneLine(input.failure ?? 'not running; see the logs'), severity: 'error', busy: false };
        case 'stopped':
            return { text, detail: 'stopped', severity: 'warning', busy: false };
        case 'starting':
            return { text, detail: 'starting…', severity: 'information', busy: true };
        case 'running':
            break;
    }
    if (server === undefined) {
        return { text, detail: 'starting…', severity: 'information', busy: true };
    }
    if (server.state === 'starting') {
        // The workers have not said which torch they have yet: "torch not found" would be a guess.
        return { text, detail: 'starting…', severity: 'information', busy: true };
    }
    parts.push(server.torch ? `torch ${server.torch}` : server.state === 'error' ? 'torch not found' : 'torch ?');
    if ((server.workspaceChecks ?? 0) > 0) {
        parts.push('checking the workspace…');
        busy = true;
    } else if (server.state === 'busy') {
        parts.push(server.message ? oneLine(server.message, 60) : 'checking…');
        busy = true;
    } else if (server.state === 'error') {
        parts.push(`error: ${oneLine(server.lastError ?? server.message ?? 'see the logs')}`);
        severity = 'error';
    } else {
        parts.push('idle');
    }
    for (const note of server.notes ?? []) {
        parts.push(oneLine(note, 80));
        if (severity === 'information') {
            severity = 'warning';
        }
    }
    if (!trusted) {
        parts.push('static analysis only');
        if (severity === 'information') {
            severity = 'warning';
        }
    }
    if (server.state !== 'error' && server.lastError) {
        parts.push(`last error: ${oneLine(server.lastError)}`);
        severity = 'error';
    }
    return { text, detail: parts.join(' · '), severity, busy };
}

export class StatusItem implements vscode.Disposable {
    private readonly item: vscode.LanguageStatusItem;

    constructor() {
        this.item = vscode.languages.createLanguageStatusItem('atenlint.status', { language: 'python' });
        this.item.name = 'atenlint';
        this.item.command = { title: 'Open logs', command: COMMANDS.showLogs, tooltip: 'Show the atenlint log' };
    }

    show(input: StatusInput): StatusView {
        const view = describeStatus(input);
        this.item.text = view.text;
        this.item.detail = view.detail;
        this.item.busy = view.busy;
        this.item.severity =
            view.severity === 'error'
                ? vscode.LanguageStatusSeverity.Error
                : view.severity === 'warning'
                  ? vscode.LanguageStatusSeverity.Warning
                  : vscode.LanguageStatusSeverity.Information;
        return view;
    }

    dispose(): void {
        this.item.dispose();
    }
}
