#!/usr/bin/env node
// End-to-end test of `harness serve --listen` (MCP Streamable HTTP) with the
// official TypeScript SDK's StreamableHTTPClientTransport, authenticated by
// bearer tokens from a --token-file, two principals (alice, bob) each with a
// workspace of its own from a --principals file. It checks what a remote MCP
// host sees: /healthz; 401 with WWW-Authenticate naming the protected-resource
// metadata without a token or with a wrong one; the metadata document; 403
// for a wrong Origin and for a subject no principal names; then, over an
// authenticated session, the file steps the stdio flow runs (shared.mjs);
// alice's writes into bob's workspace refused (plain, by a command, and
// escalated beyond her widest mode, without a prompt) with bob's file
// unchanged on disk; alice's read of a deny-read .env in her own workspace
// refused (file tool and command); bob's escalation answered through
// elicitation on his session's stream (allow-once lands, decline does not);
// a call bob cancels gets no response; a request without a session id gets
// 400 with JSON-RPC error -32600; alice's session id refused (403) with
// bob's token.
//
// Usage: node e2e/http.mjs   (make e2e runs it after client.mjs)
//
// Environment: HARNESS_BIN, HARNESS_E2E_STRICT, HARNESS_E2E_VERBOSE and
// HARNESS_E2E_LOG_LEVEL as for client.mjs.
//
// One line is printed per step; the first failed assertion prints FAIL with
// the reason (and the server's stderr) and exits 1.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { ANSWER, expectSuccess, fileSteps, refusalText, seedWorkspace, toolErrorChecker } from './shared.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const harnessBin = path.resolve(process.env.HARNESS_BIN || path.join(here, '..', 'bin', 'harness'));
const strict = process.env.HARNESS_E2E_STRICT === '1';
const verbose = process.env.HARNESS_E2E_VERBOSE === '1';
const logLevel = process.env.HARNESS_E2E_LOG_LEVEL || 'info';
const REQUEST_TIMEOUT_MS = 15_000;
const START_TIMEOUT_MS = 15_000;
const WATCHDOG_MS = 120_000;

// ---------------------------------------------------------------- reporting

let stepNo = 0;
const warnings = [];
let serverStderr = '';

function ok(msg) {
  stepNo += 1;
  console.log(`ok ${String(stepNo).padStart(2)} - ${msg}`);
}

function warn(msg) {
  if (strict) throw new assert.AssertionError({ message: `(strict) ${msg}` });
  warnings.push(msg);
  console.log(`WARN  - ${msg}`);
}

function fail(err) {
  const msg = err instanceof Error ? err.message : String(err);
  console.error(`FAIL ${stepNo + 1} - ${msg}`);
  if (serverStderr.trim() !== '' && !verbose) {
    console.error('--- harness stderr ---');
    console.error(serverStderr.trimEnd());
    console.error('--- end of harness stderr ---');
  }
}

const expectToolError = toolErrorChecker(warn);

// ---------------------------------------------------------------- fixture

if (!fs.existsSync(harnessBin)) {
  console.error(`FAIL 0 - harness binary not found at ${harnessBin} (build it: make build, or set HARNESS_BIN)`);
  process.exit(1);
}

// One fresh directory holds everything: the two workspaces, the server's
// only temp root (so neither workspace is writable through /tmp), and the
// configuration. realpath: os.tmpdir() may be a symlink, and the server
// shows resolved paths.
const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-http-')));
const aliceWs = path.join(base, 'alice');
const bobWs = path.join(base, 'bob');
const tempRoot = path.join(base, 'tmp');
const conf = path.join(base, 'conf');
for (const d of [aliceWs, bobWs, tempRoot, conf]) fs.mkdirSync(d);
seedWorkspace(aliceWs);
fs.writeFileSync(path.join(aliceWs, '.env'), 'API_KEY=alice-secret\n');
const bobFile = path.join(bobWs, 'notes.txt');
fs.writeFileSync(bobFile, 'bob owns this\n');

