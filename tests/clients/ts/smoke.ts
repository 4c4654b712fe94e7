// Smoke flow of the TypeScript client generated from dsa's served document: types by
// openapi-typescript, calls by openapi-fetch. Run by .ci/clients.sh against a standalone dsa on
// the registry simulator:  node dist/smoke.js BASE_URL KEY FREE_KEY
// (KEY: a reseller server key with pricing and a purchase button; FREE_KEY: a key with a small
// per-minute limit, for the 429). Compiled with `tsc --strict`.
//
// Every operation of the document is called once, the NDJSON bulk stream is read line by line
// with each line typed by the document's line schema, and the error cases come back as the
// typed `ErrorBody`. Every result is checked; any failure exits 1.

import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./generated/schema.js";

type Schemas = components["schemas"];
type ErrorBody = Schemas["ErrorBody"];

const [base, key, freeKey] = process.argv.slice(2);
if (!base || !key || !freeKey) {
  console.error("usage: node dist/smoke.js BASE_URL KEY FREE_KEY");
  process.exit(2);
}

const failures: string[] = [];
let calls = 0;
function check(condition: boolean, what: string): void {
  if (!condition) failures.push(what);
}

/** dsa reads the key from the query string: this middleware adds it to every request. */
function clientKey(value: string): Middleware {
  return {
    onRequest({ request }) {
      const url = new URL(request.url);
      url.searchParams.set("client_key", value);
      return new Request(url, request);
    },
  };
}

/** A client whose answers are typed by their JSON form only (the bulk result as `BulkResponse`). */
function client(keyValue?: string) {
  const c = createClient<paths, "application/json">({ baseUrl: base });
  if (keyValue !== undefined) c.use(clientKey(keyValue));
  return c;
}

/** The body of an answer that must have `status` and no error. */
function ok<T>(what: string, status: number, result: { data?: T; error?: unknown; response: Response }): T | undefined {
  calls += 1;
  if (result.response.status !== status || result.data === undefined) {
    failures.push(`${what}: expected ${status}, got ${result.response.status} ${JSON.stringify(result.error)}`);
    return undefined;
  }
  return result.data;
}

/** The typed error body of an answer that must fail with `status` and a text starting with `text`. */
function failed(what: string, status: number, text: string, result: { error?: ErrorBody; response: Response }): void {
  calls += 1;
  const error = result.error;
  if (result.response.status !== status || error === undefined) {
    failures.push(`${what}: expected ${status}, got ${result.response.status}`);
    return;
  }
  check(error.success === false && error.error.startsWith(text), `${what}: ${JSON.stringify(error)}`);
}

const keyed = client(key);
const anonymous = client();
const badKey = client("dsa_server_nope");
const limited = client(freeKey);

// Availability.
const taken = ok("check taken", 200, await keyed.GET("/v1/domains/check", { params: { query: { domain: "example.com" } } }));
if (taken) {
  const message: "Available" | "Taken" = taken.message;
  check(!taken.available && message === "Taken" && taken.verdict.status === "taken", `taken: ${JSON.stringify(taken)}`);
}
const available = ok("check available", 200, await keyed.GET("/v1/domains/check", {
  params: { query: { domain: "dsa-demo-available.com", redirect_checkout: 1 } },
}));
if (available) {
  check(available.available && available.purchase?.url.includes("domain=dsa-demo-available.com") === true,
    `available: ${JSON.stringify(available)}`);
}
const short = ok("domain-check", 200, await keyed.GET("/domain-check", {
  params: { query: { domain: "dsa-demo-available.net", include_price: "1" } },
}));
if (short) check(short.available && short.tld === ".net" && short.price !== null, `domain-check: ${JSON.stringify(short)}`);

// Bulk, JSON form: typed as BulkResponse.
const bulk: Schemas["BulkResponse"] | undefined = ok("bulk GET", 200, await keyed.GET("/v1/domains/bulk", {
  params: { query: { domains: "example.com,dsa-demo-available.org,exa_mple.com" } },
}));
if (bulk) {
  check(bulk.domains.map((e) => e.domain).join() === "example.com,dsa-demo-available.org", `bulk order ${JSON.stringify(bulk)}`);
  check(bulk.total === 3 && bulk.invalid.length === 1 && bulk.credits_cost === 2, `bulk totals ${JSON.stringify(bulk)}`);
}
const posted: Schemas["BulkResponse"] | undefined = ok("bulk POST", 200, await keyed.POST("/v1/domains/bulk", {
  body: { domains: ["example.net", "google.com"] },
}));
if (posted) check(posted.domains.every((e) => e.success), `bulk POST ${JSON.stringify(posted)}`);

