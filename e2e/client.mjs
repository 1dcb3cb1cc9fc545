#!/usr/bin/env node
// End-to-end test of `harness serve` with an independent MCP client: the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json)
// over stdio. It spawns the harness binary, drives it like an MCP host would,
// and checks what such a host sees: the tool declarations, the structured
// results (validated by the SDK against each tool's outputSchema), the
// FS_* codes in _meta, the sandbox denial, escalation through elicitation
// (approved, then declined), argument errors and protocol errors; then, on a
// second server without --workspace, multiple client roots and
// notifications/roots/list_changed; then, on servers under --mode read-only,
// `write` and `exec` escalated and answered allow-once, deny, decline,
// cancel and allow-session, a session grant widening only its own tool
// family, in both protocol generations (2025-11-25 through the SDK's
// elicitation handler, 2026-07-28 through input-required results and a
// client written here); exec escalated out of workspace-write; an exec of
// `sleep 65` that outlives the SDK's 60 s request timeout on progress
// notifications; and last a background server (exec with background,
// exec_output, a later exec fetching from it, exec_kill).
//
// Usage: node e2e/client.mjs   (or `make e2e` from the module root)
//
// Environment:
//   HARNESS_BIN          harness binary (default: ../bin/harness next to this script)
//   HARNESS_E2E_STRICT   "1": also fail when a tool error carries no
//                        _meta["harness/code"] (an FS_* code, INVALID_ARGUMENT or SANDBOX_ESCALATION_REFUSED; otherwise a WARN line)
//   HARNESS_E2E_VERBOSE  "1": echo the server's stderr as it arrives
//   HARNESS_E2E_LOG_LEVEL  the server's --log-level (default info)
//
// One line is printed per step; the first failed assertion prints FAIL with
// the reason (and the server's stderr) and exits 1.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ListRootsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

import { ANSWER, expectSuccess, fileSteps, refusalText, seedWorkspace, toolErrorChecker } from './shared.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const harnessBin = path.resolve(process.env.HARNESS_BIN || path.join(here, '..', 'bin', 'harness'));
const strict = process.env.HARNESS_E2E_STRICT === '1';
const verbose = process.env.HARNESS_E2E_VERBOSE === '1';
const logLevel = process.env.HARNESS_E2E_LOG_LEVEL || 'info';
const REQUEST_TIMEOUT_MS = 15_000;
const WATCHDOG_MS = 240_000;

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
  const msg = err instanceof assert.AssertionError || err instanceof Error ? err.message : String(err);
  console.error(`FAIL ${stepNo + 1} - ${msg}`);
  if (serverStderr.trim() !== '' && !verbose) {
    console.error('--- harness stderr ---');
    console.error(serverStderr.trimEnd());
    console.error('--- end of harness stderr ---');
  }
}

// ---------------------------------------------------------------- helpers

const expectToolError = toolErrorChecker(warn);

function exists(p) {
  return fs.existsSync(p);
}

// ---------------------------------------------------------------- fixture

if (!fs.existsSync(harnessBin)) {
  console.error(`FAIL 0 - harness binary not found at ${harnessBin} (build it: make build, or set HARNESS_BIN)`);
  process.exit(1);
}

// realpath: os.tmpdir() may be a symlink, and the server shows resolved paths.
const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-ws-')));
const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-outside-')));
seedWorkspace(ws);
fs.mkdirSync(path.join(ws, 'sub'));
fs.writeFileSync(path.join(ws, 'sub', 'deep.txt'), 'beta deep\n');

// The elicitation handler answers from this queue, in order; every request
// it sees is recorded.
const elicitAnswers = [];
const elicitRequests = [];
// Directories made by later steps, removed at the end.
const extraDirs = [];

const serverArgs = ['serve', '--workspace', ws, '--mode', 'workspace-write', '--temp-root', ws, '--log-level', logLevel];
const transport = new StdioClientTransport({
  command: harnessBin,
  args: serverArgs,
  env: getDefaultEnvironment(),
  cwd: ws,
  stderr: 'pipe',
});
transport.stderr.on('data', (chunk) => {
  serverStderr += chunk.toString();
  if (verbose) process.stderr.write(`[harness] ${chunk}`);
});
let negotiatedVersion;
transport.setProtocolVersion = (v) => { negotiatedVersion = v; };

