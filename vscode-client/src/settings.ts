/**
 * The `atenlint.*` settings: read, checked, and turned into the server's settings object
 * (the `initializationOptions` and the `atenlint` section of `workspace/configuration`).
 */

import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
    IMPORT_STRATEGIES,
    ImportStrategy,
    SETTINGS_SECTION,
    SEVERITIES,
    SeverityName,
    Trigger,
    TRIGGERS,
} from './constants';

export interface ExtensionSettings {
    /** Undefined when no settings scope sets them: each project's pyproject.toml decides. */
    targets: string[] | undefined;
    trigger: Trigger;
    onTypeDelayMs: number;
    /** Import and run unsaved buffers (off: only saved files run; unsaved text gets the static pass). */
    executeUnsaved: boolean;
    severity: Record<string, SeverityName>;
    /** Undefined when no settings scope sets it: each project's pyproject.toml decides. */
    timeout: number | undefined;
    workers: number;
    /** As written, before variables are expanded; '' when unset. */
    interpreter: string;
    importStrategy: ImportStrategy;
}

export const DEFAULT_SETTINGS: Readonly<ExtensionSettings> = Object.freeze({
    targets: undefined,
    trigger: 'onSave',
    onTypeDelayMs: 500,
    executeUnsaved: false,
    severity: {},
    timeout: undefined,
    workers: 1,
    interpreter: '',
    importStrategy: 'useBundled',
});

/**
 * What the server receives: exactly the keys of its `initializationOptions` contract. `targets`
 * and `timeout` are null when the user has not set them, so that the projects' own
 * `[tool.atenlint]` tables decide.
 */
export interface ServerSettings {
    targets: string[] | null;
    trigger: Trigger;
    onTypeDelayMs: number;
    executeUnsaved: boolean;
    severity: Record<string, SeverityName>;
    timeout: number | null;
    workers: number;
    trusted: boolean;
    python: string;
}

export interface SettingsRead {
    settings: ExtensionSettings;
    /** One line per value that could not be used (and was replaced by its default). */
    problems: string[];
}

/** Settings whose change needs a new server process (the others reach the running server). */
export const RESTART_SETTINGS = ['interpreter', 'importStrategy'] as const;

function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
    return typeof value === 'string' && (values as readonly string[]).includes(value);
}

function finiteNumber(value: unknown, min: number, max: number): number | undefined {
    return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max ? value : undefined;
}

/**
 * Checks values as VS Code hands them over (anything a user can type into settings.json) and
 * replaces each unusable one by its default, saying why.
 */
export function sanitizeSettings(raw: Partial<Record<keyof ExtensionSettings, unknown>>): SettingsRead {
    const problems: string[] = [];
    const settings: ExtensionSettings = { ...DEFAULT_SETTINGS, severity: {} };
    const bad = (key: string, value: unknown, expected: string) =>
        problems.push(`${SETTINGS_SECTION}.${key}: ${JSON.stringify(value)} is not ${expected}; using the default`);

    if (raw.targets !== undefined && raw.targets !== null) {
        const targets = Array.isArray(raw.targets)
            ? [...new Set(raw.targets.filter((t): t is string => typeof t === 'string' && t.trim() !== '').map((t) => t.trim()))]
            : [];
        if (targets.length > 0) {
            settings.targets = targets;
        } else {
            bad('targets', raw.targets, 'a non-empty list of target names');
        }
    }
    if (raw.trigger !== undefined) {
        if (isOneOf(TRIGGERS, raw.trigger)) {
            settings.trigger = raw.trigger;
        } else {
            bad('trigger', raw.trigger, `one of ${TRIGGERS.join(', ')}`);
        }
    }
    if (raw.onTypeDelayMs !== undefined) {
        const delay = finiteNumber(raw.onTypeDelayMs, 0, 60_000);
        if (delay !== undefined) {
            settings.onTypeDelayMs = Math.round(delay);
        } else {
            bad('onTypeDelayMs', raw.onTypeDelayMs, 'a number of milliseconds between 0 and 60000');
        }
    }
    if (raw.executeUnsaved !== undefined && raw.executeUnsaved !== null) {
        if (typeof raw.executeUnsaved === 'boolean') {
            settings.executeUnsaved = raw.executeUnsaved;
        } else {
            bad('executeUnsaved', raw.executeUnsaved, 'true or false');
        }
    }
    if (raw.severity !== undefined && raw.severity !== null) {
        if (typeof raw.severity === 'object' && !Array.isArray(raw.severity)) {
            for (const [target, value] of Object.entries(raw.severity as Record<string, unknown>)) {
                if (isOneOf(SEVERITIES, value)) {
                    settings.severity[target] = value;
                } else {
                    problems.push(
                        `${SETTINGS_SECTION}.severity.${target}: ${JSON.stringify(value)} is not one of ` +
                            `${SEVERITIES.join(', ')}; ignored`,
                    );
                }
            }
        } else {
            bad('severity', raw.severity, 'an object mapping targets to severities');
        }
    }
    if (raw.timeout !== undefined && raw.timeout !== null) {
        const timeout = finiteNumber(raw.timeout, Number.MIN_VALUE, 24 * 3600);
        if (timeout !== undefined) {
            settings.timeout = timeout;
        } else {
            bad('timeout', raw.timeout, 'a positive number of seconds');
        }
    }
    if (raw.workers !== undefined) {
        const workers = finiteNumber(raw.workers, 1, 1024);
        if (workers !== undefined && Number.isInteger(workers)) {
            settings.workers = workers;
        } else {
            bad('workers', raw.workers, 'a whole number ≥ 1');
        }
    }
    if (raw.interpreter !== undefined && raw.interpreter !== null) {
        if (typeof raw.interpreter === 'string') {
            settings.interpreter = raw.interpreter.trim();
        } else {
            bad('interpreter', raw.interpreter, 'a path');
        }
    }
    if (raw.importStrategy !== undefined) {
        if (isOneOf(IMPORT_STRATEGIES, raw.importStrategy)) {
            settings.importStrategy = raw.importStrategy;
        } else {
            bad('importStrategy', raw.importStrategy, `one of ${IMPORT_STRATEGIES.join(', ')}`);
        }
    }
    return { settings, problems };
}