// Bulk, NDJSON stream: read line by line, each line typed by the line schema.
{
  const { data, response } = await keyed.GET("/v1/domains/bulk", {
    params: { query: { domains: "example.com,dsa-demo-available.dev,x" } },
    headers: { Accept: "application/x-ndjson" },
    parseAs: "stream",
  });
  calls += 1;
  check(response.status === 200 && (response.headers.get("content-type") ?? "").startsWith("application/x-ndjson"),
    `stream answer ${response.status}`);
  const entries: Schemas["BulkEntry"][] = [];
  const summaries: Schemas["BulkSummary"][] = [];
  if (data) {
    let buffered = "";
    const handle = (text: string): void => {
      if (text === "") return;
      const line = JSON.parse(text) as Schemas["BulkStreamLine"];
      if ("summary" in line) summaries.push(line);
      else if ("domain" in line) entries.push(line);
      else failures.push(`stream line that is neither an entry nor the summary: ${text}`);
    };
    const reader = data.pipeThrough(new TextDecoderStream()).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      buffered += read.value;
      let at: number;
      while ((at = buffered.indexOf("\n")) >= 0) {
        handle(buffered.slice(0, at));
        buffered = buffered.slice(at + 1);
      }
    }
    check(buffered === "", `the stream ends with a newline: ${buffered}`);
  }
  check(entries.map((e) => e.domain).sort().join() === "dsa-demo-available.dev,example.com", `stream entries ${JSON.stringify(entries)}`);
  const summary = summaries[0];
  check(summaries.length === 1 && summary?.checked === 2 && summary.total === 3, `stream summary ${JSON.stringify(summaries)}`);
}

// WHOIS, DNS, suggestions.
const whois = ok("whois", 200, await keyed.GET("/v1/whois", { params: { query: { domain: "example.com" } } }));
if (whois) check(whois.lookup.registered && whois.whois !== null, `whois ${JSON.stringify(whois)}`);
const dns = ok("dns", 200, await keyed.GET("/v1/dns", { params: { query: { domain: "google.com", types: "A,MX,SOA" } } }));
if (dns) {
  const types: Schemas["DnsType"][] = dns.types_queried;
  check(types.join() === "A,MX,SOA", `dns types ${types.join()}`);
  const serial = dns.records["SOA"]?.[0]?.serial;
  check(typeof serial === "number" && serial > 0, `SOA serial ${serial}`);
}
const suggest = ok("suggest", 200, await keyed.GET("/v1/domains/suggest", {
  params: { query: { keyword: "best pizza", tlds: ".com,.af", limit: 5, check: 1 } },
}));
if (suggest) {
  check(suggest.total === suggest.suggestions.length && suggest.total <= 5, `suggest total ${suggest.total}`);
  const by = suggest.suggestions.map((s) => s.checked_by);
  check(by.every((b) => b === "registry" || b === "dns" || b === "none"), `checked_by ${by.join()}`);
}

// Watches (our extension): create, read, list, events, delete.
const created = ok("watch create", 201, await keyed.POST("/v1/watches", { body: { domain: "example.com", note: "smoke" } }));
if (created) {
  const id = created.watch.id;
  check(created.watch.domain === "example.com" && created.credits_cost === created.watch.monthly_fee, `watch ${JSON.stringify(created)}`);
  const one = ok("watch get", 200, await keyed.GET("/v1/watches/{id}", { params: { path: { id } } }));
  check(one?.watch.id === id, `watch get ${JSON.stringify(one)}`);
  const listed = ok("watch list", 200, await keyed.GET("/v1/watches"));
  check(listed?.watches.some((w) => w.id === id) === true, `watch list ${JSON.stringify(listed)}`);
  const events = ok("watch events", 200, await keyed.GET("/v1/watches/{id}/events", { params: { path: { id } } }));
  check(Array.isArray(events?.events), `watch events ${JSON.stringify(events)}`);
  const gone = ok("watch delete", 200, await keyed.DELETE("/v1/watches/{id}", { params: { path: { id } } }));
  check(gone?.deleted === true, `watch delete ${JSON.stringify(gone)}`);
}

