/**
 * The props of the component the harness (harness.ts) has mounted: a $state proxy, so that window.__update changes
 * them in place, as new records arriving would. A rune needs a .svelte.js or .svelte.ts module; this one is JavaScript
 * because the project's lint parses .svelte.ts files with TypeScript only under renderer/ (eslint.config.js). Its type
 * is in mountedProps.svelte.d.ts, for the tests' type check.
 */

/** @type {Record<string, unknown>} */
export const props = $state({});
