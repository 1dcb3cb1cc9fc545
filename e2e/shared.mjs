// Shared by the two flows of the e2e test: client.mjs (stdio) and http.mjs
// (Streamable HTTP). The assertions on a tool result, the answers a client
// gives to an approval prompt, and the file steps both flows run on a
// workspace seeded by seedWorkspace.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

// CODE_KEY is the _meta key of a tool error's code.
export const CODE_KEY = 'harness/code';

// textOf returns the one text block of a result.
export function textOf(result) {
  assert.ok(Array.isArray(result.content), `result has no content array: ${JSON.stringify(result)}`);
  assert.equal(result.content.length, 1, `want exactly one content block, got ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, 'text', `want a text block, got ${JSON.stringify(result.content[0])}`);
  return result.content[0].text;
}

// expectSuccess checks a successful result with structuredContent and
// returns its text.
export function expectSuccess(result, what) {
  assert.notEqual(result.isError, true, `${what}: want success, got tool error: ${JSON.stringify(result)}`);
  assert.ok(result.structuredContent && typeof result.structuredContent === 'object',
    `${what}: success without structuredContent: ${JSON.stringify(result)}`);
  return textOf(result);
}

// toolErrorChecker returns expectToolError(result, what, code): it checks a
// tool error (isError, no structuredContent but an exec's result) whose
// _meta code is code, and
// returns its text; with code undefined, an error without an FS_* code is
// passed to warn.
export function toolErrorChecker(warn) {
  return (result, what, code) => {
    assert.equal(result.isError, true, `${what}: want isError: true, got ${JSON.stringify(result)}`);
    // Only a command's result is structured when it is an error (its exit
    // code, signal, timeout and output: a refused or timed-out exec).
    if (result.structuredContent === undefined || typeof result.structuredContent?.exit_code !== 'number') {
      assert.equal(result.structuredContent, undefined, `${what}: a tool error carries structuredContent: ${JSON.stringify(result)}`);
    }
    const text = textOf(result);
    const got = result._meta?.[CODE_KEY];
    if (code !== undefined) {
      assert.equal(got, code, `${what}: want _meta["${CODE_KEY}"] = ${code}, got _meta ${JSON.stringify(result._meta)}`);
    } else if (typeof got !== 'string' || !got.startsWith('FS_')) {
      warn(`${what}: tool error without an FS_* code: _meta = ${JSON.stringify(result._meta)}, text = ${JSON.stringify(text)}`);
    }
    return text;
  };
}

// The client's answers to an approval prompt, and what each maps to
// (cmd/harness/internal/mcpserver/approval.go): accept with decision
// allow-once -> allowed-once, allow-session -> allowed-for-session, deny ->
// rejected; decline -> rejected; cancel -> cancelled.
export const ANSWER = {
  once: { action: 'accept', content: { decision: 'allow-once' } },
  session: { action: 'accept', content: { decision: 'allow-session' } },
  deny: { action: 'accept', content: { decision: 'deny' } },
  decline: { action: 'decline' },
  cancel: { action: 'cancel' },
};

// refusalText is the text of an escalation the user did not grant, by
// answer; subject is "operation" (a file tool) or "command" (exec).
export function refusalText(answer, subject, mode) {
  if (answer === 'cancel') return `Error: approval for escalating to ${JSON.stringify(mode)} was cancelled`;
  return `Error: the user rejected escalating this ${subject} to ${JSON.stringify(mode)}`;
}

// seedWorkspace writes the files fileSteps expects into ws: seed.txt
// (alpha, beta, gamma) and other.txt (one, two).
export function seedWorkspace(ws) {
  fs.writeFileSync(path.join(ws, 'seed.txt'), 'alpha\nbeta\ngamma\n');
  fs.writeFileSync(path.join(ws, 'other.txt'), 'one\ntwo\n');
}

// fileSteps runs four steps on a session whose workspace is ws (seeded by
// seedWorkspace, writable): read seed.txt (exact text and structured
// value), edit it after the read, edit other.txt without a read
// (FS_NOT_OBSERVED, unchanged on disk), write new.txt. call(name, args)
// calls a tool; ok(msg) reports a step. Returns the three files' paths.
export async function fileSteps({ call, ws, ok, expectToolError }) {
  // read a seeded file (structuredContent is validated against outputSchema by the SDK)
  const seed = path.join(ws, 'seed.txt');
  let res = await call('read', { file_path: 'seed.txt' });
  let text = expectSuccess(res, 'read seed.txt');
  assert.equal(text,
    `<path>${seed}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>`,
    'read seed.txt: envelope text');
  assert.deepEqual(res.structuredContent, {
    path: seed,
    offset: 1,
    lines: [{ number: 1, text: 'alpha' }, { number: 2, text: 'beta' }, { number: 3, text: 'gamma' }],
    totalLines: 3,
  }, 'read seed.txt: structuredContent');
  ok('read seed.txt: exact envelope text and structuredContent {path, offset, lines, totalLines}');

  // edit after the read
  res = await call('edit', { file_path: 'seed.txt', old_string: 'beta', new_string: 'BETA' });
  expectSuccess(res, 'edit seed.txt');
  assert.equal(res.structuredContent.path, seed, 'edit: structuredContent.path');
  assert.equal(res.structuredContent.replacements, 1, 'edit: structuredContent.replacements');
  assert.equal(res.structuredContent.before, 'alpha\nbeta\ngamma\n', 'edit: structuredContent.before');
  assert.equal(res.structuredContent.after, 'alpha\nBETA\ngamma\n', 'edit: structuredContent.after');
  assert.match(res.structuredContent.diff, /^-beta$/m, 'edit: diff has -beta');
  assert.match(res.structuredContent.diff, /^\+BETA$/m, 'edit: diff has +BETA');
  assert.equal(fs.readFileSync(seed, 'utf8'), 'alpha\nBETA\ngamma\n', 'edit seed.txt: file on disk');
  ok('edit seed.txt after read: replaced on disk, structuredContent with diff');

  // edit without a prior read
  const other = path.join(ws, 'other.txt');
  res = await call('edit', { file_path: 'other.txt', old_string: 'one', new_string: 'ONE' });
  text = expectToolError(res, 'edit other.txt unread', 'FS_NOT_OBSERVED');
  assert.ok(text.endsWith(' — read the file, then retry'), `edit unread: remedy missing: ${JSON.stringify(text)}`);
  assert.equal(text, `Error: edit requires reading ${JSON.stringify(other)} first — read the file, then retry`, 'edit unread: text');
  assert.equal(fs.readFileSync(other, 'utf8'), 'one\ntwo\n', 'edit unread: file changed on disk');
  ok('edit other.txt without a read: FS_NOT_OBSERVED, remedy " — read the file, then retry", file unchanged');

  // write a new file inside
  const created = path.join(ws, 'new.txt');
  res = await call('write', { file_path: 'new.txt', content: 'fresh\n' });
  expectSuccess(res, 'write new.txt');
  assert.equal(res.structuredContent.path, created, 'write: structuredContent.path');
  assert.equal(res.structuredContent.operation, 'create', 'write: structuredContent.operation');
  assert.equal(res.structuredContent.before, null, 'write: structuredContent.before');
  assert.equal(res.structuredContent.after, 'fresh\n', 'write: structuredContent.after');
  assert.equal(fs.readFileSync(created, 'utf8'), 'fresh\n', 'write new.txt: file on disk');
  ok('write new.txt inside the workspace: created on disk, operation "create", before null');

  return { seed, other, created };
}