const client = new Client(
  { name: 'harness-e2e', version: '0.0.0' },
  { capabilities: { elicitation: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicitRequests.push(request.params);
  const answer = elicitAnswers.shift();
  if (answer === undefined) {
    // An unexpected prompt: cancel it, and let the step's assertions fail.
    return { action: 'cancel' };
  }
  return answer;
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });

// ---------------------------------------------------------------- steps

async function run() {
  console.log(`harness e2e: ${harnessBin} ${serverArgs.join(' ')}`);
  console.log(`  workspace ${ws}, outside ${outside}`);

  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  const info = client.getServerVersion();
  assert.equal(info?.name, 'harness', `serverInfo.name: ${JSON.stringify(info)}`);
  assert.ok(client.getServerCapabilities()?.tools, `server declares no tools capability: ${JSON.stringify(client.getServerCapabilities())}`);
  ok(`initialize: server ${info.name} ${info.version}, protocol ${negotiatedVersion}, capabilities ${JSON.stringify(client.getServerCapabilities())}`);

  // tools/list
  // The filesystem tools; exec, the command runner, is listed with its
  // required command and background, exec_output and exec_kill with their
  // arguments, and otherwise have their own checks.
  const listed = (await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS })).tools;
  const commandTools = ['exec', 'exec_input', 'exec_kill', 'exec_output'];
  const execTool = listed.find((t) => t.name === 'exec');
  assert.deepEqual(execTool?.inputSchema?.required, ['command'], `exec: inputSchema.required: ${JSON.stringify(execTool?.inputSchema)}`);
  assert.equal(execTool.inputSchema.properties?.background?.type, 'boolean', `exec: background: ${JSON.stringify(execTool.inputSchema)}`);
  const killTool = listed.find((t) => t.name === 'exec_kill');
  assert.deepEqual(killTool?.inputSchema?.required, ['id'], `exec_kill: inputSchema.required: ${JSON.stringify(killTool?.inputSchema)}`);
  assert.deepEqual(killTool.inputSchema.properties?.signal?.enum, ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL'], `exec_kill: signal: ${JSON.stringify(killTool.inputSchema)}`);
  const outputTool = listed.find((t) => t.name === 'exec_output');
  assert.equal(outputTool?.inputSchema?.properties?.id?.type, 'string', `exec_output: id: ${JSON.stringify(outputTool?.inputSchema)}`);
  assert.equal(outputTool.annotations?.readOnlyHint, true, `exec_output: readOnlyHint: ${JSON.stringify(outputTool.annotations)}`);
  const tools = listed.filter((t) => !commandTools.includes(t.name));
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['delete', 'edit', 'glob', 'grep', 'list', 'mkdir', 'move', 'read', 'write'], `tools/list names: ${JSON.stringify(names)}`);
  const wantRequired = {
    read: ['file_path'], write: ['file_path', 'content'], edit: ['file_path'], list: [],
    glob: ['pattern'], grep: ['pattern'],
    mkdir: ['path'], delete: ['path'], move: ['source', 'destination'],
  };
  // What each mutating tool may do: mkdir only adds, the others may destroy.
  const wantDestructive = { write: true, edit: true, delete: true, move: true, mkdir: false };
  for (const t of tools) {
    assert.equal(typeof t.description, 'string', `${t.name}: no description`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name}: inputSchema.type: ${JSON.stringify(t.inputSchema)}`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name}: outputSchema.type: ${JSON.stringify(t.outputSchema)}`);
    assert.deepEqual([...(t.inputSchema.required ?? [])].sort(), [...wantRequired[t.name]].sort(), `${t.name}: inputSchema.required`);
    const a = t.annotations ?? {};
    const readOnly = ['read', 'list', 'glob', 'grep'].includes(t.name);
    if (readOnly) {
      assert.equal(a.readOnlyHint, true, `${t.name}: readOnlyHint: ${JSON.stringify(a)}`);
    } else {
      assert.equal(a.destructiveHint, wantDestructive[t.name], `${t.name}: destructiveHint: ${JSON.stringify(a)}`);
      assert.notEqual(a.readOnlyHint, true, `${t.name}: readOnlyHint on a writing tool: ${JSON.stringify(a)}`);
      const sp = t.inputSchema.properties?.sandbox_permissions;
      assert.ok(sp?.enum?.includes('danger-full-access'), `${t.name}: sandbox_permissions not advertised: ${JSON.stringify(sp)}`);
      assert.equal(t.inputSchema.properties?.justification?.type, 'string', `${t.name}: justification not advertised`);
    }
    assert.equal(a.openWorldHint, false, `${t.name}: openWorldHint: ${JSON.stringify(a)}`);
  }
  ok('tools/list: exec with its required command and background, exec_kill (id, signal), exec_output (id, readOnlyHint), and exactly delete, edit, glob, grep, list, mkdir, move, read, write; input/output schemas; read/list/glob/grep readOnlyHint, the mutating tools escalation and destructiveHint but mkdir, openWorldHint false');

  // read, edit after the read, edit without one, write a new file: the
  // steps the HTTP flow (http.mjs) runs too.
  const { seed, created } = await fileSteps({ call, ws, ok, expectToolError });
  let res;
  let text;

  // list the workspace as a tree two levels deep, with modification times
  res = await call('list', { path: ws, depth: 2 });
  text = expectSuccess(res, 'list workspace');
  const sc = res.structuredContent;
  assert.equal(sc.path, ws, 'list: structuredContent.path');
  assert.equal(sc.offset, 1, 'list: structuredContent.offset');
  assert.equal(sc.depth, 2, 'list: structuredContent.depth');
  assert.equal(sc.totalEntries, 5, `list: totalEntries: ${JSON.stringify(sc)}`);
  assert.equal(sc.truncated, false, 'list: structuredContent.truncated');
  const mtimeRe = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
  for (const e of sc.entries) {
    assert.match(e.modTime, mtimeRe, `list: ${e.path} has an RFC 3339 modTime: ${JSON.stringify(e)}`);
    const diskMs = fs.statSync(path.join(ws, e.path)).mtimeMs;
    assert.ok(Math.abs(Date.parse(e.modTime) - diskMs) <= 1, `list: ${e.path} modTime ${e.modTime} is the disk's (${diskMs} ms)`);
  }
  assert.deepEqual(sc.entries.map(({ modTime, ...rest }) => rest), [
    { name: 'new.txt', path: 'new.txt', type: 'file', size: 6 },
    { name: 'other.txt', path: 'other.txt', type: 'file', size: 8 },
    { name: 'seed.txt', path: 'seed.txt', type: 'file', size: 17 },
    { name: 'sub', path: 'sub', type: 'directory' },
    { name: 'deep.txt', path: 'sub/deep.txt', type: 'file', size: 10 },
  ], `list: entries: ${JSON.stringify(sc.entries)}`);
  const m = (p) => 'modified ' + sc.entries.find((e) => e.path === p).modTime.replace(/\.\d+Z$/, 'Z');
  assert.equal(text,
    `<path>${ws}</path>\n<type>directory</type>\n<entries>\nnew.txt (6 bytes, ${m('new.txt')})\nother.txt (8 bytes, ${m('other.txt')})\nseed.txt (17 bytes, ${m('seed.txt')})\nsub/ (${m('sub')})\nsub/deep.txt (10 bytes, ${m('sub/deep.txt')})\n\n(End of tree - total 5 entries)\n</entries>`,
    'list: envelope text');
  ok('list workspace, depth 2: new.txt, other.txt, seed.txt, sub/, sub/deep.txt with sizes and modification times (text and structuredContent)');

  // several edits in a dry run: the diff, nothing written
  res = await call('edit', { file_path: 'seed.txt', edits: [{ old_string: 'alpha', new_string: 'ALPHA' }, { old_string: 'gamma', new_string: 'GAMMA' }], dry_run: true });
  expectSuccess(res, 'edit seed.txt edits dry_run');
  assert.equal(res.structuredContent.dryRun, true, 'edit dry_run: structuredContent.dryRun');
  assert.equal(res.structuredContent.replacements, 2, 'edit dry_run: replacements');
  assert.match(res.structuredContent.diff, /^\+GAMMA$/m, 'edit dry_run: diff has +GAMMA');
  assert.equal(fs.readFileSync(seed, 'utf8'), 'alpha\nBETA\ngamma\n', 'edit dry_run: the file changed on disk');
  ok('edit with two edits and dry_run: the diff of both, nothing written');

  // glob the workspace, newest first
  const mtimes = { 'sub/deep.txt': 4000, 'seed.txt': 3000, 'other.txt': 2000, 'new.txt': 1000 };
  for (const [rel, t] of Object.entries(mtimes)) fs.utimesSync(path.join(ws, rel), t, t);
  res = await call('glob', { pattern: '**/*.txt' });
  text = expectSuccess(res, 'glob **/*.txt');
  assert.equal(text, `<path>${ws}</path>\n<files>\nsub/deep.txt\nseed.txt\nother.txt\nnew.txt\n\n(4 matching files, newest first.)\n</files>`,
    'glob: text');
  assert.deepEqual(res.structuredContent.files.map((f) => [f.path, Date.parse(f.modTime) / 1000]),
    Object.entries(mtimes), `glob: files: ${JSON.stringify(res.structuredContent.files)}`);
  res = await call('glob', { pattern: '../*' });
  text = expectToolError(res, 'glob ../*', 'INVALID_ARGUMENT');
  assert.equal(text, 'Error: invalid glob pattern "../*": the pattern must not contain . or .. elements', 'glob ..: text');
  ok('glob **/*.txt: four files newest first (text and structuredContent); a ".." pattern is INVALID_ARGUMENT');

  // grep with context
  res = await call('grep', { pattern: 'beta', ignore_case: true, output_mode: 'content', context: 1 });
  text = expectSuccess(res, 'grep beta');
  assert.equal(text,
    `<path>${ws}</path>\n<matches>\nseed.txt\n1- alpha\n2: BETA\n3- gamma\n\nsub/deep.txt\n1: beta deep\n\n(2 matching lines in 2 files.)\n</matches>`,
    'grep: text');
  assert.deepEqual(res.structuredContent.files, [
    { path: 'seed.txt', count: 1, lines: [{ number: 1, text: 'alpha', match: false }, { number: 2, text: 'BETA', match: true }, { number: 3, text: 'gamma', match: false }] },
    { path: 'sub/deep.txt', count: 1, lines: [{ number: 1, text: 'beta deep', match: true }] },
  ], `grep: files: ${JSON.stringify(res.structuredContent.files)}`);
  res = await call('grep', { pattern: '(' });
  text = expectToolError(res, 'grep (', 'INVALID_ARGUMENT');
  assert.ok(text.startsWith('Error: invalid pattern: error parsing regexp: '), `grep (: text ${JSON.stringify(text)}`);
  ok('grep beta, ignore_case, content, context 1: seed.txt and sub/deep.txt with context lines; a bad expression is INVALID_ARGUMENT');

  // mkdir, move, delete inside the workspace
  res = await call('mkdir', { path: 'made/deeper' });
  expectSuccess(res, 'mkdir made/deeper');
  assert.equal(res.structuredContent.created, 2, 'mkdir: created');
  assert.ok(fs.statSync(path.join(ws, 'made', 'deeper')).isDirectory(), 'mkdir: no directory on disk');
  // The glob step set new.txt's mtime, so its version changed since it was
  // written: read it again before moving it (a move guards on the version).
  expectSuccess(await call('read', { file_path: 'new.txt' }), 'read new.txt before the move');
  res = await call('move', { source: 'new.txt', destination: 'made/deeper/moved.txt' });
  expectSuccess(res, 'move new.txt');
  assert.equal(res.structuredContent.type, 'file', 'move: type');
  assert.ok(!exists(created), 'move: the source is still there');
  assert.equal(fs.readFileSync(path.join(ws, 'made', 'deeper', 'moved.txt'), 'utf8'), 'fresh\n', 'move: destination on disk');
  res = await call('move', { source: 'other.txt', destination: 'seed.txt' });
  expectToolError(res, 'move over an existing file', 'FS_ALREADY_EXISTS');
  res = await call('delete', { path: 'made' });
  expectToolError(res, 'delete a non-empty directory', 'FS_NOT_EMPTY');
  res = await call('delete', { path: 'made', recursive: true });
  expectSuccess(res, 'delete made recursive');
  assert.deepEqual(res.structuredContent, { path: path.join(ws, 'made'), type: 'directory', files: 1, directories: 2, others: 0 }, 'delete: counts');
  assert.ok(!exists(path.join(ws, 'made')), 'delete: the directory is still there');
  res = await call('mkdir', { path: path.join(outside, 'nope') });
  expectToolError(res, 'mkdir outside', 'FS_SANDBOX_DENIED');
  assert.ok(!exists(path.join(outside, 'nope')), 'mkdir outside: the directory exists after a denial');
  res = await call('delete', { path: ws, recursive: true });
  expectToolError(res, 'delete the workspace', 'FS_PERMISSION_DENIED');
  assert.ok(exists(seed), 'delete the workspace: seed.txt is gone');
  ok('mkdir made/deeper, move new.txt into it (never over seed.txt), delete it recursively with counts; mkdir outside denied; the workspace itself never deleted');

  // write outside: denied
  const denied = path.join(outside, 'denied.txt');
  res = await call('write', { file_path: denied, content: 'nope\n' });
  text = expectToolError(res, 'write outside', 'FS_SANDBOX_DENIED');
  assert.ok(text.startsWith('Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available — '),
    `write outside: denial text: ${JSON.stringify(text)}`);
  assert.ok(!exists(denied), 'write outside: the file exists after a denial');
  assert.equal(elicitRequests.length, 0, 'write outside: the user was asked without sandbox_permissions');
  ok('write outside the workspace: isError, denial marker + escalation hint, FS_SANDBOX_DENIED, no file, no prompt');

  // the same write with sandbox_permissions: approved through elicitation
  const justification = 'The e2e test writes one file outside the workspace.';
  elicitAnswers.push({ action: 'accept', content: { decision: 'allow-once' } });
  res = await call('write', { file_path: denied, content: 'approved\n', sandbox_permissions: 'danger-full-access', justification });
  expectSuccess(res, 'escalated write (approved)');
  assert.equal(elicitRequests.length, 1, `approved: want 1 elicitation, got ${elicitRequests.length}`);
  const ask = elicitRequests[0];
  assert.ok(ask.mode === undefined || ask.mode === 'form', `approved: elicitation mode ${ask.mode}`);
  assert.ok(ask.message.includes(justification), `approved: prompt lacks the justification: ${JSON.stringify(ask.message)}`);
  assert.ok(ask.message.includes('danger-full-access'), `approved: prompt lacks the mode: ${JSON.stringify(ask.message)}`);
  assert.equal(ask.requestedSchema?.type, 'object', `approved: requestedSchema: ${JSON.stringify(ask.requestedSchema)}`);
  assert.deepEqual(ask.requestedSchema?.properties?.decision?.enum, ['allow-once', 'allow-session', 'deny'],
    `approved: requestedSchema offers once, for the session, or deny: ${JSON.stringify(ask.requestedSchema)}`);
  assert.ok(ask.message.includes(`on ${JSON.stringify(denied)}`), `approved: prompt lacks the canonical target: ${JSON.stringify(ask.message)}`);
  assert.ok(ask.message.includes('outside the writable roots'), `approved: prompt lacks the boundary: ${JSON.stringify(ask.message)}`);
  assert.equal(res.structuredContent.operation, 'create', 'approved: operation');
  assert.equal(fs.readFileSync(denied, 'utf8'), 'approved\n', 'approved: file on disk');
  ok(`write outside with sandbox_permissions danger-full-access: elicitation ${JSON.stringify(ask.message)} accepted, file written`);

  // the approval covered exactly that call
  const once = path.join(outside, 'once.txt');
  res = await call('write', { file_path: once, content: 'x\n' });
  expectToolError(res, 'write outside after an approval', 'FS_SANDBOX_DENIED');
  assert.ok(!exists(once), 'write after approval: file exists');
  assert.equal(elicitRequests.length, 1, 'write after approval: asked again');
  ok('a later plain write outside is denied again: the approval covered one call');

  // once more, declined
  const declined = path.join(outside, 'declined.txt');
  elicitAnswers.push({ action: 'decline' });
  res = await call('write', { file_path: declined, content: 'declined\n', sandbox_permissions: 'danger-full-access', justification });
  text = expectToolError(res, 'escalated write (declined)', 'SANDBOX_ESCALATION_REFUSED');
  assert.equal(text, 'Error: the user rejected escalating this operation to "danger-full-access"', 'declined: text');
  assert.equal(elicitRequests.length, 2, `declined: want 2 elicitations in all, got ${elicitRequests.length}`);
  assert.ok(!exists(declined), 'declined: the file exists');
  ok(`escalated write declined: ${JSON.stringify(text)}, no file (_meta ${JSON.stringify(res._meta ?? null)})`);

  // bad argument types: a tool error, not a protocol error
  try {
    res = await call('read', { file_path: 'seed.txt', offset: 'x' });
  } catch (err) {
    assert.fail(`read with offset "x": protocol error instead of a tool error: ${err?.code} ${err?.message}`);
  }
  text = expectToolError(res, 'read offset "x"', 'INVALID_ARGUMENT');
  assert.equal(text, 'Error: offset must be a positive integer', 'read offset "x": text');
  ok(`read with offset: "x": tool error ${JSON.stringify(text)} (_meta ${JSON.stringify(res._meta ?? null)})`);

  // unknown tool: a protocol error, and the server keeps serving
  let thrown;
  try {
    res = await call('no_such_tool', {});
  } catch (err) {
    thrown = err;
  }
  assert.ok(thrown, `unknown tool: want a protocol error, got a result: ${JSON.stringify(res)}`);
  assert.ok(thrown instanceof McpError, `unknown tool: want McpError, got ${thrown}`);
  ok(`unknown tool: protocol error ${thrown.code}: ${JSON.stringify(thrown.message)}`);

  res = await call('read', { file_path: 'seed.txt', offset: 2, limit: 1 });
  text = expectSuccess(res, 'read after the protocol error');
  assert.deepEqual(res.structuredContent.lines, [{ number: 2, text: 'BETA' }], 'read after the protocol error: lines');
  assert.equal(res.structuredContent.totalLines, 3, 'read after the protocol error: totalLines');
  ok('the server keeps serving: read seed.txt offset 2 limit 1 -> "2: BETA"');

  assert.equal(elicitAnswers.length, 0, `unused elicitation answers: ${JSON.stringify(elicitAnswers)}`);

  await runRoots();
  await runEscalation();
  await runLong();
  await runBackground();
  await runREPL();
}

