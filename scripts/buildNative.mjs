#!/usr/bin/env node
/**
 * Builds the native matrix-product addon (native/mars_gemm.c, issue 16) with the system's C compiler: no node-gyp,
 * no download. Run by the root `postinstall`, and by hand: `node scripts/buildNative.mjs [--kernel auto|openblas|own]
 * [--out DIR]`.
 *
 * It tries, in order, and keeps the first that compiles AND passes a product check in a separate Node.js process:
 *   1. OpenBLAS (Debian's libopenblas-dev): linked statically when libopenblas.a is there, else dynamically;
 *   2. the project's own blocked kernel (AVX2/FMA chosen at run time where the CPU has it);
 *   3. nothing: the wasm backend keeps its own kernels.
 * It never fails an install: whatever happens it prints one line saying what it built or skipped and why, writes
 * `build.json` next to the addon (read by `doctor`), and exits 0. `--strict` exits 1 when nothing was built.
 *
 * Environment: CC (the compiler, default cc); MARS_LAB_NATIVE_BUILD=auto|openblas|own|off (what to try; default auto);
 * MARS_LAB_OPENBLAS_DIRS (colon-separated prefixes to look for OpenBLAS in, instead of the usual system ones).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The addon's C sources: the matrix products (with the module's registration), the optimiser's fused passes and the
 * transformer's fused ops.
 */
const SOURCES = ['mars_gemm.c', 'mars_adam.c', 'mars_fused.c', 'mars_logsoftmax.c'].map((f) =>
  path.join(ROOT, 'native', f),
);
export const ADDON_NAME = 'mars_native.node';
const KERNELS = ['auto', 'openblas', 'own', 'off'];

function parseArgs(argv) {
  const opts = {
    kernel: process.env.MARS_LAB_NATIVE_BUILD || 'auto',
    out: path.join(ROOT, 'native', 'build'),
    strict: false,
    quiet: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--kernel') opts.kernel = argv[++i];
    else if (a === '--out') opts.out = path.resolve(argv[++i]);
    else if (a === '--strict') opts.strict = true;
    else if (a === '--quiet') opts.quiet = true;
    else if (a === '--postinstall') opts.postinstall = true;
    else throw new Error(`unknown argument '${a}' (use --kernel auto|openblas|own|off, --out DIR, --strict, --quiet)`);
  }
  if (!KERNELS.includes(opts.kernel)) {
    throw new Error(`--kernel / MARS_LAB_NATIVE_BUILD: '${opts.kernel}' is not one of ${KERNELS.join(', ')}`);
  }
  return opts;
}

