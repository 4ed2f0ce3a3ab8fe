import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { findOnPath } from '../../src/python';

const root = path.resolve(__dirname, '..', '..', '..', '..', '..');
const bundled = path.join(root, 'bundled');
const built = fs.existsSync(path.join(bundled, 'tool', 'run_server.py'));

/** name==version lines of a requirements file. */
function pins(file: string): Map<string, string> {
    const lines = fs.readFileSync(path.join(root, 'vscode-client', 'bundled', file), 'utf8').split('\n');
    return new Map(
        lines
            .map((l) => l.replace(/#.*/, '').trim())
            .filter(Boolean)
            .map((l) => {
                const [name, version] = l.split('==');
                return [name.toLowerCase().replace(/[-_.]+/g, '_'), version] as [string, string];
            }),
    );
}

/**
 * A Python of that version that really runs: on PATH, or installed by pyenv (whose shims exist
 * for every version but run only the selected ones).
 */
async function python(version: string): Promise<string | undefined> {
    const pyenv = path.join(process.env.PYENV_ROOT ?? path.join(os.homedir(), '.pyenv'), 'versions');
    const candidates = [
        await findOnPath([`python${version}`]),
        ...(fs.existsSync(pyenv)
            ? fs.readdirSync(pyenv).filter((v) => v.startsWith(`${version}.`)).map((v) => path.join(pyenv, v, 'bin', 'python'))
            : []),
    ];
    for (const candidate of candidates) {
        if (candidate === undefined) {
            continue;
        }
        const run = spawnSync(candidate, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
        if (run.status === 0 && run.stdout.trim() === version) {
            return candidate;
        }
    }
    return undefined;
}

describe('the bundled server (npm run package lays out bundled/)', { skip: !built && 'bundled/ is not built' }, () => {
    test('bundled/tool holds only the atenlint package and run_server.py (what workers get on their path)', () => {
        assert.deepEqual(fs.readdirSync(path.join(bundled, 'tool')).sort(), ['atenlint', 'run_server.py']);
        assert.ok(fs.existsSync(path.join(bundled, 'tool', 'atenlint', 'lsp')), 'the language server package is bundled');
    });

    test('bundled/libs holds exactly the pinned versions, and nothing compiled', () => {
        const wanted = new Map([...pins('requirements.txt'), ...pins('requirements-yaml.txt')]);
        const present = new Map(
            fs.readdirSync(path.join(bundled, 'libs'))
                .filter((d) => d.endsWith('.dist-info'))
                .map((d) => {
                    const match = /^(.+)-([^-]+)\.dist-info$/.exec(d);
                    assert.ok(match, d);
                    return [match[1].toLowerCase().replace(/[-_.]+/g, '_'), match[2]] as [string, string];
                }),
        );
        assert.deepEqual([...present.entries()].sort(), [...wanted.entries()].sort());
        const compiled: string[] = [];
        const walk = (dir: string) => {
            for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
                const full = path.join(dir, entry.name);
                if (entry.isDirectory()) {
                    walk(full);
                } else if (/\.(so|pyd|dylib|pyc)$/.test(entry.name)) {
                    compiled.push(path.relative(bundled, full));
                }
            }
        };
        walk(bundled);
        assert.deepEqual(compiled, []);
    });

    for (const version of ['3.10', '3.11', '3.12', '3.13', '3.14']) {
        test(`the server imports on Python ${version} with the standard library alone`, async (t) => {
            const interpreter = await python(version);
            if (interpreter === undefined) {
                t.skip(`no python${version} here`);
                return;
            }
            const script = [
                'import runpy, sys',
                // What run_server.py does, short of serving: its path set-up, then the server module.
                `sys.argv = [${JSON.stringify(path.join(bundled, 'tool', 'run_server.py'))}]`,
                `sys.path[0:0] = [${JSON.stringify(path.join(bundled, 'tool'))}, ${JSON.stringify(path.join(bundled, 'libs'))}]`,
                'import atenlint.lsp.server, atenlint.cli, yaml',
                'print("ok", atenlint.lsp.server.__name__, yaml.__with_libyaml__)',
            ].join('\n');
            const out = execFileSync(interpreter, ['-B', '-S', '-c', script], { cwd: path.parse(root).root, encoding: 'utf8' });
            assert.equal(out.trim(), 'ok atenlint.lsp.server False');
        });
    }

    test('run_server.py refuses Python 3.9 with a message, not a traceback', async (t) => {
        const interpreter = await python('3.9');
        if (interpreter === undefined) {
            t.skip('no python3.9 here');
            return;
        }
        const run = spawnSync(interpreter, ['-B', path.join(bundled, 'tool', 'run_server.py')], { encoding: 'utf8' });
        assert.equal(run.status, 2);
        assert.match(run.stderr, /^atenlint needs Python 3\.10 or newer; .* is 3\.9\.\d+\n$/);
    });
});
