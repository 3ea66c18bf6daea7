/**
 * Hash routing: `#/runs`, `#/launch`, `#/launch?from=<runId>` (clone), `#/launch?preset=<name>`, `#/run/<runId>`,
 * `#/run/<runId>/<tab>` (a tab of the run page: charts, episodes, tree, diversity, replies), `#/compare?a=<runId>@<step>&b=…`,
 * `#/models` (the models mars-lab knows and their cards), `#/code-trees?dir=<folder>&search=plain|tplus&problem=<id>`
 * (trees of Python programs `mars-lab code tree` grew).
 * `#/run/<runId>/episodes?step=N` and `#/run/<runId>/tree?step=N` open that step's trajectories (`#/runs/<runId>/…` is
 * the same route).
 * The hash keeps the page's query (web mode's token) untouched and works the same over file:// in Electron.
 *
 * Adding a view: add its name to RouteName, a pattern in parse(), and a branch in App.svelte.
 */
export type RouteName = 'runs' | 'launch' | 'run' | 'compare' | 'models' | 'codeTrees' | 'not-found';

export interface Route {
  name: RouteName;
  /** Path parameters, e.g. { runId } for #/run/<runId>, { runId, tab } for #/run/<runId>/<tab>. */
  params: Record<string, string>;
  query: Record<string, string>;
}

function parse(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [pathPart = '', queryPart = ''] = text.split('?');
  const parts = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  const query = Object.fromEntries(new URLSearchParams(queryPart));
  if (parts.length === 0 || (parts[0] === 'runs' && parts.length === 1)) return { name: 'runs', params: {}, query };
  if (parts[0] === 'launch' && parts.length === 1) return { name: 'launch', params: {}, query };
  if (parts[0] === 'runs' && (parts.length === 2 || parts.length === 3)) parts[0] = 'run';
  if (parts[0] === 'run' && parts.length === 2) return { name: 'run', params: { runId: parts[1]! }, query };
  if (parts[0] === 'run' && parts.length === 3) {
    return { name: 'run', params: { runId: parts[1]!, tab: parts[2]! }, query };
  }
  if (parts[0] === 'compare' && parts.length === 1) return { name: 'compare', params: {}, query };
  if (parts[0] === 'models' && parts.length === 1) return { name: 'models', params: {}, query };
  if (parts[0] === 'code-trees' && parts.length === 1) return { name: 'codeTrees', params: {}, query };
  return { name: 'not-found', params: {}, query };
}

export const route = $state<Route>(parse(location.hash));

window.addEventListener('hashchange', () => {
  const next = parse(location.hash);
  route.name = next.name;
  route.params = next.params;
  route.query = next.query;
});

/** The href of a route, for links: href(['run', id]) → '#/run/<id>'. */
export function href(parts: readonly string[], query: Record<string, string> = {}): string {
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- built and turned into text at once, never kept or changed
  const q = new URLSearchParams(query).toString();
  return `#/${parts.map(encodeURIComponent).join('/')}${q ? `?${q}` : ''}`;
}

export function go(parts: readonly string[], query: Record<string, string> = {}): void {
  location.hash = href(parts, query);
}