// The token file: SUBJECT sha256:HEX64 of each token. carol has a token but
// no principal.
const token = () => crypto.randomBytes(32).toString('hex');
const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const tokens = { alice: token(), bob: token(), carol: token() };
const tokenFile = path.join(conf, 'tokens');
fs.writeFileSync(tokenFile, ['# e2e tokens', ...Object.entries(tokens).map(([who, t]) => `${who} sha256:${sha256(t)}`), ''].join('\n'));

// alice works in her workspace under workspace-write and may never be
// granted more; bob starts read-only and may be granted workspace-write.
const principalsFile = path.join(conf, 'principals.yaml');
fs.writeFileSync(principalsFile, `principals:
  alice:
    workspaces: [${aliceWs}]
    mode: workspace-write
    widest-mode: workspace-write
  bob:
    workspaces: [${bobWs}]
    mode: read-only
    widest-mode: workspace-write
`);

const serverArgs = ['serve', '--listen', '127.0.0.1:0', '--token-file', tokenFile, '--principals', principalsFile,
  '--temp-root', tempRoot, '--log-level', logLevel];

// startServer spawns the server from base (a directory that is no
// workspace: an HTTP session never falls back to it) and resolves with the
// URL of /mcp from the line it writes once listening.
function startServer(args = serverArgs) {
  const child = spawn(harnessBin, args, { cwd: base, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "harness: listening on" line within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    let own = '';
    child.stderr.on('data', (chunk) => {
      serverStderr += chunk.toString();
      own += chunk.toString();
      if (verbose) process.stderr.write(`[harness] ${chunk}`);
      const m = own.match(/^harness: listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/m);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`harness exited (${code ?? signal}) before listening`));
    });
  });
  return { child, exited, listening };
}

const server = startServer();
const clients = [];

// connect opens an MCP session as who (a key of tokens), over the SDK's
// Streamable HTTP transport with the bearer token on every request; the
// elicitation handler answers from the returned answers queue and records
// every prompt in asked.
async function connect(url, who, bearer = tokens[who]) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: `harness-e2e-http-${who}`, version: '0.0.0' }, { capabilities: { elicitation: {} } });
  const answers = [];
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return answers.shift() ?? { action: 'cancel' };
  });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  clients.push(client);
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  return { client, transport, call, answers, asked };
}

// An initialize request as a raw JSON-RPC POST.
const initBody = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'harness-e2e-http-raw', version: '0.0.0' } },
});
const mcpHeaders = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

// ---------------------------------------------------------------- steps

