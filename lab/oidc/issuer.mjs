// The lab's OpenID Connect issuer: oidc-provider behind a small login form.
//
// People log in to Lagwatch through it (authorization code with PKCE, a `groups` claim), and
// machines (the Kafka clients) get short-lived RS256 JWT access tokens with the client
// credentials grant, which a broker checks against the JWKS. Everything comes from the
// environment that lab/oidc_issuer.py builds: the issuer URL and port, the client secrets and
// the users' passwords (generated per run directory, never logged), the token lifetime.
// The signing key is kept in a file of the run directory, so a restarted issuer serves the
// same JWKS and tokens issued before the restart stay valid.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const env = process.env;
const ISSUER = env.LAB_OIDC_ISSUER;
const PORT = Number(env.LAB_OIDC_PORT);
const HOST = env.LAB_OIDC_HOST || '127.0.0.1';
const TOKEN_TTL_S = Number(env.LAB_OIDC_TOKEN_TTL_S || 300);
const AUDIENCE = env.LAB_OIDC_AUDIENCE || 'kafka';
// A resource indicator is an absolute URI (RFC 8707); the tokens' `aud` is the plain name.
const RESOURCE = env.LAB_OIDC_RESOURCE || `urn:lagwatch:${AUDIENCE}`;
const WEB_CLIENT = env.LAB_OIDC_WEB_CLIENT_ID || 'lagwatch-web';
const MACHINE_CLIENT = env.LAB_OIDC_MACHINE_CLIENT_ID || 'lagwatch-kafka';
const REDIRECT_URIS = (env.LAB_OIDC_REDIRECT_URIS || '').split(/\s+/).filter(Boolean);
// {"alice": {"password": "...", "groups": ["lagwatch-admins"], "email": "...", "name": "..."}}
const USERS = JSON.parse(env.LAB_OIDC_USERS || '{}');

for (const [name, value] of Object.entries({
  LAB_OIDC_ISSUER: ISSUER, LAB_OIDC_PORT: env.LAB_OIDC_PORT,
  LAB_OIDC_WEB_CLIENT_SECRET: env.LAB_OIDC_WEB_CLIENT_SECRET,
  LAB_OIDC_MACHINE_CLIENT_SECRET: env.LAB_OIDC_MACHINE_CLIENT_SECRET,
  LAB_OIDC_COOKIE_KEY: env.LAB_OIDC_COOKIE_KEY, LAB_OIDC_KEY_FILE: env.LAB_OIDC_KEY_FILE,
})) {
  if (!value) {
    console.error(`issuer: ${name} is not set`);
    process.exit(2);
  }
}

function signingKey(path) {
  if (fs.existsSync(path)) return JSON.parse(fs.readFileSync(path, 'utf8'));
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  jwk.kid = crypto.randomBytes(8).toString('hex');
  jwk.alg = 'RS256';
  jwk.use = 'sig';
  fs.writeFileSync(path, JSON.stringify(jwk), { mode: 0o600 });
  return jwk;
}

function sameSecret(given, expected) {
  const a = crypto.createHash('sha256').update(String(given)).digest();
  const b = crypto.createHash('sha256').update(String(expected)).digest();
  return crypto.timingSafeEqual(a, b);
}