/**
 * The value of a setting that code execution depends on. In an untrusted workspace only the
 * user's own (global) value counts: VS Code already drops workspace values of the manifest's
 * `restrictedConfigurations`, and this keeps that true whatever the host does.
 */
export function restrictedValue<T>(
    inspected: { defaultValue?: T; globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined,
    trusted: boolean,
): T | undefined {
    if (!inspected) {
        return undefined;
    }
    if (trusted) {
        return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue;
    }
    return inspected.globalValue ?? inspected.defaultValue;
}

/** The value a user has set in some scope; undefined when only the manifest's default applies. */
export function explicitValue<T>(
    inspected: { globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined,
): T | undefined {
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

/** Reads and checks the settings for a resource (a file or a workspace folder; none: the window). */
export function readSettings(scope: vscode.ConfigurationScope | undefined, trusted: boolean): SettingsRead {
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, scope);
    return sanitizeSettings({
        targets: explicitValue(config.inspect<unknown>('targets')),
        trigger: config.get('trigger'),
        onTypeDelayMs: config.get('onTypeDelayMs'),
        // Running unsaved code is the user's own choice: never taken from an untrusted folder.
        executeUnsaved: restrictedValue(config.inspect<unknown>('executeUnsaved'), trusted),
        severity: config.get('severity'),
        timeout: explicitValue(config.inspect<unknown>('timeout')),
        workers: config.get('workers'),
        interpreter: restrictedValue(config.inspect<unknown>('interpreter'), trusted),
        importStrategy: restrictedValue(config.inspect<unknown>('importStrategy'), trusted),
    });
}

export function toServerSettings(settings: ExtensionSettings, runtime: { trusted: boolean; python: string }): ServerSettings {
    return {
        targets: settings.targets ? [...settings.targets] : null,
        trigger: settings.trigger,
        onTypeDelayMs: settings.onTypeDelayMs,
        executeUnsaved: settings.executeUnsaved,
        severity: { ...settings.severity },
        timeout: settings.timeout ?? null,
        workers: settings.workers,
        trusted: runtime.trusted,
        python: runtime.python,
    };
}

export interface VariableContext {
    workspaceFolder?: string;
    userHome?: string;
    env?: Record<string, string | undefined>;
}

/**
 * Expands `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}` and a
 * leading `~` the way VS Code's own settings do. Returns undefined (with the reason) when the value
 * names a variable that has no value here, rather than guessing a path.
 */
export function expandVariables(value: string, context: VariableContext): { value?: string; error?: string } {
    const home = context.userHome ?? os.homedir();
    const env = context.env ?? process.env;
    let error: string | undefined;
    let expanded = value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
        if (name === 'workspaceFolder' || name === 'workspaceRoot') {
            if (context.workspaceFolder === undefined) {
                error ??= `${whole} has no value: no folder is open`;
                return whole;
            }
            return context.workspaceFolder;
        }
        if (name === 'workspaceFolderBasename') {
            if (context.workspaceFolder === undefined) {
                error ??= `${whole} has no value: no folder is open`;
                return whole;
            }
            return path.basename(context.workspaceFolder);
        }
        if (name === 'userHome') {
            return home;
        }
        if (name.startsWith('env:')) {
            return env[name.slice(4)] ?? '';
        }
        error ??= `${whole} is not a variable atenlint knows (use \${workspaceFolder}, \${userHome} or \${env:NAME})`;
        return whole;
    });
    if (expanded === '~' || expanded.startsWith('~/') || expanded.startsWith('~\\')) {
        expanded = home + expanded.slice(1);
    }
    return error === undefined ? { value: expanded } : { error };
}

/** Whether a settings change needs a new server process (and not just a settings push). */
export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
    return RESTART_SETTINGS.some((key) => event.affectsConfiguration(`${SETTINGS_SECTION}.${key}`));
}

/**
 * Where "Select Targets" writes: the most specific scope that already sets `targets` (so the new
 * value is the one that applies), else the workspace when a folder is open, else the user settings.
 */
export function targetsWriteScope(
    inspected: { workspaceFolderValue?: unknown; workspaceValue?: unknown } | undefined,
    hasWorkspace: boolean,
): vscode.ConfigurationTarget {
    if (inspected?.workspaceFolderValue !== undefined) {
        return vscode.ConfigurationTarget.WorkspaceFolder;
    }
    if (inspected?.workspaceValue !== undefined || hasWorkspace) {
        return vscode.ConfigurationTarget.Workspace;
    }
    return vscode.ConfigurationTarget.Global;
}
