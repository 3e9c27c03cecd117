#!/usr/bin/env node
/**
 * Attaches this terminal to an intern's (interface section 20) until the `interns` client has it:
 *   node tools/terminal/attach.mjs <origin> <daemon token>
 * The origin and token are what `GET /api/v1/interns/{id}/daemon` answers. Keystrokes go as binary frames, the
 * window size as resize frames (at start and on every SIGWINCH); the shell's exit ends it.
 */
import { lookup } from 'node:dns';
import process from 'node:process';
import { WebSocket } from 'ws';

/** `*.localhost` is loopback (RFC 6761), as curl and browsers resolve it; the system resolver may not know it. */
function localhostAware(hostname, options, callback) {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) {
    return options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
  }
  return lookup(hostname, options, callback);
}

const [origin, token] = process.argv.slice(2);
if (!origin || !token) {
  process.stderr.write('usage: node tools/terminal/attach.mjs <origin> <daemon token>\n');
  process.exit(2);
}
const size = () => ({ cols: process.stdout.columns || 80, rows: process.stdout.rows || 24 });
const url = new URL('/api/terminal', origin.replace(/^http/, 'ws'));
url.searchParams.set('cols', String(size().cols));
url.searchParams.set('rows', String(size().rows));

const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, lookup: localhostAware });
socket.on('unexpected-response', (_request, response) => {
  let body = '';
  response.on('data', (chunk) => (body += chunk));
  response.on('end', () => {
    process.stderr.write(`refused: ${response.statusCode} ${body}\n`);
    process.exit(1);
  });
});
socket.on('error', (error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
socket.on('open', () => {
  if (process.stdin.isTTY) process.stdin.setRawMode(true);
  process.stdin.on('data', (bytes) => socket.send(bytes, { binary: true }));
  process.stdout.on('resize', () => socket.send(JSON.stringify({ type: 'resize', ...size() })));
});
socket.on('message', (bytes) => process.stdout.write(bytes));
socket.on('close', (code, reason) => {
  if (process.stdin.isTTY) process.stdin.setRawMode(false);
  if (code !== 1000) process.stderr.write(`\r\nclosed: ${code} ${reason}\n`);
  process.exit(code === 1000 ? 0 : 1);
});
