// The account portal (/account) in a real Chromium, as an owner uses it, without any script of
// ours on the portal pages (their CSP allows none).
//
// sign up → both keys shown once → add the host page's origin to the embed key → the portal's own
// widget snippet works on that page → the dashboard shows the charge (chart + latest requests) →
// roll the key → the old secret gets 403 after the grace period → sign out → the old session
// cookie no longer opens the dashboard.
//
// Real parts only: dsa-sim (recorded registry answers), a real dsa server (standalone, fresh
// SQLite), a host page on a SECOND origin. Screenshots: tests/browser/test-output/portal-*.png.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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
const GRACE_SECS = 3; // policy.portal.roll_grace_secs for this server
const KEY_CACHE_SECS = 5; // api::state::KEY_CACHE_TTL_SECS

const children = [];
let work, api, host, browser;
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

before(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'dsa-portal-browser-'));
  const [apiPort, hostPort] = await Promise.all([freePort(), freePort()]);
  api = `http://127.0.0.1:${apiPort}`;
  host = `http://127.0.0.1:${hostPort}`; // another port: another origin

  start(SIM_BIN, ['--write-config', 'sim.toml'], {}, 'sim.log');
  await waitFor('dsa-sim config', () => fs.existsSync(path.join(work, 'sim.toml')), 20000);
  start(DSA_BIN, ['--config', 'sim.toml'], {
    DSA_DATABASE__URL: `sqlite://${path.join(work, 'dsa.db')}?mode=rwc`,
    DSA_SERVER__LISTEN: `127.0.0.1:${apiPort}`,
    DSA_BOOTSTRAP__CREATE_DEV_KEY: 'false',
    DSA_POLICY__PORTAL__ROLL_GRACE_SECS: String(GRACE_SECS),
    DSA_LOG: 'warn',
  }, 'dsa.log');
  await waitFor('dsa /healthz', async () => (await fetch(`${api}/healthz`)).ok);

  const csp = `default-src 'none'; script-src ${api}; style-src 'self'; connect-src ${api}; img-src 'self'; ` +
    `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  const server = createServer((req, res) => {
    const page = hostPages.get(new URL(req.url, host).pathname);
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
  await cleanUp(children, work, OUT, 'portal');
});

/** A context that records CSP violations, script errors and the widget's dsa:result events. */
async function newContext(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 }, ...options });
  await context.addInitScript(() => {
    window.__csp = [];
    window.__results = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    document.addEventListener('dsa:result', (e) => window.__results.push(e.detail));
  });
  return context;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
}

async function noViolations(page, errors) {
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no Content-Security-Policy violation');
  assert.deepEqual(errors, [], 'no script error');
}

/** axe-core on the current URL, in a CSP-bypassing copy of the context (axe is a script). */
async function axe(context, url, label) {
  const copy = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 800 } });
  await copy.addCookies(await context.cookies());
  const page = await copy.newPage();
  await page.goto(url);
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  await copy.close();
  fs.writeFileSync(path.join(OUT, `axe-${label}.json`), JSON.stringify(result, null, 2));
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `axe-core: serious/critical violations on ${label}`);
}

/** A check with `key` as a browser on the host page would make it (Origin: the host page). */
async function checkStatus(key) {
  const res = await fetch(`${api}/domain-check?client_key=${key}&domain=dsa-demo-available.org`, { headers: { origin: host } });
  return res.status;
}

test('sign up, keys once, origin, widget, dashboard, roll with grace, sign out', async () => {
  const context = await newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));

  // Sign up (the layout's "Account" link leads there through the sign-in page).
  await page.goto(`${api}/`);
  await page.getByRole('link', { name: 'Account' }).click();
  await page.waitForURL(`${api}/account/signin`);
  await page.getByRole('link', { name: /Create one/ }).click();
  await page.getByLabel('Display name').fill('Browser Owner');
  await page.getByLabel('E-mail address').fill('owner@example.com');
  await page.getByLabel('Password').fill('violet-harbour-42');
  await shot(page, 'portal-signup');
  await page.getByRole('button', { name: 'Create account' }).click();

  // Both keys, shown once, with the snippet carrying the embed key.
  await page.getByRole('heading', { name: 'Your new keys' }).waitFor();
  const embed = (await page.locator('code.secret[data-kind="embed"]').textContent()).trim();
  const server = (await page.locator('code.secret[data-kind="server"]').textContent()).trim();
  assert.match(embed, /^dsa_embed_[0-9A-Za-z]{32}$/);
  assert.match(server, /^dsa_server_[0-9A-Za-z]{32}$/);
  const snippet = (await page.locator('pre.snippet').textContent()).trim();
  assert.ok(snippet.includes(`data-client-key="${embed}"`), snippet);
  assert.ok(snippet.includes(`${api}/widget.js?v=`) && snippet.includes('integrity="sha384-'), snippet);
  await shot(page, 'portal-keys-shown');
  await noViolations(page, errors);
  const session = (await context.cookies()).find((c) => c.name === 'dsa_portal');
  assert.ok(session, 'a session cookie');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Lax');

  // The dashboard never shows a key again.
  await page.getByRole('link', { name: /go to the dashboard/ }).click();
  await page.waitForURL(`${api}/account`);
  const dashboardHtml = await page.content();
  assert.ok(!dashboardHtml.includes(embed) && !dashboardHtml.includes(server), 'no full key on the dashboard');

  // Add the host page's origin to the embed key.
  await page.locator('tr', { hasText: 'embed' }).getByRole('link').first().click();
  await page.getByLabel('Allowed origins').fill(`https://*.example.com\n${host}/`);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.locator('#saved').waitFor();
  assert.equal(await page.getByLabel('Allowed origins').inputValue(), `https://*.example.com\n${host}`, 'normalised');
  assert.ok(!(await page.content()).includes(embed), 'the settings page shows no key');
  await shot(page, 'portal-key-settings');
  await noViolations(page, errors);

  // A wrong origin is refused with the reason.
  await page.getByLabel('Allowed origins').fill(`${host}/shop`);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.locator('#form-error').waitFor();
  assert.match(await page.locator('#form-error').textContent(), /an origin has no path/);
  await page.goto(page.url().split('?')[0]);

  // The portal's snippet, pasted as is into the host page, works there with the new key.
  hostPages.set('/shop', `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>A shop that sells domains</h1><main>${snippet}</main></body></html>`);
  const shop = await context.newPage();
  const shopErrors = [];
  shop.on('pageerror', (e) => shopErrors.push(String(e)));
  await shop.goto(`${host}/shop`);
  await shop.locator('[data-dsa-widget] input').fill('dsa-demo-available.com');
  await shop.locator('[data-dsa-widget] button').click();
  await shop.waitForFunction(() => window.__results.length > 0, null, { timeout: 15000 });
  const detail = await shop.evaluate(() => window.__results[0]);
  assert.equal(detail.status, 200, JSON.stringify(detail));
  assert.equal(detail.response.available, true);
  assert.equal(await shop.locator('[data-dsa-widget] .out .verdict').textContent(), 'Available');
  await shot(shop, 'portal-widget-on-host');
  await noViolations(shop, shopErrors);

  // The dashboard shows the charge: 1 of 500 used, a bar in the chart, the latest request.
  await waitFor('the charge on the dashboard', async () => {
    await page.goto(`${api}/account`);
    // Usage, chart and latest charges are three reads: wait until all saw the settled charge.
    return (await page.locator('#recent').count()) > 0 && (await page.locator('svg.chart rect').count()) > 0 &&
      /^1 \/ 500$/.test((await page.locator('tr', { hasText: 'embed' }).locator('td.used').textContent()).trim());
  }, 15000);
  assert.match(await page.locator('tr', { hasText: 'embed' }).locator('td.used').textContent(), /^1 \/ 500$/);
  assert.equal((await page.locator('tr', { hasText: 'embed' }).locator('td.remaining').textContent()).trim(), '499');
  assert.ok(await page.locator('svg.chart rect').count() >= 1, 'a bar for today');
  assert.match(await page.locator('#recent tbody').textContent(), /domain_check|domain-check|check/);
  const dash = await page.content();
  assert.ok(!dash.includes(embed) && !dash.includes(server), 'no key material in the latest requests');
  await shot(page, 'portal-dashboard');
  await noViolations(page, errors);
  await axe(context, `${api}/account`, 'portal-dashboard');

  // From a taken result to a watch: the server key's page checks a name, then watches it.
  await page.locator('tr', { hasText: 'server' }).getByRole('link').first().click();
  await page.getByLabel('Domain to check').fill('example.com');
  await page.getByRole('button', { name: 'Check', exact: true }).click();
  await page.locator('#checked').waitFor();
  assert.match(await page.locator('#checked').textContent(), /example\.com cannot be registered now/);
  await shot(page, 'portal-checked-taken');
  await noViolations(page, errors);
  await page.locator('#watch-checked').click();
  await page.locator('#watch-list').waitFor();
  assert.match(await page.locator('#watch-list tbody').textContent(), /example\.com/);
  await shot(page, 'portal-watch-added');
  await noViolations(page, errors);
  await page.goto(`${api}/account`);

  // Roll the embed key: the new secret at once, the old one until the grace period ends.
  await page.locator('tr', { hasText: 'embed' }).getByRole('link').first().click();
  await page.getByRole('button', { name: 'Roll key' }).click();
  await page.getByRole('heading', { name: 'Your rolled key' }).waitFor();
  const rolled = (await page.locator('code.secret[data-kind="embed"]').textContent()).trim();
  assert.notEqual(rolled, embed);
  await shot(page, 'portal-rolled');
  assert.equal(await checkStatus(rolled), 200, 'the new secret works');
  assert.equal(await checkStatus(embed), 200, 'the old secret works during the grace period');
  await new Promise((r) => setTimeout(r, (GRACE_SECS + KEY_CACHE_SECS + 1) * 1000));
  assert.equal(await checkStatus(embed), 403, 'the old secret is refused after the grace period');
  assert.equal(await checkStatus(rolled), 200);

  // Sign out: the cookie goes, and replaying it opens nothing (the session is gone server-side).
  await page.goto(`${api}/account`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/account\/signin/);
  await page.getByText('You are signed out.').waitFor();
  await shot(page, 'portal-signed-out');
  const replay = await fetch(`${api}/account`, { headers: { cookie: `dsa_portal=${session.value}` }, redirect: 'manual' });
  assert.equal(replay.status, 303);
  assert.equal(replay.headers.get('location'), '/account/signin');
  await context.close();
});

test('sign-in page: accessible, no script, same answer for a wrong password and an unknown address', async () => {
  const context = await newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const messages = [];
  for (const email of ['owner@example.com', 'nobody@example.com']) {
    await page.goto(`${api}/account/signin`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill('not-the-password-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    messages.push(await page.locator('#form-error').textContent());
  }
  assert.equal(messages[0], messages[1]);
  assert.equal(messages[0], 'The e-mail address or the password is wrong.');
  await shot(page, 'portal-signin-failed');
  await noViolations(page, errors);
  await axe(context, `${api}/account/signin`, 'portal-signin');
  await context.close();
});
