/**
 * The launch form's "where it runs" section (renderer/src/components/launch/StudyTarget.svelte) in Chromium: a Ray
 * cluster shows the "Shared paths" box, off by default; ticking it writes `sharedPaths` into the bound target, which
 * rayRequest (studyTarget.ts) sends as the startStudy request's `ray.sharedPaths` (issue 33, item 6; the host's side is
 * tests/ray/appStudyForm.test.ts). This machine shows no such box.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, type Harness } from './harness';
import { newStudyTarget, rayRequest, type StudyTarget } from '../../renderer/src/components/launch/studyTarget';

let h: Harness;

/** The target as the component left it (through its bound prop). */
const boundTarget = () =>
  h.page.evaluate(() => (globalThis as unknown as { __props(): { target: StudyTarget } }).__props().target);

describe.skipIf(!haveChromium)('launch form: where it runs', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the "Shared paths" box on a Ray cluster reaches the request; this machine has none', async () => {
    const target: StudyTarget = { ...newStudyTarget(), where: 'ray' };
    await h.mount('StudyTarget', { target, variantNames: [], studySize: '1 run, each a Ray job' });
    const box = h.page.getByTestId('ray-shared-paths');
    await expect.poll(() => box.count()).toBe(1);
    expect(await box.isChecked()).toBe(false);
    expect(rayRequest(await boundTarget()).ray).not.toHaveProperty('sharedPaths');
    await box.check();
    await expect.poll(async () => (await boundTarget()).sharedPaths).toBe(true);
    expect(rayRequest(await boundTarget()).ray?.sharedPaths).toBe(true);
    await h.page.getByTestId('where-here').check();
    await expect.poll(() => box.count()).toBe(0);
    expect(h.errors).toEqual([]);
  });
});
