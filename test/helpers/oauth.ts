// A loopback stand-in for Microsoft's OAuth2 token endpoint plus an introspection endpoint for Dovecot's oauth2 passdb.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Account {
  email: string;
  clientId: string;
  refreshToken: string;
  rotate: boolean;
  expiresIn: number;
}

interface AccessToken {
  email: string;
  expiresAt: number;
}

export interface TokenRequest {
  client_id: string;
  refresh_token: string;
  grant_type: string;
  scope?: string;
}

const DEFAULT_SCOPE = 'https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send';

const AADSTS_TEXT: Record<string, string> = {
  AADSTS70000: "The provided value for the input parameter 'refresh_token' or 'assertion' is not valid.",
  AADSTS700082: 'The refresh token has expired due to inactivity. The token was issued on 2024-01-01T00:00:00.0000000Z and was inactive for 90.00:00:00.',
  AADSTS70008:
    'The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.',
};

// Microsoft's refresh/access tokens are opaque blobs; the prefix only makes them look familiar in logs.
function opaqueToken(prefix: string): string {
  return prefix + randomBytes(48).toString('base64url');
}

export class FakeMicrosoftOAuth {
  url = '';
  tokenUrl = '';
  introspectionUrl = '';
  tokenRequests: TokenRequest[] = [];
  /** Access tokens Dovecot asked about, in order (shows that IMAP logins really went through introspection). */
  introspectionRequests: string[] = [];

  private server?: http.Server;
  private accounts = new Map<string, Account>(); // by lower-cased email
  private refreshTokens = new Map<string, string>(); // refresh token -> lower-cased email
  private revoked = new Map<string, string>(); // refresh token -> AADSTS code
  private accessTokens = new Map<string, AccessToken>();

  async start(): Promise<this> {
    const server = http.createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
    // Dovecot's HTTP client keeps connections open; without this, stop() would wait for them.
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.tokenUrl = `${this.url}/consumers/oauth2/v2.0/token`;
    this.introspectionUrl = `${this.url}/introspect`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  addAccount(opts: { email: string; clientId: string; refreshToken: string; rotate?: boolean; expiresIn?: number }): void {
    const key = opts.email.toLowerCase();
    const old = this.accounts.get(key);
    if (old) this.refreshTokens.delete(old.refreshToken);
    this.accounts.set(key, {
      email: opts.email,
      clientId: opts.clientId,
      refreshToken: opts.refreshToken,
      rotate: opts.rotate ?? false,
      expiresIn: opts.expiresIn ?? 3600,
    });
    this.refreshTokens.set(opts.refreshToken, key);
    this.revoked.delete(opts.refreshToken);
  }

  revoke(refreshToken: string, code = 'AADSTS70000'): void {
    this.revoked.set(refreshToken, code);
  }

  /** Makes every access token already issued for this mailbox expire now (to exercise refresh-on-expiry paths). */
  expireAccessTokens(email: string): void {
    const key = email.toLowerCase();
    for (const t of this.accessTokens.values()) if (t.email === key) t.expiresAt = 0;
  }

  currentRefreshToken(email: string): string {
    const account = this.accounts.get(email.toLowerCase());
    if (!account) throw new Error(`FakeMicrosoftOAuth: no account ${email}`);
    return account.refreshToken;
  }

  isValidAccessToken(email: string, token: string): boolean {
    const t = this.accessTokens.get(token);
    return !!t && t.email === email.toLowerCase() && t.expiresAt > Date.now();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const body = await readBody(req);
    // Any tenant segment (consumers, common, organizations, a tenant id) reaches the same endpoint, as at Microsoft.
    if (req.method === 'POST' && /^\/[^/]+\/oauth2\/v2\.0\/token$/.test(url.pathname)) {
      return this.token(new URLSearchParams(body), res);
    }
    if (url.pathname === '/introspect') {
      // Dovecot's introspection_mode decides where the token travels: post = form body, get = query, auth = bearer header.
      const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const token = new URLSearchParams(body).get('token') ?? url.searchParams.get('token') ?? url.searchParams.get('access_token') ?? bearer ?? '';
      return this.introspect(token, res);
    }
    json(res, 404, { error: 'not_found' });
  }

  private token(form: URLSearchParams, res: http.ServerResponse): void {
    const request: TokenRequest = {
      client_id: form.get('client_id') ?? '',
      refresh_token: form.get('refresh_token') ?? '',
      grant_type: form.get('grant_type') ?? '',
    };
    const scope = form.get('scope');
    if (scope !== null) request.scope = scope;
    this.tokenRequests.push(request);

    if (!request.client_id) {
      return aadError(res, 'invalid_request', 'AADSTS900144', "The request body must contain the following parameter: 'client_id'.");
    }
    if (request.grant_type !== 'refresh_token') {
      return aadError(res, 'unsupported_grant_type', 'AADSTS70003', 'The app requested an unsupported grant type.');
    }
    const revokedCode = this.revoked.get(request.refresh_token);
    if (revokedCode) return aadError(res, 'invalid_grant', revokedCode, AADSTS_TEXT[revokedCode] ?? 'The refresh token was revoked.');
    const key = this.refreshTokens.get(request.refresh_token);
    const account = key ? this.accounts.get(key) : undefined;
    // A refresh token issued to another app is refused the same way as an unknown one.
    if (!account || account.refreshToken !== request.refresh_token || account.clientId !== request.client_id) {
      return aadError(res, 'invalid_grant', 'AADSTS70000', AADSTS_TEXT.AADSTS70000!);
    }

    const accessToken = opaqueToken('EwA');
    this.accessTokens.set(accessToken, { email: account.email.toLowerCase(), expiresAt: Date.now() + account.expiresIn * 1000 });
    const answer: Record<string, unknown> = {
      token_type: 'Bearer',
      scope: scope ?? DEFAULT_SCOPE,
      expires_in: account.expiresIn,
      ext_expires_in: account.expiresIn,
      access_token: accessToken,
    };
    if (account.rotate) {
      const next = opaqueToken('M.C5');
      this.refreshTokens.delete(account.refreshToken);
      account.refreshToken = next;
      this.refreshTokens.set(next, key!);
      answer.refresh_token = next;
    }
    json(res, 200, answer);
  }

  private introspect(token: string, res: http.ServerResponse): void {
    this.introspectionRequests.push(token);
    const t = this.accessTokens.get(token);
    // RFC 7662: an unknown or expired token is a normal answer (200, active:false), not an HTTP error.
    if (!t || t.expiresAt <= Date.now()) return json(res, 200, { active: false });
    json(res, 200, { active: true, username: t.email, email: t.email });
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

// Mirrors the shape of Microsoft identity platform errors, which clients parse for the AADSTS code.
function aadError(res: http.ServerResponse, error: string, code: string, text: string): void {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = new Date()
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  json(res, 400, {
    error,
    error_description: `${code}: ${text} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
    error_codes: [Number(code.replace('AADSTS', ''))],
    timestamp,
    trace_id: traceId,
    correlation_id: correlationId,
    error_uri: `https://login.microsoftonline.com/error?code=${code.replace('AADSTS', '')}`,
  });
}
