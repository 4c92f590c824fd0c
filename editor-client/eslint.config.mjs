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
        // node:test's describe/it return promises the runner awaits itself
        files: ['test/**/*.ts'],
        rules: { '@typescript-eslint/no-floating-promises': 'off' },
    },
);
