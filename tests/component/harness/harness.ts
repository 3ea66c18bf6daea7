/**
 * Component-test harness (tests/component): mounts one of the inspector components with props given by the test, in
 * the same headless Chromium as the browser tests, served by Vite's dev server. Not part of the app's build (only
 * tests/component/harness/index.html loads it).
 *
 * window.__mount(name, props) mounts (replacing what was mounted); window.__update(props) changes some props in place,
 * as new records arriving would.
 */
import { mount, unmount, type Component } from 'svelte';
import EpisodeInspector from '../components/EpisodeInspector.svelte';
import EpisodeView from '../components/EpisodeView.svelte';
import MetricChart from '../components/MetricChart.svelte';
import OverlayChart from '../components/OverlayChart.svelte';
import TokenStrip from '../components/TokenStrip.svelte';
import TreeExplorer from '../components/TreeExplorer.svelte';
import TreeView from '../components/TreeView.svelte';

/** A component that takes its props as JSON from the test: their types are the test's promise, not checked here. */
type JsonPropsComponent = Component<Record<string, unknown>>;
const withJsonProps = <P extends object>(component: Component<P>): JsonPropsComponent =>
  component as unknown as JsonPropsComponent;

// Each component's props are checked where it is used; here they arrive as JSON from the test.
const components: Record<string, JsonPropsComponent> = {
  EpisodeInspector: withJsonProps(EpisodeInspector),
  EpisodeView: withJsonProps(EpisodeView),
  MetricChart: withJsonProps(MetricChart),
  OverlayChart: withJsonProps(OverlayChart),
  TokenStrip: withJsonProps(TokenStrip),
  TreeExplorer: withJsonProps(TreeExplorer),
  TreeView: withJsonProps(TreeView),
};

let current: Record<string, unknown> | null = null;
const props: Record<string, unknown> = $state({});

declare global {
  interface Window {
    __mount(name: string, initial: Record<string, unknown>): void;
    __update(changes: Record<string, unknown>): void;
    __ready: boolean;
  }
}

window.__mount = (name, initial) => {
  const component = components[name];
  if (!component) throw new Error(`harness: no component ${name} (have ${Object.keys(components).join(', ')})`);
  if (current) void unmount(current);
  for (const key of Object.keys(props)) delete props[key];
  Object.assign(props, initial);
  current = mount(component, { target: document.getElementById('root')!, props });
};

window.__update = (changes) => {
  Object.assign(props, changes);
};

window.__ready = true;
