// Writes vscode-client/out/README.md, the README inside the .vsix (the Marketplace page and the
// extension's page in VS Code): the "VS Code" section of the repository README, with a title.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
const match = /<!-- BEGIN VS CODE SECTION[^>]*-->\n## VS Code\n([\s\S]*?)<!-- END VS CODE SECTION -->/.exec(readme);
if (!match) {
    throw new Error('README.md has no "VS Code" section between the BEGIN/END VS CODE SECTION markers');
}
const body = match[1]
    .replace(/^### /gm, '## ')
    // Links to the README's own anchors (the rule table) stay meaningful on their own page.
    .replace(/documentation above/g, "documentation in the project's README");
const text = [
    '# atenlint for VS Code',
    '',
    '**Which operators in your `nn.Module` code will not run on the backend you target (Apple MPS, ...),',
    'underlined at the exact call while you edit, with a hover that says why and quick fixes.**',
    body.trimEnd(),
    '',
].join('\n');
const out = path.join(root, 'vscode-client', 'out', 'README.md');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, text);
console.log(`marketplace-readme: ${path.relative(root, out)} (${text.split('\n').length} lines)`);
