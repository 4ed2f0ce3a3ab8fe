/**
 * The `atenlint.*` settings: read, checked, and turned into the server's settings object
 * (the `initializationOptions` and the `atenlint` section of `workspace/configuration`).
 */

import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { SETTINGS_SECTION } from './constants';
import { FORWARDED_SETTINGS, ONNX_OPSET_TARGET, SETTING_SPECS, SEVERITIES, TARGETS } from './generated/settingsSchema';
import type { ExtensionSettings, ServerSettings, SettingSpec, SeverityName } from './generated/settingsSchema';

// The keys, types, defaults and limits come from the one schema (server/atenlint/settings_schema.py),
// generated into ./generated/settingsSchema.ts with package.json's settings: nothing is typed twice here.
export type { ExtensionSettings, ServerSettings };

type SettingKey = keyof ExtensionSettings;
const SETTING_KEYS = Object.keys(SETTING_SPECS) as SettingKey[];

/** The settings with nothing set: the schema's defaults; undefined where the projects or the server decide. */
export const DEFAULT_SETTINGS: Readonly<ExtensionSettings> = Object.freeze(
    Object.fromEntries(SETTING_KEYS.map((key) => [key, SETTING_SPECS[key].default])) as unknown as ExtensionSettings,
);

export interface SettingsRead {
    settings: ExtensionSettings;
    /** One line per value that could not be used (and was replaced by its default). */
    problems: string[];
}

/** Settings whose change needs a new server process (the others reach the running server). */
export const RESTART_SETTINGS = SETTING_KEYS.filter((key) => !SETTING_SPECS[key].server);

function isTargetName(value: string): boolean {
    return (TARGETS as readonly string[]).includes(value) || ONNX_OPSET_TARGET.test(value);
}

function withinLimits(spec: SettingSpec, value: number): boolean {
    return (
        Number.isFinite(value) &&
        (spec.minimum === undefined || value >= spec.minimum) &&
        (spec.exclusiveMinimum === undefined || value > spec.exclusiveMinimum) &&
        (spec.maximum === undefined || value <= spec.maximum)
    );
}

/** The value checked against its spec (the same rules as the server's), or undefined when unusable. */
function checked(spec: SettingSpec, value: unknown, problems: string[]): unknown {
    switch (spec.kind) {
        case 'boolean':
            return typeof value === 'boolean' ? value : undefined;
        case 'integer':
            return typeof value === 'number' && Number.isInteger(value) && withinLimits(spec, value) ? value : undefined;
        case 'number':
            return typeof value === 'number' && withinLimits(spec, value) ? value : undefined;
        case 'string':
            return typeof value === 'string' ? value.trim() : undefined;
        case 'choice':
            return typeof value === 'string' && (spec.choices ?? []).includes(value) ? value : undefined;
        case 'targets': {
            if (!Array.isArray(value)) {
                return undefined;
            }
            const names = value.filter((t): t is string => typeof t === 'string' && t.trim() !== '').map((t) => t.trim());
            for (const name of names.filter((n) => !isTargetName(n))) {
                problems.push(`${SETTINGS_SECTION}.${spec.key}: ${JSON.stringify(name)} is not a target name; ignored`);
            }
            const targets = [...new Set(names.filter(isTargetName))];
            return targets.length > 0 ? targets : undefined;
        }
        case 'severity-map': {
            if (typeof value !== 'object' || value === null || Array.isArray(value)) {
                return undefined;
            }
            const severity: Record<string, SeverityName> = {};
            for (const [target, level] of Object.entries(value as Record<string, unknown>)) {
                if (!isTargetName(target)) {
                    problems.push(`${SETTINGS_SECTION}.${spec.key}.${target}: not a target name; ignored`);
                } else if (typeof level === 'string' && (SEVERITIES as readonly string[]).includes(level)) {
                    severity[target] = level as SeverityName;
                } else {
                    problems.push(
                        `${SETTINGS_SECTION}.${spec.key}.${target}: ${JSON.stringify(level)} is not one of ` +
                            `${SEVERITIES.join(', ')}; ignored`,
                    );
                }
            }
            return severity;
        }
    }
}

/**
 * Checks values as VS Code hands them over (anything a user can type into settings.json) and
 * replaces each unusable one by its default, saying why.
 */
export function sanitizeSettings(raw: Partial<Record<SettingKey, unknown>>): SettingsRead {
    const problems: string[] = [];
    const settings: Record<string, unknown> = { ...DEFAULT_SETTINGS, severity: {} };
    for (const key of SETTING_KEYS) {
        const spec = SETTING_SPECS[key];
        const value = raw[key];
        if (value === undefined || value === null) {
            continue;
        }
        const before = problems.length;
        const usable = checked(spec, value, problems);
        if (usable !== undefined) {
            settings[key] = usable;
        } else {
            problems.splice(before);
            problems.push(`${SETTINGS_SECTION}.${key}: ${JSON.stringify(value)} is not ${spec.expected}; using the default`);
        }
    }
    return { settings: settings as unknown as ExtensionSettings, problems };
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
    const raw: Partial<Record<SettingKey, unknown>> = {};
    for (const key of SETTING_KEYS) {
        const spec = SETTING_SPECS[key];
        if (spec.restricted) {
            // What code runs is the user's own choice: never taken from an untrusted folder.
            raw[key] = restrictedValue(config.inspect<unknown>(key), trusted);
        } else if (!('default' in spec)) {
            // Unset by default: only a value the user set counts, else the projects decide.
            raw[key] = explicitValue(config.inspect<unknown>(key));
        } else {
            raw[key] = config.get<unknown>(key);
        }
    }
    return sanitizeSettings(raw);
}

export function toServerSettings(settings: ExtensionSettings, runtime: { trusted: boolean; python: string }): ServerSettings {
    const forwarded = Object.fromEntries(
        FORWARDED_SETTINGS.map((key) => {
            const value: unknown = settings[key];
            const copy: unknown = Array.isArray(value)
                ? [...(value as unknown[])]
                : typeof value === 'object' && value !== null
                  ? { ...value }
                  : value;
            return [key, copy ?? null];
        }),
    );
    return { ...forwarded, trusted: runtime.trusted, python: runtime.python } as ServerSettings;
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