// runRoots drives a second server, started without --workspace, whose
// workspace roots are the client's roots: every file:// root is writable,
// relative paths resolve against the first, a root of / grants nothing, and
// after notifications/roots/list_changed a removed root is no longer
// writable.
async function runRoots() {
  const ws1 = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-root1-')));
  const ws2 = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-root2-')));
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-tmp-')));
  extraDirs.push(ws1, ws2, tmp);
  let roots = [
    { uri: pathToFileURL(ws1).href, name: 'one' },
    { uri: pathToFileURL(ws2).href, name: 'two' },
    { uri: 'file:///', name: 'everything' },
  ];
  const rootsTransport = new StdioClientTransport({
    command: harnessBin,
    args: ['serve', '--mode', 'workspace-write', '--temp-root', tmp, '--log-level', logLevel],
    env: getDefaultEnvironment(),
    cwd: outside,
    stderr: 'pipe',
  });
  rootsTransport.stderr.on('data', (chunk) => {
    serverStderr += chunk.toString();
    if (verbose) process.stderr.write(`[harness roots] ${chunk}`);
  });
  const rc = new Client({ name: 'harness-e2e-roots', version: '0.0.0' }, { capabilities: { roots: { listChanged: true } } });
  let listed = 0;
  rc.setRequestHandler(ListRootsRequestSchema, async () => {
    listed += 1;
    return { roots };
  });
  const rcall = (name, args) => rc.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  await rc.connect(rootsTransport, { timeout: REQUEST_TIMEOUT_MS });
  try {
    let res = await rcall('write', { file_path: 'rel.txt', content: 'first root\n' });
    expectSuccess(res, 'roots: relative write');
    assert.equal(fs.readFileSync(path.join(ws1, 'rel.txt'), 'utf8'), 'first root\n', 'roots: a relative path resolves against the first root');
    res = await rcall('write', { file_path: path.join(ws2, 'two.txt'), content: 'second root\n' });
    expectSuccess(res, 'roots: write in the second root');
    assert.equal(fs.readFileSync(path.join(ws2, 'two.txt'), 'utf8'), 'second root\n', 'roots: the second root is writable');
    const far = path.join(outside, 'far.txt');
    res = await rcall('write', { file_path: far, content: 'x\n' });
    expectToolError(res, 'roots: write outside every root', 'FS_SANDBOX_DENIED');
    assert.ok(!exists(far), 'roots: a root of file:/// granted a write outside');
    ok(`roots: ${roots.length} announced; relative -> first root, the second root writable, file:/// grants nothing (roots/list asked ${listed}x)`);

    roots = [roots[0]];
    await rc.sendRootsListChanged();
    const gone = path.join(ws2, 'gone.txt');
    res = await rcall('write', { file_path: gone, content: 'x\n' });
    expectToolError(res, 'roots: write in a removed root', 'FS_SANDBOX_DENIED');
    assert.ok(!exists(gone), 'roots: a removed root is still writable');
    assert.ok(listed >= 2, `roots: roots/list was not asked again after list_changed (${listed}x)`);
    res = await rcall('write', { file_path: path.join(ws1, 'still.txt'), content: 'x\n' });
    expectSuccess(res, 'roots: write in the remaining root');
    ok('roots/list_changed: the roots are read again; the removed root is denied, the remaining one writable');
  } finally {
    await rc.close();
  }
}

