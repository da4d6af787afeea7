import dns, { type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { WEBHOOK_LIMITS } from '../limits';

/** Where webhooks may go (docs/webhooks.md "Where deliveries may go"): WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE_TARGETS. */
export interface WebhookTargetRules {
  allowHttp: boolean;
  allowPrivateTargets: boolean;
}

/** A URL or an address webhooks may not go to; its message says why, in one line. */
export class WebhookTargetError extends RangeError {
  override readonly name = 'WebhookTargetError';
}

/**
 * A webhook host that does not resolve (now): not a refusal, since the name may resolve later, so a delivery counts it
 * as a network error; `add` refuses it all the same (a RangeError, bad input). `code` is the resolver's (`ENOTFOUND`).
 */
export class WebhookLookupError extends RangeError {
  override readonly name = 'WebhookLookupError';

  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** IPv4-compatible IPv6 addresses (`::a.b.c.d`), deprecated by RFC 4291 section 2.5.5.1. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

/** The IPv4 address in two 16-bit `parts` of an IPv6 address. */
function ipv4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** Refusal of an IPv6 address of `range` that embeds `ipv4`: allowed only when that IPv4 address is public unicast. */
function embedding(range: string, ipv4: ipaddr.IPv4): string | null {
  const inner = ipv4.range();
  return inner === 'unicast' ? null : `${range} ${inner}`;
}

/**
 * Whether deliveries may go to `address`: only a public unicast address, as ipaddr.js classifies it (an IPv4-mapped IPv6
 * address as its IPv4 one), so not loopback, private (RFC 1918), unique local (fc00::/7), link-local (169.254.0.0/16 with
 * the cloud metadata address, fe80::/10), carrier-grade NAT (100.64.0.0/10), unspecified, multicast or reserved. IPv6
 * addresses that carry an IPv4 one: NAT64 (64:ff9b::/96, RFC 6052), IPv4-translated (::ffff:0:0:0/96, RFC 6145) and 6to4
 * (2002::/16, RFC 3056) are judged by the IPv4 address they embed; IPv4-compatible (::/96) and Teredo (2001::/32, whose
 * addresses are obfuscated) are refused whatever they embed.
 * @returns the range's name when refused (e.g. `loopback`, `rfc6052 private`, `ipv4Compatible`), null when allowed.
 */
export function refusedRange(address: string): string | null {
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') {
    const range = parsed.range();
    return range === 'unicast' ? null : range;
  }
  const ipv6 = parsed as ipaddr.IPv6;
  const range = ipv6.range();
  const { parts } = ipv6;
  switch (range) {
    case 'unicast':
      return ipv6.match(IPV4_COMPATIBLE) ? 'ipv4Compatible' : null;
    case 'rfc6052':
    case 'rfc6145':
      return embedding(range, ipv4Of(parts[6], parts[7]));
    case '6to4':
      return embedding(range, ipv4Of(parts[1], parts[2]));
    default:
      return range;
  }
}

/**
 * Checks a webhook URL's form: absolute, https (http too with `allowHttp`), no user name or password, at most
 * {@link WEBHOOK_LIMITS.urlMaxLength} characters.
 * @returns the URL, normalised (WHATWG URL).
 * @throws WebhookTargetError naming the rule broken.
 */
export function parseWebhookUrl(text: string, rules: WebhookTargetRules): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookTargetError(`"${text}" is not an absolute URL such as https://example.com/webhooks`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && rules.allowHttp)) {
    throw new WebhookTargetError(`${url.protocol} URLs are refused: use https${rules.allowHttp ? ' or http' : ' (http only with WEBHOOK_ALLOW_HTTP=1)'}`);
  }
  if (url.username || url.password) throw new WebhookTargetError('a webhook URL may not hold a user name or password');
  if (url.href.length > WEBHOOK_LIMITS.urlMaxLength) throw new WebhookTargetError(`a webhook URL may have at most ${WEBHOOK_LIMITS.urlMaxLength} characters`);
  return url;
}

/** The refusal of `host` resolving to `address`, or null when it may be reached. */
function refusal(host: string, address: string, rules: WebhookTargetRules): WebhookTargetError | null {
  if (rules.allowPrivateTargets) return null;
  const range = refusedRange(address);
  if (range === null) return null;
  const resolved = host === address ? address : `${host} resolves to ${address}`;
  return new WebhookTargetError(`${resolved}, a ${range} address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)`);
}

/** Every address of `host` (the system resolver, as connections use it). */
function lookupAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => dns.lookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));
}

/**
 * Resolves `url`'s host and checks every address it has: one refused address refuses the URL, since a connection may
 * use any of them.
 * @throws WebhookTargetError when an address is refused; WebhookLookupError when the host does not resolve.
 */
export async function checkTarget(url: URL, rules: WebhookTargetRules): Promise<void> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    const refused = refusal(host, host, rules);
    if (refused) throw refused;
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await lookupAll(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new WebhookLookupError(`${host} does not resolve (${code ?? (error as Error).message})`, code);
  }
  for (const { address } of addresses) {
    const refused = refusal(host, address, rules);
    if (refused) throw refused;
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect and tls.connect that checks what it resolves, so a connection goes only to an address just
 * checked: a name that resolves to a public address at the check and to a private one at the connection (DNS
 * rebinding) is refused all the same.
 */
export function checkedLookup(rules: WebhookTargetRules) {
  return (hostname: string, options: LookupOptions | LookupAllOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      for (const { address } of addresses) {
        const refused = refusal(hostname, address, rules);
        if (refused) return callback(refused, '');
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
