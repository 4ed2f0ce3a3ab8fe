/**
 * A stand-in for the `vscode` module with the behaviour the extension's logic relies on: settings
 * scopes (with the real manifest's defaults), workspace folders and trust, events, messages and
 * commands recorded for assertions. `reset()` restores a fresh window between tests.
 */
import * as fs from 'fs';
import * as path from 'path';

const manifest = JSON.parse(
    fs.readFileSync(path.resolve(__dirname, '..', '..', '..', '..', '..', 'package.json'), 'utf8'),
) as { contributes: { configuration: { properties: Record<string, { default?: unknown }> } } };

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly fsPath: string,
    ) {}
    static file(p: string): Uri {
        return new Uri('file', path.resolve(p));
    }
    static parse(value: string): Uri {
        const match = /^([a-z][\w+.-]*):(?:\/\/)?(.*)$/i.exec(value);
        if (!match) {
            throw new Error(`not a URI: ${value}`);
        }
        return new Uri(match[1], match[1] === 'file' ? decodeURIComponent(match[2]) : match[2]);
    }
    get path(): string {
        return this.scheme === 'file' ? this.fsPath : this.fsPath.split('?')[0];
    }
    toString(): string {
        return `${this.scheme}://${this.scheme === 'file' ? encodeURI(this.fsPath) : this.fsPath}`;
    }
}

export class Disposable {
    constructor(private readonly callback: () => void) {}
    dispose(): void {
        this.callback();
    }
}

export type Event<T> = (listener: (e: T) => unknown) => Disposable;

export class EventEmitter<T> {
    private listeners: ((e: T) => unknown)[] = [];
    readonly event: Event<T> = (listener) => {
        this.listeners.push(listener);
        return new Disposable(() => {
            this.listeners = this.listeners.filter((l) => l !== listener);
        });
    };
    fire(e: T): void {
        for (const listener of [...this.listeners]) {
            listener(e);
        }
    }
    get listenerCount(): number {
        return this.listeners.length;
    }
    dispose(): void {
        this.listeners = [];
    }
}

export enum ConfigurationTarget {
    Global = 1,
    Workspace = 2,
    WorkspaceFolder = 3,
}

export enum LanguageStatusSeverity {
    Information = 0,
    Warning = 1,
    Error = 2,
}

export enum ProgressLocation {
    SourceControl = 1,
    Window = 10,
    Notification = 15,
}

export enum ViewColumn {
    Active = -1,
    Beside = -2,
}

// --- settings ------------------------------------------------------------------------------------

type Scope = 'global' | 'workspace' | 'workspaceFolder';
export const settings: Record<Scope, Record<string, unknown>> = { global: {}, workspace: {}, workspaceFolder: {} };

function defaultOf(key: string): unknown {
    return manifest.contributes.configuration.properties[key]?.default;
}

export interface WorkspaceFolder {
    readonly uri: Uri;
    readonly name: string;
    readonly index: number;
}

export interface ConfigurationChangeEvent {
    affectsConfiguration(section: string): boolean;
}

const configurationEmitter = new EventEmitter<ConfigurationChangeEvent>();
const trustEmitter = new EventEmitter<void>();

export const updates: { key: string; value: unknown; target: ConfigurationTarget }[] = [];

function configuration(section: string) {
    const full = (key: string) => (section ? `${section}.${key}` : key);
    return {
        get<T>(key: string, fallback?: T): T | undefined {
            const k = full(key);
            for (const scope of ['workspaceFolder', 'workspace', 'global'] as Scope[]) {
                if (k in settings[scope] && (scope === 'global' || workspace.isTrusted || !restricted(k))) {
                    return settings[scope][k] as T;
                }
            }
            return (defaultOf(k) as T | undefined) ?? fallback;
        },
        inspect<T>(key: string) {
            const k = full(key);
            return {
                key: k,
                defaultValue: defaultOf(k) as T | undefined,
                globalValue: settings.global[k] as T | undefined,
                workspaceValue: settings.workspace[k] as T | undefined,
                workspaceFolderValue: settings.workspaceFolder[k] as T | undefined,
            };
        },
        has(key: string): boolean {
            return this.get(key) !== undefined;
        },
        async update(key: string, value: unknown, target: ConfigurationTarget): Promise<void> {
            const k = full(key);
            const scope: Scope =
                target === ConfigurationTarget.Global ? 'global' : target === ConfigurationTarget.Workspace ? 'workspace' : 'workspaceFolder';
            settings[scope][k] = value;
            updates.push({ key: k, value, target });
            fireConfigurationChange([k]);
        },
    };
}

function restricted(key: string): boolean {
    const capabilities = (manifest as unknown as {
        capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
    }).capabilities;
    return capabilities.untrustedWorkspaces.restrictedConfigurations.includes(key);
}

/** Fires onDidChangeConfiguration for these full keys (`atenlint.timeout`, ...). */
export function fireConfigurationChange(keys: string[]): void {
    configurationEmitter.fire({
        affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)),
    });
}

/** Grants workspace trust, as the user's "Trust" click does. */
export function grantTrust(): void {
    workspace.isTrusted = true;
    trustEmitter.fire();
}

export const openedDocuments: { language: string; content: string; uri?: Uri }[] = [];
const contentProviders = new Map<string, { provideTextDocumentContent(uri: Uri): string }>();

