/** Types of buildStamp.mjs (plain JavaScript, run before the build's tools are loaded). */
export declare const STAMP: string;
export declare function sourceDigest(): string;
export declare function isBuildFresh(): { fresh: true } | { fresh: false; reason: string };
