import { setTimeout as sleep } from 'node:timers/promises';
import { ReaderPace } from '../../src/following/reader-pace';

/** The pacing rule of every stream of the feed (docs/events.md "Following"), over a buffer count the test sets. */
describe('ReaderPace', () => {
  const limits = { pauseAtBytes: 100, stalledReaderMs: 200, maxBufferedBytes: 1000 };
  let waiting = 0;
  const pace = () => new ReaderPace(() => waiting, limits);
  beforeEach(() => (waiting = 0));

  test('when bytes would pass maxBufferedBytes, then they do not fit; up to it they do', () => {
    waiting = 900;
    expect(pace().fits(100)).toBe(true);
    expect(pace().fits(101)).toBe(false);
  });

  test('when under pauseAtBytes, then the stream is not behind and catching up resolves true at once', async () => {
    waiting = 99;
    const p = pace();
    expect(p.behind).toBe(false);
    await expect(p.catchUp()).resolves.toBe(true);
  });

  test('when behind, then catching up waits for a progress that brings it under the pause, and every waiter shares it', async () => {
    waiting = 150;
    const p = pace();
    expect(p.behind).toBe(true);
    let settled: boolean[] = [];
    const both = Promise.all([p.catchUp(), p.catchUp()]).then((results) => (settled = results));
    waiting = 120;
    p.progressed();
    await sleep(10);
    expect(settled).toEqual([]);
    waiting = 50;
    p.progressed();
    await both;
    expect(settled).toEqual([true, true]);
  });

  // The stall timer is the rule under test: on Jest's fake clock, so a loaded machine cannot move it.
  describe('the stall timer', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    test('when progress comes but never below the pause, then each progress restarts the stall timer', async () => {
      waiting = 150;
      const p = pace();
      let settled: boolean | undefined;
      void p.catchUp().then((result) => (settled = result));
      for (let i = 0; i < 3; i++) {
        await jest.advanceTimersByTimeAsync(limits.stalledReaderMs - 1);
        expect(settled).toBeUndefined();
        p.progressed();
      }
      await jest.advanceTimersByTimeAsync(limits.stalledReaderMs - 1);
      expect(settled).toBeUndefined();
      await jest.advanceTimersByTimeAsync(1);
      expect(settled).toBe(false);
    });

    test('when nothing is read for stalledReaderMs, then catching up resolves false (the stream is cut)', async () => {
      waiting = 150;
      let settled: boolean | undefined;
      void pace()
        .catchUp()
        .then((result) => (settled = result));
      await jest.advanceTimersByTimeAsync(limits.stalledReaderMs - 1);
      expect(settled).toBeUndefined();
      await jest.advanceTimersByTimeAsync(1);
      expect(settled).toBe(false);
    });
  });

  test('when the connection closes, then a wait ends false at once, and so does every later one', async () => {
    waiting = 150;
    const p = pace();
    const result = p.catchUp();
    p.closed();
    await expect(result).resolves.toBe(false);
    waiting = 0;
    await expect(p.catchUp()).resolves.toBe(false);
  });
});
