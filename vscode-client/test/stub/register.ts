/**
 * Makes `require('vscode')` load the stub in ./vscode.ts, so the extension's modules run under
 * Node's test runner (`node --require .../register.js --test`).
 */
import * as path from 'path';
// An `import x = require()`: the CommonJS module object itself, whose internals are patched below.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import Module = require('module');

const stubPath = path.join(__dirname, 'vscode.js');
type Resolve = (request: string, ...rest: unknown[]) => string;
const moduleInternals = Module as unknown as { _resolveFilename: Resolve };
const original = moduleInternals._resolveFilename;
moduleInternals._resolveFilename = function (request: string, ...rest: unknown[]): string {
    return request === 'vscode' ? stubPath : original.call(this, request, ...rest);
};
