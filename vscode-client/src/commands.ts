/** The commands in the palette: restart, logs, check workspace, select targets, op report. */

import * as vscode from 'vscode';
import { COMMANDS, SERVER_COMMANDS, SETTINGS_SECTION } from './constants';
import { showLogs, traceError, traceInfo } from './logging';
import { ServerManager } from './server';
import { readSettings, targetsWriteScope } from './settings';

export interface TargetChoice {
    name: string;
    description: string;
}

interface EnumSchema {
    enum?: unknown;
    enumDescriptions?: unknown;
    anyOf?: EnumSchema[];
}

/** The targets this extension knows, from its manifest (the enum of `atenlint.targets`' items). */
export function targetChoices(packageJSON: unknown): TargetChoice[] {
    const items = (packageJSON as {
        contributes?: { configuration?: { properties?: Record<string, { items?: EnumSchema }> } };
    })?.contributes?.configuration?.properties?.[`${SETTINGS_SECTION}.targets`]?.items;
    const choices: TargetChoice[] = [];
    for (const schema of [items, ...(items?.anyOf ?? [])]) {
        const names = Array.isArray(schema?.enum) ? (schema.enum as unknown[]) : [];
        const descriptions = Array.isArray(schema?.enumDescriptions) ? (schema.enumDescriptions as unknown[]) : [];
        names.forEach((name, i) => {
            if (typeof name === 'string') {
                choices.push({ name, description: typeof descriptions[i] === 'string' ? descriptions[i] : '' });
            }
        });
    }
    return choices;
}

/** The report's Markdown from the server's answer; undefined when the answer is not one. */
export function reportMarkdown(answer: unknown): string | undefined {
    if (typeof answer === 'object' && answer !== null && typeof (answer as { markdown?: unknown }).markdown === 'string') {
        return (answer as { markdown: string }).markdown;
    }
    return undefined;
}

/** "6 files checked, 5 findings" from the server's answer to atenlint.checkWorkspace. */
export function checkSummary(answer: unknown): string | undefined {
    const a = answer as { files?: unknown; findings?: unknown; cancelled?: unknown } | null | undefined;
    if (typeof a?.files !== 'number' || typeof a.findings !== 'number') {
        return undefined;
    }
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
    return `${a.cancelled === true ? 'cancelled after ' : ''}${plural(a.files, 'file')} checked, ${plural(a.findings, 'finding')}`;
}

async function failed(what: string, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    traceError(`${what} failed:`, error);
    const choice = await vscode.window.showErrorMessage(`atenlint: ${what} failed: ${message}`, 'Show Logs');
    if (choice === 'Show Logs') {
        showLogs();
    }
}

async function checkWorkspace(manager: ServerManager): Promise<void> {
    if (!vscode.workspace.workspaceFolders?.length) {
        await vscode.window.showInformationMessage('atenlint: open a folder to check a workspace.');
        return;
    }
    try {
        // The server reports its own progress (a notification with the files done and to do).
        const answer = await manager.executeServerCommand(SERVER_COMMANDS.checkWorkspace);
        traceInfo('Check Workspace finished:', answer ?? null);
        const summary = checkSummary(answer);
        if (summary) {
            vscode.window.setStatusBarMessage(`atenlint: ${summary}`, 10_000);
        }
        await vscode.commands.executeCommand('workbench.actions.view.problems');
    } catch (error) {
        await failed('Check Workspace', error);
    }
}

