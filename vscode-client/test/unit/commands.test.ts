import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from '../stub/vscode';
import { checkSummary, registerCommands, REPORT_SCHEME, reportMarkdown, targetChoices } from '../../src/commands';

const root = path.resolve(__dirname, '..', '..', '..', '..', '..');

describe('commands', () => {
    test('Select Targets offers the manifest targets with their descriptions', () => {
        const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
        const choices = targetChoices(manifest);
        assert.equal(choices[0].name, 'mps');
        assert.match(choices[0].description, /^Apple GPUs through PyTorch's MPS backend/);
        assert.ok(choices.every((c) => c.description.length > 0));
        assert.deepEqual(targetChoices({ contributes: { configuration: { properties: { 'atenlint.targets': { items: { enum: ['a'], enumDescriptions: ['A'] } } } } } }),
            [{ name: 'a', description: 'A' }]);
        assert.deepEqual(targetChoices({}), []);
        assert.deepEqual(targetChoices(null), []);
    });

    test('Check Workspace sums up the server answer in the status bar', () => {
        assert.equal(checkSummary({ files: 6, findings: 5, cancelled: false }), '6 files checked, 5 findings');
        assert.equal(checkSummary({ files: 1, findings: 1 }), '1 file checked, 1 finding');
        assert.equal(checkSummary({ files: 2, findings: 0, cancelled: true }), 'cancelled after 2 files checked, 0 findings');
        assert.equal(checkSummary(null), undefined);
        assert.equal(checkSummary({ files: '6' }), undefined);
    });

    test('the op report is the markdown of the server answer, nothing else', () => {
        assert.equal(reportMarkdown({ markdown: '# video_classifier.py\n' }), '# video_classifier.py\n');
        assert.equal(reportMarkdown({ markdown: 3 }), undefined);
        assert.equal(reportMarkdown(null), undefined);
        assert.equal(reportMarkdown('# text'), undefined);
    });
});

describe('commands in a window', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    let executed: [string, unknown[]][];
    let answer: unknown;

    function register(status: Record<string, unknown> = {}) {
        const manager = {
            status,
            restart: async () => undefined,
            executeServerCommand: async (command: string, args: unknown[] = []) => {
                executed.push([command, args]);
                if (answer instanceof Error) {
                    throw answer;
                }
                return answer;
            },
        };
        const context = { subscriptions: [] as unknown[], extension: { packageJSON: manifest } };
        registerCommands(context as any, manager as any);
        return context;
    }

    beforeEach(() => {
        vscode.reset();
        executed = [];
        answer = undefined;
    });

    test('every contributed command is registered', () => {
        const context = register();
        assert.equal(context.subscriptions.length, manifest.contributes.commands.length);
    });

    test('Select Targets pre-selects the current targets and writes the pick to the workspace', async () => {
        vscode.setWorkspaceFolders(['/work/proj']);
        register({ server: { targets: ['mps', 'coreml'] } });
        vscode.pickNext(['mps', 'onnx']);
        await vscode.commands.executeCommand('atenlint.targets.select');
        const [pick] = vscode.quickPicks;
        assert.deepEqual(pick.items.filter((i) => i.picked).map((i) => i.label), ['mps', 'coreml']);
        assert.equal(pick.items[0].detail?.startsWith('Apple GPUs'), true);
        assert.deepEqual(vscode.updates, [{ key: 'atenlint.targets', value: ['mps', 'onnx'], target: vscode.ConfigurationTarget.Workspace }]);
    });

    test('Select Targets keeps a hand-written target and refuses an empty pick', async () => {
        vscode.settings.global['atenlint.targets'] = ['onnx:17'];
        register();
        vscode.pickNext([]);
        await vscode.commands.executeCommand('atenlint.targets.select');
        assert.ok(vscode.quickPicks[0].items.some((i) => i.label === 'onnx:17' && i.picked));
        assert.deepEqual(vscode.updates, []);
        assert.match(vscode.messages[0].message, /pick at least one target/);
        vscode.pickNext(undefined);
        await vscode.commands.executeCommand('atenlint.targets.select');
        assert.deepEqual(vscode.updates, [], 'Escape changes nothing');
    });

    test('Check Workspace runs the server command, sums up and opens the Problems panel', async () => {
        vscode.setWorkspaceFolders(['/work/proj']);
        register();
        answer = { files: 6, findings: 5, cancelled: false };
        await vscode.commands.executeCommand('atenlint.workspace.check');
        assert.deepEqual(executed, [['atenlint.checkWorkspace', []]]);
        assert.deepEqual(vscode.window.statusBarMessages, ['atenlint: 6 files checked, 5 findings']);
        assert.ok(vscode.executedCommands.some((c) => c.command === 'workbench.actions.view.problems'));
    });

    test('Check Workspace without a folder, or without a server, says so', async () => {
        register();
        await vscode.commands.executeCommand('atenlint.workspace.check');
        assert.deepEqual(executed, []);
        assert.match(vscode.messages[0].message, /open a folder/);
        vscode.setWorkspaceFolders(['/work/proj']);
        answer = new Error('the atenlint server is not running (failed)');
        await vscode.commands.executeCommand('atenlint.workspace.check');
        assert.equal(vscode.messages[1].level, 'error');
        assert.match(vscode.messages[1].message, /Check Workspace failed: the atenlint server is not running/);
        assert.deepEqual(vscode.messages[1].actions, ['Show Logs']);
    });

    test('the op report of the current Python file opens as a read-only Markdown document, not Untitled-1', async () => {
        register();
        const uri = vscode.Uri.file('/work/proj/video.py');
        vscode.window.activeTextEditor = { document: { uri, languageId: 'python', isDirty: true } };
        answer = { markdown: '# atenlint report: `video.py`\n' };
        await vscode.commands.executeCommand('atenlint.report.show');
        assert.deepEqual(executed, [['atenlint.report', [uri.toString()]]]);
        assert.equal(vscode.openedDocuments.length, 1);
        const opened = vscode.openedDocuments[0];
        assert.equal(opened.uri?.scheme, REPORT_SCHEME);
        assert.match(decodeURIComponent(opened.uri?.path ?? ''), /Op report of video\.py\.md$/);
        assert.equal(opened.content, '# atenlint report: `video.py`\n');
        assert.ok(vscode.executedCommands.some((c) => c.command === 'markdown.showPreviewToSide'));
    });

    test('no op report for what is not a Python file on disk, nor for a malformed answer', async () => {
        register();
        vscode.window.activeTextEditor = { document: { uri: vscode.Uri.file('/work/proj/notes.md'), languageId: 'markdown' } };
        await vscode.commands.executeCommand('atenlint.report.show');
        assert.deepEqual(executed, []);
        assert.match(vscode.messages[0].message, /open a Python file/);
        vscode.window.activeTextEditor = { document: { uri: vscode.Uri.file('/work/proj/a.py'), languageId: 'python' } };
        answer = { text: 'no' };
        await vscode.commands.executeCommand('atenlint.report.show');
        assert.match(vscode.messages[1].message, /not a report/);
        assert.deepEqual(vscode.openedDocuments, []);
    });
});