const configuration = {
  clients: [
    {
      client_id: WEB_CLIENT,
      client_secret: env.LAB_OIDC_WEB_CLIENT_SECRET,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: REDIRECT_URIS,
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      client_id: MACHINE_CLIENT,
      client_secret: env.LAB_OIDC_MACHINE_CLIENT_SECRET,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      // librdkafka's and Kafka's own OIDC token retrievers send HTTP Basic credentials.
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingKey(env.LAB_OIDC_KEY_FILE)] },
  cookies: { keys: [env.LAB_OIDC_COOKIE_KEY] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // The machine client's tokens are for the brokers even when the request names no
      // resource (librdkafka's `sasl.oauthbearer.method=oidc` sends none); a person's login
      // keeps the default, an opaque token for the userinfo endpoint.
      defaultResource: (ctx, client, oneOf) =>
        oneOf || (client && client.clientId === MACHINE_CLIENT ? RESOURCE : undefined),
      useGrantedResource: () => false,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== RESOURCE) throw new Provider.errors.InvalidTarget();
        return {
          scope: AUDIENCE,
          audience: AUDIENCE,
          accessTokenTTL: TOKEN_TTL_S,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  findAccount: (ctx, id) => {
    const user = Object.hasOwn(USERS, id) ? USERS[id] : undefined;
    if (!user) return undefined;
    return {
      accountId: id,
      claims: () => ({
        sub: id,
        email: user.email || `${id}@lab.invalid`,
        email_verified: true,
        name: user.name || id,
        preferred_username: id,
        groups: user.groups || [],
      }),
    };
  },
  ttl: {
    Session: 3600, Interaction: 600, Grant: 3600, IdToken: 600, AccessToken: 600,
    ClientCredentials: TOKEN_TTL_S,
  },
};

const provider = new Provider(ISSUER, configuration);
provider.on('server_error', (ctx, err) => console.error(`issuer: server error: ${err.message}`));
provider.on('grant.error', (ctx, err) => console.error(`issuer: grant refused: ${err.message}`));
provider.on('authorization.error', (ctx, err) =>
  console.error(`issuer: authorization refused: ${err.message}`));
provider.on('access_token.issued', (token) =>
  console.log(`issuer: access token for ${token.clientId} (${token.accountId || 'client'})`));

const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(uid, clientId, error) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lab issuer: sign in</title></head>
<body><h1>Lab issuer</h1><p>Sign in to ${escapeHtml(clientId)}</p>
${error ? `<p role="alert" id="error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login" autocomplete="off">
<label>User <input name="login" id="login" required autofocus></label>
<label>Password <input name="password" id="password" type="password" required></label>
<button type="submit" id="sign-in">Sign in</button>
</form></body></html>`;
}

function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
      if (body.length > 8192) reject(new Error('form too large'));
    });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

async function grantConsent(req, res, details) {
  // Lagwatch is the lab's own first-party client: what it asks for is granted without a page.
  const { prompt, params, session } = details;
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const consent = details.grantId ? {} : { grantId };
  await provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
}

async function interaction(req, res, uid, submitted) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  const send = (status, html) => {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // No form-action: the browser would hold the login's redirect to the product to it.
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    });
    res.end(html);
  };
  if (details.prompt.name === 'consent') {
    await grantConsent(req, res, details);
    return;
  }
  if (!submitted) {
    send(200, loginPage(uid, details.params.client_id));
    return;
  }
  if (req.method !== 'POST') {
    send(405, 'POST only');
    return;
  }
  const form = await readForm(req);
  const login = form.get('login') || '';
  const user = Object.hasOwn(USERS, login) ? USERS[login] : undefined;
  if (!user || !sameSecret(form.get('password') || '', user.password)) {
    console.log('issuer: a login was refused');
    send(401, loginPage(uid, details.params.client_id, 'Unknown user or wrong password.'));
    return;
  }
  console.log(`issuer: ${login} logged in`);
  await provider.interactionFinished(
    req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false },
  );
}

const handle = provider.callback();
const server = http.createServer((req, res) => {
  const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(new URL(req.url, ISSUER).pathname);
  if (!match) {
    handle(req, res);
    return;
  }
  interaction(req, res, match[1], Boolean(match[2])).catch((err) => {
    console.error(`issuer: interaction failed: ${err.message}`);
    if (!res.headersSent) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    }
    res.end('This sign-in has expired or is not valid: start again from the application.');
  });
});

server.listen(PORT, HOST, () => {
  console.log(`issuer: listening on ${ISSUER} (access tokens for ${AUDIENCE}: ${TOKEN_TTL_S} s)`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
