/** File names of a checkpoint folder; a module of its own so hosts that must not load TensorFlow.js can use them. */
export const CONFIG_FILE = 'config.json';
export const WEIGHTS_FILE = 'model.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
export const TRAINER_STATE_FILE = 'trainer_state.json';
/** What makes a checkpoint folder complete enough to load. */
export const CHECKPOINT_REQUIRED_FILES = [CONFIG_FILE, WEIGHTS_FILE] as const;