export const workspace = {
    isTrusted: true,
    workspaceFolders: undefined as WorkspaceFolder[] | undefined,
    getConfiguration: (section = '', _scope?: unknown) => configuration(section),
    getWorkspaceFolder: (uri: Uri) => workspace.workspaceFolders?.find((f) => uri.fsPath.startsWith(f.uri.fsPath)),
    onDidChangeConfiguration: configurationEmitter.event,
    onDidGrantWorkspaceTrust: trustEmitter.event,
    openTextDocument: async (options: { language: string; content: string } | Uri) => {
        if (options instanceof Uri) {
            // A virtual document: its text comes from the provider registered for its scheme.
            const provider = contentProviders.get(options.scheme);
            const content = provider ? provider.provideTextDocumentContent(options) : '';
            const language = options.path.endsWith('.md') ? 'markdown' : 'plaintext';
            openedDocuments.push({ language, content, uri: options });
            return { uri: options, language, content };
        }
        openedDocuments.push(options);
        return { uri: Uri.parse(`untitled://Untitled-${openedDocuments.length}`), ...options };
    },
    registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }) => {
        contentProviders.set(scheme, provider);
        return { dispose: () => contentProviders.delete(scheme) };
    },
};

export function setWorkspaceFolders(paths: string[]): void {
    workspace.workspaceFolders = paths.map((p, index) => ({ uri: Uri.file(p), name: path.basename(p), index }));
}

// --- window, commands, extensions -----------------------------------------------------------------

export interface ShownMessage {
    level: 'error' | 'warning' | 'information';
    message: string;
    actions: string[];
}
export const messages: ShownMessage[] = [];
/** What the next message's user picks (undefined: dismissed). */
export let nextChoice: string | undefined;
export function chooseNext(choice: string | undefined): void {
    nextChoice = choice;
}

function message(level: ShownMessage['level']) {
    return async (text: string, ...actions: string[]): Promise<string | undefined> => {
        messages.push({ level, message: text, actions });
        const choice = nextChoice;
        nextChoice = undefined;
        return choice;
    };
}

export const logLines: string[] = [];

function logChannel(name: string) {
    const write = (level: string) => (line: string) => logLines.push(`[${level}] ${line}`);
    return {
        name,
        info: write('info'),
        warn: write('warn'),
        error: write('error'),
        debug: write('debug'),
        trace: write('trace'),
        append: write('raw'),
        appendLine: write('raw'),
        show: () => undefined,
        clear: () => undefined,
        dispose: () => undefined,
    };
}

export const terminals: { name: string; sent: string[] }[] = [];

export const quickPicks: { items: { label: string; picked?: boolean; detail?: string }[]; options: unknown }[] = [];
/** What the next quick pick returns: labels to pick, or undefined for Escape. */
let nextPick: string[] | undefined;
export function pickNext(labels: string[] | undefined): void {
    nextPick = labels;
}

export const window = {
    showQuickPick: async (items: { label: string; picked?: boolean }[], options: unknown) => {
        quickPicks.push({ items, options });
        const labels = nextPick;
        nextPick = undefined;
        return labels === undefined ? undefined : items.filter((i) => labels.includes(i.label));
    },
    showErrorMessage: message('error'),
    showWarningMessage: message('warning'),
    showInformationMessage: message('information'),
    createOutputChannel: (name: string) => logChannel(name),
    createTerminal: (options: { name: string }) => {
        const terminal = { name: options.name, sent: [] as string[], show: () => undefined, sendText: (t: string) => terminal.sent.push(t) };
        terminals.push(terminal);
        return terminal;
    },
    activeTextEditor: undefined as unknown,
    withProgress: async <T>(_options: unknown, task: () => Promise<T>) => task(),
    statusBarMessages: [] as string[],
    setStatusBarMessage: (text: string) => {
        window.statusBarMessages.push(text);
        return new Disposable(() => undefined);
    },
};

export const executedCommands: { command: string; args: unknown[] }[] = [];
const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();

export const commands = {
    registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
        if (registeredCommands.has(id)) {
            throw new Error(`command '${id}' already exists`);
        }
        registeredCommands.set(id, handler);
        return new Disposable(() => registeredCommands.delete(id));
    },
    executeCommand: async (command: string, ...args: unknown[]) => {
        executedCommands.push({ command, args });
        return registeredCommands.get(command)?.(...args);
    },
};

export interface FakeExtension {
    id: string;
    isActive: boolean;
    exports: unknown;
    activate(): Promise<unknown>;
}
export const installedExtensions = new Map<string, FakeExtension>();

export const extensions = {
    getExtension: (id: string) => installedExtensions.get(id),
};

export const clipboard: string[] = [];
export const env = {
    appName: 'Stub Code',
    clipboard: { writeText: async (text: string) => void clipboard.push(text) },
};

export const statusItems: Record<string, unknown>[] = [];
export const languages = {
    createLanguageStatusItem: (id: string, selector: unknown) => {
        const item: Record<string, unknown> = { id, selector, dispose: () => undefined };
        statusItems.push(item);
        return item;
    },
};

export const version = '1.100.3';

/** A fresh window: no settings, trusted, no folder, nothing shown or run. */
export function reset(): void {
    for (const scope of Object.values(settings)) {
        for (const key of Object.keys(scope)) {
            delete scope[key];
        }
    }
    workspace.isTrusted = true;
    workspace.workspaceFolders = undefined;
    window.activeTextEditor = undefined;
    messages.length = 0;
    openedDocuments.length = 0;
    updates.length = 0;
    logLines.length = 0;
    terminals.length = 0;
    executedCommands.length = 0;
    clipboard.length = 0;
    statusItems.length = 0;
    installedExtensions.clear();
    registeredCommands.clear();
    nextChoice = undefined;
    nextPick = undefined;
    quickPicks.length = 0;
    window.statusBarMessages.length = 0;
}
