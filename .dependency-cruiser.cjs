/**
 * The floors of mars-lab as dependency-cruiser rules. `npm run deps` (scripts/deps.mjs) prints the graph floor by floor
 * and fails on any violation; tests/unit/floors.test.ts runs the same check. A floor may import the floors below it and
 * never one above, so an algorithm cannot reach into the run layer and the run layer can add or replace an algorithm
 * freely. Type-only imports count: a module that needs another floor's type belongs above it.
 *
 * Engine modules, bottom to top (FLOORS below: a new engine folder must be given a floor, or `npm run deps` fails):
 *   leaves      userError.ts, boundedText.ts, version.ts, faultPoints.ts (no engine imports); records/ (the run-folder
 *               record schemas: zod and UserError only); shared/ (imports nothing outside itself: the renderer loads it)
 *   foundation  native/, random/ and fetch/ (a file from a package on the package index, cached and digest-checked),
 *               then tensor/, then model/, then rl/, metrics/ and code/ (model-written Python in a sandbox, task files,
 *               the scorer) (each on its own floor)
 *   training    training/ (the Algorithm contract, shared config sections, configuredTraining, the memory budget) and
 *               the policy-endpoint pieces the algorithms use (endpoints/: endpointPolicy, endpointClient, policySource,
 *               journal)
 *   algorithms  seqgrpo/, mars/, marti/ (none imports another)
 *   run layer   runs/, algorithms.ts (the registry; it and the run layer share the config union's types), and
 *               endpoints/evaluateEndpoints.ts (evaluation with endpoint agents: `eval` and the app's workers run it)
 *               with endpoints/chat/ (the MARS and MARTI instruction templates for chat models it gives them)
 *   tools       interop/ (export to and import from verl / MARTI), ray/ (the Ray jobs client), studies/ (variants ×
 *               seeds here or as Ray jobs: the command line and the app's cluster methods both start them)
 *   api         api/ (the contract, the host, the workers)
 *   top         cli.ts, bin/, commands/, serveModel/, endpoints/evalCommand.ts
 * and the app: main/ (Electron main hosts the engine through the API: anything but the top floor); the windows,
 * preload/ and renderer/, take from the engine only engine/api/contract.ts and engine/records/ as types (import type,
 * so zod never reaches the page), engine/api/methods.ts and engine/shared/; what they show comes through the API.
 *
 * Paths are from the project root. dependency-cruiser sees a .svelte file's imports after compilation, so `import type`
 * in a component is invisible to it (harmless: erased) while a value import is seen and checked.
 */

/** Bottom to top. `path`: a regular expression on the module's path; `name` and `what` are what `npm run deps` prints. */
const FLOORS = [
  {
    name: 'leaves',
    what: 'no engine imports (records: zod only; shared: nothing outside itself)',
    path: '^engine/((userError|boundedText|version|faultPoints)\\.ts$|records/|shared/)',
  },
  {
    name: 'kernels and random',
    what: 'the native addon and kernels; seeded random streams; files fetched from the package index',
    path: '^engine/(native|random|fetch)/',
  },
  { name: 'tensor', what: 'the TensorFlow.js backend and tensor helpers', path: '^engine/tensor/' },
  { name: 'model', what: 'tokenizers, the transformer, sampler, checkpoints', path: '^engine/model/' },
  {
    name: 'rl and metrics',
    what: 'advantages, losses, Adam, the policy update; scoring and statistics; model-written code run in a sandbox',
    path: '^engine/(rl|metrics|code)/',
  },
  {
    name: 'training',
    what: 'the Algorithm contract and what every trainer builds the same way; policy endpoints',
    path: '^engine/(training/|endpoints/(endpointPolicy|endpointClient|policySource|journal)\\.ts$)',
  },
  { name: 'algorithms', what: 'seqgrpo, MARS, MARTI', path: '^engine/(seqgrpo|mars|marti)/' },
  {
    name: 'run layer',
    what: 'run folders, the run loop, the registry; evaluation with endpoint agents',
    path: '^engine/(runs/|algorithms\\.ts$|endpoints/evaluateEndpoints\\.ts$|endpoints/chat/)',
  },
  {
    name: 'tools',
    what: 'export to and import from verl / MARTI; the Ray jobs client; studies',
    path: '^engine/(interop|ray|studies)/',
  },
  { name: 'api', what: 'the contract, the host, the workers', path: '^engine/api/' },
  {
    name: 'top',
    what: "the command line and what only it starts (serve-model, eval's endpoint branch)",
    path: '^engine/(cli\\.ts$|bin/|commands/|serveModel/|endpoints/evalCommand\\.ts$)',
  },
];

