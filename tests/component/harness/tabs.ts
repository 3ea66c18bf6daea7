/**
 * Tab harness for the component tests (tests/component/tabsHarness.ts, page tabs.html beside it), kept with the tests,
 * not in the app's source: the Run page's trajectory tabs over a real host in the test's Node process. window.api
 * forwards every call to the page's exposed `__hostCall` (the host validates it as the app's transports do) and takes
 * events from `__hostEvent`; it is set before the tabs load, as Electron's preload would.
 *
 * window.__mountTab(name, props) mounts EpisodesTab or TreeTab.
 *
 * It is type-checked with the tests (tsconfig.json: Node's types, no DOM library), so the page globals it uses are
 * declared here, for this module only.
 */
import { mount, unmount, type Component } from 'svelte';
import type { ApiEvent, MarsLabApi } from '../../../engine/api/contract/contract';
import { API_METHODS } from '../../../engine/api/contract/methods';

/** What svelte's mount() takes as its target: a page element (any here, where the DOM library is absent). */
type MountTarget = Parameters<typeof mount>[1]['target'];
declare const document: { getElementById(id: string): MountTarget };
declare const window: {
  __hostCall(method: string, params: unknown): Promise<{ ok: true; value: unknown } | { ok: false; message: string }>;
  __hostEvent(event: ApiEvent): void;
  __mountTab(name: string, props: Record<string, unknown>): Promise<void>;
  __tabsReady: boolean;
};

const listeners = new Set<(event: ApiEvent) => void>();
const api: Record<string, unknown> = {
  onEvent(listener: (event: ApiEvent) => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
for (const method of API_METHODS) {
  api[method] = async (params?: unknown) => {
    const answer = await window.__hostCall(method, params ?? {});
    if (!answer.ok) throw new Error(answer.message);
    return answer.value;
  };
}
(window as unknown as { api: MarsLabApi }).api = api as unknown as MarsLabApi;
window.__hostEvent = (event) => {
  for (const l of listeners) l(event);
};

/** A component that takes its props as JSON from the test: their types are the test's promise, not checked here. */
type JsonPropsComponent = Component<Record<string, unknown>>;
const withJsonProps = <P extends object>(component: Component<P>): JsonPropsComponent =>
  component as unknown as JsonPropsComponent;

let current: Record<string, unknown> | null = null;
window.__mountTab = async (name, props) => {
  // imported only now: the connection module reads window.api when it loads
  // the props arrive as JSON from the test; each tab checks its own where it is used in the app
  const component =
    name === 'EpisodesTab'
      ? withJsonProps((await import('../../../renderer/src/views/EpisodesTab.svelte')).default)
      : withJsonProps((await import('../../../renderer/src/views/TreeTab.svelte')).default);
  if (current) await unmount(current);
  current = mount(component, { target: document.getElementById('root')!, props });
};
window.__tabsReady = true;
