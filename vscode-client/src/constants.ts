/** Names shared by the extension's modules, and the facts of the server contract they rely on. */

export const EXTENSION_ID = 'atenlint.atenlint';
export const SETTINGS_SECTION = 'atenlint';
export const CLIENT_ID = 'atenlint'; // also the prefix of the `atenlint.trace.server` setting
export const CLIENT_NAME = 'atenlint';

/** Custom notification the server sends whenever its state changes. */
export const STATUS_NOTIFICATION = 'atenlint/status';

/** `workspace/executeCommand` commands the server offers. */
export const SERVER_COMMANDS = {
    checkWorkspace: 'atenlint.checkWorkspace',
    report: 'atenlint.report',
} as const;

/** Commands this extension contributes (distinct from the server's, which the client registers itself). */
export const COMMANDS = {
    restart: 'atenlint.server.restart',
    showLogs: 'atenlint.logs.show',
    checkWorkspace: 'atenlint.workspace.check',
    selectTargets: 'atenlint.targets.select',
    showReport: 'atenlint.report.show',
} as const;

/** The torch versions atenlint reads (pyproject.toml's dependency; a unit test keeps them equal). */
export const TORCH_REQUIREMENT = 'torch>=2.13,<2.16';
export const TORCH_MIN: readonly [number, number] = [2, 13];
export const TORCH_BELOW: readonly [number, number] = [2, 16];
/** The oldest Python atenlint runs on (pyproject.toml's requires-python). */
export const PYTHON_MIN: readonly [number, number] = [3, 10];

// The settings' allowed values come from the one settings schema (server/atenlint/settings_schema.py).
export { IMPORT_STRATEGIES, SEVERITIES, TRIGGERS } from './generated/settingsSchema';
export type { ImportStrategy, SeverityName, Trigger } from './generated/settingsSchema';
