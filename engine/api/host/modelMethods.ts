/**
 * The host's model methods (issue 33, item 1): the models mars-lab knows, for the Models view. Three sources:
 *
 *   fetch:NAME        the catalogue's models (engine/fetch/catalogue.ts), fetched into the cache or not yet;
 *   base:ALGO/FOLDER  the shipped bases under resources/ (a folder with a config.json);
 *   path:/ABS/PATH    folders and .gguf files the user added, kept in <home>/models.json. A path enters only through
 *                     addModel, checked like every path from a window (hostGuards.ts: inside the home, resources/ or
 *                     MARS_LAB_ALLOW_PATHS, symlinks followed), and is checked again whenever a card is read.
 *
 * A card is `mars-lab model info`'s facts and memory figures for the model (engine/model/modelInfo.ts,
 * engine/training/memoryBudget.ts modelMemory), read from its headers: nothing is loaded. fetchModel brings a catalogue
 * model into the cache with 'modelFetch' progress events to every window; one fetch of a name at a time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { CATALOGUE } from '../../fetch/catalogue';
import { cachedArtefactPath, fetchArtefact } from '../../fetch/fetchArtefact';
import type { FetchReporter } from '../../fetch/fetchProgress';
import { describeModel } from '../../model/modelInfo';
import { modelMemory } from '../../training/memoryBudget';
import type { ApiModelEntry } from '../contract/contract';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { pathProblem, RESOURCES_DIR } from './hostGuards';

type ModelMethods = Pick<ApiHandlers, 'listModels' | 'modelCard' | 'addModel' | 'fetchModel'>;

const MODELS_FILE = 'models.json';
const savedSchema = z.object({ paths: z.array(z.string().min(1).max(4096)).max(1000) });
const BASE_ALGORITHMS = ['mars', 'marti'];

function catalogueModels() {
  return CATALOGUE.filter((a) => a.kind === 'model');
}

function readSaved(home: string): string[] {
  const file = path.join(home, MODELS_FILE);
  if (!fs.existsSync(file)) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    raw = null;
  }
  const parsed = savedSchema.safeParse(raw);
  if (!parsed.success) throw new UserError(`${file}: not a list of model paths ({"paths": [...]}); fix or remove it`);
  return parsed.data.paths;
}

function shippedBases(): ApiModelEntry[] {
  return BASE_ALGORITHMS.flatMap((algo) => {
    const dir = path.join(RESOURCES_DIR, algo);
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .filter((f) => fs.existsSync(path.join(dir, f, 'config.json')))
      .sort()
      .map((f) => ({
        id: `base:${algo}/${f}`,
        name: `${algo}/${f}`,
        kind: 'base' as const,
        description: `a shipped ${algo === 'mars' ? 'MARS' : 'MARTI'} base, pretrained here on toy text (mars-lab's own tokenizer)`,
        path: path.join(dir, f),
        fetched: false,
        bytes: null,
      }));
  });
}

/** Where an id's model lies; a UserError for an id the host does not list, or a path no longer allowed. */
export async function locateModel(ctx: Pick<HostContext, 'home' | 'roots'>, id: string): Promise<string> {
  const [kind, rest] = [id.slice(0, id.indexOf(':')), id.slice(id.indexOf(':') + 1)];
  if (kind === 'fetch') {
    const a = catalogueModels().find((m) => m.name === rest);
    if (!a) throw new UserError(`${id}: no such model in the catalogue`);
    const at = await cachedArtefactPath(a);
    if (!at) throw new UserError(`${id}: not fetched yet (Fetch it first, or run \`mars-lab model fetch ${rest}\`)`);
    return at;
  }
  if (kind === 'base') {
    const base = shippedBases().find((b) => b.id === id);
    if (!base?.path) throw new UserError(`${id}: no such shipped base`);
    return base.path;
  }
  if (!readSaved(ctx.home).includes(rest)) throw new UserError(`${id}: not in the list; add it first`);
  const problem = pathProblem(rest, ctx.roots);
  if (problem) throw new UserError(problem);
  return rest;
}

export function createModelMethods(ctx: HostContext): ModelMethods {
  const fetching = new Set<string>();

  async function list(): Promise<{ models: ApiModelEntry[] }> {
    const fetched = await Promise.all(
      catalogueModels().map(async (a) => {
        const at = await cachedArtefactPath(a);
        return {
          id: `fetch:${a.name}`,
          name: a.name,
          kind: 'fetch' as const,
          description: a.description,
          path: at ?? null,
          fetched: at !== undefined,
          bytes: a.member.bytes,
        };
      }),
    );
    const added = readSaved(ctx.home).map((p) => ({
      id: `path:${p}`,
      name: path.basename(p),
      kind: 'path' as const,
      description: fs.existsSync(p) ? `added: ${p}` : `added, but no longer there: ${p}`,
      path: p,
      fetched: false,
      bytes: null,
    }));
    return { models: [...fetched, ...shippedBases(), ...added] };
  }

  return {
    listModels: list,

    async modelCard({ id, rows, seq, loraRank }) {
      const where = await locateModel(ctx, id);
      const info = await describeModel(where);
      const memory = info.config
        ? modelMemory(info.config, { sampleRows: rows, trainRows: rows, seq, loraRank })
        : null;
      const { config: _config, ...facts } = info;
      return { id, ...facts, memory };
    },

    async addModel({ path: given }) {
      const problem = pathProblem(given, ctx.roots);
      if (problem) throw new UserError(problem);
      const abs = fs.realpathSync(path.resolve(given));
      const st = fs.statSync(abs);
      const isGguf = st.isFile() && abs.toLowerCase().endsWith('.gguf');
      if (!isGguf && !(st.isDirectory() && fs.existsSync(path.join(abs, 'config.json')))) {
        throw new UserError(`${given}: neither a .gguf file nor a model folder with a config.json`);
      }
      await describeModel(abs); // refuses what model info cannot read, with its line
      const saved = readSaved(ctx.home);
      if (!saved.includes(abs)) {
        fs.mkdirSync(ctx.home, { recursive: true });
        fs.writeFileSync(path.join(ctx.home, MODELS_FILE), JSON.stringify({ paths: [...saved, abs] }, null, 2) + '\n');
      }
      return list();
    },

    async fetchModel({ name }) {
      const artefact = catalogueModels().find((a) => a.name === name);
      if (!artefact) {
        throw new UserError(
          `${name}: not a model the catalogue knows (${catalogueModels()
            .map((a) => a.name)
            .join(', ')})`,
        );
      }
      if (fetching.has(name)) throw new UserError(`${name}: already being fetched`);
      fetching.add(name);
      const send = (
        phase: 'downloading' | 'verifying' | 'done' | 'failed',
        received: number,
        total: number | null,
        message: string,
      ) => ctx.broadcast({ type: 'modelFetch', name, phase, received, total, message });
      let last = 0;
      const reporter: FetchReporter = {
        phase: (line) => send(/check|verif/i.test(line) ? 'verifying' : 'downloading', 0, null, line),
        bytes: (_label, done, total) => {
          const now = Date.now();
          if (now - last < 200 && done !== total) return;
          last = now;
          send('downloading', done, total ?? null, '');
        },
        endBytes: () => {},
      };
      try {
        const r = await fetchArtefact(artefact, { reporter });
        send('done', r.bytes, r.bytes, r.path);
      } catch (err) {
        send('failed', 0, null, err instanceof Error ? err.message : String(err));
        throw err;
      } finally {
        fetching.delete(name);
      }
      return list();
    },
  };
}