const any = (paths) => paths.map((p) => `(${p})`).join('|');
const ENGINE_KNOWN = any(FLOORS.map((f) => f.path));

/** Floor i may import floors 0..i; one rule per floor forbids everything above it. */
const floorRules = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `${floor.name.replace(/ /g, '-')}-imports-no-floor-above`,
  comment: `${floor.name} (${floor.what}) may not import ${FLOORS.slice(i + 1)
    .map((f) => f.name)
    .join(', ')}.`,
  severity: 'error',
  from: { path: floor.path },
  to: { path: any(FLOORS.slice(i + 1).map((f) => f.path)) },
}));

const WINDOW_ALLOWED = '^engine/(api/contract\\.ts$|api/methods\\.ts$|records/|shared/)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...floorRules,
    {
      name: 'engine-module-has-a-floor',
      comment:
        'Every engine module belongs to a floor: give a new folder or root file one in FLOORS (.dependency-cruiser.cjs).',
      severity: 'error',
      from: { path: '^engine/', pathNot: ENGINE_KNOWN },
      to: {},
    },
    {
      name: 'engine-imports-a-module-with-a-floor',
      comment:
        'Every engine module belongs to a floor: give a new folder or root file one in FLOORS (.dependency-cruiser.cjs).',
      severity: 'error',
      from: {},
      to: { path: '^engine/.*\\.(ts|mjs|js)$', pathNot: ENGINE_KNOWN },
    },
    {
      name: 'leaf-files-import-no-engine',
      comment:
        'userError.ts, boundedText.ts, version.ts and faultPoints.ts are imported by every floor and import none.',
      severity: 'error',
      from: { path: '^engine/(userError|boundedText|version|faultPoints)\\.ts$' },
      to: { path: '^engine/' },
    },
    {
      name: 'shared-is-pure',
      comment:
        'engine/shared/ is loaded by the renderer at run time: it imports nothing outside itself (no Node, no zod).',
      severity: 'error',
      from: { path: '^engine/shared/' },
      to: { pathNot: '^engine/shared/' },
    },
    {
      name: 'records-import-only-zod',
      comment: 'engine/records/ (the run-folder record schemas) imports zod, UserError and itself only.',
      severity: 'error',
      from: { path: '^engine/records/' },
      to: { pathNot: '^(engine/records/|engine/userError\\.ts$|node_modules/zod/)' },
    },
    {
      name: 'algorithms-apart',
      comment: 'One algorithm does not import another: what they share lives in engine/training/ or the foundation.',
      severity: 'error',
      from: { path: '^engine/(seqgrpo|mars|marti)/' },
      to: { path: '^engine/(seqgrpo|mars|marti)/', pathNot: '^engine/$1/' },
    },
    {
      name: 'engine-below-app',
      comment: 'The engine runs without Electron, the windows and the tests.',
      severity: 'error',
      from: { path: '^engine/' },
      to: { path: '^(main|preload|renderer|tests)/' },
    },
    {
      name: 'main-hosts-through-the-api',
      comment: 'Electron main hosts the engine (engine/api/); it does not start the command line or import a window.',
      severity: 'error',
      from: { path: '^main/' },
      to: { path: `(${FLOORS.at(-1).path})|^(renderer|preload)/` },
    },
    {
      name: 'window-sees-the-api-only',
      comment:
        'A window (renderer, preload) takes from the engine only engine/api/contract.ts, engine/api/methods.ts, engine/records/ and engine/shared/; what it shows comes through the API.',
      severity: 'error',
      from: { path: '^(renderer|preload)/' },
      to: { path: '^(engine|main)/', pathNot: WINDOW_ALLOWED },
    },
    {
      name: 'window-takes-types-only',
      comment:
        'engine/api/contract.ts and engine/records/ hold zod schemas: a window imports their types (import type), so zod never reaches the page.',
      severity: 'error',
      from: { path: '^(renderer|preload)/' },
      to: { path: '^engine/(api/contract\\.ts$|records/)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'preload-apart',
      comment: 'The preload and the renderer are separate worlds.',
      severity: 'error',
      from: { path: '^preload/' },
      to: { path: '^(renderer|main)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(out|dist|node_modules)/' },
    // keeps `import type` edges (marked type-only), so the rules see what the type checker sees
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

// For scripts/deps.mjs (not enumerable: dependency-cruiser checks the configuration's own keys).
Object.defineProperty(module.exports, 'floors', { value: FLOORS, enumerable: false });
