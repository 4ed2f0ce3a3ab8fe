import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from '../stub/vscode';
import { SEVERITIES, TORCH_BELOW, TORCH_MIN, TORCH_REQUIREMENT, PYTHON_MIN } from '../../src/constants';
import {
    expandVariables,
    explicitValue,
    needsRestart,
    readSettings,
    restrictedValue,
    sanitizeSettings,
    targetsWriteScope,
    toServerSettings,
} from '../../src/settings';
import { SETTING_SPECS } from '../../src/generated/settingsSchema';

const root = path.resolve(__dirname, '..', '..', '..', '..', '..');
const python = process.env.ATENLINT_TEST_PYTHON ?? path.join(root, '.venv', 'bin', 'python');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const properties: Record<string, any> = manifest.contributes.configuration.properties;

/** The keys of the server's initializationOptions contract. */
const CONTRACT_KEYS = ['executeUnsaved', 'onTypeDelayMs', 'python', 'severity', 'targets', 'timeout', 'trigger', 'trusted', 'workers'];

describe('settings', () => {
    beforeEach(() => vscode.reset());

    test('with nothing set, the server gets the contract keys, and the projects decide targets and timeout', () => {
        const { settings, problems } = readSettings(undefined, true);
        assert.deepEqual(problems, []);
        const server = toServerSettings(settings, { trusted: true, python: '/usr/bin/python3' });
        assert.deepEqual(Object.keys(server).sort(), CONTRACT_KEYS);
        assert.deepEqual(server, {
            targets: null,
            trigger: 'onSave',
            onTypeDelayMs: 500,
            executeUnsaved: false,
            severity: {},
            timeout: null,
            workers: 1,
            trusted: true,
            python: '/usr/bin/python3',
        });
    });

    test('values the user sets reach the server, the most specific scope winning', () => {
        vscode.settings.global['atenlint.targets'] = ['mps'];
        vscode.settings.global['atenlint.timeout'] = 30;
        vscode.settings.workspace['atenlint.timeout'] = 12.5;
        vscode.settings.workspaceFolder['atenlint.trigger'] = 'onType';
        vscode.settings.global['atenlint.onTypeDelayMs'] = 800;
        vscode.settings.global['atenlint.severity'] = { mps: 'error' };
        vscode.settings.global['atenlint.workers'] = 3;
        const server = toServerSettings(readSettings(undefined, true).settings, { trusted: false, python: 'py' });
        assert.deepEqual(server, {
            targets: ['mps'],
            trigger: 'onType',
            onTypeDelayMs: 800,
            executeUnsaved: false,
            severity: { mps: 'error' },
            timeout: 12.5,
            workers: 3,
            trusted: false,
            python: 'py',
        });
    });

    test('unusable values fall back to their defaults and each is reported once, by key', () => {
        const { settings, problems } = sanitizeSettings({
            targets: 'mps',
            trigger: 'always',
            onTypeDelayMs: -5,
            severity: { mps: 'fatal', other: 'hint', 'onnx:17': 'hint' },
            timeout: 0,
            workers: 1.5,
            interpreter: 42,
            importStrategy: 'pip',
        });
        assert.deepEqual(settings, {
            targets: undefined,
            trigger: 'onSave',
            onTypeDelayMs: 500,
            executeUnsaved: false,
            severity: { 'onnx:17': 'hint' },
            timeout: undefined,
            workers: 1,
            interpreter: '',
            importStrategy: 'useBundled',
        });
        const keys = problems.map((p) => p.split(':')[0]);
        assert.deepEqual(keys, [
            'atenlint.targets',
            'atenlint.trigger',
            'atenlint.onTypeDelayMs',
            'atenlint.severity.mps',
            'atenlint.severity.other',
            'atenlint.timeout',
            'atenlint.workers',
            'atenlint.interpreter',
            'atenlint.importStrategy',
        ]);
        assert.match(problems[3], /"fatal" is not one of error, warning, information, hint, off/);
        assert.match(problems[5], /0 is not a positive number of seconds \(at most 86400\)/);
    });

    test('targets are trimmed and deduplicated; an empty list is refused', () => {
        assert.deepEqual(sanitizeSettings({ targets: [' mps', 'mps', 7, ''] }).settings.targets, ['mps']);
        const empty = sanitizeSettings({ targets: [] });
        assert.equal(empty.settings.targets, undefined);
        assert.equal(empty.problems.length, 1);
    });

    test('in an untrusted workspace only the user settings choose the interpreter', () => {
        vscode.settings.global['atenlint.interpreter'] = '/home/me/venv/bin/python';
        vscode.settings.workspace['atenlint.interpreter'] = '${workspaceFolder}/evil/python';
        vscode.settings.workspace['atenlint.importStrategy'] = 'fromEnvironment';
        vscode.workspace.isTrusted = false;
        const untrusted = readSettings(undefined, false).settings;
        assert.equal(untrusted.interpreter, '/home/me/venv/bin/python');
        assert.equal(untrusted.importStrategy, 'useBundled');
        vscode.workspace.isTrusted = true;
        const trusted = readSettings(undefined, true).settings;
        assert.equal(trusted.interpreter, '${workspaceFolder}/evil/python');
        assert.equal(trusted.importStrategy, 'fromEnvironment');
    });

    test('restrictedValue and explicitValue read inspect() results', () => {
        const inspected = { defaultValue: 'd', globalValue: 'g', workspaceValue: 'w', workspaceFolderValue: 'f' };
        assert.equal(restrictedValue(inspected, true), 'f');
        assert.equal(restrictedValue(inspected, false), 'g');
        assert.equal(restrictedValue({ defaultValue: 'd', workspaceValue: 'w' }, false), 'd');
        assert.equal(restrictedValue(undefined, true), undefined);
        assert.equal(explicitValue({ globalValue: 1 }), 1);
        assert.equal(explicitValue({ workspaceValue: 2, globalValue: 1 }), 2);
        assert.equal(explicitValue({}), undefined);
    });

    test('variables in the interpreter setting expand like VS Code expands them', () => {
        const context = { workspaceFolder: '/work/proj', userHome: '/home/me', env: { VENV: '/opt/venv' } };
        assert.deepEqual(expandVariables('${workspaceFolder}/.venv/bin/python', context), { value: '/work/proj/.venv/bin/python' });
        assert.deepEqual(expandVariables('~/miniconda3/bin/python', context), { value: '/home/me/miniconda3/bin/python' });
        assert.deepEqual(expandVariables('${userHome}/py', context), { value: '/home/me/py' });
        assert.deepEqual(expandVariables('${env:VENV}/bin/python', context), { value: '/opt/venv/bin/python' });
        assert.deepEqual(expandVariables('${workspaceFolderBasename}', context), { value: 'proj' });
        assert.deepEqual(expandVariables('/a~b', context), { value: '/a~b' });
        assert.match(expandVariables('${workspaceFolder}/python', { userHome: '/h' }).error ?? '', /no folder is open/);
        assert.match(expandVariables('${config:python.path}', context).error ?? '', /not a variable atenlint knows/);
    });

    test('only interpreter and import-strategy changes restart the server', () => {
        const event = (...keys: string[]) => ({
            affectsConfiguration: (s: string) => keys.some((k) => k === s || k.startsWith(`${s}.`)),
        });
        assert.equal(needsRestart(event('atenlint.interpreter')), true);
        assert.equal(needsRestart(event('atenlint.importStrategy')), true);
        assert.equal(needsRestart(event('atenlint.targets', 'atenlint.severity')), false);
        assert.equal(needsRestart(event('python.defaultInterpreterPath')), false);
    });

    test('Select Targets writes where the value that applies lives', () => {
        assert.equal(targetsWriteScope({ workspaceFolderValue: ['mps'] }, true), vscode.ConfigurationTarget.WorkspaceFolder);
        assert.equal(targetsWriteScope({ workspaceValue: ['mps'] }, true), vscode.ConfigurationTarget.Workspace);
        assert.equal(targetsWriteScope({}, true), vscode.ConfigurationTarget.Workspace);
        assert.equal(targetsWriteScope({}, false), vscode.ConfigurationTarget.Global);
    });
});