/** The folder holding node_api.h: the node-api-headers package, else the running Node's own headers. */
function nodeApiHeaders() {
  const candidates = [];
  try {
    const req = createRequire(path.join(ROOT, 'package.json'));
    candidates.push(path.join(path.dirname(req.resolve('node-api-headers/package.json')), 'include'));
  } catch {
    // not installed (e.g. npm ci --omit=dev)
  }
  candidates.push(
    path.resolve(process.execPath, '..', '..', 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node',
  );
  return candidates.find((d) => fs.existsSync(path.join(d, 'node_api.h'))) ?? null;
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  return { ok: r.status === 0 && !r.error, status: r.status, out: r.error ? String(r.error.message) : out };
}

function firstLine(text) {
  const line = text.split('\n').find((l) => /error|not found|cannot|undefined/i.test(l)) ?? text.split('\n')[0] ?? '';
  return line.trim().slice(0, 200);
}

/** Where OpenBLAS might be: [include dir, library dir, extra compiler flags], most specific first. */
function openblasCandidates() {
  const triple = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  const fromEnv = process.env.MARS_LAB_OPENBLAS_DIRS;
  const prefixes =
    fromEnv !== undefined
      ? fromEnv.split(':').filter(Boolean)
      : ['/usr', '/usr/local', '/opt/homebrew/opt/openblas', '/usr/local/opt/openblas', '/opt/OpenBLAS'];
  const out = [];
  for (const p of prefixes) {
    // Debian / Ubuntu: one folder per threading flavour (pthread first: runs set the thread count themselves).
    for (const flavour of ['openblas-pthread', 'openblas-serial', 'openblas-openmp']) {
      out.push({
        include: path.join(p, 'include', triple, flavour),
        lib: path.join(p, 'lib', triple, flavour),
        flags: flavour.endsWith('openmp') ? ['-fopenmp'] : [],
      });
    }
    out.push({ include: path.join(p, 'include', 'openblas'), lib: path.join(p, 'lib64'), flags: [] });
    out.push({ include: path.join(p, 'include', 'openblas'), lib: path.join(p, 'lib'), flags: [] });
    out.push({ include: path.join(p, 'include'), lib: path.join(p, 'lib'), flags: [] });
  }
  return out;
}

/** The first candidate with OpenBLAS's cblas.h and a library: { include, link: [...], linkage } or a reason. */
function findOpenblas() {
  const looked = [];
  for (const c of openblasCandidates()) {
    looked.push(c.include);
    if (!fs.existsSync(path.join(c.include, 'cblas.h')) || !fs.existsSync(path.join(c.include, 'openblas_config.h'))) {
      continue;
    }
    const staticLib = path.join(c.lib, 'libopenblas.a');
    const shared = ['libopenblas.so', 'libopenblas.dylib']
      .map((f) => path.join(c.lib, f))
      .find((f) => fs.existsSync(f));
    const variants = [];
    if (fs.existsSync(staticLib)) {
      variants.push({ linkage: 'static', lib: staticLib, link: [...c.flags, staticLib, '-lpthread', '-lm'] });
    }
    if (shared) {
      variants.push({
        linkage: 'dynamic',
        lib: shared,
        link: [...c.flags, `-L${c.lib}`, '-lopenblas', `-Wl,-rpath,${c.lib}`, '-lm'],
      });
    }
    if (variants.length) return { include: c.include, variants };
  }
  return {
    reason: `OpenBLAS not found (no cblas.h with openblas_config.h in ${[...new Set(looked)].slice(0, 4).join(', ')}${looked.length > 4 ? ', …' : ''}; Debian: apt-get install libopenblas-dev)`,
  };
}

/** Loads a freshly built addon in a child Node.js process and checks a 3×2·2×4 product in every transpose combination. */
function verify(file) {
  const script = `
    const m = require(${JSON.stringify(file)});
    const [M, N, K] = [3, 4, 2];
    for (const ta of [false, true]) for (const tb of [false, true]) {
      const buf = new ArrayBuffer(4 * 64), f = new Float32Array(buf);
      const A = (i, p) => i + 2 * p + 1, B = (p, j) => p - j + 0.5;
      for (let i = 0; i < M; i++) for (let p = 0; p < K; p++) f[ta ? p * M + i : i * K + p] = A(i, p);
      for (let p = 0; p < K; p++) for (let j = 0; j < N; j++) f[16 + (tb ? j * K + p : p * N + j)] = B(p, j);
      m.gemm(buf, 0, 64, 128, M, N, K, ta, tb, null, -1, 0, 0, 0, -1, 0);
      for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
        let s = 0; for (let p = 0; p < K; p++) s += A(i, p) * B(p, j);
        if (f[32 + i * N + j] !== s) throw new Error('wrong product at ' + [ta, tb, i, j]);
      }
    }
    process.stdout.write(JSON.stringify(m.info()));`;
  const r = run(process.execPath, ['-e', script], { timeout: 60_000 });
  if (!r.ok) return { ok: false, reason: `built but failed its check: ${firstLine(r.out)}` };
  try {
    return { ok: true, info: JSON.parse(r.out.split('\n').pop()) };
  } catch {
    return { ok: false, reason: `built but its check printed no info: ${firstLine(r.out)}` };
  }
}

function compile(cc, headers, extra, link, outFile) {
  const platformFlags = process.platform === 'darwin' ? ['-undefined', 'dynamic_lookup'] : [];
  const args = [
    '-O3',
    '-std=c11',
    '-D_GNU_SOURCE',
    '-fPIC',
    '-shared',
    '-fvisibility=hidden',
    ...platformFlags,
    `-I${headers}`,
    ...extra,
    '-o',
    outFile,
    ...SOURCES,
    ...link,
  ];
  if (process.platform === 'linux') args.push('-Wl,--gc-sections', '-s');
  const r = run(cc, args);
  return { ok: r.ok, reason: r.ok ? '' : `${cc} failed: ${firstLine(r.out)}`, command: [cc, ...args].join(' ') };
}

/** Builds into opts.out; returns the record written to build.json. */
export function buildNative(opts) {
  const cc = process.env.CC || 'cc';
  const record = {
    kernel: 'none',
    reasons: [],
    compiler: cc,
    builtAt: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
  const finish = (kernel, extra = {}) => Object.assign(record, { kernel }, extra);
  if (opts.kernel === 'off') return finish('none', { reasons: ['MARS_LAB_NATIVE_BUILD=off'] });
  if (process.platform === 'win32') {
    return finish('none', { reasons: ['Windows: the addon is built with a Unix C compiler only'] });
  }
  const headers = nodeApiHeaders();
  if (!headers) {
    return finish('none', {
      reasons: ['no Node-API headers (node-api-headers is a devDependency; or the Node.js include folder)'],
    });
  }
  const probe = run(cc, ['--version']);
  if (!probe.ok) {
    const why = probe.status === null ? firstLine(probe.out) || 'not found' : `exit status ${probe.status}`;
    return finish('none', {
      reasons: [`no C compiler: '${cc} --version' failed (${why}); set CC or install one (Debian: build-essential)`],
    });
  }
  record.compilerVersion = probe.out.split('\n')[0];

  fs.mkdirSync(opts.out, { recursive: true });
  const tmp = path.join(opts.out, `.building-${process.pid}.node`);
  const target = path.join(opts.out, ADDON_NAME);
  const attempts = [];
  if (opts.kernel === 'auto' || opts.kernel === 'openblas') {
    const found = findOpenblas();
    if (found.reason) record.reasons.push(found.reason);
    else {
      for (const v of found.variants) {
        attempts.push({
          kernel: 'openblas',
          label: `OpenBLAS (${v.linkage}, ${v.lib})`,
          extra: ['-DMARS_WITH_OPENBLAS', `-I${found.include}`],
          link: v.link,
          openblas: { include: found.include, lib: v.lib, linkage: v.linkage },
        });
      }
    }
  }
  if (opts.kernel === 'auto' || opts.kernel === 'own') {
    attempts.push({ kernel: 'own', label: 'own kernel', extra: [], link: ['-lm'] });
  }
  try {
    for (const a of attempts) {
      const c = compile(cc, headers, a.extra, a.link, tmp);
      if (!c.ok) {
        record.reasons.push(`${a.label}: ${c.reason}`);
        continue;
      }
      const v = verify(tmp);
      if (!v.ok) {
        record.reasons.push(`${a.label}: ${v.reason}`);
        continue;
      }
      fs.renameSync(tmp, target);
      return finish(a.kernel, {
        file: target,
        info: v.info,
        command: c.command.replace(tmp, target),
        ...(a.openblas ? { openblas: a.openblas } : {}),
      });
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  if (opts.kernel !== 'auto') {
    record.reasons.push(`MARS_LAB_NATIVE_BUILD / --kernel ${opts.kernel} allowed nothing else`);
  }
  return finish('none');
}

function summary(r) {
  if (r.kernel === 'openblas') {
    return `mars-lab native kernels: built with OpenBLAS (${r.openblas.linkage}, core ${r.info?.openblasCore ?? '?'})`;
  }
  if (r.kernel === 'own') {
    return `mars-lab native kernels: built with the own kernel (${r.info?.microkernel}); ${r.reasons.join('; ')}`;
  }
  return `mars-lab native kernels: skipped, the wasm backend keeps its own kernels — ${r.reasons.join('; ')}`;
}

function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`mars-lab native kernels: ${err.message}`);
    process.exitCode = 2;
    return;
  }
  let record;
  try {
    record = buildNative(opts);
  } catch (err) {
    record = { kernel: 'none', reasons: [`the build script failed: ${String(err?.message ?? err).split('\n')[0]}`] };
  }
  try {
    fs.mkdirSync(opts.out, { recursive: true });
    // A stale addon from an earlier build must not outlive a build that produced none.
    if (record.kernel === 'none') fs.rmSync(path.join(opts.out, ADDON_NAME), { force: true });
    fs.writeFileSync(path.join(opts.out, 'build.json'), JSON.stringify(record, null, 2) + os.EOL);
  } catch (err) {
    record.reasons.push(`could not write ${opts.out}: ${err.message}`);
  }
  if (!opts.quiet) console.log(summary(record));
  if (opts.strict && record.kernel === 'none') process.exitCode = 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
