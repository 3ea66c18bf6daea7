#!/usr/bin/env node
// Entry point of `npx mars-lab`: the engine is TypeScript, run through tsx's loader (Node 20 cannot strip types).
import { register } from 'tsx/esm/api';

register();
await import('../cli.ts');
