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
      '.peer-llama/**',
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
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // A braceless body only on the line of its `if`/`for`: once Prettier breaks it, `eslint --fix` adds the braces.
      curly: ['error', 'multi-line'],
      // The host's handlers and other interface implementations are async because the contract returns promises; an
      // async function without await is harmless, and dropping `async` would change a throw into a synchronous one.
      '@typescript-eslint/require-await': 'off',
      // tsc's noFallthroughCasesInSwitch (both tsconfigs) checks this knowing types: a case ending in a call that
      // returns `never` (the interpreter's fail()) does not fall through, which the untyped core rule cannot see.
      'no-fallthrough': 'off',
      // Control characters in a regular expression are how terminal and log text is cleaned; they are deliberate.
      'no-control-regex': 'off',
      // Shapes and ids in messages (`[2, 3]`) print as their items joined, which is what the messages want.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowArray: true },
      ],
    },
  },
  {
    // Tests read JSON a command printed (JSON.parse is any) and pass methods to expect(); a cast per field would add
    // noise without catching a bug. The engine, main and renderer keep these rules: their boundaries parse with zod.
    files: ['tests/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
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
  {
    // The house's sizes (CONTRIBUTING, "Where code goes"): a file holds one idea in at most ~450 lines of code and a
    // function at most ~120, blank and comment lines not counted. A file or function that must be larger says why at
    // its top, in the `eslint-disable-next-line` or `eslint-disable` comment's `-- reason`. Tests and studies are
    // exempt: a test file is a list of cases.
    files: ['engine/**', 'main/**', 'preload/**', 'renderer/**', 'scripts/**'],
    rules: {
      'max-lines': ['error', { max: 450, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  prettier,
  // eslint-config-prettier switches `curly` off; with 'multi-line' it agrees with Prettier, so it comes back.
  { rules: { curly: ['error', 'multi-line'] } },
);
