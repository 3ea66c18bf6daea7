/**
 * `serve-model`: a mars-lab checkpoint, or a real model with its chat template (issue 30, item 8), as an
 * OpenAI-compatible endpoint (engine/serveModel/), so anything that speaks the OpenAI API — and mars-lab's own
 * endpoint agents (engine/policy/) — can use it. Loopback only unless `--allow-remote`, like `serve`; the API key is a
 * random token printed at start (or read from --token-env).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { resolveBindHost, sshTunnelAdvice } from '../api/web/webServer';
import { loadCheckpoint } from '../model/formats/checkpoint';
import { checkpointTokenizerFile } from '../model/formats/checkpointFiles';
import { loadTokenizer } from '../model/tokenizers/tokenizer';
import { loadRealModel } from '../model/realModel';
import { startModelServer, type ModelServerOptions } from '../serveModel/server';
import { initBackend, type BackendName } from '../tensor/backend';
import { UserError } from '../base/userError';
import { backendOption, portNumber } from './options';
import { resolveModelPath } from './modelUseCommands';
import { untilStopSignal } from './stopSignal';

function count(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 4096) {
    throw new InvalidArgumentError('expected a whole number from 1 to 4096');
  }
  return Number(v);
}

interface ServeModelOptions {
  checkpoint: string;
  port: number;
  host: string;
  allowRemote?: boolean;
  modelName?: string;
  tokenEnv?: string;
  maxBatch: number;
  json?: boolean;
  backend?: BackendName;
}

/** A mars-lab checkpoint and the tokenizer it carries. */
async function loadOwnCheckpoint(
  dir: string,
  tokFile: string,
): Promise<Pick<ModelServerOptions, 'model' | 'tokenizer'>> {
  const tokenizer = await loadTokenizer(tokFile);
  const { model } = await loadCheckpoint(dir);
  if (model.config.vocab_size !== tokenizer.vocabSize) {
    model.dispose();
    throw new UserError(
      `${tokFile}: ${tokenizer.vocabSize} tokens, but the model's vocab_size is ${model.config.vocab_size}; the tokenizer must be the checkpoint's own`,
    );
  }
  return { model, tokenizer };
}

/** A real model (engine/model/realModel.ts): its tokenizer, chat template and end tokens. */
async function loadReal(where: string): Promise<Pick<ModelServerOptions, 'model' | 'tokenizer' | 'real'>> {
  const r = await loadRealModel(where);
  return {
    model: r.model,
    tokenizer: r.tokenizer,
    real: { encoder: r.encoder, stopTokens: r.stopTokens, encode: (text) => r.tokenizer.encodeForModel(text) },
  };
}

export function registerServeModelCommand(program: Command): void {
  program
    .command('serve-model')
    .description(
      'serve a mars-lab checkpoint or a real model (with its chat template) as an OpenAI-compatible endpoint (/v1/models, /v1/completions, /v1/chat/completions); prints the base URL and the API key',
    )
    .requiredOption(
      '--checkpoint <dir>',
      'a checkpoint folder with its mars-lab-tokenizer.json (e.g. <run>/checkpoints/200, resources/mars/base-tiny), or a real model: a .gguf file, an HF folder, or a name model fetch knows (smollm2-135m-instruct)',
    )
    .option('--port <n>', 'port to listen on (0: any free port)', portNumber, 8000)
    .option(
      '--host <address>',
      'interface to bind (default loopback); anything else also needs --allow-remote',
      '127.0.0.1',
    )
    .option(
      '--allow-remote',
      `bind --host beyond loopback: cleartext HTTP, the key readable on the network (prefer \`${sshTunnelAdvice(8000)}\`)`,
    )
    .option('--model-name <id>', "the model id clients name (default: the checkpoint folder's name)")
    .option('--token-env <NAME>', 'take the API key from this environment variable instead of a random one')
    .addOption(
      new Option('--max-batch <n>', 'most requests generated together in one batch').argParser(count).default(64),
    )
    .option('--json', 'print {"baseUrl", "model", "token", "port"} as one JSON line')
    .addOption(backendOption())
    .action(async (opts: ServeModelOptions) => {
      const dir = opts.checkpoint;
      const tokFile = checkpointTokenizerFile(dir);
      // A mars-lab checkpoint carries its own tokenizer file; anything else is a real model (or a name model fetch knows).
      const own = fs.existsSync(tokFile);
      const where = own ? dir : await resolveModelPath(dir);
      if (!own && !where.toLowerCase().endsWith('.gguf') && !fs.existsSync(path.join(where, 'tokenizer.json'))) {
        throw new UserError(
          `${dir}: neither a mars-lab checkpoint (no ${path.basename(tokFile)}) nor a real model (a .gguf file, or an HF folder with tokenizer.json)`,
        );
      }
      let token: string | undefined;
      if (opts.tokenEnv) {
        token = process.env[opts.tokenEnv];
        if (!token) {
          throw new UserError(
            `--token-env ${opts.tokenEnv}: that environment variable is not set (or empty); set it to the API key clients will send`,
          );
        }
      }
      const bind = await resolveBindHost(opts.host, opts.allowRemote ?? false, opts.port);
      if (!bind.loopback) {
        console.error(
          `mars-lab: warning: binding ${opts.host}: other machines can reach port ${opts.port || '(any free)'} over cleartext HTTP and read the API key on the network; prefer the default (127.0.0.1) with an SSH tunnel`,
        );
      }
      await initBackend({ force: opts.backend });
      const loaded = own ? await loadOwnCheckpoint(dir, tokFile) : await loadReal(where);
      const { model } = loaded;
      const modelName = opts.modelName ?? path.basename(path.resolve(dir));
      const server = await startModelServer({
        ...loaded,
        modelName,
        port: opts.port,
        bindHost: opts.host,
        allowRemote: opts.allowRemote ?? false,
        token,
        maxBatch: opts.maxBatch,
      });
      // A key the user gave (--token-env) is never printed: it would end up in terminal logs; a generated one must be.
      if (opts.json) {
        console.log(
          JSON.stringify({
            baseUrl: server.baseUrl,
            model: modelName,
            port: server.port,
            ...(opts.tokenEnv ? { tokenEnv: opts.tokenEnv } : { token: server.token }),
          }),
        );
      } else {
        console.log(`mars-lab serve-model: ${modelName} at ${server.baseUrl}`);
        if (opts.tokenEnv) {
          console.log(
            `  API key: the value of ${opts.tokenEnv} (clients name it with "apiKeyEnv"); Ctrl-C stops the server`,
          );
        } else {
          console.log(
            `  API key: ${server.token}  (e.g. export MARS_LAB_KEY=${server.token}, then "apiKeyEnv": "MARS_LAB_KEY"); Ctrl-C stops the server`,
          );
        }
      }
      await untilStopSignal();
      await server.close();
      model.dispose();
    });
}