// startServer spawns `harness serve` with args and connects a 2025-11-25
// client declaring elicitation, whose handler answers from the returned
// answers queue, in order, recording every request's params in asked (an
// unexpected prompt is cancelled, and the step's assertions fail). label
// names the server's stderr lines.
async function startServer(label, args, cwd) {
  const t = new StdioClientTransport({ command: harnessBin, args, env: getDefaultEnvironment(), cwd, stderr: 'pipe' });
  t.stderr.on('data', (chunk) => {
    serverStderr += chunk.toString();
    if (verbose) process.stderr.write(`[harness ${label}] ${chunk}`);
  });
  const c = new Client({ name: `harness-e2e-${label}`, version: '0.0.0' }, { capabilities: { elicitation: {} } });
  const answers = [];
  const asked = [];
  c.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return answers.shift() ?? { action: 'cancel' };
  });
  await c.connect(t, { timeout: REQUEST_TIMEOUT_MS });
  const callTool = (name, a) => c.callTool({ name, arguments: a }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  return { call: callTool, answers, asked, close: () => c.close() };
}

// runLong runs `sleep 65` through exec on the first server with the SDK's
// default request timeout (60 s): the call lives because the server sends a
// progress notification every 5 s and the request resets its timeout on
// each (resetTimeoutOnProgress), each message saying how long it has run
// and the output so far.
async function runLong() {
  const progress = [];
  const began = Date.now();
  const res = await client.callTool({ name: 'exec', arguments: { command: 'echo started; sleep 65; echo finished' } }, undefined,
    { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true });
  const secs = Math.round((Date.now() - began) / 1000);
  expectSuccess(res, 'exec sleep 65');
  assert.equal(res.structuredContent.exit_code, 0, `exec sleep 65: ${JSON.stringify(res.structuredContent)}`);
  assert.equal(res.structuredContent.stdout, 'started\nfinished\n', 'exec sleep 65: stdout');
  assert.ok(secs >= 65, `exec sleep 65: returned after ${secs} s`);
  assert.ok(progress.length >= 10, `exec sleep 65: want a progress notification every 5 s, got ${progress.length}: ${JSON.stringify(progress)}`);
  for (let i = 0; i < progress.length; i++) {
    assert.ok(progress[i].message?.startsWith('running for '), `exec sleep 65: progress message: ${JSON.stringify(progress[i])}`);
    assert.ok(progress[i].message.endsWith('output so far ends with:\nstarted\n'), `exec sleep 65: the output tail: ${JSON.stringify(progress[i])}`);
    if (i > 0) assert.ok(progress[i].progress > progress[i - 1].progress, `exec sleep 65: progress increases: ${JSON.stringify(progress)}`);
  }
  ok(`exec sleep 65 with the default 60 s request timeout: exit code 0 after ${secs} s, kept alive by ${progress.length} progress notifications (last: ${JSON.stringify(progress.at(-1).message)})`);
}

