/** Types of builtEntry.mjs (plain JavaScript: it runs before any TypeScript loader). */
export declare const BUILT_ENTRY: string;
export declare const BUILD_RECORD: string;
export declare const SOURCE_ENTRY: string;
export interface BuildRecord {
  version: 1;
  builtAt: number;
  entry: string;
  sources: string[];
}
export type EntryChoice = { kind: 'built'; file: string } | { kind: 'sources'; file: string; reason: string };
export declare function readBuildRecord(root: string): BuildRecord | null;
export declare function chooseEntry(root: string, env?: NodeJS.ProcessEnv): EntryChoice;
