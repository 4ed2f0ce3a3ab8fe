// Bundles the extension (vscode-client/src/extension.ts and vscode-languageclient) into one file,
// so the .vsix carries no node_modules. `tsc -p .` does the type checking; this only emits.
import * as esbuild from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const production = process.argv.includes('--production');

await esbuild.build({
    entryPoints: [path.join(root, 'vscode-client', 'src', 'extension.ts')],
    outfile: path.join(root, 'vscode-client', 'out', 'extension.js'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
    sourcemap: production ? false : 'linked',
    minify: production,
    logLevel: 'warning',
});
console.log(`build: vscode-client/out/extension.js${production ? ' (production)' : ''}`);