// Webhooks (our extension): register, read, list, a test event and its delivery, retry, rotate,
// enable, delete. The URL is a public address nothing answers at: the attempts fail, which the
// flow does not depend on.
const hook = ok("webhook create", 201, await keyed.POST("/v1/webhooks", {
  body: { url: "https://93.184.215.14/dsa-smoke", event_types: ["domain.available"] },
}));
if (hook) {
  const id = hook.webhook.id;
  check(hook.secret.startsWith("whsec_") && hook.webhook.event_types.join() === "domain.available", `webhook ${JSON.stringify(hook)}`);
  const one = ok("webhook get", 200, await keyed.GET("/v1/webhooks/{id}", { params: { path: { id } } }));
  check(one?.webhook.id === id, `webhook get ${JSON.stringify(one)}`);
  const listed = ok("webhook list", 200, await keyed.GET("/v1/webhooks"));
  check(listed?.webhooks.some((w) => w.id === id) === true, `webhook list ${JSON.stringify(listed)}`);
  const tested = ok("webhook test", 202, await keyed.POST("/v1/webhooks/{id}/test", { params: { path: { id } } }));
  check(tested?.event_id.startsWith("evt_") === true, `webhook test ${JSON.stringify(tested)}`);
  // The test event becomes a delivery once the delivery loop has fanned it out.
  let deliveries = ok("webhook deliveries", 200, await keyed.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id } } }));
  for (let i = 0; i < 40 && deliveries && deliveries.deliveries.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 250));
    deliveries = ok("webhook deliveries", 200, await keyed.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id } } }));
  }
  const first = deliveries?.deliveries[0];
  check(deliveries?.deliveries.length === 1 && first?.event_id === tested?.event_id, `deliveries ${JSON.stringify(deliveries)}`);
  if (first) {
    const retried = ok("webhook retry", 202, await keyed.POST("/v1/webhooks/{id}/deliveries/{delivery_id}/retry", {
      params: { path: { id, delivery_id: first.id } },
    }));
    check(retried?.delivery_id === first.id, `retry ${JSON.stringify(retried)}`);
  }
  const rotated = ok("webhook rotate", 200, await keyed.POST("/v1/webhooks/{id}/rotate-secret", { params: { path: { id } } }));
  check(rotated?.secret.startsWith("whsec_") === true && rotated.secret !== hook.secret, "webhook rotated");
  const enabled = ok("webhook enable", 200, await keyed.POST("/v1/webhooks/{id}/enable", { params: { path: { id } } }));
  check(enabled?.webhook.id === id, `webhook enable ${JSON.stringify(enabled)}`);
  const dropped = ok("webhook delete", 200, await keyed.DELETE("/v1/webhooks/{id}", { params: { path: { id } } }));
  check(dropped?.deleted === true, `webhook delete ${JSON.stringify(dropped)}`);
}

// Catalogue and operations: free, no key.
const tlds = ok("tlds", 200, await anonymous.GET("/v1/tlds"));
if (tlds) check(tlds.count === tlds.tlds.length && tlds.tlds.some((t) => t.tld === ".com"), "tld list");
const detail = ok("tld detail", 200, await anonymous.GET("/v1/tlds/{tld}", { params: { path: { tld: ".com" } } }));
if (detail) check(detail.registry_suffix === ".com" && detail.health.methods.length > 0, `tld detail ${JSON.stringify(detail)}`);
const live = ok("healthz", 200, await anonymous.GET("/healthz"));
check(live?.status === "ok", `healthz ${JSON.stringify(live)}`);
const ready = ok("readyz", 200, await anonymous.GET("/readyz"));
check(ready?.status === "ready", `readyz ${JSON.stringify(ready)}`);
const page = ok("front page", 200, await anonymous.GET("/", { parseAs: "text" }));
check(typeof page === "string" && page.toLowerCase().includes("<html"), "front page is HTML");
const script = ok("widget", 200, await anonymous.GET("/widget.js", { parseAs: "text" }));
check(typeof script === "string" && script.includes("function"), "widget script");
const sheet = ok("stylesheet", 200, await anonymous.GET("/assets/front.css", { parseAs: "text" }));
check(typeof sheet === "string" && sheet.includes("{"), "stylesheet");

// Error cases, as the typed ErrorBody.
failed("403", 403, "Invalid or disabled client key.", await badKey.GET("/v1/domains/check", { params: { query: { domain: "example.com" } } }));
failed("400", 400, "Missing required parameter: domain.", await keyed.GET("/v1/domains/check", { params: { query: { domain: "" } } }));
failed("400 bulk", 400, "Too many domains", await keyed.GET("/v1/domains/bulk", {
  params: { query: { domains: Array(11).fill("example.com").join() } },
}));
failed("404", 404, "Unsupported TLD: .zzz", await anonymous.GET("/v1/tlds/{tld}", { params: { path: { tld: ".zzz" } } }));
failed("502", 502, "Upstream", await keyed.GET("/v1/domains/check", { params: { query: { domain: "example.ai" } } }));
{
  let limitedAt = -1;
  for (let i = 0; i < 10 && limitedAt < 0; i += 1) {
    const result = await limited.GET("/v1/dns", { params: { query: { domain: "example.com" } } });
    if (result.response.status === 429) {
      limitedAt = i;
      failed("429", 429, "Rate limit of", result);
      check(/^\d+$/.test(result.response.headers.get("retry-after") ?? ""), "429 Retry-After");
    }
  }
  check(limitedAt >= 0, "the free key never got a 429");
}

console.log(`typescript client: ${calls} calls`);
if (failures.length > 0) {
  console.error(`typescript client: ${failures.length} failure(s):\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
