import { describe, expect, it } from 'vitest';
import { metricsToCsv } from '../../../engine/runs/summary/exportCsv';

describe('metricsToCsv', () => {
  it('has step,time then every metric in first-seen order, empty where a line lacks one', () => {
    const csv = metricsToCsv([
      { step: 1, time: 10.5, loss: 2, reward: 0.25 },
      { time: 11, step: 2, 'eval.pass@1': 0.5, loss: 1.5 },
      { step: 3, time: 12, reward: null },
    ]);
    expect(csv).toBe(
      ['step,time,loss,reward,eval.pass@1', '1,10.5,2,0.25,', '2,11,1.5,,0.5', '3,12,,NaN,', ''].join('\n'),
    );
  });

  it('quotes names and values with commas, quotes, newlines or edge spaces', () => {
    const csv = metricsToCsv([
      { step: 1, time: 1, 'a,b': 1, 'say "hi"': 2, 'two\nlines': 3, ' padded': 4, phase: 'warm, up' },
    ]);
    const [header, row] = csv.split(/\n(?=1,)/);
    expect(header).toBe('step,time,"a,b","say ""hi""","two\nlines"," padded",phase');
    expect(row).toBe('1,1,1,2,3,4,"warm, up"\n');
  });

  it('writes just the header for no records', () => {
    expect(metricsToCsv([])).toBe('step,time\n');
  });
});