// freePort returns a loopback TCP port that was free a moment ago.
function freePort() {
  return new Promise((resolve, reject) => {
    const l = net.createServer();
    l.once('error', reject);
    l.listen(0, '127.0.0.1', () => {
      const { port } = l.address();
      l.close(() => resolve(port));
    });
  });
}

// runBackground starts an HTTP server (node) in the background on a server
// under --network deny (the session's commands share one loopback-only
// network namespace), reads its output with exec_output until it listens,
// lists it, fetches from it with a later exec, sees the request in its
// output, and ends it with exec_kill; then it stays listed as killed.
async function runBackground() {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-bg-')));
  extraDirs.push(dir);
  const srv = await startServer('background', ['serve', '--workspace', dir, '--mode', 'workspace-write', '--temp-root', dir,
    '--log-level', logLevel], dir);
  try {
    const port = await freePort();
    const node = process.execPath;
    const server = `require("http").createServer((q, s) => { console.log("GET " + q.url); s.end("hello from the background\\n"); })` +
      `.listen(${port}, "127.0.0.1", () => console.log("listening on ${port}"))`;
    let res = await srv.call('exec', { command: `exec '${node}' -e '${server}'`, background: true });
    expectSuccess(res, 'exec background');
    const { id } = res.structuredContent;
    assert.equal(res.structuredContent.background, true, `exec background: ${JSON.stringify(res.structuredContent)}`);
    assert.ok(typeof id === 'string' && id !== '', `exec background: id: ${JSON.stringify(res.structuredContent)}`);

    let out = '';
    for (let i = 0; !out.includes(`listening on ${port}\n`); i++) {
      assert.ok(i < 200, `exec_output: the server did not listen; output so far ${JSON.stringify(out)}`);
      res = await srv.call('exec_output', { id });
      expectSuccess(res, 'exec_output');
      assert.equal(res.structuredContent.state, 'running', `exec_output: ${JSON.stringify(res.structuredContent)}`);
      out += res.structuredContent.stdout ?? '';
      if (!out.includes('listening')) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(out, `listening on ${port}\n`, 'exec_output: stdout');

    res = await srv.call('exec_output', {});
    expectSuccess(res, 'exec_output without id');
    const listedCmds = res.structuredContent.commands;
    assert.equal(listedCmds?.length, 1, `exec_output without id: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(listedCmds[0].id, id);
    assert.equal(listedCmds[0].state, 'running');

    const fetchIt = `fetch("http://127.0.0.1:${port}/hi").then((r) => r.text()).then((t) => process.stdout.write(t))`;
    res = await srv.call('exec', { command: `'${node}' -e '${fetchIt}'` });
    expectSuccess(res, 'exec fetching from the background server');
    assert.equal(res.structuredContent.exit_code, 0, `exec fetching: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.stdout, 'hello from the background\n', 'exec fetching: stdout');

    res = await srv.call('exec_output', { id });
    expectSuccess(res, 'exec_output after the fetch');
    assert.equal(res.structuredContent.stdout, 'GET /hi\n', `exec_output after the fetch: ${JSON.stringify(res.structuredContent)}`);

    res = await srv.call('exec_kill', { id });
    expectSuccess(res, 'exec_kill');
    assert.equal(res.structuredContent.state, 'killed', `exec_kill: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.signal, 'SIGTERM', `exec_kill: ${JSON.stringify(res.structuredContent)}`);
    res = await srv.call('exec_output', { id });
    expectSuccess(res, 'exec_output of a killed command read to its end');
    assert.equal(res.structuredContent.state, 'killed', `exec_output after exec_kill: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.stdout_tail, `listening on ${port}\nGET /hi\n`, `exec_output after exec_kill: ${JSON.stringify(res.structuredContent)}`);
    res = await srv.call('exec_output', {});
    expectSuccess(res, 'exec_output without id after exec_kill');
    assert.deepEqual(Object.keys(res.structuredContent), ['commands'], `exec_output without id: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.commands[0].state, 'killed');
    // A command killed at its timeout is a structured result too (issue
    // 36): timed_out, the signal, the output it wrote before.
    res = await srv.call('exec', { command: 'echo before; exec sleep 300', timeout_ms: 1000 });
    assert.equal(res.structuredContent?.timed_out, true, `exec past its timeout: ${JSON.stringify(res)}`);
    assert.equal(res.structuredContent.stdout, 'before\n', `exec past its timeout: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.signal, 'SIGKILL', `exec past its timeout: ${JSON.stringify(res.structuredContent)}`);
    ok(`background (--network deny, the session's loopback): exec started node's HTTP server as ${id}; exec_output read "listening on ${port}" and listed it running; a later exec fetched "hello from the background"; exec_output showed "GET /hi"; exec_kill ended it by SIGTERM; it then stays listed as killed, with its output's tail; a command past its timeout_ms is structured (timed_out, SIGKILL, its output)`);
  } finally {
    await srv.close();
  }
}

// runREPL (issue 38) drives node's REPL on a terminal of its own through
// exec with tty and exec_input: it answers 6*7 with 42, Ctrl-C abandons a
// line, and .exit ends it with code 0; what the client reads has no
// terminal control sequence and no carriage return.
async function runREPL() {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-repl-')));
  extraDirs.push(dir);
  const srv = await startServer('repl', ['serve', '--workspace', dir, '--mode', 'workspace-write', '--temp-root', dir,
    '--log-level', logLevel], dir);
  try {
    const node = process.execPath;
    let res = await srv.call('exec', { command: `exec '${node}' --interactive`, tty: true, wait_ms: 10000 });
    expectSuccess(res, 'exec tty');
    const { id } = res.structuredContent;
    assert.ok(typeof id === 'string' && id !== '', `exec tty: id: ${JSON.stringify(res.structuredContent)}`);
    let screen = res.structuredContent.stdout ?? '';
    const until = async (want, what) => {
      for (let i = 0; !screen.includes(want); i++) {
        assert.ok(i < 100, `${what}: no ${JSON.stringify(want)} in ${JSON.stringify(screen)}`);
        const r = await srv.call('exec_output', { id });
        expectSuccess(r, 'exec_output');
        screen += r.structuredContent.stdout ?? '';
        if (!screen.includes(want)) await new Promise((ok) => setTimeout(ok, 50));
      }
    };
    await until('> ', 'the REPL prompt');
    res = await srv.call('exec_input', { id, input: '6*7\n', wait_ms: 5000 });
    expectSuccess(res, 'exec_input 6*7');
    screen += res.structuredContent.stdout ?? '';
    await until('42', 'the answer');
    res = await srv.call('exec_input', { id, input: 'let unfinished = (\n', wait_ms: 2000 });
    expectSuccess(res, 'exec_input of an unfinished line');
    screen += res.structuredContent.stdout ?? '';
    res = await srv.call('exec_input', { id, input: '\u0003', wait_ms: 2000 });
    expectSuccess(res, 'exec_input Ctrl-C');
    screen += res.structuredContent.stdout ?? '';
    res = await srv.call('exec_input', { id, input: '"again " + (1+1)\n', wait_ms: 5000 });
    expectSuccess(res, 'exec_input after Ctrl-C');
    screen += res.structuredContent.stdout ?? '';
    await until("'again 2'", 'the REPL after Ctrl-C');
    res = await srv.call('exec_input', { id, input: '.exit\n', wait_ms: 5000 });
    expectSuccess(res, 'exec_input .exit');
    for (let i = 0; res.structuredContent.state === 'running'; i++) {
      assert.ok(i < 100, `the REPL did not end: ${JSON.stringify(res.structuredContent)}`);
      await new Promise((ok) => setTimeout(ok, 50));
      res = await srv.call('exec_output', { id });
    }
    assert.equal(res.structuredContent.state, 'exited', `the REPL's end: ${JSON.stringify(res.structuredContent)}`);
    assert.equal(res.structuredContent.exit_code, 0, `the REPL's end: ${JSON.stringify(res.structuredContent)}`);
    assert.ok(!/[\r\u001b]/.test(screen), `terminal control left in ${JSON.stringify(screen)}`);
    ok(`interactive (tty): node's REPL as ${id} answered 6*7 with 42 through exec_input, Ctrl-C abandoned a line and it answered again, .exit ended it with code 0; the screen read as text`);
  } finally {
    await srv.close();
  }
}

// startRawServer is startServer for protocol 2026-07-28, which the
// TypeScript SDK does not speak: a client written here in JSON lines. Each
// request carries the protocol version, the client's info and its
// capabilities (elicitation) in _meta, with no initialize. A call the
// server answers with an input-required result asking for
// "sandbox_approval" is recorded in asked and sent again with the next
// answer of the queue and the request state the server issued, as a
// 2026-07-28 client does after asking its user.
async function startRawServer(label, args, cwd) {
  const child = spawn(harnessBin, args, { cwd, env: getDefaultEnvironment(), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.on('data', (chunk) => {
    serverStderr += chunk.toString();
    if (verbose) process.stderr.write(`[harness ${label}] ${chunk}`);
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const waiting = new Map();
  let buf = '';
  child.stdout.on('data', (chunk) => {
    buf += chunk.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim() === '') continue;
      const msg = JSON.parse(line);
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    }
  });
  let lastID = 0;
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = ++lastID;
    const timer = setTimeout(() => reject(new Error(`${label}: no answer to ${method} within ${REQUEST_TIMEOUT_MS} ms`)), REQUEST_TIMEOUT_MS);
    waiting.set(id, (msg) => {
      clearTimeout(timer);
      if (msg.error) reject(new Error(`${label}: ${method}: JSON-RPC error ${JSON.stringify(msg.error)}`));
      else resolve(msg.result);
    });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: `harness-e2e-${label}`, version: '0.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  };
  const answers = [];
  const asked = [];
  const callTool = async (name, a) => {
    let res = await request('tools/call', { _meta, name, arguments: a });
    for (let round = 0; res.resultType === 'input_required'; round++) {
      const ask = res.inputRequests?.sandbox_approval;
      assert.ok(round < 2 && ask?.method === 'elicitation/create' && Object.keys(res.inputRequests).length === 1,
        `${label}: ${name}: want one sandbox_approval elicitation, got ${JSON.stringify(res)}`);
      assert.ok(typeof res.requestState === 'string' && res.requestState !== '', `${label}: ${name}: no requestState: ${JSON.stringify(res)}`);
      asked.push(ask.params);
      const answer = answers.shift() ?? { action: 'cancel' };
      res = await request('tools/call', { _meta, name, arguments: a, requestState: res.requestState, inputResponses: { sandbox_approval: answer } });
    }
    return res;
  };
  const close = async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill(), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return { call: callTool, answers, asked, close };
}

// runEscalation drives four servers under --mode read-only (nothing is
// writable until the user grants workspace-write), each a fresh session, two
// per protocol generation: on the first the `write` tool, on the second the
// `exec` tool asks for
// workspace-write with sandbox_permissions + justification, and the client
// answers allow-once, deny, decline, cancel, then allow-session. After each
// call the disk says whether the bytes landed. A session grant covers the
// family it was asked for: after `write` was allowed for the session a later
// plain write lands without a prompt while a plain `exec` writing the
// workspace is still denied, and an escalated one is asked again; the same
// the other way round.
async function runEscalation() {
  const mode = 'workspace-write';
  const justification = 'The e2e test writes one file in the workspace.';
  for (const [era, start] of [['2025-11-25', startServer], ['2026-07-28', startRawServer]]) for (const family of ['write', 'exec']) {
    const other = family === 'write' ? 'exec' : 'write';
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `harness-e2e-ro-${family}-`)));
    extraDirs.push(dir);
    const args = ['serve', '--workspace', dir, '--mode', 'read-only', '--temp-root', dir, '--log-level', logLevel];
    const srv = await start(`${era} read-only ${family}`, args, dir);
    // put asks tool to create dir/name holding bytes, escalated when perm is
    // set: write with content, exec with `printf <bytes> > <file>`.
    const put = (tool, name, bytes, perm) => {
      const file = path.join(dir, name);
      const a = tool === 'write' ? { file_path: file, content: bytes } : { command: `printf ${bytes} > ${file}` };
      if (perm) Object.assign(a, { sandbox_permissions: perm, justification });
      return srv.call(tool, a);
    };
    const subject = (tool) => (tool === 'write' ? 'operation' : 'command');
    // landed checks a call that must have run: a success, the bytes on disk.
    const landed = (res, tool, name, bytes, what) => {
      expectSuccess(res, what);
      if (tool === 'exec') assert.equal(res.structuredContent.exit_code, 0, `${what}: exit code: ${JSON.stringify(res.structuredContent)}`);
      const file = path.join(dir, name);
      assert.ok(exists(file), `${what}: ${file} is not on disk`);
      assert.equal(fs.readFileSync(file, 'utf8'), bytes, `${what}: ${file} on disk`);
    };
    // absent checks that nothing was written.
    const absent = (name, what) => {
      const file = path.join(dir, name);
      assert.ok(!exists(file), `${what}: ${file} exists (${JSON.stringify(exists(file) ? fs.readFileSync(file, 'utf8') : '')})`);
    };
    // prompted checks that exactly n prompts were shown in all, the last
    // about tool and name; res is the call's result, shown when it was not.
    const prompted = (n, tool, name, what, res) => {
      assert.equal(srv.asked.length, n, `${what}: want ${n} prompts in all, got ${srv.asked.length}: ${JSON.stringify(srv.asked.map((a) => a.message))}; the call's result: ${JSON.stringify(res)}`);
      const ask = srv.asked[n - 1];
      assert.deepEqual(ask.requestedSchema?.properties?.decision?.enum, ['allow-once', 'allow-session', 'deny'], `${what}: the prompt's decision field: ${JSON.stringify(ask.requestedSchema)}`);
      assert.ok(ask.message.includes(JSON.stringify(tool)), `${what}: the prompt does not name the ${tool} tool: ${JSON.stringify(ask.message)}`);
      assert.ok(ask.message.includes(path.join(dir, name)), `${what}: the prompt does not name ${name}: ${JSON.stringify(ask.message)}`);
      assert.ok(ask.message.includes(mode), `${what}: the prompt does not name ${mode}: ${JSON.stringify(ask.message)}`);
      assert.ok(ask.message.includes(justification), `${what}: the prompt lacks the justification: ${JSON.stringify(ask.message)}`);
    };
    // denied checks a plain call the read-only mode refuses, with no prompt.
    const denied = (res, name, n, what) => {
      expectToolError(res, what, 'FS_SANDBOX_DENIED');
      absent(name, what);
      assert.equal(srv.asked.length, n, `${what}: a plain call prompted: ${JSON.stringify(srv.asked.slice(n).map((a) => a.message))}`);
    };
    try {
      let n = 0;
      const tag = `${era}, read-only, ${family}`;

      srv.answers.push(ANSWER.once);
      let res = await put(family, 'once.txt', 'once', mode);
      prompted(++n, family, 'once.txt', `${tag} allow-once`, res);
      landed(res, family, 'once.txt', 'once', `${tag} allow-once`);
      res = await put(family, 'after-once.txt', 'x');
      denied(res, 'after-once.txt', n, `${tag}: a plain call after allow-once`);
      ok(`${tag}: escalated to ${mode}, answered allow-once: prompted once, "once" on disk; a later plain ${family} is FS_SANDBOX_DENIED, no file, no prompt`);

      for (const answer of ['deny', 'decline', 'cancel']) {
        srv.answers.push(ANSWER[answer]);
        const name = `${answer}.txt`;
        res = await put(family, name, answer, mode);
        prompted(++n, family, name, `${tag} ${answer}`, res);
        const text = expectToolError(res, `${tag} ${answer}`, 'SANDBOX_ESCALATION_REFUSED');
        assert.equal(text, refusalText(answer, subject(family), mode), `${tag} ${answer}: text`);
        absent(name, `${tag} ${answer}`);
        ok(`${tag}: answered ${answer === 'deny' ? 'accept + deny' : answer}: ${JSON.stringify(text)}, no file`);
      }

      srv.answers.push(ANSWER.session);
      res = await put(family, 'session.txt', 'session', mode);
      prompted(++n, family, 'session.txt', `${tag} allow-session`, res);
      landed(res, family, 'session.txt', 'session', `${tag} allow-session`);
      res = await put(family, 'same-family.txt', 'same');
      landed(res, family, 'same-family.txt', 'same', `${tag}: a plain ${family} after allow-session`);
      assert.equal(srv.asked.length, n, `${tag}: a plain ${family} after allow-session prompted`);
      ok(`${tag}: answered allow-session: "session" on disk; a later plain ${family} lands without a prompt`);

      res = await put(other, 'other-family.txt', 'other');
      denied(res, 'other-family.txt', n, `${tag}: a plain ${other} after ${family} was allowed for the session`);
      srv.answers.push(ANSWER.decline);
      res = await put(other, 'other-escalated.txt', 'other', mode);
      prompted(++n, other, 'other-escalated.txt', `${tag}: an escalated ${other} after ${family} was allowed for the session`, res);
      const text = expectToolError(res, `${tag}: an escalated ${other}, declined`, 'SANDBOX_ESCALATION_REFUSED');
      assert.equal(text, refusalText('decline', subject(other), mode), `${tag}: an escalated ${other}, declined: text`);
      absent('other-escalated.txt', `${tag}: an escalated ${other}, declined`);
      ok(`${tag}: the ${family} grant does not widen ${other}: a plain ${other} writing the workspace is FS_SANDBOX_DENIED with no prompt and no file; an escalated one is asked again (declined, no file)`);
      assert.equal(srv.answers.length, 0, `${tag}: unused answers: ${JSON.stringify(srv.answers)}`);
    } finally {
      await srv.close();
    }
  }

  // On the first server (workspace-write), exec writing outside the
  // workspace: denied without a prompt, then escalated to
  // danger-full-access and allowed once.
  const before = elicitRequests.length;
  const far = path.join(outside, 'exec-far.txt');
  let res = await call('exec', { command: `printf far > ${far}` });
  expectToolError(res, 'workspace-write: exec writing outside', 'FS_SANDBOX_DENIED');
  assert.ok(!exists(far), `workspace-write: exec writing outside: ${far} exists`);
  assert.equal(elicitRequests.length, before, 'workspace-write: a plain exec prompted');
  elicitAnswers.push(ANSWER.once);
  res = await call('exec', { command: `printf far > ${far}`, sandbox_permissions: 'danger-full-access', justification });
  assert.equal(elicitRequests.length, before + 1, `workspace-write: escalated exec: want one prompt, got ${elicitRequests.length - before}; the call's result: ${JSON.stringify(res)}`);
  const ask = elicitRequests[before];
  assert.ok(ask.message.includes(far) && ask.message.includes('danger-full-access') && ask.message.includes(justification),
    `workspace-write: escalated exec: the prompt: ${JSON.stringify(ask.message)}`);
  expectSuccess(res, 'workspace-write: escalated exec, allow-once');
  assert.equal(res.structuredContent.exit_code, 0, `workspace-write: escalated exec: ${JSON.stringify(res.structuredContent)}`);
  assert.equal(exists(far) && fs.readFileSync(far, 'utf8'), 'far', `workspace-write: escalated exec: ${far} on disk`);
  ok('workspace-write, exec writing outside: FS_SANDBOX_DENIED with no prompt and no file; escalated to danger-full-access and allowed once, "far" on disk');
}

// ---------------------------------------------------------------- main

const watchdog = setTimeout(() => {
  fail(new Error(`timed out after ${WATCHDOG_MS} ms`));
  cleanup();
  process.exit(1);
}, WATCHDOG_MS);
watchdog.unref();

function cleanup() {
  for (const dir of [ws, outside, ...extraDirs]) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      console.error(`cleanup: ${dir}: ${err.message}`);
    }
  }
}

let code = 0;
try {
  await run();
} catch (err) {
  fail(err);
  code = 1;
} finally {
  try {
    await client.close();
  } catch (err) {
    console.error(`close: ${err.message}`);
  }
  cleanup();
}
if (code === 0) {
  const w = warnings.length === 0 ? '' : `, ${warnings.length} warning(s)`;
  console.log(`PASS: ${stepNo} steps${w}`);
}
process.exit(code);
