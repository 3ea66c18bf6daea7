import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Training tests are CPU-bound; two workers match the 2-core machines this project targets.
    pool: 'forks',
    maxWorkers: 2,
    // ... so each test process (and each CLI it starts) takes its share of the cores for BLAS threads, as the app's
    // workers do (engine/tensor/native/addon.ts defaultBlasThreads), instead of every process taking all of them.
    env: { MARS_LAB_WORKER_SLOTS: '2' },
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
