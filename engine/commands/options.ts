/** Options several commands share. */
import { Option } from 'commander';
import { BACKENDS } from '../tensor/backend';

export const homeOption = () => new Option('--home <dir>', 'the mars-lab home folder (default: $MARS_LAB_HOME, else ~/mars-lab)');

export const backendOption = () =>
  new Option('--backend <name>', 'force a TensorFlow.js backend instead of the automatic choice').choices([...BACKENDS]);

/** Repeatable `--set path=value` config overrides, collected in order. */
export const setOption = (example: string) =>
  new Option('--set <path=value>', `override a config field, e.g. --set ${example} (repeatable)`).argParser((v: string, prev: string[] = []) => [...prev, v]).default([]);
