// A real OpenID provider (panva's oidc-provider) for auth_oidc_test.go,
// on 127.0.0.1 at a free port. Development settings only: its built-in
// login and consent pages (any login passes), dynamic registration open,
// and JWT access tokens for the one resource given as the first argument.
// For the DPoP test (auth_dpop_server_test.go) it also has one
// confidential client, dpop-m2m, of the client credentials grant, and
// binds a token to the key of the DPoP proof its request carries.
// It prints {"issuer": ...} on a line once it listens, and stops when its
// standard input closes (the test's end).
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const resource = process.argv[2];
if (!resource) {
  console.error('usage: node provider.mjs RESOURCE_URL');
  process.exit(2);
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      dPoP: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return { scope: 'mcp', audience: resource, accessTokenTTL: 60, accessTokenFormat: 'jwt' };
        },
      },
    },
    clients: [{
      client_id: 'dpop-m2m',
      client_secret: 'dpop-m2m-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    }],
    scopes: ['openid', 'offline_access', 'mcp'],
    cookies: { keys: ['only-for-tests'] },
  });
  server.on('request', provider.callback());
  console.log(JSON.stringify({ issuer }));
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
