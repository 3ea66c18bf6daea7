/**
 * The floors of mars-lab as dependency-cruiser rules. `npm run deps` (scripts/deps.mjs) prints the graph floor by floor
 * and fails on any violation; tests/unit/floors.test.ts runs the same check. A floor may import the floors below it and
 * never one above, so an algorithm cannot reach into the run layer and the run layer can add or replace an algorithm
 * freely. Type-only imports count: a module that needs another floor's type belongs above it.
 *
 * Each floor is one or a few whole folders of engine/, so a module's floor is read from its path (the first folder
 * below engine/). Bottom to top (FLOORS below: a new engine folder must be given a floor, or `npm run deps` fails):
 *   leaves      base/ (the user-error class, bounded text, the version, fault points, the project root: no engine
 *               imports), records/ (the run-folder record schemas: zod and base/ only), pure/ (imports nothing outside
 *               itself: the renderer loads it), random/ (seeded streams), fetch/ (a file from a package on the package
 *               index, cached and digest-checked)
 *   tensor      tensor/ (the backend; tensor/native/, the native addon and kernels, imports nothing else of tensor/)
 *   model       model/ (the transformer and sampler; model/tokenizers/, model/formats/ for checkpoints and weights,
 *               model/chat/ for chat templates)
 *   rl, scoring rl/, scoring/ (answer scoring, paired statistics), code/ (model-written Python in a sandbox, task files)
 *   training    training/ (the Algorithm contract, shared config sections, configuredTraining, the memory budget),
 *               policy/ (where a policy's tokens come from: the run's model or an OpenAI-compatible endpoint)
 *   algorithms  seqgrpo/, mars/, marti/, chatgrpo/ (none imports another)
 *   run layer   runs/: config/, presets/, folder/, summary/, trajectories/, evaluation/ (with endpoint agents and the
 *               chat instructions that teach them the format), watch/, the registry and the run loop
 *   tools       interop/ (export to and import from verl / MARTI), cluster/ (the Ray jobs client, studies: the command
 *               line and the app's cluster methods both start them)
 *   api         api/: contract/, host/ (the host and its methods per resource), web/, workers/, cluster/ and
 *               endpointEval/ (the host's methods for them), views/ (what the host computes for windows)
 *   top         bin/, commands/ (the command line, cli.ts), serveModel/
 * and the app: main/ (Electron main hosts the engine through the API: anything but the top floor); the windows,
 * preload/ and renderer/, take from the engine only engine/api/contract/ and engine/records/ as types (import type,
 * so zod never reaches the page), engine/api/contract/methods.ts and engine/pure/; what they show comes through the API.
 *
 * Paths are from the project root. dependency-cruiser sees a .svelte file's imports after compilation, so `import type`
 * in a component is invisible to it (harmless: erased) while a value import is seen and checked.
 */

