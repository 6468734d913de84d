#!/usr/bin/env node
// Generates the Postman collections of the two contracts and the sandbox
// environment into openapi/postman/ (make postman; make check-postman compares a
// fresh run with the committed files).
//
// The converter is Postman's own, openapi-to-postmanv2, pinned in
// package.json beside this script. Each collection:
//   - takes request bodies, parameters and headers from the contract's examples;
//   - names its base URL and key in collection variables of its own
//     (partnerBaseUrl/partnerApiKey, operatorBaseUrl/operatorApiKey), so one
//     environment serves both collections; the key is sent as the contract says,
//     in X-API-KEY, by the collection's API-key authorization;
//   - sends a fresh Idempotency-Key ({{$guid}}) with each request;
//   - has ids derived from the item names (the converter makes random ones), and
//     the values the converter invents where the contract has no example (the
//     operator API's responses) come from a seeded generator, so the same contract
//     always gives the same bytes.
//
// Usage: node scripts/contract-tools/postman.js OUTDIR   (from the repository root)
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

// The converter's schema faker draws from Math.random (keeping a reference taken
// when it loads) and dates from the clock: replace the first with a fixed sequence
// (mulberry32), started again for each collection, and the clock with a fixed
// instant, before loading the converter.
const RealDate = Date;
const fixedNow = RealDate.UTC(2026, 0, 1);
global.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length ? args : [fixedNow]));
  }
  static now() {
    return fixedNow;
  }
};
let seed = 0;
Math.random = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const converter = require('openapi-to-postmanv2');

const out = process.argv[2] || 'openapi/postman';
// The sandbox of a local `make run` (LISTEN_ADDR defaults to :8080).
const local = 'http://localhost:8080';

const apis = [
  { name: 'partner', spec: 'openapi/partner.yaml', base: '/api/v1/partner', prefix: 'partner',
    keyHint: 'the sk_sandbox_… key printed by make run' },
  { name: 'operator', spec: 'openapi/operator.yaml', base: '/api/v1/operator', prefix: 'operator',
    keyHint: 'an sk_op_… key from partnerd operators create' },
];

const options = {
  parametersResolution: 'Example', // examples, not schema placeholders
  folderStrategy: 'Tags',
  requestNameSource: 'Fallback',   // the operation's summary
  includeAuthInfoInExample: false,
  enableOptionalParameters: false, // optional query parameters present but unticked
  alwaysInheritAuthentication: true,
};

// stableId is a UUID-shaped id derived from the names leading to an item.
function stableId(...parts) {
  const h = crypto.createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function convert(spec) {
  seed = 0x5eed;
  return new Promise((resolve, reject) => {
    converter.convertV2({ type: 'string', data: fs.readFileSync(spec, 'utf8') }, options, (err, res) => {
      if (err) return reject(err);
      if (!res.result) return reject(new Error(`${spec}: ${res.reason}`));
      resolve(res.output[0].data);
    });
  });
}

// restamp replaces every id below node with one derived from trail, the names of
// its ancestors; siblings with the same name are told apart by their position.
function restamp(node, trail) {
  if (Array.isArray(node)) {
    node.forEach((child, i) => restamp(child, trail.concat(String(i))));
    return;
  }
  if (!node || typeof node !== 'object') return;
  const here = node.name !== undefined ? trail.concat(String(node.name)) : trail;
  if (typeof node.id === 'string') node.id = stableId(...here);
  for (const [k, v] of Object.entries(node)) {
    if (k !== 'id') restamp(v, here.concat(k));
  }
}

// headers calls fn on every header list below node (requests and examples).
function eachHeader(node, fn) {
  if (Array.isArray(node)) return node.forEach((n) => eachHeader(n, fn));
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node.header)) node.header.forEach(fn);
  Object.values(node).forEach((v) => eachHeader(v, fn));
}

async function collection(api) {
  const c = await convert(api.spec);
  const baseVar = `${api.prefix}BaseUrl`;
  const keyVar = `${api.prefix}ApiKey`;
  // The converter names them baseUrl and apiKey in every collection.
  let text = JSON.stringify(c).split('{{baseUrl}}').join(`{{${baseVar}}}`).split('{{apiKey}}').join(`{{${keyVar}}}`);
  const col = JSON.parse(text);
  const server = (col.variable || []).find((v) => v.key === 'baseUrl');
  col.variable = [
    { key: baseVar, value: server ? server.value : local + api.base, type: 'string',
      description: `The ${api.name} API's base URL; the sandbox environment sets it to a local make run.` },
    { key: keyVar, value: '', type: 'string',
      description: `The ${api.name} API key, sent in X-API-KEY: ${api.keyHint}.` },
  ];
  if (!col.auth || col.auth.type !== 'apikey') throw new Error(`${api.spec}: expected the converter to carry the X-API-KEY scheme`);
  eachHeader(col.item, (h) => {
    if (h && h.key === 'Idempotency-Key' && !h.disabled) h.value = '{{$guid}}';
  });
  col.info._postman_id = stableId('collection', api.name);
  restamp(col.item, [api.name]);
  return col;
}

function environment() {
  return {
    id: stableId('environment', 'sandbox'),
    name: 'partnerd sandbox (local make run)',
    values: apis.flatMap((api) => [
      { key: `${api.prefix}BaseUrl`, value: local + api.base, type: 'default', enabled: true },
      { key: `${api.prefix}ApiKey`, value: `<${api.keyHint}>`, type: 'secret', enabled: true },
    ]),
    _postman_variable_scope: 'environment',
  };
}

function write(file, doc) {
  fs.writeFileSync(path.join(out, file), JSON.stringify(doc, null, 2) + '\n');
}

(async () => {
  fs.mkdirSync(out, { recursive: true });
  for (const api of apis) write(`${api.name}.postman_collection.json`, await collection(api));
  write('sandbox.postman_environment.json', environment());
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
