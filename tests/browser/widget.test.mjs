// The widget (/widget.js), the front page (/) and /domain-check in a real Chromium.
//
// Real parts only: the registry simulator (dsa-sim) answers with recorded registry responses, a
// real dsa server (standalone, fresh SQLite) sits in front of it, keys are made with the `dsa keys`
// CLI, and a plain host page is served from a SECOND origin (another port) with a strict CSP and
// the documented snippet (docs/widget-and-portal.md: versioned URL + SRI hash). Debian's /usr/bin/chromium runs headless.
//
// Needs the binaries built (`cargo build -p dsa-api -p dsa-tests`); DSA_BIN / DSA_SIM_BIN /
// CHROMIUM override the paths. Screenshots go to tests/browser/test-output/.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { cleanUp } from './work.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const targetDir = process.env.CARGO_TARGET_DIR || path.join(repo, 'target');
const DSA_BIN = process.env.DSA_BIN || path.join(targetDir, 'debug', 'dsa');
const SIM_BIN = process.env.DSA_SIM_BIN || path.join(targetDir, 'debug', 'dsa-sim');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OUT = path.join(here, 'test-output');
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const children = [];
let work, api, host, deadApi, browser, keys = {}, snippet;
const hostPages = new Map();

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitFor(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { if (await fn()) return; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

function start(bin, args, env, logName) {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run cargo build -p dsa-api -p dsa-tests first`);
  const log = fs.openSync(path.join(work, logName), 'w');
  const child = spawn(bin, args, { cwd: work, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

/** The documented widget snippet (docs/widget-and-portal.md): versioned URL and SRI hash (what a newcomer copies). */
function documentedSnippet() {
  const doc = fs.readFileSync(path.join(repo, 'docs', 'widget-and-portal.md'), 'utf8');
  const m = doc.match(/<script src="[^"]*\/widget\.js\?v=([0-9a-f]+)"\s+integrity="(sha384-[A-Za-z0-9+/=]+)"\s+crossorigin="anonymous"/);
  assert.ok(m, 'docs/widget-and-portal.md must carry the widget snippet with a versioned URL, integrity and crossorigin');
  return { version: m[1], integrity: m[2] };
}

/** A host page on the second origin with a strict CSP, the documented snippet and `body`. */
function hostPage(name, body, { lang = 'en', css = '' } = {}) {
  hostPages.set(`/${name}`, `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>Host ${name}</title>
<link rel="stylesheet" href="/host.css?${encodeURIComponent(css)}"></head><body><h1>A shop that sells domains</h1>
<main>${body}</main>
<script src="${api}/widget.js?v=${snippet.version}" integrity="${snippet.integrity}" crossorigin="anonymous" async></script>
</body></html>`);
  return `${host}/${name}`;
}

const HOSTILE_CSS = `* , *::before, *::after { all: unset !important; color: #ff00ff !important; background: #ffff00 !important;
 font: italic 40px/3 "Comic Sans MS", cursive !important; border: 6px dotted red !important; padding: 30px !important;
 display: inline !important; direction: rtl !important; text-transform: uppercase !important; letter-spacing: 8px !important; }
input, button, a, form, div, span, p { display: none !important; visibility: hidden !important; opacity: 0 !important; }
[data-dsa-widget] { width: 40px !important; height: 10px !important; overflow: hidden !important; transform: rotate(7deg) !important; }
head, script, style, link, title { display: none !important; }`;

const CSS_FILES = { hostile: HOSTILE_CSS, plain: 'body{font-family:Georgia,serif;margin:2rem;background:#fafafa}' };

before(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'dsa-browser-'));
  snippet = documentedSnippet();
  const [apiPort, hostPort, deadPort] = await Promise.all([freePort(), freePort(), freePort()]);
  api = `http://127.0.0.1:${apiPort}`;
  host = `http://127.0.0.1:${hostPort}`; // same host, another port: another origin
  deadApi = `http://127.0.0.1:${deadPort}/v1/domains/check`; // nothing listens there

  start(SIM_BIN, ['--write-config', 'sim.toml'], {}, 'sim.log');
  await waitFor('dsa-sim config', () => fs.existsSync(path.join(work, 'sim.toml')), 20000);
  const env = {
    DSA_DATABASE__URL: `sqlite://${path.join(work, 'dsa.db')}?mode=rwc`,
    DSA_SERVER__LISTEN: `127.0.0.1:${apiPort}`,
    DSA_BOOTSTRAP__CREATE_DEV_KEY: 'false',
    DSA_POLICY__DEMO__CHECKS_PER_IP_PER_DAY: '1000', // every test's browser comes from 127.0.0.1
    DSA_POLICY__PER_MINUTE__FREE: '1000',
    DSA_POLICY__PER_MINUTE__STARTER: '2', // the per-minute 429 test uses a Starter key
    DSA_PRICING__PLATFORM_CHECKOUT_URL: 'https://platform.example/checkout',
    DSA_LOG: 'warn',
  };
  const cli = (...args) => execFileSync(DSA_BIN, ['--config', 'sim.toml', 'keys', 'create', ...args],
    { cwd: work, env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  keys.shop = cli('--kind', 'embed', '--pricing', '--purchase-button', '--purchase-url', 'https://shop.example/cart?ref=widget',
    '--origin', host, '--label', 'browser: shop');
  keys.elsewhere = cli('--kind', 'embed', '--pricing', '--purchase-button', '--purchase-url', 'https://shop.example/cart',
    '--origin', 'https://elsewhere.example', '--label', 'browser: other site');
  keys.starter = cli('--kind', 'embed', '--plan', 'starter', '--origin', host, '--label', 'browser: per-minute limit');
  for (const k of Object.values(keys)) assert.match(k, /^dsa_embed_/);

  start(DSA_BIN, ['--config', 'sim.toml'], env, 'dsa.log');
  await waitFor('dsa /healthz', async () => (await fetch(`${api}/healthz`)).ok);

  const csp = `default-src 'none'; script-src ${api}; style-src 'self'; connect-src ${api} http://127.0.0.1:${deadPort}; ` +
    `img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  const server = createServer((req, res) => {
    const url = new URL(req.url, host);
    if (url.pathname === '/host.css') {
      res.writeHead(200, { 'content-type': 'text/css' });
      return res.end(CSS_FILES[url.search.slice(1)] || '');
    }
    const page = hostPages.get(url.pathname);
    if (!page) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp });
    res.end(page);
  });
  await new Promise((r) => server.listen(hostPort, '127.0.0.1', r));
  children.push({ kill: () => server.close() });

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
  });
});

after(async () => {
  if (browser) await browser.close();
  await cleanUp(children, work, OUT, 'widget');
});

/** A fresh context (own cookies) and page that records CSP violations and dsa:result events. */
async function open(url, { bypassCSP = false, colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ bypassCSP, colorScheme, viewport: { width: 900, height: 700 } });
  await context.addInitScript(() => {
    window.__csp = [];
    window.__results = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    document.addEventListener('dsa:result', (e) => window.__results.push(e.detail));
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  page.errors = errors;
  return { context, page };
}

/** Types `domain` into the widget `sel` and waits for its next dsa:result event. */
async function search(page, sel, domain) {
  const before = await page.evaluate(() => window.__results.length);
  await page.locator(`${sel} input`).fill(domain);
  await page.locator(`${sel} button`).click();
  await page.waitForFunction((n) => window.__results.length > n, before, { timeout: 15000 });
  return page.evaluate(() => window.__results[window.__results.length - 1]);
}

async function shot(page, name) {
  const file = path.join(OUT, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

async function noViolations(page) {
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no Content-Security-Policy violation');
  assert.deepEqual(page.errors, [], 'no script error');
}

async function axe(page, label) {
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  fs.writeFileSync(path.join(OUT, `axe-${label}.json`), JSON.stringify(result, null, 2));
  assert.deepEqual(bad, [], `axe-core: serious/critical violations on ${label}`);
  return result;
}

test('the served widget matches the documented snippet: versioned URL, SRI hash, headers', async () => {
  const res = await fetch(`${api}/widget.js?v=${snippet.version}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.match(res.headers.get('cache-control'), /max-age=31536000/);
  assert.match(res.headers.get('cache-control'), /immutable/);
  const body = Buffer.from(await res.arrayBuffer());
  const sri = `sha384-${createHash('sha384').update(body).digest('base64')}`;
  assert.equal(sri, snippet.integrity, 'the documented integrity= must be the hash of the served widget.js');
  const bare = await fetch(`${api}/widget.js`);
  assert.match(bare.headers.get('cache-control'), /max-age=300\b/, 'an unversioned URL is cached briefly');
  const gz = (await import('node:zlib')).gzipSync(body, { level: 9 }).length;
  fs.writeFileSync(path.join(OUT, 'widget-size.txt'), `widget.js ${body.length} bytes, ${gz} bytes gzipped (level 9)\n`);
  assert.ok(gz <= 15 * 1024, `widget.js is ${gz} bytes gzipped; the budget is 15 KB`);
});

test('available: price, Buy link with domain/sld/tld, dsa:result event, no CSP violation', async () => {
  const url = hostPage('available', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"></div>`, { css: 'plain' });
  const { context, page } = await open(url);
  const detail = await search(page, '#w', 'DSA-Demo-Available.com');
  assert.equal(detail.ok, true);
  assert.equal(detail.status, 200);
  assert.equal(detail.response.domain, 'dsa-demo-available.com');
  const out = page.locator('#w .out');
  assert.equal(await out.locator('.verdict').textContent(), 'Available');
  const text = await out.textContent();
  assert.match(text, /dsa-demo-available\.com/);
  assert.match(text, /USD\s?11\.06/, 'base price of .com from the price table');
  const buy = page.locator('#w a.buy');
  const href = new URL(await buy.getAttribute('href'));
  assert.equal(href.origin + href.pathname, 'https://shop.example/cart');
  assert.equal(href.searchParams.get('ref'), 'widget');
  assert.equal(href.searchParams.get('domain'), 'dsa-demo-available.com');
  assert.equal(href.searchParams.get('sld'), 'dsa-demo-available');
  assert.equal(href.searchParams.get('tld'), '.com');
  assert.match(await buy.getAttribute('rel'), /\bnoopener\b/);
  assert.equal(await page.locator('#w .out').getAttribute('aria-live'), 'polite');
  await shot(page, 'widget-available');
  await noViolations(page);
  await context.close();
});

test('taken: no price, no Buy link', async () => {
  const url = hostPage('taken', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"></div>`);
  const { context, page } = await open(url);
  const detail = await search(page, '#w', 'google.com');
  assert.equal(detail.response.available, false);
  const text = await page.locator('#w .out').textContent();
  assert.match(text, /Taken/);
  assert.match(text, /google\.com/);
  assert.doesNotMatch(text, /USD/);
  assert.equal(await page.locator('#w a.buy').count(), 0);
  await shot(page, 'widget-taken');
  await noViolations(page);
  await context.close();
});

test('custom redirect URL, redirect-checkout and commission are passed through to the check', async () => {
  const url = hostPage('redirect', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"
    data-redirect-url="https://reseller.example/order?plan=basic" data-commission-percent="10"></div>
    <div id="p" data-dsa-widget data-client-key="${keys.shop}" data-redirect-checkout="1"></div>`);
  const { context, page } = await open(url);
  const detail = await search(page, '#w', 'dsa-demo-available.com');
  assert.equal(detail.response.purchase.source, 'client_url');
  assert.equal(detail.response.pricing.pricing_mode, 'with_commission');
  assert.equal(detail.response.pricing.display_register, 12.17);
  assert.match(await page.locator('#w .out').textContent(), /USD\s?12\.17/, '11.06 + 10 % = 12.17');
  const href = new URL(await page.locator('#w a.buy').getAttribute('href'));
  assert.equal(href.origin + href.pathname, 'https://reseller.example/order');
  assert.equal(href.searchParams.get('plan'), 'basic');
  assert.equal(href.searchParams.get('domain'), 'dsa-demo-available.com');
  assert.equal(href.searchParams.get('sld'), 'dsa-demo-available');
  assert.equal(href.searchParams.get('tld'), '.com');
  const platform = await search(page, '#p', 'dsa-demo-available.net');
  assert.equal(platform.response.purchase.source, 'url', 'the platform checkout URL is a configured URL (spec §2.2 values)');
  const phref = new URL(await page.locator('#p a.buy').getAttribute('href'));
  assert.equal(phref.origin + phref.pathname, 'https://platform.example/checkout');
  assert.equal(phref.searchParams.get('tld'), '.net');
  await shot(page, 'widget-redirect-commission');
  await noViolations(page);
  await context.close();
});

test('invalid input: a friendly 400 message; empty input sends nothing', async () => {
  const url = hostPage('invalid', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"></div>`);
  const { context, page } = await open(url);
  let requests = 0;
  page.on('request', (r) => { if (r.url().startsWith(api + '/v1/')) requests += 1; });
  await page.locator('#w button').click();
  await page.locator('#w .out').getByText('Type a domain name').waitFor();
  assert.equal(requests, 0, 'an empty box is answered without a request');
  const detail = await search(page, '#w', 'not a domain!');
  assert.equal(detail.status, 400);
  const text = await page.locator('#w .out').textContent();
  assert.match(text, /not a domain name we can check/);
  await shot(page, 'widget-invalid');
  await noViolations(page);
  await context.close();
});

test('an origin not on the key\'s list: the friendly 403', async () => {
  const url = hostPage('forbidden', `<div id="w" data-dsa-widget data-client-key="${keys.elsewhere}"></div>`);
  const { context, page } = await open(url);
  const detail = await search(page, '#w', 'dsa-demo-available.com');
  assert.equal(detail.status, 403);
  assert.match(await page.locator('#w .out').textContent(), /not allowed to use this search key/);
  await shot(page, 'widget-forbidden');
  await noViolations(page);
  await context.close();
});

test('429 per-minute limit, 502 from the registry, network failure: friendly messages', async () => {
  const url = hostPage('errors', `
    <div id="rate" data-dsa-widget data-client-key="${keys.starter}"></div>
    <div id="bad" data-dsa-widget data-client-key="${keys.shop}"></div>
    <div id="down" data-dsa-widget data-client-key="${keys.shop}" data-api-url="${deadApi}"></div>`);
  const { context, page } = await open(url);
  // Windows are aligned to the UTC minute: three searches that straddle the minute's end meet a
  // fresh window at the third, so search until the limit answers (by the fifth at the latest).
  let last;
  for (const d of ['a-one.com', 'a-two.com', 'a-three.com', 'a-four.com', 'a-five.com']) {
    last = await search(page, '#rate', d);
    if (last.status !== 200) break;
  }
  assert.equal(last.status, 429, 'the Starter key in this test may make 2 requests a minute');
  assert.match(await page.locator('#rate .out').textContent(), /Too many searches right now. Please try again in \d+ seconds?\./, 'Retry-After is read (CORS exposes it)');
  // The simulator serves no .xyz registry: the engine gets no definitive answer → a real 502.
  const bad = await search(page, '#bad', 'dsa-demo-nowhere.xyz');
  assert.equal(bad.status, 502);
  assert.match(await page.locator('#bad .out').textContent(), /registry is busy/);
  const down = await search(page, '#down', 'dsa-demo-available.com');
  assert.equal(down.ok, false);
  assert.match(await page.locator('#down .out').textContent(), /Could not reach the search service/);
  await shot(page, 'widget-errors');
  await context.close();
});

test('several widgets work independently; later containers and DSA.mount are picked up; no double requests', async () => {
  const url = hostPage('many', `<div id="a" data-dsa-widget data-client-key="${keys.shop}"></div>
    <div id="b" data-dsa-widget data-client-key="${keys.shop}" data-theme="dark"></div>`);
  const { context, page } = await open(url);
  const checks = [];
  page.on('request', (r) => { if (r.url().startsWith(api + '/v1/domains/check')) checks.push(r.url()); });
  await search(page, '#a', 'dsa-demo-available.org');
  await search(page, '#b', 'wikipedia.org');
  assert.match(await page.locator('#a .out').textContent(), /Available/);
  assert.match(await page.locator('#b .out').textContent(), /Taken/);
  assert.equal(checks.length, 2);

  // A burst of clicks and Enter presses is one request.
  const n = await page.evaluate(() => window.__results.length);
  await page.locator('#a input').fill('dsa-demo-available.net');
  await page.locator('#a button').click();
  await page.locator('#a button').click();
  await page.locator('#a input').press('Enter');
  await page.locator('#a button').click();
  await page.waitForFunction((k) => window.__results.length > k, n);
  await page.waitForTimeout(600);
  assert.equal(checks.length, 3, 'debounced: one request for the burst');

  // Added later: picked up by the MutationObserver; DSA.mount for an element without the marker.
  await page.evaluate((key) => {
    const late = document.createElement('div');
    late.id = 'late';
    late.setAttribute('data-dsa-widget', '');
    late.setAttribute('data-client-key', key);
    document.querySelector('main').append(late);
    const manual = document.createElement('section');
    manual.id = 'manual';
    manual.setAttribute('data-client-key', key);
    document.querySelector('main').append(manual);
    window.DSA.mount(manual);
  }, keys.shop);
  await page.locator('#late input').waitFor();
  await search(page, '#late', 'heise.de');
  await search(page, '#manual', 'dsa-demo-frei.de');
  assert.match(await page.locator('#late .out').textContent(), /Taken/);
  assert.match(await page.locator('#manual .out').textContent(), /Available/);
  assert.match(await page.locator('#manual .out').textContent(), /USD\s?2\.90/);
  await shot(page, 'widget-several');
  await noViolations(page);
  await context.close();
});

test('RTL in Dari/Persian (data-lang) and Pashto (the page\'s lang)', async () => {
  const url = hostPage('rtl', `<div id="fa" data-dsa-widget data-client-key="${keys.shop}" data-lang="fa"></div>
    <div id="ps" data-dsa-widget data-client-key="${keys.shop}"></div>`, { lang: 'ps-AF' });
  const { context, page } = await open(url);
  for (const id of ['fa', 'ps']) {
    assert.equal(await page.locator(`#${id} .w`).getAttribute('dir'), 'rtl');
    assert.equal(await page.locator(`#${id} .w`).getAttribute('lang'), id);
  }
  assert.equal(await page.locator('#fa label').textContent(), 'نام دامنه');
  assert.equal(await page.locator('#ps label').textContent(), 'د ډومېن نوم');
  await search(page, '#fa', 'dsa-demo-available.com.af');
  await search(page, '#ps', 'google.com.af');
  assert.match(await page.locator('#fa .out').textContent(), /آزاد است/);
  assert.match(await page.locator('#ps .out').textContent(), /نيول شوی دی/);
  const dir = await page.locator('#fa .w').evaluate((el) => getComputedStyle(el).direction);
  assert.equal(dir, 'rtl');
  // The domain itself stays left-to-right inside the right-to-left box.
  assert.equal(await page.locator('#fa input').evaluate((el) => getComputedStyle(el).direction), 'ltr');
  await shot(page, 'widget-rtl-fa-ps');
  await noViolations(page);
  await context.close();
});

test('a host page whose CSS tries to restyle everything does not break the widget', async () => {
  const url = hostPage('hostile', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"></div>`, { css: 'hostile' });
  const { context, page } = await open(url);
  await search(page, '#w', 'dsa-demo-available.dev');
  const look = await page.locator('#w .w').evaluate((el) => {
    const s = getComputedStyle(el);
    const root = el.getRootNode();
    const input = getComputedStyle(root.querySelector('input'));
    const button = getComputedStyle(root.querySelector('button'));
    const host = getComputedStyle(root.host);
    return { color: s.color, font: s.fontSize, family: s.fontFamily, dir: s.direction, input: input.display,
      inputVis: input.visibility, button: button.display, transform: host.transform, width: root.host.getBoundingClientRect().width };
  });
  assert.equal(look.color, 'rgb(17, 24, 39)');
  assert.equal(look.font, '16px');
  assert.doesNotMatch(look.family, /Comic/);
  assert.equal(look.dir, 'ltr');
  assert.notEqual(look.input, 'none');
  assert.equal(look.inputVis, 'visible');
  assert.notEqual(look.button, 'none');
  assert.equal(look.transform, 'none');
  assert.ok(look.width > 300, `the widget keeps its width (${look.width}px)`);
  assert.match(await page.locator('#w .out').textContent(), /Available/);
  await shot(page, 'widget-hostile-css');
  await noViolations(page);
  await context.close();
});

test('axe-core: no serious or critical violation (light, dark, RTL, error states)', async () => {
  // axe is injected as a script, which the host page's CSP forbids: a bypassCSP context.
  const url = hostPage('axe', `<div id="l" data-dsa-widget data-client-key="${keys.shop}"></div>
    <div id="d" data-dsa-widget data-client-key="${keys.shop}" data-theme="dark"></div>
    <div id="f" data-dsa-widget data-client-key="${keys.shop}" data-lang="fa" data-theme="auto"></div>
    <div id="e" data-dsa-widget data-client-key="${keys.shop}"></div>`, { css: 'plain' });
  const { context, page } = await open(url, { bypassCSP: true, colorScheme: 'dark' });
  const states = [];
  states.push(await search(page, '#l', 'dsa-demo-available.io'));
  states.push(await search(page, '#d', 'dsa-demo-available.io'));
  states.push(await search(page, '#f', 'redis.io'));
  states.push(await search(page, '#e', 'bad..name'));
  assert.deepEqual(states.map((d) => d.status), [200, 200, 200, 400], JSON.stringify(states));
  const v = await axe(page, 'widget');
  await shot(page, 'widget-axe-states');
  // Keyboard only: Tab reaches the input, types, Enter searches, Tab reaches the Buy link.
  await page.locator('#l input').focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('dsa-demo-available.net');
  const n = await page.evaluate(() => window.__results.length);
  await page.keyboard.press('Enter');
  await page.waitForFunction((k) => window.__results.length > k, n);
  const kb = await page.evaluate(() => window.__results[window.__results.length - 1]);
  assert.ok(kb.ok && kb.response.purchase, `keyboard search answered: ${JSON.stringify(kb)}`);
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement.shadowRoot?.activeElement?.className);
  assert.equal(focused, 'buy', 'Tab reaches the Buy link');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement.shadowRoot.activeElement).outlineStyle);
  assert.equal(outline, 'solid', 'focus is visible');
  await shot(page, 'widget-keyboard-focus');
  console.log(`axe-core on the widget: ${v.length} violations of any impact (${v.map((x) => `${x.id}:${x.impact}`).join(', ') || 'none'})`);
  await context.close();
});

/** The demo scenario's truths (tests/fixtures/scenarios/demo.toml): name → truth; unlisted names are available. */
function demoTruths() {
  const text = fs.readFileSync(path.join(repo, 'tests/fixtures/scenarios/demo.toml'), 'utf8');
  const truths = new Map();
  for (const m of text.matchAll(/name = "([^"]+)"\s*\ntruth = "([^"]+)"/g)) truths.set(m[1], m[2]);
  return truths;
}

/** Searches `domain` in widget `sel` and waits for the alternatives it then offers (dsa:alternatives). */
async function searchWithAlternatives(page, sel, domain) {
  const before = await page.evaluate(() => window.__alts.length);
  const result = await search(page, sel, domain);
  await page.waitForFunction((n) => window.__alts.length > n, before, { timeout: 20000 });
  return { result, alternatives: await page.evaluate(() => window.__alts[window.__alts.length - 1]) };
}

test('a taken name: up to 5 alternatives the registry confirmed, each a button that checks it', async () => {
  const url = hostPage('alternatives', `<div id="w" data-dsa-widget data-client-key="${keys.shop}"></div>
    <div id="off" data-dsa-widget data-client-key="${keys.shop}" data-alternatives="0"></div>`, { css: 'plain' });
  const { context, page } = await open(url);
  await page.evaluate(() => { window.__alts = []; document.addEventListener('dsa:alternatives', (e) => window.__alts.push(e.detail)); });
  const suggests = [];
  page.on('request', (r) => { if (r.url().includes('/v1/domains/suggest')) suggests.push(new URL(r.url())); });
  const { result, alternatives } = await searchWithAlternatives(page, '#w', 'google.com');
  assert.equal(result.response.available, false);
  assert.equal(alternatives.status, 200, JSON.stringify(alternatives));
  assert.equal(suggests.length, 1);
  const q = suggests[0].searchParams;
  assert.equal(q.get('keyword'), 'google');
  assert.equal(q.get('verify'), '5');
  assert.equal(q.get('client_key'), keys.shop, 'the same key as the check');
  assert.match(q.get('tlds'), /^\.com,/, 'the searched TLD first');
  const body = alternatives.response;
  const confirmed = body.suggestions.filter((s) => s.available === true);
  assert.ok(confirmed.length >= 1 && confirmed.length <= 5, JSON.stringify(body));
  assert.equal(body.verification.confirmed, confirmed.length);
  const truths = demoTruths();
  for (const s of confirmed) {
    assert.equal(s.checked_by, 'registry', JSON.stringify(s));
    assert.equal(s.verdict.status, 'available', JSON.stringify(s));
    assert.equal(truths.get(s.domain) || 'available', 'available', `${s.domain} is free in the simulator's registry`);
  }
  assert.equal(body.credits_cost, 5 + confirmed.length, 'documented price: 5 + 1 per confirmed name');
  // Only the confirmed names are offered, as buttons named for what they do.
  const buttons = page.locator('#w .alts button');
  assert.equal(await buttons.count(), confirmed.length);
  assert.deepEqual(await buttons.allTextContents(), confirmed.map((s) => s.unicode));
  assert.equal(await buttons.first().getAttribute('aria-label'), `Check ${confirmed[0].unicode}`);
  assert.match(await page.locator('#w .alts').textContent(), /Available alternatives \(confirmed by the registry\)/);
  // No layout breakage: nothing overflows the widget's box.
  const fits = await page.locator('#w .w').evaluate((el) => el.scrollWidth <= el.clientWidth + 1);
  assert.ok(fits, 'the alternatives wrap inside the widget');
  await shot(page, 'widget-alternatives');
  // Choosing one checks it: available, with its price and Buy link.
  const n = await page.evaluate(() => window.__results.length);
  await buttons.first().click();
  await page.waitForFunction((k) => window.__results.length > k, n, { timeout: 15000 });
  const picked = await page.evaluate(() => window.__results[window.__results.length - 1]);
  assert.equal(picked.response.domain, confirmed[0].domain);
  assert.equal(picked.response.available, true);
  assert.equal(await page.locator('#w a.buy').count(), 1);
  assert.equal(await page.locator('#w .alts').count(), 0, 'an available name offers no alternatives');
  // data-alternatives="0": a taken name, no suggestions request.
  await search(page, '#off', 'google.net');
  await page.waitForTimeout(600);
  assert.equal(suggests.length, 1, 'alternatives turned off');
  assert.equal(await page.locator('#off .alts').count(), 0);
  await noViolations(page);
  await context.close();

  // Accessibility of the alternatives, in Persian (RTL) and dark (axe is injected: bypassCSP).
  const a11y = await open(hostPage('alternatives-axe', `<div id="fa" data-dsa-widget data-client-key="${keys.shop}" data-lang="fa" data-theme="dark"></div>`), { bypassCSP: true });
  await a11y.page.evaluate(() => { window.__alts = []; document.addEventListener('dsa:alternatives', (e) => window.__alts.push(e.detail)); });
  const fa = await searchWithAlternatives(a11y.page, '#fa', 'google.com.af');
  assert.equal(fa.alternatives.status, 200);
  assert.ok(await a11y.page.locator('#fa .alts button').count() >= 1, 'alternatives offered under .com.af');
  await axe(a11y.page, 'widget-alternatives');
  await shot(a11y.page, 'widget-alternatives-fa-dark');
  await a11y.context.close();
});

test('front page: strict CSP, plans, endpoints, snippet; the demo allows 2 searches then says how to get a key', async () => {
  const { context, page } = await open(`${api}/`);
  const res = await fetch(`${api}/`);
  const csp = res.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /style-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const plans = await page.locator('#plans tbody').textContent();
  for (const [name, credits] of [['Free Developer', '500'], ['Starter', '5,000'], ['PRO', '25,000'], ['Reseller', '50,000']]) {
    assert.match(plans, new RegExp(`${name}\\s*${credits}`));
  }
  assert.ok(await page.locator('#api a[href="/docs/"]').count() >= 2, 'endpoints link to /docs');
  assert.match(await page.locator('#api').textContent(), /\/domain-check/);
  const snippetText = await page.locator('#embed pre').textContent();
  assert.ok(snippetText.includes(`integrity="${snippet.integrity}"`), 'the page shows the same SRI as the documented snippet');

  const calls = [];
  page.on('response', (r) => { if (r.url().includes('/domain-check')) calls.push(r.status()); });
  const first = await search(page, '[data-dsa-widget]', 'dsa-demo-available.com');
  assert.equal(first.status, 200);
  assert.equal(first.response.tld, '.com');
  assert.equal(first.response.price, null, 'demo checks carry no price');
  assert.match(await page.locator('[data-dsa-widget] .out').textContent(), /Available/);
  await shot(page, 'front-demo-1');
  await search(page, '[data-dsa-widget]', 'google.com');
  assert.match(await page.locator('[data-dsa-widget] .out').textContent(), /Taken/);
  const third = await search(page, '[data-dsa-widget]', 'wikipedia.org');
  assert.equal(third.status, 429);
  const text = await page.locator('[data-dsa-widget] .out').textContent();
  assert.match(text, /used the free demo searches/);
  assert.match(text, /get a key/);
  assert.equal(await page.locator('[data-dsa-widget] .out a').getAttribute('href'), `${api}/#plans`);
  assert.deepEqual(calls, [200, 200, 429]);
  await shot(page, 'front-demo-limit');
  await noViolations(page);
  await context.close();

  const a11y = await open(`${api}/`, { bypassCSP: true });
  await axe(a11y.page, 'front-page');
  await a11y.context.close();
});