async function selectTargets(context: vscode.ExtensionContext, manager: ServerManager): Promise<void> {
    const folder = vscode.window.activeTextEditor
        ? vscode.workspace.getWorkspaceFolder(vscode.window.activeTextEditor.document.uri)
        : vscode.workspace.workspaceFolders?.[0];
    // Unset in the settings: the targets the server uses (from pyproject.toml), else the default.
    const current = readSettings(folder?.uri, vscode.workspace.isTrusted).settings.targets ??
        manager.status.server?.targets ?? ['mps'];
    const choices = targetChoices(context.extension.packageJSON);
    const known = new Set(choices.map((c) => c.name));
    // Targets set by hand that this version does not list stay selectable, so picking keeps them.
    for (const name of current) {
        if (!known.has(name)) {
            choices.push({ name, description: '(not known to this version of the extension)' });
        }
    }
    const picked = await vscode.window.showQuickPick(
        choices.map((c) => ({ label: c.name, detail: c.description, picked: current.includes(c.name) })),
        {
            canPickMany: true,
            title: 'atenlint: targets to check',
            placeHolder: 'The backends your modules must run on ([tool.atenlint] in pyproject.toml applies on top)',
            ignoreFocusOut: true,
        },
    );
    if (picked === undefined) {
        return;
    }
    if (picked.length === 0) {
        await vscode.window.showWarningMessage('atenlint: pick at least one target; the targets are unchanged.');
        return;
    }
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, folder?.uri);
    const scope = targetsWriteScope(config.inspect('targets'), (vscode.workspace.workspaceFolders?.length ?? 0) > 0);
    await config.update('targets', picked.map((p) => p.label), scope);
    traceInfo(`Targets set to ${picked.map((p) => p.label).join(', ')} (${vscode.ConfigurationTarget[scope]} settings).`);
}

/** The scheme of the op reports: read-only virtual documents, never an unsaved `Untitled-1` tab. */
export const REPORT_SCHEME = 'atenlint-report';

/** The report's URI for a file: `atenlint-report:/Op report of video.py.md?<the file's URI>`. */
export function reportUri(fileUri: string): string {
    const name = fileUri.split('/').pop() || 'file';
    return `${REPORT_SCHEME}:/${encodeURIComponent(`Op report of ${decodeURIComponent(name)}.md`)}?${encodeURIComponent(fileUri)}`;
}

class ReportDocuments implements vscode.TextDocumentContentProvider {
    private readonly reports = new Map<string, string>();
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    set(uri: vscode.Uri, markdown: string): void {
        this.reports.set(uri.toString(), markdown);
        this.changed.fire(uri);
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.reports.get(uri.toString()) ?? '';
    }
}

let reports: ReportDocuments | undefined;

function reportDocuments(context: vscode.ExtensionContext): ReportDocuments {
    if (reports === undefined) {
        reports = new ReportDocuments();
        context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports));
    }
    return reports;
}

async function showReport(context: vscode.ExtensionContext, manager: ServerManager): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') {
        await vscode.window.showInformationMessage('atenlint: open a Python file on disk to see its op report.');
        return;
    }
    try {
        // The server has the editor's text (saved or not): the report is of what is on screen.
        const answer = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'atenlint: building the op report' },
            () => manager.executeServerCommand(SERVER_COMMANDS.report, [editor.document.uri.toString()]),
        );
        const markdown = reportMarkdown(answer);
        if (markdown === undefined) {
            throw new Error(`the server answered ${JSON.stringify(answer)}, not a report`);
        }
        const uri = vscode.Uri.parse(reportUri(editor.document.uri.toString()));
        reportDocuments(context).set(uri, markdown);
        const document = await vscode.workspace.openTextDocument(uri);
        try {
            await vscode.commands.executeCommand('markdown.showPreviewToSide', document.uri);
        } catch {
            // Without the built-in Markdown extension, the source is the report.
            await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
        }
    } catch (error) {
        await failed('The op report', error);
    }
}

export function registerCommands(context: vscode.ExtensionContext, manager: ServerManager): void {
    context.subscriptions.push(
        vscode.commands.registerCommand(COMMANDS.restart, () => manager.restart('requested', { explicit: true })),
        vscode.commands.registerCommand(COMMANDS.showLogs, () => showLogs()),
        vscode.commands.registerCommand(COMMANDS.checkWorkspace, () => checkWorkspace(manager)),
        vscode.commands.registerCommand(COMMANDS.selectTargets, () => selectTargets(context, manager)),
        vscode.commands.registerCommand(COMMANDS.showReport, () => showReport(context, manager)),
    );
}
