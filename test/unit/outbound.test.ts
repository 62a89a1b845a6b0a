// The outbound policy (src/outbound.ts) without services: every refused spelling, the allowlist, public addresses, and its users' options.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';
import { createChannelBody } from '../../src/channels/schema.js';
import { upstreamMessage } from '../../src/embeddings/relay.js';
import { imapConnectOptions } from '../../src/mail/imap.js';
import { smtpConnectOptions } from '../../src/mail/smtp.js';
import { allowlistEntryProblem, blockedAddressReason, numericIpv4, OutboundRefusedError, outboundPolicy, refusedHostField } from '../../src/outbound.js';

const open = outboundPolicy([]);

/** The reason the policy refuses a host by its spelling alone (no DNS), or undefined when it lets it through. */
function refusal(host: string, policy = open): string | undefined {
  try {
    policy.precheck(host);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundRefusedError);
    return (err as OutboundRefusedError).reason;
  }
}

describe('refused spellings', () => {
  const cases: [string, RegExp][] = [
    ['localhost', /local machine/],
    ['LocalHost.', /local machine/],
    ['foo.localhost', /local machine/],
    ['metadata.google.internal', /local machine/],
    ['metadata.goog', /local machine/],
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['[::1]', /loopback/],
    ['::1', /loopback/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['0.0.0.0', /this network/],
    ['0.1.2.3', /this network/],
    ['::', /unspecified/],
    ['[::]', /unspecified/],
    ['::127.0.0.1', /unspecified or IPv4-compatible/],
    ['10.0.0.1', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['fc00::1', /private/],
    ['fd12:3456::1', /private/],
    ['169.254.169.254', /link-local/],
    ['fe80::1', /link-local/],
    ['100.64.0.1', /CGNAT/],
    ['100.127.255.255', /CGNAT/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['ff02::1', /multicast/],
    ['240.0.0.1', /reserved or broadcast/],
    ['255.255.255.255', /reserved or broadcast/],
    ['198.18.0.1', /special-purpose/],
    ['192.0.0.8', /special-purpose/],
    // IPv6 forms of IPv4 addresses
    ['::ffff:127.0.0.1', /loopback.*IPv6 form/],
    ['[::ffff:127.0.0.1]', /loopback.*IPv6 form/],
    ['::ffff:7f00:1', /loopback.*IPv6 form/],
    ['::ffff:a9fe:a9fe', /link-local.*IPv6 form/],
    ['::ffff:0:10.0.0.1', /private.*IPv6 form/],
    ['64:ff9b::7f00:1', /loopback.*IPv6 form/],
    ['64:ff9b::a9fe:a9fe', /link-local.*IPv6 form/],
    ['2002:7f00:1::1', /loopback.*IPv6 form/],
    ['2002:c0a8:0101::1', /private.*IPv6 form/],
    // numeric spellings resolvers accept
    ['2130706433', /loopback/],
    ['0x7f000001', /loopback/],
    ['0X7F000001', /loopback/],
    ['0177.0.0.1', /loopback/],
    ['0177.0000.0000.0001', /loopback/],
    ['127.1', /loopback/],
    ['127.0.1', /loopback/],
    ['0x7f.1', /loopback/],
    ['2852039166', /link-local/],
    ['0xa9fea9fe', /link-local/],
    ['0251.0376.0251.0376', /link-local/],
    ['167772161', /private/],
    ['0', /this network/],
    // numeric but not an address: refused, not guessed
    ['08.0.0.1', /not a valid IPv4/],
    ['4294967296', /not a valid IPv4/],
    ['1.2.3.4.5', /not a valid IPv4/],
    ['256.0.0.1', /not a valid IPv4/],
    // not a host
    ['fe80::1%eth0', /zone index/],
    ['', /no host/],
    ['bad host', /not a valid host name/],
  ];
  it.each(cases)('%s is refused', (host, reason) => {
    expect(refusal(host)).toMatch(reason);
  });

  it('numeric IPv4 spellings read as inet_aton reads them', () => {
    expect(numericIpv4('2130706433')).toBe('127.0.0.1');
    expect(numericIpv4('0x7f000001')).toBe('127.0.0.1');
    expect(numericIpv4('0177.0.0.1')).toBe('127.0.0.1');
    expect(numericIpv4('127.1')).toBe('127.0.0.1');
    expect(numericIpv4('10.1.2')).toBe('10.1.0.2');
    expect(numericIpv4('8.8.8.8')).toBe('8.8.8.8');
    expect(numericIpv4('mail.example.com')).toBeUndefined();
    expect(numericIpv4('1e100.net')).toBeUndefined();
    expect(numericIpv4('09')).toBeNull();
  });
});

describe('allowed', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '192.169.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::1',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
    '134744072', // 8.8.8.8
  ])('public address %s', (host) => {
    expect(refusal(host)).toBeUndefined();
    expect(blockedAddressReason(host.includes(':') ? host : numericIpv4(host)!)).toBeUndefined();
  });

  it('a public-looking name is left to DNS (connect time resolves and checks the address)', () => {
    expect(open.precheck('imap.example.com')).toEqual({ resolve: 'imap.example.com', allowListed: false });
    expect(open.precheck('IMAP.Example.COM.')).toEqual({ resolve: 'imap.example.com', allowListed: false });
    expect(open.precheck('127.example.com')).toEqual({ resolve: '127.example.com', allowListed: false });
  });
});

