/** Options several commands share. */
import { Option } from 'commander';
import { BACKENDS } from '../tensor/backend';

export const homeOption = () => new Option('--home <dir>', 'the mars-lab home folder (default: $MARS_LAB_HOME, else ~/mars-lab)');

export const backendOption = () =>
  new Option('--backend <name>', 'force a TensorFlow.js backend instead of the automatic choice').choices([...BACKENDS]);
