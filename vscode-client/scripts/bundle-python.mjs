// Lays out bundled/ for the .vsix: bundled/tool/ holds run_server.py and a copy of the atenlint
// package (server/atenlint), alone, so analysis workers can be given that folder and nothing else;
// bundled/libs/ holds the server's pure-Python dependencies (vscode-client/bundled/requirements*.txt).
//
// The Python that runs pip: $ATENLINT_BUNDLE_PYTHON, else the repository's .venv, else python3.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const bundled = path.join(root, 'bundled');
const tool = path.join(bundled, 'tool');
const libs = path.join(bundled, 'libs');
const requirements = path.join(root, 'vscode-client', 'bundled');

const venvPython = path.join(root, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const python = process.env.ATENLINT_BUNDLE_PYTHON || (fs.existsSync(venvPython) ? venvPython : 'python3');

function run(args) {
    execFileSync(python, args, { stdio: ['ignore', 'inherit', 'inherit'], cwd: root });
}

function copyPackage(from, to) {
    fs.cpSync(from, to, {
        recursive: true,
        filter: (src) => !/(^|[\\/])(__pycache__|.*\.pyc|.*\.pyo)$/.test(src),
    });
}

/** Removes what a platform-neutral .vsix must not carry: compiled extensions, scripts, caches. */
function prune(dir) {
    let removed = 0;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
            if (entry.name === '__pycache__' || (dir === libs && entry.name === 'bin')) {
                fs.rmSync(full, { recursive: true });
            } else {
                removed += prune(full);
            }
        } else if (/\.(so|pyd|dylib|pyc)$/.test(entry.name)) {
            fs.rmSync(full);
            removed += 1;
        }
    }
    return removed;
}

fs.rmSync(bundled, { recursive: true, force: true });
fs.mkdirSync(tool, { recursive: true });
copyPackage(path.join(root, 'server', 'atenlint'), path.join(tool, 'atenlint'));
fs.copyFileSync(path.join(requirements, 'run_server.py'), path.join(tool, 'run_server.py'));

const pip = ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile', '--target', libs];
// Pure wheels only, whatever Python builds the .vsix: the libraries must run on every Python >= 3.10.
run([...pip, '--no-deps', '--only-binary=:all:', '--platform', 'any', '--implementation', 'py', '--abi', 'none',
     '--python-version', '3.10', '-r', path.join(requirements, 'requirements.txt')]);
run([...pip, '--no-deps', '--only-binary=:all:', '-r', path.join(requirements, 'requirements-yaml.txt')]);
const removed = prune(libs);

// The layout must import with nothing but the standard library behind it (-S: no site-packages).
run(['-S', '-c', [
    'import sys',
    `sys.path[0:0] = [${JSON.stringify(tool)}, ${JSON.stringify(libs)}]`,
    'import pygls.lsp.server, lsprotocol.types, yaml, attrs, cattrs',
    'assert not yaml.__with_libyaml__, "the C extension of PyYAML was bundled"',
    'import atenlint',
    'print(f"bundled: atenlint {atenlint.__version__}, pygls, lsprotocol, PyYAML {yaml.__version__} (pure Python)")',
].join('\n')]);
console.log(`bundle-python: ${path.relative(root, bundled)}/ ready (${removed} compiled files left out)`);
