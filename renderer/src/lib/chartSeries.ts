/**
 * One metric's series as the Run page keeps it (plain arrays, appended to in place as points arrive) and MetricChart
 * draws it: per bucket its x (step or time), the min and max of its values, and its last value. A plain .ts module
 * (not exported from MetricChart.svelte) so that ESLint's typed rules resolve it where it is used.
 */
export interface ChartSeries {
  x: number[];
  min: number[];
  max: number[];
  last: number[];
}
