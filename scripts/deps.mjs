/**
 * `npm run deps`: the floors' dependency graph, folder by folder from the top floor down, then the check of the floors'
 * rules (.dependency-cruiser.cjs, run by dependency-cruiser). Exits 1 when an import goes up a floor (or breaks another
 * rule), naming each one; 0 when there is none. `--json` prints the check's result as JSON instead (the floors test);
 * `--cwd DIR` checks the tree in DIR (another checkout, an old commit's worktree) with this checkout's rules.
 *
 * A folder whose modules sit on different floors (engine/endpoints/) is listed file by file.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const CONFIG = path.join(root, '.dependency-cruiser.cjs');
const SOURCES = ['engine', 'main', 'preload', 'renderer/src'];

/** Cruises the sources with the floors' rules; returns dependency-cruiser's JSON result. */
export function cruise(cwd = root, config = CONFIG) {
  const bin = path.join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const sources = SOURCES.filter((s) => spawnSync('test', ['-d', path.join(cwd, s)]).status === 0);
  const r = spawnSync(process.execPath, [bin, ...sources, '--config', config, '--output-type', 'json'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  if (!r.stdout.trim().startsWith('{')) {
    throw new Error(`dependency-cruiser failed (exit ${r.status}): ${r.stderr.trim() || r.stdout.trim()}`);
  }
  return JSON.parse(r.stdout);
}

/** The floors, bottom to top, with the app (main, preload, renderer) on top. */
function floorsOf(config = CONFIG) {
  const floors = require(config).floors.map((f) => ({ ...f, re: new RegExp(f.path) }));
  return [
    ...floors,
    { name: 'app', what: 'Electron main and the windows (preload, renderer)', re: /^(main|preload|renderer)\// },
  ];
}

const folderOf = (p) => {
  const m = /^(engine\/[^/]+\/|main\/|preload\/|renderer\/src\/)/.exec(p);
  return m ? m[1].replace(/\/$/, '') : p;
};

function printGraph(result, floors) {
  const floorIndex = (p) => floors.findIndex((f) => f.re.test(p));
  const local = result.modules.filter((m) => floorIndex(m.source) >= 0);
  // a folder whose modules sit on more than one floor is shown file by file
  const floorsByFolder = new Map();
  for (const m of local) {
    const f = folderOf(m.source);
    floorsByFolder.set(f, (floorsByFolder.get(f) ?? new Set()).add(floorIndex(m.source)));
  }
  const unitOf = (p) => (floorsByFolder.get(folderOf(p))?.size > 1 ? p : folderOf(p));
  const edges = new Map();
  for (const m of local) {
    const from = unitOf(m.source);
    if (!edges.has(from)) edges.set(from, new Map());
    for (const d of m.dependencies) {
      if (floorIndex(d.resolved) < 0) continue;
      const to = unitOf(d.resolved);
      if (to === from) continue;
      const typeOnly = d.dependencyTypes.includes('type-only');
      const seen = edges.get(from).get(to);
      edges.get(from).set(to, seen === undefined ? typeOnly : seen && typeOnly);
    }
  }
  const lines = ['The floors, top to bottom: a floor imports only the floors below it (.dependency-cruiser.cjs).', ''];
  for (let i = floors.length - 1; i >= 0; i--) {
    const units = [...edges.keys()]
      .filter((u) => floorIndex(u.includes('.') ? u : `${u}/`) === i || floorIndex(u) === i)
      .sort();
    lines.push(`${floors[i].name}: ${floors[i].what}`);
    for (const u of units) {
      const to = [...edges.get(u).entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([t, typeOnly]) => (typeOnly ? `${t} (types)` : t));
      lines.push(`  ${u.padEnd(42)} → ${to.length ? to.join(', ') : '(nothing)'}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

function printViolations(result) {
  const v = result.summary.violations;
  const head = `${result.summary.totalCruised} modules, ${result.summary.totalDependenciesCruised} dependencies`;
  if (v.length === 0) return `✔ no upward import, no other floor rule broken (${head})`;
  return [
    `✘ ${v.length} dependency rule${v.length === 1 ? '' : 's'} broken (${head}):`,
    ...v.map((x) => `  ${x.rule.name}: ${x.from} → ${x.to}`),
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--cwd');
  const result = cruise(at > 0 ? path.resolve(process.argv[at + 1]) : root);
  if (process.argv.includes('--json')) {
    console.log(
      JSON.stringify({ summary: { violations: result.summary.violations, totalCruised: result.summary.totalCruised } }),
    );
  } else {
    console.log(printGraph(result, floorsOf()));
    console.log(printViolations(result));
  }
  process.exit(result.summary.violations.length === 0 ? 0 : 1);
}