describe('OUTBOUND_ALLOWLIST', () => {
  const listed = outboundPolicy(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', 'Mail.Corp.Internal', 'localhost']);

  it('allows a listed address, an address inside a listed CIDR, and a listed name, marking them allow-listed', () => {
    expect(listed.precheck('127.0.0.1')).toMatchObject({ vetted: { address: '127.0.0.1', allowListed: true } });
    expect(listed.precheck('::ffff:127.0.0.1')).toMatchObject({ vetted: { allowListed: true } });
    expect(listed.precheck('2130706433')).toMatchObject({ vetted: { address: '127.0.0.1', allowListed: true } });
    expect(listed.precheck('10.20.30.40')).toMatchObject({ vetted: { address: '10.20.30.40', allowListed: true } });
    expect(listed.precheck('fd00::5')).toMatchObject({ vetted: { allowListed: true } });
    expect(listed.precheck('mail.corp.internal')).toEqual({ resolve: 'mail.corp.internal', allowListed: true });
    expect(listed.precheck('localhost')).toEqual({ resolve: 'localhost', allowListed: true });
    expect(listed.precheck('8.8.8.8')).toMatchObject({ vetted: { allowListed: false } });
  });

  it('allows nothing else', () => {
    expect(refusal('127.0.0.2', listed)).toMatch(/loopback/);
    expect(refusal('192.168.0.1', listed)).toMatch(/private/);
    expect(refusal('foo.localhost', listed)).toMatch(/local machine/);
    expect(refusal('other.corp.internal', listed)).toMatch(/local machine/);
  });

  it('an allow-listed name resolves without address checks; its address is what gets connected to', async () => {
    const v = await listed.resolve('localhost');
    expect(v.allowListed).toBe(true);
    expect(blockedAddressReason(v.address)).toMatch(/loopback/);
    expect(v.servername).toBe('localhost');
    await expect(open.resolve('localhost')).rejects.toBeInstanceOf(OutboundRefusedError);
  });

  it('is validated: a bad entry stops the process naming the variable', () => {
    expect(allowlistEntryProblem('127.0.0.1')).toBeUndefined();
    expect(allowlistEntryProblem('10.0.0.0/8')).toBeUndefined();
    expect(allowlistEntryProblem('::1/128')).toBeUndefined();
    expect(allowlistEntryProblem('mail.example.com')).toBeUndefined();
    for (const bad of ['10.0.0.0/33', '10.0.0.0/x', 'host/8', '0x7f000001', '127.1', 'bad host', '::1/129', '1.2.3.4/8/9']) {
      expect(allowlistEntryProblem(bad), bad).toBeDefined();
    }
    expect(() => parseConfig({ OUTBOUND_ALLOWLIST: '127.0.0.1, 10.0.0.0/99' })).toThrow(ConfigError);
    expect(() => parseConfig({ OUTBOUND_ALLOWLIST: '127.0.0.1, 10.0.0.0/99' })).toThrow(/OUTBOUND_ALLOWLIST/);
    expect(parseConfig({ OUTBOUND_ALLOWLIST: ' 127.0.0.1 , mail.example.com,,127.0.0.1' }).OUTBOUND_ALLOWLIST).toEqual(['127.0.0.1', 'mail.example.com']);
    expect(parseConfig({}).OUTBOUND_ALLOWLIST).toEqual([]);
  });
});

describe('save-time check', () => {
  it('names the refused field; the spelling-only mode needs no DNS', async () => {
    expect(await refusedHostField([], { 'imap.host': 'imap.example.com', 'smtp.host': '0x7f000001' }, { dns: false })).toEqual({
      field: 'smtp.host',
      message: 'smtp.host: "0x7f000001" is refused by the outbound policy (it is a loopback address)',
    });
    expect(await refusedHostField([], { 'imap.host': 'imap.example.com', 'smtp.host': undefined }, { dns: false })).toBeUndefined();
    expect(await refusedHostField(['127.0.0.1'], { 'imap.host': '127.0.0.1' })).toBeUndefined();
  });
});

describe('TLS for servers that are not allow-listed (item 15)', () => {
  const remote = { host: '127.example.com', address: '203.0.113.7', family: 4 as const, servername: '127.example.com', allowListed: false };
  const listed = { ...remote, allowListed: true };

  it('IMAP without implicit TLS requires STARTTLS unless the server is allow-listed; it connects to the checked address and keeps the name for TLS', () => {
    const o = imapConnectOptions({ imap: { host: '127.example.com', port: 143, secure: false } }, remote, 5000);
    expect(o).toMatchObject({ host: '203.0.113.7', servername: '127.example.com', doSTARTTLS: true });
    expect(imapConnectOptions({ imap: { host: '127.example.com', port: 143, secure: false } }, listed, 5000).doSTARTTLS).toBeUndefined();
    expect(imapConnectOptions({ imap: { host: '127.example.com', port: 993, secure: true } }, remote, 5000).doSTARTTLS).toBeUndefined();
  });

  it('SMTP decides on the allowlist and the resolved address, not on the look of the name', () => {
    const o = smtpConnectOptions({ smtp: { host: '127.example.com', port: 587, secure: false } }, remote, 5000);
    expect(o).toMatchObject({ host: '203.0.113.7', servername: '127.example.com', requireTLS: true });
    expect(smtpConnectOptions({ smtp: { host: '127.example.com', port: 587, secure: false } }, listed, 5000).requireTLS).toBe(false);
  });
});

describe('channel base_url', () => {
  const body = (base_url: string) => createChannelBody.safeParse({ name: 'c', key: 'k', models: 'm', base_url });

  it('is an origin and an optional path prefix, stored as parsed', () => {
    expect(body('https://api.openai.com/').data?.base_url).toBe('https://api.openai.com');
    expect(body('https://API.example.com:443/openai/v1/').data?.base_url).toBe('https://api.example.com/openai/v1');
    // '' is one-api's "default": the provider's own base URL, filled in when the channel is saved.
    expect(body('').data?.base_url).toBe('');
  });

  it.each([
    ['http://127.0.0.1:9/internal?x=', /query/],
    ['https://api.example.com/?', /query/],
    ['https://api.example.com/v1#frag', /fragment/],
    ['https://user:pass@api.example.com', /user name or password/],
    ['https://user@api.example.com', /user name or password/],
    ['https://@api.example.com', /user name or password/],
    ['https://api.example.com\\@evil.example', /backslashes/],
    ['https://api.exa\tmple.com', /control characters/],
    ['ftp://api.example.com', /http\(s\) URL/],
    ['not a url', /spaces/],
  ])('%s is refused', (url, why) => {
    const r = body(url);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['base_url']);
    expect(r.error?.issues[0]?.message).toMatch(why);
  });
});

describe('upstream answers that are not OpenAI errors', () => {
  it('are described, never echoed', () => {
    expect(upstreamMessage('{"error":{"message":"input too weird"}}')).toBe('input too weird');
    expect(upstreamMessage('{"error":"bad key"}')).toBe('bad key');
    expect(upstreamMessage('<html>internal admin page SECRET-123</html>')).not.toContain('SECRET');
    expect(upstreamMessage('{"message":"internal SECRET-123","config":{}}')).not.toContain('SECRET');
    expect(upstreamMessage('SSH-2.0-OpenSSH_9.6')).not.toContain('SSH');
    expect(upstreamMessage('')).toBe('an empty answer');
  });
});