/** Bottom to top. `path`: a regular expression on the module's path; `name` and `what` are what `npm run deps` prints. */
const FLOORS = [
  {
    name: 'leaves',
    what: 'no engine imports but base/ (records: zod only; pure: nothing outside itself)',
    path: '^engine/(base|records|pure|random|fetch)/',
  },
  { name: 'tensor', what: 'the TensorFlow.js backend, tensor helpers, the native kernels', path: '^engine/tensor/' },
  {
    name: 'model',
    what: 'the transformer, sampler, log-probs; tokenizers; checkpoint and weight formats',
    path: '^engine/model/',
  },
  {
    name: 'rl and scoring',
    what: 'advantages, losses, Adam, the policy update; answer scoring and paired statistics; model-written code in a sandbox',
    path: '^engine/(rl|scoring|code)/',
  },
  {
    name: 'training',
    what: "the Algorithm contract and what every trainer builds the same way; where a policy's tokens come from",
    path: '^engine/(training|policy)/',
  },
  { name: 'algorithms', what: 'seqgrpo, MARS, MARTI, chatgrpo', path: '^engine/(seqgrpo|mars|marti|chatgrpo)/' },
  {
    name: 'run layer',
    what: 'run folders, the run loop, the registry, summaries, trajectories, evaluation, the watcher',
    path: '^engine/runs/',
  },
  {
    name: 'tools',
    what: 'export to and import from verl / MARTI; cluster work (the Ray jobs client, studies)',
    path: '^engine/(interop|cluster)/',
  },
  { name: 'api', what: 'the contract, the host and its methods, web mode, the workers', path: '^engine/api/' },
  {
    name: 'top',
    what: 'the command line and what only it starts (serve-model)',
    path: '^engine/(bin|commands|serveModel)/',
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

const WINDOW_ALLOWED = '^engine/(api/contract/|records/|pure/)';

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
      name: 'base-imports-no-engine',
      comment:
        'engine/base/ (user errors, bounded text, the version, fault points, the root) is imported by every floor and imports no other engine folder.',
      severity: 'error',
      from: { path: '^engine/base/' },
      to: { path: '^engine/', pathNot: '^engine/base/' },
    },
    {
      name: 'leaves-import-only-base',
      comment: 'The leaves (records, pure, random, fetch) import base/ and themselves, no other leaf.',
      severity: 'error',
      from: { path: '^engine/(records|pure|random|fetch)/' },
      to: { path: '^engine/', pathNot: '^engine/(base/|$1/)' },
    },
    {
      name: 'native-kernels-below-the-backend',
      comment:
        'engine/tensor/native/ (the addon and its kernels) is loaded by the backend: it imports nothing else of tensor/.',
      severity: 'error',
      from: { path: '^engine/tensor/native/' },
      to: { path: '^engine/tensor/', pathNot: '^engine/tensor/native/' },
    },
    {
      name: 'pure-is-pure',
      comment:
        'engine/pure/ is loaded by the renderer at run time: it imports nothing outside itself (no Node, no zod).',
      severity: 'error',
      from: { path: '^engine/pure/' },
      to: { pathNot: '^engine/pure/' },
    },
    {
      name: 'records-import-only-zod',
      comment: 'engine/records/ (the run-folder record schemas) imports zod, UserError and itself only.',
      severity: 'error',
      from: { path: '^engine/records/' },
      to: { pathNot: '^(engine/records/|engine/base/userError\\.ts$|node_modules/zod/)' },
    },
    {
      name: 'algorithms-apart',
      comment: 'One algorithm does not import another: what they share lives in engine/training/ or the foundation.',
      severity: 'error',
      from: { path: '^engine/(seqgrpo|mars|marti|chatgrpo)/' },
      to: { path: '^engine/(seqgrpo|mars|marti|chatgrpo)/', pathNot: '^engine/$1/' },
    },
    {
      name: 'no-runtime-circle',
      comment:
        'No module reaches itself through imports that run (type-only imports are erased): a circle decides the order of module initialisation by accident.',
      severity: 'error',
      // a component that draws itself (a recursive Svelte component imports itself) is not a circle
      from: { path: '^((engine|main|preload|renderer)/.+)$' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] }, pathNot: '^$1$' },
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
        'A window (renderer, preload) takes from the engine only engine/api/contract/, engine/records/ and engine/pure/; what it shows comes through the API.',
      severity: 'error',
      from: { path: '^(renderer|preload)/' },
      to: { path: '^(engine|main)/', pathNot: WINDOW_ALLOWED },
    },
    {
      name: 'window-takes-types-only',
      comment:
        'engine/api/contract/ (but methods.ts, the method list) and engine/records/ hold zod schemas: a window imports their types (import type), so zod never reaches the page.',
      severity: 'error',
      from: { path: '^(renderer|preload)/' },
      to: {
        path: '^engine/(api/contract/|records/)',
        pathNot: '^engine/api/contract/methods\\.ts$',
        dependencyTypesNot: ['type-only'],
      },
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