async function run() {
  console.log(`harness e2e (HTTP): ${harnessBin} ${serverArgs.join(' ')}`);
  console.log(`  alice ${aliceWs}, bob ${bobWs}`);
  const url = await server.listening;
  const origin = new URL(url).origin;
  ok(`listening: one stderr line "harness: listening on ${url}"`);

  let r = await fetch(`${origin}/healthz`);
  assert.equal(r.status, 200, `/healthz: status ${r.status}`);
  assert.equal((await r.text()).trim(), 'ok', '/healthz: body');
  ok('GET /healthz without a token: 200 ok');

  // No token, then a wrong one: 401 naming the protected-resource metadata.
  let metadataURL;
  for (const [what, headers] of [['no token', {}], ['a wrong token', { Authorization: `Bearer ${token()}` }]]) {
    r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, ...headers }, body: initBody });
    assert.equal(r.status, 401, `${what}: status ${r.status}: ${await r.text()}`);
    const challenge = r.headers.get('www-authenticate') ?? '';
    const m = challenge.match(/^Bearer .*resource_metadata="([^"]+)"/);
    assert.ok(m, `${what}: WWW-Authenticate ${JSON.stringify(challenge)}`);
    metadataURL = m[1];
  }
  ok(`POST /mcp with no token and with a wrong one: 401, WWW-Authenticate: Bearer resource_metadata="${metadataURL}"`);

  r = await fetch(metadataURL);
  assert.equal(r.status, 200, `metadata: status ${r.status}`);
  const metadata = await r.json();
  assert.equal(metadata.resource, url, `metadata: resource: ${JSON.stringify(metadata)}`);
  assert.ok(Array.isArray(metadata.bearer_methods_supported) ? metadata.bearer_methods_supported.includes('header') : true,
    `metadata: bearer_methods_supported: ${JSON.stringify(metadata)}`);
  r = await fetch(`${origin}/.well-known/oauth-protected-resource`);
  assert.equal(r.status, 200, `/.well-known/oauth-protected-resource: status ${r.status}`);
  assert.equal((await r.json()).resource, url, '/.well-known/oauth-protected-resource: resource');
  ok(`protected-resource metadata (RFC 9728) at ${new URL(metadataURL).pathname} and /.well-known/oauth-protected-resource: resource ${metadata.resource}`);

  r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.alice}`, Origin: 'http://evil.example' }, body: initBody });
  assert.equal(r.status, 403, `wrong Origin: status ${r.status}: ${await r.text()}`);
  ok('POST /mcp with a valid token and Origin http://evil.example: 403');

  // A page from the listen address's own origin is served (the
  // conformance suite's LocalhostHostAccepted).
  r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.alice}`, Origin: origin }, body: initBody });
  const ownOrigin = await r.text();
  assert.equal(r.status, 200, `own Origin: status ${r.status}: ${ownOrigin}`);
  assert.equal(r.headers.get('access-control-allow-origin'), origin, 'own Origin: Access-Control-Allow-Origin');
  ok(`POST /mcp with a valid token and the server's own Origin ${origin}: 200, Access-Control-Allow-Origin: ${origin}`);

  // An unsupported protocol version: 400 naming the versions served.
  r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.alice}`, 'Mcp-Protocol-Version': '2024-01-01' }, body: initBody });
  const versionErr = await r.text();
  assert.equal(r.status, 400, `unsupported version: status ${r.status}: ${versionErr}`);
  const served = versionErr.match(/supported versions: ([0-9,-]+)/);
  assert.ok(served, `unsupported version: ${versionErr}`);
  assert.ok(served[1].split(',').includes('2025-11-25'), `unsupported version: ${versionErr}`);
  assert.ok(!served[1].split(',').includes('2026-07-28'), `unsupported version lists a version not served: ${versionErr}`);
  ok(`Mcp-Protocol-Version 2024-01-01: 400, supported versions ${served[1]}`);

  r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.carol}` }, body: initBody });
  assert.equal(r.status, 403, `carol: status ${r.status}: ${await r.text()}`);
  ok('carol, a valid token whose subject no principal names: 403');

  // alice's session: the stdio flow's file steps, her workspace its root.
  const alice = await connect(url, 'alice');
  const info = alice.client.getServerVersion();
  assert.equal(info?.name, 'harness', `serverInfo: ${JSON.stringify(info)}`);
  const names = (await alice.client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS })).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['delete', 'edit', 'exec', 'exec_input', 'exec_kill', 'exec_output', 'glob', 'grep', 'list', 'mkdir', 'move', 'read', 'write'], `tools/list: ${JSON.stringify(names)}`);
  assert.ok(alice.transport.sessionId, 'alice: no Mcp-Session-Id');
  ok(`alice: initialize over Streamable HTTP with her token (session ${alice.transport.sessionId}), the 12 tools listed`);

  await fileSteps({ call: alice.call, ws: aliceWs, ok: (msg) => ok(`alice: ${msg}`), expectToolError });

  // alice cannot write bob's workspace: not with write, not with a
  // command, not by asking (beyond her widest mode: refused, no prompt).
  const bobBefore = fs.readFileSync(bobFile);
  let res = await alice.call('write', { file_path: bobFile, content: 'alice was here\n' });
  expectToolError(res, 'alice writes bob\'s file', 'FS_SANDBOX_DENIED');
  res = await alice.call('write', { file_path: path.join(bobWs, 'planted.txt'), content: 'x' });
  expectToolError(res, 'alice creates a file in bob\'s workspace', 'FS_SANDBOX_DENIED');
  res = await alice.call('exec', { command: `printf 'alice was here\\n' > ${bobFile}` });
  expectToolError(res, 'alice\'s command writes bob\'s file', 'FS_SANDBOX_DENIED');
  res = await alice.call('write', { file_path: bobFile, content: 'alice was here\n', sandbox_permissions: 'danger-full-access', justification: 'The e2e test tries bob\'s workspace.' });
  let text = expectToolError(res, 'alice escalates beyond her widest mode', 'SANDBOX_ESCALATION_REFUSED');
  assert.equal(alice.asked.length, 0, `alice was prompted: ${JSON.stringify(alice.asked)}`);
  assert.deepEqual(fs.readFileSync(bobFile), bobBefore, 'bob\'s file changed on disk');
  assert.ok(!fs.existsSync(path.join(bobWs, 'planted.txt')), 'a file was planted in bob\'s workspace');
  assert.deepEqual(fs.readdirSync(bobWs), ['notes.txt'], 'bob\'s workspace changed');
  ok(`alice → bob's workspace: write, create and a command FS_SANDBOX_DENIED; escalated to danger-full-access refused without a prompt (${JSON.stringify(text.split('\n')[0])}); bob's file unchanged on disk`);

  // alice cannot read the .env in her own workspace.
  res = await alice.call('read', { file_path: '.env' });
  text = expectToolError(res, 'alice reads .env', 'FS_READ_DENIED');
  assert.ok(!text.includes('alice-secret'), `read .env: the secret is in the result: ${JSON.stringify(text)}`);
  res = await alice.call('exec', { command: 'cat .env' });
  text = expectToolError(res, 'alice\'s command reads .env', 'FS_READ_DENIED');
  assert.ok(!text.includes('alice-secret'), `exec cat .env: the secret is in the result: ${JSON.stringify(text)}`);
  res = await alice.call('grep', { pattern: 'alice-secret', include_hidden: true });
  expectSuccess(res, 'alice greps for the secret');
  assert.deepEqual(res.structuredContent.files ?? [], [], `grep found the secret: ${JSON.stringify(res.structuredContent)}`);
  ok('alice: the deny-read .env in her workspace is refused to read (FS_READ_DENIED) and to cat in a command; grep does not find its content');

  // bob's session: read-only, his escalation asked on his session's stream.
  const bob = await connect(url, 'bob');
  const justification = 'The e2e test writes one file in bob\'s workspace.';
  const bobPut = (name, answer) => {
    bob.answers.push(ANSWER[answer]);
    return bob.call('write', { file_path: path.join(bobWs, name), content: answer, sandbox_permissions: 'workspace-write', justification });
  };
  res = await bob.call('write', { file_path: path.join(bobWs, 'plain.txt'), content: 'x' });
  expectToolError(res, 'bob writes under read-only', 'FS_SANDBOX_DENIED');
  res = await bobPut('once.txt', 'once');
  assert.equal(bob.asked.length, 1, `bob: want one prompt, got ${JSON.stringify(bob.asked)}; the result: ${JSON.stringify(res)}`);
  const ask = bob.asked[0];
  assert.deepEqual(ask.requestedSchema?.properties?.decision?.enum, ['allow-once', 'allow-session', 'deny'], `bob: the prompt's form: ${JSON.stringify(ask)}`);
  assert.ok(ask.message.includes(path.join(bobWs, 'once.txt')) && ask.message.includes('workspace-write') && ask.message.includes(justification),
    `bob: the prompt: ${JSON.stringify(ask.message)}`);
  expectSuccess(res, 'bob escalated write, allow-once');
  assert.equal(fs.readFileSync(path.join(bobWs, 'once.txt'), 'utf8'), 'once', 'bob: once.txt on disk');
  res = await bobPut('decline.txt', 'decline');
  assert.equal(bob.asked.length, 2, `bob: want a second prompt, got ${bob.asked.length}`);
  text = expectToolError(res, 'bob escalated write, declined', 'SANDBOX_ESCALATION_REFUSED');
  assert.equal(text, refusalText('decline', 'operation', 'workspace-write'), 'bob declined: text');
  assert.ok(!fs.existsSync(path.join(bobWs, 'decline.txt')), 'bob declined: decline.txt exists');
  assert.ok(!fs.existsSync(path.join(bobWs, 'plain.txt')), 'bob: plain.txt exists');
  assert.equal(alice.asked.length, 0, 'bob\'s prompts reached alice');
  ok('bob (read-only, widest workspace-write): a plain write FS_SANDBOX_DENIED; escalated, asked on his own session\'s stream: allow-once lands on disk, decline writes nothing; alice saw no prompt');

  // A call bob cancels gets no response (MCP: a receiver should not answer
  // a cancelled request): the SDK reports a response to an id it no longer
  // waits for as "Received a response for an unknown message ID". bob
  // cancels while the approval is asked; the server then cancels its
  // prompt, and the call's stream ends without an answer.
  const unknownIDs = [];
  bob.client.onerror = (err) => {
    if (/unknown message ID/.test(err.message)) unknownIDs.push(err.message);
  };
  const abort = new AbortController();
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  bob.client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
    abort.abort(new Error('bob stopped the call'));
    // No answer until the server gives up the prompt or the step is
    // over: an answer racing the cancellation could end the call first.
    await new Promise((resolve) => {
      extra.signal.addEventListener('abort', resolve, { once: true });
      released.then(resolve);
    });
    return { action: 'cancel' };
  });
  const cancelled = await bob.client.callTool({ name: 'write', arguments: { file_path: path.join(bobWs, 'cancelled.txt'), content: 'x', sandbox_permissions: 'workspace-write', justification } },
    undefined, { timeout: REQUEST_TIMEOUT_MS, signal: abort.signal }).then(() => 'answered', (err) => `rejected: ${err.message}`);
  assert.match(cancelled, /^rejected: .*bob stopped the call/, `bob's cancelled call: ${cancelled}`);
  // The server ends the call within milliseconds of the cancellation;
  // whatever it sent for it would have arrived well within a second.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  res = await bob.call('read', { file_path: bobFile });
  expectSuccess(res, 'bob reads after the cancel');
  release();
  assert.deepEqual(unknownIDs, [], 'a response came for the cancelled call');
  assert.ok(!fs.existsSync(path.join(bobWs, 'cancelled.txt')), 'the cancelled write landed');
  ok('bob cancels an escalated write while it is asked: the server sends no response for the call (no "unknown message ID"), writes nothing');

  // A request without a session id (other than initialize): 400 and a
  // JSON-RPC Invalid Request error naming the header.
  r = await fetch(url, {
    method: 'POST',
    headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.alice}`, 'Mcp-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
  });
  const noSession = await r.text();
  assert.equal(r.status, 400, `no Mcp-Session-Id: status ${r.status}: ${noSession}`);
  assert.equal(r.headers.get('mcp-session-id'), null, 'no Mcp-Session-Id: a session was opened');
  const noSessionErr = JSON.parse(noSession);
  assert.equal(noSessionErr.id, 5, `no Mcp-Session-Id: id: ${noSession}`);
  assert.equal(noSessionErr.error?.code, -32600, `no Mcp-Session-Id: code: ${noSession}`);
  assert.match(noSessionErr.error?.message ?? '', /Mcp-Session-Id header is required/, `no Mcp-Session-Id: message: ${noSession}`);
  ok(`tools/list without an Mcp-Session-Id: 400, JSON-RPC error -32600 ${JSON.stringify(noSessionErr.error.message)}`);

  // alice's session id is hers: with bob's token it is refused.
  r = await fetch(url, {
    method: 'POST',
    headers: { ...mcpHeaders, Authorization: `Bearer ${tokens.bob}`, 'Mcp-Session-Id': alice.transport.sessionId, 'Mcp-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'write', arguments: { file_path: path.join(aliceWs, 'bob-was-here.txt'), content: 'x' } } }),
  });
  assert.equal(r.status, 403, `alice's session with bob's token: status ${r.status}: ${await r.text()}`);
  assert.ok(!fs.existsSync(path.join(aliceWs, 'bob-was-here.txt')), 'bob wrote through alice\'s session');
  ok(`alice's Mcp-Session-Id with bob's token: ${r.status}, nothing written`);

  // The sessions still serve.
  res = await alice.call('read', { file_path: 'seed.txt', offset: 2, limit: 1 });
  assert.match(expectSuccess(res, 'alice reads again'), /2: BETA/, 'alice reads again');
  ok('alice\'s session still serves: read seed.txt offset 2 limit 1 -> "2: BETA"');

  await jwtSteps();
}

// jwtSteps runs a second server that verifies bearer JWTs (--jwks-url,
// --jwt-issuer, --jwt-audience, no --authorization-server): this script
// serves the JWKS (an Ed25519 key) and signs the tokens with node:crypto.
// The protected-resource metadata names the issuer as the authorization
// server (issue 36: a client needs one to sign in); alice's JWT opens a
// session that reads her file; a JWT signed by another key, or for another
// audience, gets 401.
async function jwtSteps() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const other = crypto.generateKeyPairSync('ed25519').privateKey;
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'e2e', alg: 'EdDSA', use: 'sig' };
  const jwks = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const issuer = 'https://issuer.e2e.example';
  const audience = 'harness-e2e';
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const sign = (claims, key = privateKey) => {
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64({ alg: 'EdDSA', typ: 'JWT', kid: 'e2e' })}.${b64({ iss: issuer, aud: audience, iat: now, exp: now + 600, ...claims })}`;
    return `${input}.${crypto.sign(null, Buffer.from(input), key).toString('base64url')}`;
  };
  const args = ['serve', '--listen', '127.0.0.1:0', '--jwks-url', `http://127.0.0.1:${jwks.address().port}/jwks`,
    '--jwt-issuer', issuer, '--jwt-audience', audience, '--principals', principalsFile, '--temp-root', tempRoot, '--log-level', logLevel];
  const second = startServer(args);
  try {
    const url = await second.listening;
    const origin = new URL(url).origin;
    let r = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(r.status, 200, `JWT server metadata: status ${r.status}`);
    const metadata = await r.json();
    assert.deepEqual(metadata.authorization_servers, [issuer], `JWT server metadata: ${JSON.stringify(metadata)}`);
    ok(`--jwks-url with --jwt-issuer and no --authorization-server: the metadata names the issuer, authorization_servers ${JSON.stringify(metadata.authorization_servers)}`);

    for (const [what, bearer] of [['signed by another key', sign({ sub: 'alice' }, other)], ['for another audience', sign({ sub: 'alice', aud: 'someone-else' })]]) {
      r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, Authorization: `Bearer ${bearer}` }, body: initBody });
      assert.equal(r.status, 401, `a JWT ${what}: status ${r.status}: ${await r.text()}`);
    }
    ok('a JWT signed by another key, and one for another audience: 401');

    const alice = await connect(url, 'alice', sign({ sub: 'alice' }));
    const res = await alice.call('read', { file_path: 'seed.txt', offset: 2, limit: 1 });
    assert.match(expectSuccess(res, 'alice reads with her JWT'), /2: BETA/, 'alice reads with her JWT');
    await alice.client.close();
    ok('alice\'s JWT (EdDSA, from the JWKS): a session of the official SDK reads seed.txt -> "2: BETA"');
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
    jwks.close();
  }
}

// ---------------------------------------------------------------- main

const watchdog = setTimeout(() => {
  fail(new Error(`timed out after ${WATCHDOG_MS} ms`));
  server.child.kill('SIGKILL');
  fs.rmSync(base, { recursive: true, force: true });
  process.exit(1);
}, WATCHDOG_MS);
watchdog.unref();

let code = 0;
try {
  await run();
} catch (err) {
  fail(err);
  code = 1;
} finally {
  for (const c of clients) {
    try {
      await c.close();
    } catch (err) {
      console.error(`close: ${err.message}`);
    }
  }
  // SIGTERM: the server drains and exits on its own.
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  const { code: exitCode, signal } = await server.exited;
  clearTimeout(timer);
  if (code === 0 && (exitCode !== 0 || signal !== null)) {
    fail(new Error(`after SIGTERM harness exited with ${exitCode ?? signal}, want 0`));
    code = 1;
  }
  fs.rmSync(base, { recursive: true, force: true });
}
if (code === 0) {
  const w = warnings.length === 0 ? '' : `, ${warnings.length} warning(s)`;
  console.log(`PASS: ${stepNo} steps${w}`);
}
process.exit(code);
