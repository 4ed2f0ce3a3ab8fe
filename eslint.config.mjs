// ESLint for the VS Code extension (vscode-client/): `npm run lint`. Flat config.
// TypeScript: typescript-eslint's type-checked recommended rules, with the types from tsconfig.json.
// The build, e2e and companion scripts (plain JavaScript run by Node): ESLint's recommended rules.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    {
        ignores: ['vscode-client/out/**', 'bundled/**', 'node_modules/**', 'vscode-client/e2e/notebook-workspace/**'],
    },
    {
        files: ['vscode-client/**/*.ts'],
        extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
            globals: { ...globals.node },
        },
        rules: {
            // Parameters and locals the compiler already checks (noUnusedLocals/Parameters); `_x` is deliberate.
            '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
        },
    },
    {
        // Unit tests assert on loosely typed JSON (package.json, stubbed VS Code objects), and
        // node:test's describe()/test() return promises the runner itself awaits.
        files: ['vscode-client/test/**/*.ts'],
        rules: {
            '@typescript-eslint/no-floating-promises': 'off',
            '@typescript-eslint/require-await': 'off',
            '@typescript-eslint/no-explicit-any': 'off',
            '@typescript-eslint/no-unsafe-assignment': 'off',
            '@typescript-eslint/no-unsafe-member-access': 'off',
            '@typescript-eslint/no-unsafe-argument': 'off',
            '@typescript-eslint/no-unsafe-call': 'off',
            '@typescript-eslint/no-unsafe-return': 'off',
        },
    },
    {
        files: ['vscode-client/**/*.{js,mjs,cjs}', 'eslint.config.mjs'],
        extends: [js.configs.recommended],
        languageOptions: { globals: { ...globals.node } },
        // `({ dropped, ...kept })` leaves `dropped` unused on purpose.
        rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true }] },
    },
    {
        // The end-to-end scripts pass functions to Playwright's page.evaluate(), which run in the browser.
        files: ['vscode-client/e2e/**/*.{js,mjs}'],
        languageOptions: { globals: { ...globals.node, ...globals.browser } },
    },
);
