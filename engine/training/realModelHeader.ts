/**
 * A real model's architecture from its header alone (nothing allocated), for the memory plans of the runs that train
 * one (chatgrpo, martipy) and the launch form that shows them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { LlamaConfig } from '../model/config';
import { describeModel } from '../model/modelInfo';

/**
 * A model's architecture from its header, kept per file while the file is unchanged: the launch form validates on
 * every edit, and reading a GGUF's header (its whole vocabulary) takes ~0.1 s for SmolLM2-135M. A folder is stamped by
 * its config.json.
 */
const headers = new Map<string, { stamp: string; config: LlamaConfig | null }>();
export async function modelHeaderConfig(where: string): Promise<LlamaConfig | null> {
  const folder = fs.statSync(where).isDirectory();
  const st = fs.statSync(folder ? path.join(where, 'config.json') : where);
  const stamp = `${st.mtimeMs}:${st.size}`;
  const kept = headers.get(where);
  if (kept?.stamp === stamp) return kept.config;
  const { config } = await describeModel(where);
  headers.set(where, { stamp, config });
  return config;
}
