// ESLint for the whole tree (npm run lint): typescript-eslint's type-checked rules everywhere, eslint-plugin-svelte's
// in the portal. Prettier owns layout, so no rule here is about formatting.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['prisma/generated/', 'portal/.svelte-kit/', 'portal/build/', 'data/', 'test/.tmp/']),
  js.configs.recommended,
  ts.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        // Each file is checked against the tsconfig.json nearest to it: the root's, or portal/'s.
        projectService: { allowDefaultProject: ['eslint.config.js', 'scripts/*.cjs'] },
        tsconfigRootDir: import.meta.dirname,
        extraFileExtensions: ['.svelte'],
      },
    },
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'error',
      // Input checks refuse control characters by matching them; that is what those patterns are for.
      'no-control-regex': 'off',
      // A parameter a signature requires but the body does not read is named `_x`; `{ omitted, ...rest }` drops a key.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // Svelte's rules read component files and Kit's conventions, so they stay in the portal.
    files: ['portal/**'],
    extends: [svelte.configs.recommended],
    languageOptions: { globals: globals.browser },
  },
  {
    // The portal is served at the root (no `paths.base`), so Kit's resolve() would hand back every href unchanged.
    files: ['portal/**/*.svelte'],
    rules: { 'svelte/no-navigation-without-resolve': 'off' },
  },
  {
    // `{' '}` keeps a space that Svelte trims at the start of a block: not a useless mustache.
    files: ['portal/**/*.svelte'],
    rules: { 'svelte/no-useless-mustaches': 'off' },
  },
  {
    // `{} as FieldErrors` in a fail() payload is what the page's `form` is inferred from; the rule sees only the
    // literal's place in the payload and calls the assertion unnecessary.
    files: ['portal/src/routes/**/*.ts', 'portal/src/routes/**/*.svelte'],
    rules: { '@typescript-eslint/no-unnecessary-type-assertion': 'off' },
  },
  {
    // Kit's server-only modules run in the Node process that serves the portal.
    files: ['portal/src/**/*.server.ts', 'portal/src/lib/server/**', 'portal/*.ts'],
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: ts.parser } },
  },
  {
    // The launcher is CommonJS for old Nodes (its own header says why), outside every tsconfig.
    files: ['**/*.cjs'],
    extends: [ts.configs.disableTypeChecked],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read untyped JSON and build odd values on purpose (malformed input, partial fakes of libraries); the
    // expect() on the next line is the check, and a wrong `!` fails the test where it stands. Their fakes implement
    // async interfaces without awaiting anything.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
);