describe('manifest', () => {
    test('every setting the extension reads is contributed, with a description', () => {
        const read = Object.keys(SETTING_SPECS);
        assert.deepEqual(read.sort(), ['executeUnsaved', 'importStrategy', 'interpreter', 'onTypeDelayMs', 'severity', 'targets', 'timeout', 'trigger', 'workers']);
        for (const key of [...read, 'trace.server']) {
            const property = properties[`atenlint.${key}`];
            assert.ok(property, `atenlint.${key} is not in package.json`);
            assert.ok(property.markdownDescription || property.description, `atenlint.${key} has no description`);
        }
        assert.deepEqual(Object.keys(properties).sort(), [...read, 'trace.server'].map((k) => `atenlint.${k}`).sort());
    });

    test('settings meant to be unset show no value in the Settings UI, and unsaved code is not run by default', () => {
        assert.equal(properties['atenlint.targets'].default, null);
        assert.equal(properties['atenlint.timeout'].default, null);
        assert.equal(properties['atenlint.executeUnsaved'].default, false);
        assert.equal(properties['atenlint.trigger'].default, 'onSave');
    });

    test('the client enforces exactly the limits and values package.json declares (one schema for both)', () => {
        for (const [name, property] of Object.entries(properties)) {
            const key = name.slice('atenlint.'.length);
            if (!(key in SETTING_SPECS)) {
                continue; // trace.server: vscode-languageclient reads it
            }
            const accepts = (value: unknown) => {
                const { settings, problems } = sanitizeSettings({ [key]: value });
                return problems.length === 0 && (settings as unknown as Record<string, unknown>)[key] !== undefined;
            };
            if (typeof property.maximum === 'number') {
                assert.ok(accepts(property.maximum) && !accepts(property.maximum + 1), `${name} maximum`);
            }
            if (typeof property.minimum === 'number') {
                assert.ok(accepts(property.minimum) && !accepts(property.minimum - 1), `${name} minimum`);
            }
            if (typeof property.exclusiveMinimum === 'number') {
                assert.ok(!accepts(property.exclusiveMinimum) && accepts(property.exclusiveMinimum + 0.5), `${name} exclusiveMinimum`);
            }
            if (property.type === 'integer') {
                assert.ok(!accepts((property.minimum ?? 1) + 0.5), `${name} must be whole`);
            }
            for (const value of property.enum ?? []) {
                assert.ok(accepts(value), `${name} = ${value}`);
            }
            if (property.enum) {
                assert.ok(!accepts('no-such-value'), name);
            }
            const spec = SETTING_SPECS[key as keyof typeof SETTING_SPECS];
            assert.deepEqual(spec.default ?? null, property.default, `${name} default`);
        }
    });

    test('executeUnsaved from an untrusted folder is ignored', () => {
        vscode.settings.workspace['atenlint.executeUnsaved'] = true;
        assert.equal(readSettings(undefined, false).settings.executeUnsaved, false);
        assert.equal(readSettings(undefined, true).settings.executeUnsaved, true);
    });

    test('the manifest defaults are valid settings', () => {
        const defaults = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k.slice('atenlint.'.length), v.default]));
        assert.deepEqual(sanitizeSettings(defaults).problems, []);
    });

    test('every target has a description and a severity setting with the server severities', () => {
        const targets = properties['atenlint.targets'].items.anyOf[0];
        assert.equal(targets.enum.length, targets.enumDescriptions.length);
        for (const target of targets.enum) {
            assert.deepEqual(properties['atenlint.severity'].properties[target].enum, [...SEVERITIES]);
        }
        assert.deepEqual(Object.keys(properties['atenlint.severity'].properties).sort(), [...targets.enum].sort());
        const onnx = new RegExp(properties['atenlint.targets'].items.anyOf[1].pattern);
        assert.ok(onnx.test('onnx:17') && !onnx.test('onnx:') && !onnx.test('mps'));
    });

    test('the targets are exactly those the bundled server knows (server/atenlint/targets/names.py)', { skip: !fs.existsSync(python) && 'no .venv' }, () => {
        const script = 'import json, sys; sys.path.insert(0, "server"); from atenlint.targets.names import TARGETS; print(json.dumps(list(TARGETS)))';
        const known = JSON.parse(execFileSync(python, ['-S', '-c', script], { cwd: root }).toString());
        assert.deepEqual(properties['atenlint.targets'].items.anyOf[0].enum, known);
    });

    test('workspace trust: limited support, code-running settings restricted', () => {
        const trust = manifest.capabilities.untrustedWorkspaces;
        assert.equal(trust.supported, 'limited');
        assert.deepEqual(trust.restrictedConfigurations.sort(), ['atenlint.executeUnsaved', 'atenlint.importStrategy', 'atenlint.interpreter']);
        assert.ok(trust.description.length > 0);
    });

    test('installs in VS Code 1.100 (code-server 4.100.3) and types no newer API', () => {
        const minimum = /^\^(\d+)\.(\d+)\.\d+$/.exec(manifest.engines.vscode);
        assert.ok(minimum, manifest.engines.vscode);
        assert.ok(Number(minimum[1]) === 1 && Number(minimum[2]) <= 100);
        const types = /(\d+)\.(\d+)/.exec(manifest.devDependencies['@types/vscode']);
        assert.ok(types && Number(types[2]) <= Number(minimum[2]), '@types/vscode is newer than engines.vscode');
    });

    test('the torch and Python requirements match pyproject.toml', () => {
        const pyproject = fs.readFileSync(path.join(root, 'pyproject.toml'), 'utf8');
        const torch = /"(torch[^"]*)"/.exec(pyproject);
        assert.ok(torch);
        assert.equal(torch[1], TORCH_REQUIREMENT);
        assert.equal(TORCH_REQUIREMENT, `torch>=${TORCH_MIN.join('.')},<${TORCH_BELOW.join('.')}`);
        assert.match(pyproject, new RegExp(`requires-python = ">=${PYTHON_MIN.join('\\.')}"`));
    });

    test('every contributed command is one the extension registers', () => {
        const source = fs.readFileSync(path.join(root, 'vscode-client', 'src', 'constants.ts'), 'utf8');
        for (const command of manifest.contributes.commands) {
            assert.ok(source.includes(`'${command.command}'`), `${command.command} is not in constants.ts`);
        }
    });
});
