/** The type of mountedProps.svelte.js (the tests' type check reads no JavaScript): the mounted component's props. */
export declare const props: Record<string, unknown>;
