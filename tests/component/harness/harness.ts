/**
 * Component-test harness page script (driven by openHarness in tests/component/harness.ts): mounts one of the inspector
 * components (or the launch form's StudyTarget) with props given by the test, in the same headless Chromium as the
 * browser tests, served by Vite's dev server. It lives with the tests, not in the app's source: only index.html beside
 * it loads it.
 *
 * window.__mount(name, props) mounts (replacing what was mounted); window.__update(props) changes some props in place,
 * as new records arriving would; window.__props() reads them back, with what a component wrote into a bound one.
 *
 * It is type-checked with the tests (tsconfig.json: Node's types, no DOM library), so the two page globals it uses are
 * declared here, for this module only; the props' $state lives in mountedProps.svelte.js.
 */
import { mount, unmount, type Component } from 'svelte';
import EpisodeInspector from '../../../renderer/src/components/EpisodeInspector.svelte';
import EpisodeView from '../../../renderer/src/components/EpisodeView.svelte';
import StudyTarget from '../../../renderer/src/components/launch/StudyTarget.svelte';
import MetricChart from '../../../renderer/src/components/MetricChart.svelte';
import OverlayChart from '../../../renderer/src/components/OverlayChart.svelte';
import TokenStrip from '../../../renderer/src/components/TokenStrip.svelte';
import TreeExplorer from '../../../renderer/src/components/TreeExplorer.svelte';
import TreeView from '../../../renderer/src/components/TreeView.svelte';
import { props } from './mountedProps.svelte.js';

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
  StudyTarget: withJsonProps(StudyTarget),
  TokenStrip: withJsonProps(TokenStrip),
  TreeExplorer: withJsonProps(TreeExplorer),
  TreeView: withJsonProps(TreeView),
};

let current: Record<string, unknown> | null = null;

/** What svelte's mount() takes as its target: a page element (any here, where the DOM library is absent). */
type MountTarget = Parameters<typeof mount>[1]['target'];
declare const document: { getElementById(id: string): MountTarget };
declare const window: {
  __mount(name: string, initial: Record<string, unknown>): void;
  __update(changes: Record<string, unknown>): void;
  __props(): unknown;
  __ready: boolean;
};

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

/** The mounted props as they are now, as JSON: what a component wrote through a bound prop (`$bindable`). */
window.__props = () => JSON.parse(JSON.stringify(props)) as unknown;

window.__ready = true;
