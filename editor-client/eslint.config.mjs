import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['out/**', 'dist/**', 'node_modules/**', 'scripts/**'] },
    js.configs.recommended,
    ...tseslint.configs.strictTypeChecked,
    {
        languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
        rules: {
            '@typescript-eslint/no-explicit-any': 'error',
            '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
            '@typescript-eslint/no-unnecessary-condition': 'off',
        },
    },
    {
        // src/common/ and the protocol run without VS Code (unit-tested with plain node --test):
        // types from vscode and the language client only, never the modules themselves
        files: ['src/common/**/*.ts', 'src/protocol.ts', 'src/protocolResults.ts', 'src/wire.ts'],
        rules: {
            '@typescript-eslint/no-restricted-imports': [
                'error',
                {
                    paths: [{ name: 'vscode', message: 'src/common/ is VS Code-free (src/README.md): import types only, or move the module to ui/ or server/.', allowTypeImports: true }],
                    patterns: [{ group: ['vscode-languageclient', 'vscode-languageclient/*'], message: 'vscode-languageclient loads vscode: import types only here.', allowTypeImports: true }],
                },
            ],
        },
    },
    {
        // node:test's describe/it return promises the runner awaits itself
        files: ['test/**/*.ts'],
        rules: { '@typescript-eslint/no-floating-promises': 'off' },
    },
);
