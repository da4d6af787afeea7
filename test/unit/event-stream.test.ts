import { HEARTBEAT_FRAME, formatEventFrame, formatRetryFrame } from '../../src/following/sse.transport';

describe('SSE frames (WHATWG HTML "Server-sent events")', () => {
  test('when an event is framed, then it has id, event and one data line per line, and ends with a blank line', () => {
    expect(formatEventFrame({ id: 'ZTEuMQ', event: 'pet.created', data: '{"a":1}' })).toBe('id: ZTEuMQ\nevent: pet.created\ndata: {"a":1}\n\n');
    expect(formatEventFrame({ data: 'one\ntwo\r\nthree\rfour' })).toBe('data: one\ndata: two\ndata: three\ndata: four\n\n');
  });

  test('when an id or event name holds a line break or an id a NUL, then it is refused', () => {
    expect(() => formatEventFrame({ id: 'a\nb', data: '' })).toThrow();
    expect(() => formatEventFrame({ event: 'a\rb', data: '' })).toThrow();
    expect(() => formatEventFrame({ id: 'a\0b', data: '' })).toThrow();
  });

  test('when retry and heartbeat are framed, then they are a retry field and a comment', () => {
    expect(formatRetryFrame(1000)).toBe('retry: 1000\n\n');
    expect(HEARTBEAT_FRAME).toBe(':\n\n');
  });
});
