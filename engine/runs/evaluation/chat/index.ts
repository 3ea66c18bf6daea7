/**
 * The instruction templates of the algorithms that take endpoint agents: which chat dialect an evaluation's
 * EndpointPolicy gets (engine/policy/endpointPolicy.ts), built over the evaluation's own tokenizer.
 */
import { MarsFormat } from '../../../mars/format';
import { MartiFormat } from '../../../marti/format';
import type { Tokenizer } from '../../../model/tokenizers/tokenizer';
import type { ChatDialect } from '../../../policy/endpointPolicy';
import { marsChat } from './marsChat';
import { martiChat } from './martiChat';

/** `natural`: MARS on generated worlds, whose token-form text a real model reads as prose (naturalText.ts). */
export function chatDialectFor(
  algorithm: 'mars' | 'marti',
  tokenizer: Tokenizer,
  o: { natural?: boolean } = {},
): ChatDialect {
  return algorithm === 'mars' ? marsChat(new MarsFormat(tokenizer), o) : martiChat(new MartiFormat(tokenizer));
}
