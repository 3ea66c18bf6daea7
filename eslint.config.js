/**
 * ESLint (flat config): typescript-eslint's type-aware `recommendedTypeChecked` on the TypeScript and Svelte code,
 * eslint-plugin-svelte's recommended rules on the components, and eslint-config-prettier last, so no rule argues with
 * Prettier (which owns the layout: .prettierrc.json). `npm run lint` runs it; `npm test` runs it after the format check.
 *
 * Types come from the project's two tsconfigs (projectService: tsconfig.json for engine/, main/, preload/, tests/;
 * renderer/tsconfig.json for the renderer). Plain JavaScript (scripts/*.mjs, engine/bin/*.mjs, this file) is linted
 * without types. The rules switched off or eased below say why.
 */
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'out/**',
      'dist/**',
      'coverage/**',
      'node_modules/**',
      'bench-results/**',
      'tests/scratch/**',
      'tests/output/**',
      'tests/artifacts/**',
      '.venv*/**',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  svelte.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
        extraFileExtensions: ['.svelte'],
      },
    },
    rules: {
      // `_name` marks a parameter or binding kept on purpose (an interface's argument, a skipped tuple slot).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // A braceless body only on the line of its `if`/`for`: once Prettier breaks it, `eslint --fix` adds the braces.
      curly: ['error', 'multi-line'],
    },
  },
  {
    files: ['renderer/**/*.svelte', 'renderer/**/*.ts', 'renderer/**/*.svelte.ts'],
    languageOptions: {
      globals: { ...globals.browser },
      parserOptions: { parser: tseslint.parser, svelteConfig: { compilerOptions: { runes: true } } },
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  prettier,
  // eslint-config-prettier switches `curly` off; with 'multi-line' it agrees with Prettier, so it comes back.
  { rules: { curly: ['error', 'multi-line'] } },
);
