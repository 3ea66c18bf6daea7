/**
 * The root of a `marti.tree` record's nodes (engine/records/marti.ts martiNodeSchema) for a tree built from something
 * other than a MARTI run of this engine: node 0 stands for the problem, with no parent, agent, program, test outcome,
 * search trace or training. Two places build such trees: `import marti` (engine/interop/import/martiTrees.ts: the root
 * holds the problem's prompt and scores 0, as mars-lab's own search trees have it) and the window's code trees of
 * Python (renderer/src/lib/codeTrees.ts: no prompt, no score). The fields stand in the schema's order, the order an
 * imported record is written in.
 *
 * Pure (no imports): the renderer loads it.
 */
export function martiTreeRoot(prompt: string | null, score: number | null) {
  return {
    id: 0,
    parentId: null,
    depth: 0,
    agent: null,
    paramId: null,
    prompt,
    completion: null,
    program: null,
    feedback: null,
    parseError: null,
    finish: null,
    public: null,
    private: null,
    score,
    genObservation: null,
    expansion: null,
    advantage: null,
    shapedReward: null,
    trained: false,
    tokens: 0,
  };
}
