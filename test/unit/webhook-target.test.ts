import { loadConfig } from '../../src/config';
import { WEBHOOK_RETRY_SCHEDULE_SECONDS } from '../../src/webhooks/retry-schedule';
import { WebhookLookupError, WebhookTargetError, checkTarget, checkedLookup, parseWebhookUrl, refusedRange } from '../../src/webhooks/webhook-target.policy';

const STRICT = { allowHttp: false, allowPrivateTargets: false };

describe('where webhooks may go (docs/webhooks.md "Where deliveries may go")', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['224.0.0.1', 'multicast'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::808:808', 'ipv4Compatible'],
    ['64:ff9b::7f00:1', 'rfc6052 loopback'],
    ['64:ff9b::a00:1', 'rfc6052 private'],
    ['64:ff9b::a9fe:a9fe', 'rfc6052 linkLocal'],
    ['::ffff:0:7f00:1', 'rfc6145 loopback'],
    ['2002:7f00:1::1', '6to4 loopback'],
    ['2002:c0a8:101::1', '6to4 private'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
  ])('when the address is %s, then it is refused as %s', (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  test.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '64:ff9b::808:808', '2002:808:808::1'])(
    'when the address is %s (public), then it is allowed',
    (address) => {
      expect(refusedRange(address)).toBeNull();
    },
  );

  test('when a URL is not https, has credentials or is not a URL, then it is refused with one line saying why', () => {
    expect(() => parseWebhookUrl('http://example.com/hook', STRICT)).toThrow('http: URLs are refused: use https (http only with WEBHOOK_ALLOW_HTTP=1)');
    expect(() => parseWebhookUrl('ftp://example.com/hook', { ...STRICT, allowHttp: true })).toThrow(WebhookTargetError);
    expect(() => parseWebhookUrl('https://user:pass@example.com/hook', STRICT)).toThrow('may not hold a user name or password');
    expect(() => parseWebhookUrl('example.com/hook', STRICT)).toThrow('is not an absolute URL');
    expect(() => parseWebhookUrl(`https://example.com/${'a'.repeat(2048)}`, STRICT)).toThrow('at most 2048 characters');
    expect(parseWebhookUrl('http://example.com/hook', { ...STRICT, allowHttp: true }).href).toBe('http://example.com/hook');
  });

  test('when a URL names a refused address, or a name resolving to one, then the check refuses it unless private targets are allowed', async () => {
    await expect(checkTarget(new URL('https://169.254.169.254/latest/meta-data'), STRICT)).rejects.toThrow('169.254.169.254, a linkLocal address: refused');
    await expect(checkTarget(new URL('https://[::ffff:7f00:1]/'), STRICT)).rejects.toThrow('a loopback address');
    await expect(checkTarget(new URL('https://[::127.0.0.1]/'), STRICT)).rejects.toThrow('::7f00:1, a ipv4Compatible address: refused');
    await expect(checkTarget(new URL('https://[64:ff9b::127.0.0.1]/'), STRICT)).rejects.toThrow('64:ff9b::7f00:1, a rfc6052 loopback address: refused');
    await expect(checkTarget(new URL('https://[64:ff9b::8.8.8.8]/'), STRICT)).resolves.toBeUndefined();
    await expect(checkTarget(new URL('https://localhost/'), STRICT)).rejects.toThrow(/^localhost resolves to .*, a loopback address: refused/);
    await expect(checkTarget(new URL('https://localhost/'), { ...STRICT, allowPrivateTargets: true })).resolves.toBeUndefined();
    await expect(checkTarget(new URL('https://203.0.113.9/'), STRICT)).rejects.toThrow('a reserved address');
    await expect(checkTarget(new URL('https://8.8.8.8/'), STRICT)).resolves.toBeUndefined();
  });

  test('when a host does not resolve, then the check fails with a lookup error (bad input, not a refused target)', async () => {
    const failure = checkTarget(new URL('https://no-such-host.invalid/'), STRICT);
    await expect(failure).rejects.toThrow(WebhookLookupError);
    await expect(failure).rejects.toThrow(/^no-such-host\.invalid does not resolve \(E[A-Z_]+\)$/);
    await expect(failure).rejects.not.toBeInstanceOf(WebhookTargetError);
    await expect(failure).rejects.toBeInstanceOf(RangeError);
  });

  test('when a connection looks a name up, then the lookup refuses a private answer and passes a permitted one on', async () => {
    const lookup = (rules: typeof STRICT) =>
      new Promise<unknown>((resolve, reject) =>
        checkedLookup(rules)('localhost', { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
      );
    await expect(lookup(STRICT)).rejects.toThrow(WebhookTargetError);
    await expect(lookup({ ...STRICT, allowPrivateTargets: true })).resolves.toEqual(
      expect.arrayContaining([expect.objectContaining({ family: expect.any(Number) })]),
    );
  });
});

describe('the webhook settings', () => {
  test('when unset, then deliveries are on, https only to public addresses, on the Standard Webhooks schedule', () => {
    expect(loadConfig({}).webhooks).toEqual({ deliveries: true, allowHttp: false, allowPrivateTargets: false, retrySchedule: WEBHOOK_RETRY_SCHEDULE_SECONDS });
    expect(WEBHOOK_RETRY_SCHEDULE_SECONDS).toEqual([0, 5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 14 * 3600, 20 * 3600, 24 * 3600]);
  });

  test('when WEBHOOK_RETRY_SCHEDULE is set, then it replaces the schedule; a bad one stops the start', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0, 0.2,1' }).webhooks.retrySchedule).toEqual([0, 0.2, 1]);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0,-1' })).toThrow('WEBHOOK_RETRY_SCHEDULE: must be comma-separated seconds, e.g. 0,5,300');
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '' })).toThrow('WEBHOOK_RETRY_SCHEDULE');
  });

  test('when NODE_ENV is production, then http and private targets are refused', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })).toThrow(
      'WEBHOOK_ALLOW_PRIVATE_TARGETS: refused with NODE_ENV=production',
    );
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_ALLOW_HTTP: 'true' })).toThrow('WEBHOOK_ALLOW_HTTP: refused with NODE_ENV=production');
    expect(loadConfig({ NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).webhooks.allowPrivateTargets).toBe(true);
  });
});
