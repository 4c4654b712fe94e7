/*! dsa domain search widget — MIT OR Apache-2.0. https://example.invalid/dsa
 *
 * <script src="{base}/widget.js" async></script>
 * <div data-dsa-widget data-client-key="dsa_embed_…"></div>
 *
 * Attributes (spec §4.6): data-client-key, data-api-url, data-redirect-checkout,
 * data-commission-percent, data-redirect-url; ours: data-lang (en, fa, ps), data-theme
 * (light, dark, auto), data-alternatives (how many registry-verified alternatives to offer when
 * a searched name is taken, 0-5, default 5; 0 turns them off. Each time: 5 credits plus 1 per
 * alternative found). No key: demo mode, no alternatives. Renders in a shadow root; API values are inserted
 * with textContent only; styles are constructable stylesheets (strict-CSP friendly).
 * Theme with CSS custom properties on the container: --dsa-bg, --dsa-fg, --dsa-muted,
 * --dsa-border, --dsa-accent, --dsa-accent-fg, --dsa-ok, --dsa-taken, --dsa-error, --dsa-focus,
 * --dsa-radius, --dsa-font. Emits `dsa:result` and `dsa:alternatives` (bubbles, composed) on
 * the container.
 */
(function () {
  'use strict';
  if (window.DSA && window.DSA.mount) return; // loaded twice: keep the first

  var script = document.currentScript;
  var scriptUrl = script && script.src ? new URL(script.src, location.href) : new URL(location.href);
  var DEFAULT_API = scriptUrl.origin + '/v1/domains/check';
  var HOME = scriptUrl.origin + '/';
  var DEBOUNCE_MS = 250;
  var TIMEOUT_MS = 20000;
  var MAX_ALTERNATIVES = 5;

  var STRINGS = {
    en: {
      label: 'Domain name', placeholder: 'example.com', search: 'Search', searching: 'Checking…',
      available: 'Available', taken: 'Taken', price: 'Register for {price}', renew: 'renews at {price}',
      buy: 'Buy', newTab: '(opens in a new tab)', empty: 'Type a domain name, for example example.com.',
      e400: 'That is not a domain name we can check. Type a full name such as example.com.',
      e403: 'This website is not allowed to use this search key. The site owner can add it to the key’s allowed sites.',
      e429: 'Too many searches right now. Please try again in a minute.',
      e429wait: 'Too many searches right now. Please try again in {n} seconds.',
      e429credits: 'This search box has used its searches for this month. Please try again later.',
      e429demo: 'You have used the free demo searches. Get a free key (Developer plan, no card needed) to keep searching:',
      getKey: 'get a key', e502: 'The registry is busy and did not answer in time. Please try again in a moment.',
      e500: 'Something went wrong on our side. Please try again shortly.',
      network: 'Could not reach the search service. Check your connection and try again.',
      demoLeft: 'Demo: {n} free searches left.',
      altFinding: 'Looking for available alternatives…', altTitle: 'Available alternatives (confirmed by the registry):',
      altNone: 'No available alternative found right now.', altCheck: 'Check {domain}'
    },
    fa: {
      label: 'نام دامنه', placeholder: 'example.com', search: 'جستجو',
      searching: 'در حال بررسی…',
      available: 'آزاد است', taken: 'ثبت شده است',
      price: 'ثبت: {price}', renew: 'تمدید: {price}', buy: 'خرید',
      newTab: '(در برگهٔ جدید باز می\u200cشود)',
      empty: 'یک نام دامنه بنویسید، مثلاً example.com.',
      e400: 'این نام دامنه معتبر نیست. یک نام کامل مانند example.com بنویسید.',
      e403: 'این وب\u200cسایت اجازهٔ استفاده از این کلید جستجو را ندارد. مدیر سایت می\u200cتواند آن را به فهرست سایت\u200cهای مجاز کلید اضافه کند.',
      e429: 'جستجوها بیش از حد است. لطفاً یک دقیقهٔ دیگر دوباره امتحان کنید.',
      e429wait: 'جستجوها بیش از حد است. لطفاً {n} ثانیهٔ دیگر دوباره امتحان کنید.',
      e429credits: 'سهمیهٔ جستجوی این ماه تمام شده است. لطفاً بعداً دوباره امتحان کنید.',
      e429demo: 'جستجوهای رایگان نمایشی تمام شد. برای ادامه یک کلید رایگان بگیرید (طرح توسعه\u200cدهنده، بدون کارت بانکی):',
      getKey: 'گرفتن کلید',
      e502: 'ثبت\u200cکننده مشغول است و به موقع پاسخ نداد. لطفاً کمی بعد دوباره امتحان کنید.',
      e500: 'خطایی در سمت ما رخ داد. لطفاً کمی بعد دوباره امتحان کنید.',
      network: 'اتصال به سرویس جستجو ممکن نشد. اتصال خود را بررسی کنید و دوباره امتحان کنید.',
      demoLeft: 'نمایشی: {n} جستجوی رایگان باقی مانده است.',
      altFinding: 'در حال یافتن نام\u200cهای آزاد دیگر…', altTitle: 'نام\u200cهای آزاد دیگر (تأییدشده از سوی ثبت\u200cکننده):',
      altNone: 'فعلاً نام آزاد دیگری پیدا نشد.', altCheck: 'بررسی {domain}'
    },
    ps: {
      label: 'د ډومېن نوم', placeholder: 'example.com', search: 'لټون',
      searching: 'کتل کېږي…',
      available: 'شته دی', taken: 'نيول شوی دی',
      price: 'ثبت: {price}', renew: 'تمديد: {price}', buy: 'پېرودل',
      newTab: '(په نوي ټب کې پرانيزي)',
      empty: 'د ډومېن نوم وليکئ، د بېلګې په توګه example.com.',
      e400: 'دا د ډومېن سم نوم نه دی. بشپړ نوم لکه example.com وليکئ.',
      e403: 'دا ويبسايټ د دې لټون کلي د کارولو اجازه نلري. د سايټ مالک کولی شي چې دا د کلي په اجازه لرونکي سايټونو کې ورزيات کړي.',
      e429: 'اوس ډېرې لټونې شوې دي. مهرباني وکړئ يوه دقيقه وروسته بيا هڅه وکړئ.',
      e429wait: 'اوس ډېرې لټونې شوې دي. مهرباني وکړئ {n} ثانيې وروسته بيا هڅه وکړئ.',
      e429credits: 'د دې مياشت د لټون ونډه خلاصه شوه. مهرباني وکړئ وروسته بيا هڅه وکړئ.',
      e429demo: 'وړيا ازمايښتي لټونې خلاصې شوې. د دوام لپاره وړيا کلي واخلئ (د جوړوونکي پلان، بې له کارته):',
      getKey: 'کلي واخلئ',
      e502: 'د ثبت اداره بوخته ده او په وخت يې ځواب ونه ورکړ. مهرباني وکړئ لږ وروسته بيا هڅه وکړئ.',
      e500: 'زموږ لورې يوه ستونزه رامنځته شوه. مهرباني وکړئ لږ وروسته بيا هڅه وکړئ.',
      network: 'د لټون خدمت ته لاسرسی ونه شو. خپل ارتباط وګورئ او بيا هڅه وکړئ.',
      demoLeft: 'ازمايښت: {n} وړيا لټونې پاتې دي.',
      altFinding: 'د نورو شته نومونو لټون کېږي…', altTitle: 'نور شته نومونه (د ثبت ادارې له خوا تاييد شوي):',
      altNone: 'اوس مهال بل شته نوم ونه موندل شو.', altCheck: '{domain} وګورئ'
    }
  };
  var RTL = { fa: true, ps: true };

  var CSS = [
    ':host{all:initial!important;display:block!important;box-sizing:border-box!important;',
    '--_bg:var(--dsa-bg,#fff);--_fg:var(--dsa-fg,#111827);--_muted:var(--dsa-muted,#4b5563);',
    '--_border:var(--dsa-border,#6b7280);--_accent:var(--dsa-accent,#1d4ed8);--_accent-fg:var(--dsa-accent-fg,#fff);',
    '--_ok:var(--dsa-ok,#166534);--_taken:var(--dsa-taken,#b91c1c);--_error:var(--dsa-error,#9a3412);',
    '--_focus:var(--dsa-focus,#b45309);--_radius:var(--dsa-radius,8px);',
    '--_font:var(--dsa-font,system-ui,-apple-system,"Segoe UI",Roboto,Tahoma,"Noto Sans Arabic",sans-serif)}',
    ':host([hidden]){display:none!important}',
    ':host([data-theme=dark]){--_bg:var(--dsa-bg,#111827);--_fg:var(--dsa-fg,#f9fafb);--_muted:var(--dsa-muted,#d1d5db);',
    '--_border:var(--dsa-border,#9ca3af);--_accent:var(--dsa-accent,#93c5fd);--_accent-fg:var(--dsa-accent-fg,#111827);',
    '--_ok:var(--dsa-ok,#86efac);--_taken:var(--dsa-taken,#fca5a5);--_error:var(--dsa-error,#fdba74);--_focus:var(--dsa-focus,#fde047)}',
    '@media (prefers-color-scheme:dark){:host([data-theme=auto]){--_bg:var(--dsa-bg,#111827);--_fg:var(--dsa-fg,#f9fafb);',
    '--_muted:var(--dsa-muted,#d1d5db);--_border:var(--dsa-border,#9ca3af);--_accent:var(--dsa-accent,#93c5fd);',
    '--_accent-fg:var(--dsa-accent-fg,#111827);--_ok:var(--dsa-ok,#86efac);--_taken:var(--dsa-taken,#fca5a5);',
    '--_error:var(--dsa-error,#fdba74);--_focus:var(--dsa-focus,#fde047)}}',
    '.w{box-sizing:border-box;font:16px/1.5 var(--_font);color:var(--_fg);background:var(--_bg);',
    'border:1px solid var(--_border);border-radius:var(--_radius);padding:16px;text-align:start;max-width:100%}',
    ':where(.w) *{box-sizing:border-box;font:inherit;color:inherit;letter-spacing:normal;text-transform:none}',
    'label{display:block;font-weight:600;margin:0 0 6px}',
    '.row{display:flex;gap:8px;flex-wrap:wrap}',
    'input{flex:1 1 12em;min-width:0;padding:10px 12px;border:1px solid var(--_border);border-radius:var(--_radius);',
    'background:var(--_bg);color:var(--_fg);direction:ltr;text-align:left;margin:0}',
    '.w[dir=rtl] input{text-align:right}',
    'input::placeholder{color:var(--_muted);opacity:1}',
    'button,a.buy{display:inline-flex;align-items:center;gap:8px;padding:10px 18px;border:1px solid var(--_accent);',
    'border-radius:var(--_radius);background:var(--_accent);color:var(--_accent-fg);font-weight:600;cursor:pointer;',
    'text-decoration:none;margin:0}',
    'button[aria-busy=true]{cursor:progress}',
    'input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--_focus);outline-offset:2px}',
    '.spin{display:none;width:1em;height:1em;border:2px solid currentColor;border-right-color:transparent;',
    'border-radius:50%;animation:r .8s linear infinite}',
    'button[aria-busy=true] .spin{display:inline-block}',
    '@keyframes r{to{transform:rotate(360deg)}}',
    '@media (prefers-reduced-motion:reduce){.spin{animation-duration:2.4s}}',
    '.out{margin-top:12px;min-height:1.5em}',
    '.out:empty{margin:0;min-height:0}',
    '.line{display:flex;flex-wrap:wrap;align-items:center;gap:8px 12px;margin:0}',
    '.verdict{font-weight:700}',
    '.ok .verdict{color:var(--_ok)}.taken .verdict{color:var(--_taken)}',
    '.dom{font-weight:600;direction:ltr;unicode-bidi:isolate}',
    '.price{color:var(--_fg)}.muted{color:var(--_muted);font-size:.875em}',
    '.err{color:var(--_error);margin:0}',
    '.err a{color:inherit;text-decoration:underline}',
    '.alts{margin:10px 0 0;padding:0}.alts p{margin:0 0 6px}',
    '.alts ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:6px}',
    '.alts li{margin:0;padding:0;max-width:100%}',
    '.alts button{padding:4px 12px;background:var(--_bg);color:var(--_accent);font-weight:600;max-width:100%;',
    'overflow-wrap:anywhere;text-align:start}',
    '.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}'
  ].join('');

  var sheet = null;
  function styleSheet() {
    if (sheet === null) {
      try { sheet = new CSSStyleSheet(); sheet.replaceSync(CSS); } catch (e) { sheet = false; }
    }
    return sheet;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (text != null) node.textContent = String(text);
    return node;
  }

  function fmt(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, k) { return values[k] == null ? '' : String(values[k]); });
  }

  function pickLang(container) {
    var raw = container.getAttribute('data-lang') ||
      (container.closest && container.closest('[lang]') && container.closest('[lang]').getAttribute('lang')) ||
      document.documentElement.lang || 'en';
    var code = String(raw).toLowerCase().split(/[-_]/)[0];
    if (code === 'prs') code = 'fa'; // Dari (ISO 639-3) uses the Persian strings
    if (code === 'pbt' || code === 'pbu') code = 'ps';
    return STRINGS[code] ? code : 'en';
  }

  function money(amount, currency, lang) {
    if (typeof amount !== 'number' || !isFinite(amount)) return null;
    try {
      return new Intl.NumberFormat(lang, { style: 'currency', currency: currency, currencyDisplay: 'code' }).format(amount);
    } catch (e) {
      return amount + ' ' + currency;
    }
  }

  function num(n, lang) {
    try { return new Intl.NumberFormat(lang).format(n); } catch (e) { return String(n); }
  }

  function safeHttpUrl(raw) {
    if (typeof raw !== 'string') return null;
    try {
      var u = new URL(raw);
      return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
    } catch (e) { return null; }
  }

  // Both answer shapes: §2.2 (/v1/domains/check) and §4.7 (/domain-check).
  function normalise(body) {
    var r = { domain: String(body.domain || ''), available: body.available === true, price: null, renew: null, currency: null, buy: null };
    if (body.verdict && typeof body.verdict.unicode === 'string') r.unicode = body.verdict.unicode;
    if (body.pricing && typeof body.pricing.display_register === 'number') {
      r.price = body.pricing.display_register; r.currency = String(body.pricing.currency || '');
    } else if (body.price && typeof body.price.register === 'number') {
      r.price = body.price.register; r.currency = String(body.price.currency || '');
      if (typeof body.price.renew === 'number') r.renew = body.price.renew;
    }
    if (r.available) r.buy = safeHttpUrl(body.purchase && body.purchase.url) || safeHttpUrl(body.purchase_url);
    return r;
  }

  var widgets = typeof WeakMap === 'function' ? new WeakMap() : null;
  var serial = 0;

  function Widget(container) {
    this.container = container;
    this.lang = pickLang(container);
    this.t = STRINGS[this.lang];
    this.inflight = null;
    this.timer = 0;
    this.render();
  }

  Widget.prototype.render = function () {
    var c = this.container, t = this.t, id = 'dsa-q-' + (++serial);
    var root = c.shadowRoot || c.attachShadow({ mode: 'open' });
    while (root.firstChild) root.removeChild(root.firstChild);
    var s = styleSheet();
    if (s) root.adoptedStyleSheets = [s];
    else root.appendChild(el('style', null, CSS)); // old engines; needs style-src permission
    if (!c.hasAttribute('data-theme')) c.setAttribute('data-theme', 'light');
    var wrap = el('div', { 'class': 'w', dir: RTL[this.lang] ? 'rtl' : 'ltr', lang: this.lang, part: 'widget' });
    var form = el('form', { role: 'search', novalidate: '' });
    form.appendChild(el('label', { 'for': id }, t.label));
    var row = el('div', { 'class': 'row' });
    this.input = el('input', {
      id: id, type: 'text', name: 'domain', inputmode: 'url', autocomplete: 'off', autocapitalize: 'none',
      spellcheck: 'false', dir: 'ltr', placeholder: t.placeholder, maxlength: '253'
    });
    this.button = el('button', { type: 'submit', 'aria-busy': 'false' });
    this.button.appendChild(el('span', { 'class': 'spin', 'aria-hidden': 'true' }));
    this.button.appendChild(el('span', null, t.search));
    row.appendChild(this.input); row.appendChild(this.button);
    form.appendChild(row);
    this.out = el('div', { 'class': 'out', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true' });
    wrap.appendChild(form); wrap.appendChild(this.out);
    root.appendChild(wrap);
    var self = this;
    form.addEventListener('submit', function (ev) { ev.preventDefault(); self.schedule(); });
  };

  // Debounced: a burst of clicks/Enter presses makes one request; a query already in flight is
  // not sent again; a new query aborts the old one.
  Widget.prototype.schedule = function () {
    var self = this;
    clearTimeout(this.timer);
    this.timer = setTimeout(function () { self.search(); }, DEBOUNCE_MS);
  };

  Widget.prototype.apiUrl = function (domain) {
    var c = this.container;
    var base = c.getAttribute('data-api-url') || DEFAULT_API;
    var url = new URL(base, location.href);
    var q = url.searchParams;
    var key = c.getAttribute('data-client-key');
    if (key) q.set('client_key', key);
    q.set('domain', domain);
    var pass = [['data-commission-percent', 'commission_percent'], ['data-redirect-url', 'redirect_url'], ['data-redirect-checkout', 'redirect_checkout']];
    for (var i = 0; i < pass.length; i++) {
      var v = c.getAttribute(pass[i][0]);
      if (v != null && v !== '') q.set(pass[i][1], v);
    }
    if (/\/domain-check$/.test(url.pathname)) q.set('include_price', '1');
    return url.href;
  };

  Widget.prototype.search = function () {
    var domain = this.input.value.trim();
    if (!domain) { this.showError(this.t.empty); this.input.focus(); return; }
    if (this.inflight && this.inflight.domain === domain) return;
    if (this.inflight) this.inflight.abort();
    if (this.alt) { this.alt.abort(); this.alt = null; }
    var self = this, ctl = typeof AbortController === 'function' ? new AbortController() : null;
    var job = { domain: domain, abort: function () { if (ctl) ctl.abort(); job.dead = true; } };
    this.inflight = job;
    this.busy(true);
    var timeout = setTimeout(function () { if (ctl) ctl.abort(); }, TIMEOUT_MS);
    var status = 0;
    fetch(this.apiUrl(domain), { method: 'GET', credentials: 'same-origin', signal: ctl ? ctl.signal : undefined, headers: { Accept: 'application/json' } })
      .then(function (res) {
        status = res.status;
        return res.json().catch(function () { return null; }).then(function (body) { return { res: res, body: body }; });
      })
      .then(function (r) {
        if (job.dead) return;
        self.finish(r.res, r.body);
      }, function () {
        if (job.dead && self.inflight !== job) return;
        self.showError(self.t.network);
        self.emit(false, status, null);
      })
      .then(function () {
        clearTimeout(timeout);
        if (self.inflight === job) { self.inflight = null; self.busy(false); }
      });
  };

  Widget.prototype.busy = function (on) {
    this.button.setAttribute('aria-busy', on ? 'true' : 'false');
    this.button.lastChild.textContent = on ? this.t.searching : this.t.search;
    this.out.setAttribute('aria-busy', on ? 'true' : 'false');
  };

  Widget.prototype.clear = function () {
    while (this.out.firstChild) this.out.removeChild(this.out.firstChild);
  };

  Widget.prototype.showError = function (message, detail, link) {
    this.clear();
    var p = el('p', { 'class': 'err' }, message);
    if (link) { p.appendChild(document.createTextNode(' ')); p.appendChild(el('a', { href: link }, this.t.getKey)); }
    this.out.appendChild(p);
    if (detail) this.out.appendChild(el('p', { 'class': 'muted', dir: 'auto' }, detail));
  };

  Widget.prototype.finish = function (res, body) {
    var t = this.t, demo = !this.container.getAttribute('data-client-key');
    var reason = body && typeof body.error === 'string' ? body.error : '';
    if (res.ok && body && typeof body.available === 'boolean') {
      this.showResult(normalise(body), body);
      if (body.available === false && !demo) this.alternatives(body);
    } else if (res.status === 400) {
      this.showError(t.e400, reason);
    } else if (res.status === 403) {
      this.showError(t.e403, reason);
    } else if (res.status === 429) {
      if (demo && /demo/i.test(reason)) this.showError(t.e429demo, null, HOME + '#plans');
      else if (/monthly credit/i.test(reason)) this.showError(t.e429credits);
      else {
        var wait = parseInt(res.headers.get('Retry-After') || '', 10);
        this.showError(wait > 0 && wait <= 3600 ? fmt(t.e429wait, { n: num(wait, this.lang) }) : t.e429);
      }
    } else if (res.status === 502 || res.status === 503 || res.status === 504) {
      this.showError(t.e502);
    } else {
      this.showError(t.e500);
    }
    this.emit(res.ok, res.status, body);
  };

  Widget.prototype.showResult = function (r, body) {
    var t = this.t, lang = this.lang;
    this.clear();
    var line = el('p', { 'class': 'line ' + (r.available ? 'ok' : 'taken') });
    line.appendChild(el('span', { 'class': 'verdict' }, r.available ? t.available : t.taken));
    line.appendChild(el('span', { 'class': 'dom' }, r.unicode && r.unicode !== r.domain ? r.unicode + ' (' + r.domain + ')' : r.domain));
    if (r.available && r.price != null) {
      var shown = money(r.price, r.currency, lang);
      if (shown) line.appendChild(el('span', { 'class': 'price' }, fmt(t.price, { price: shown })));
      var renew = r.renew != null && r.renew !== r.price ? money(r.renew, r.currency, lang) : null;
      if (renew) line.appendChild(el('span', { 'class': 'muted' }, fmt(t.renew, { price: renew })));
    }
    if (r.buy) {
      var a = el('a', { 'class': 'buy', href: r.buy, rel: 'noopener', target: '_blank' }, t.buy + ' ');
      a.appendChild(el('span', { 'class': 'dom' }, r.unicode || r.domain));
      a.appendChild(el('span', { 'class': 'sr' }, ' ' + t.newTab));
      line.appendChild(a);
    }
    this.out.appendChild(line);
    if (body && body.demo === true && typeof body.credits_remaining === 'number') {
      this.out.appendChild(el('p', { 'class': 'muted' }, fmt(t.demoLeft, { n: body.credits_remaining })));
    }
  };

  // How many alternatives to offer (data-alternatives, 0-5; default 5).
  Widget.prototype.altCount = function () {
    var raw = this.container.getAttribute('data-alternatives');
    if (raw == null || raw === '') return MAX_ALTERNATIVES;
    var n = parseInt(raw, 10);
    return n >= 0 ? Math.min(n, MAX_ALTERNATIVES) : MAX_ALTERNATIVES;
  };

  // The suggestions endpoint beside the configured check endpoint (same origin, same prefix).
  Widget.prototype.suggestUrl = function () {
    var url = new URL(this.container.getAttribute('data-api-url') || DEFAULT_API, location.href);
    var p = url.pathname.replace(/\/v1\/domains\/check$|\/domain-check$/, '');
    url.pathname = (p === url.pathname ? '' : p) + '/v1/domains/suggest';
    url.search = '';
    return url;
  };

  // A taken name: ask for names the registry confirms available (suggest with verify=N), shown
  // under the verdict as buttons that check the name. Costs 5 credits + 1 per name found.
  Widget.prototype.alternatives = function (body) {
    var n = this.altCount(), t = this.t, self = this;
    var shown = (body.verdict && typeof body.verdict.unicode === 'string' && body.verdict.unicode) || String(body.domain || '');
    var tld = body.verdict && typeof body.verdict.tld === 'string' ? body.verdict.tld : '';
    var keyword = shown.split('.')[0];
    if (!n || !keyword || keyword.length < 2) return;
    var url = this.suggestUrl(), q = url.searchParams;
    q.set('client_key', this.container.getAttribute('data-client-key'));
    q.set('keyword', keyword);
    if (/^\.[^,]+$/.test(tld)) q.set('tlds', tld + ',.com,.net,.org,.io,.co,.ai,.dev,.app,.af,.com.af');
    q.set('limit', '5');
    q.set('verify', String(n));
    var box = el('div', { 'class': 'alts', 'aria-busy': 'true' });
    box.appendChild(el('p', { 'class': 'muted' }, t.altFinding));
    this.out.appendChild(box);
    var ctl = typeof AbortController === 'function' ? new AbortController() : null;
    var job = { dead: false, abort: function () { if (ctl) ctl.abort(); job.dead = true; } };
    this.alt = job;
    var timeout = setTimeout(function () { if (ctl) ctl.abort(); }, TIMEOUT_MS);
    var status = 0;
    fetch(url.href, { method: 'GET', credentials: 'same-origin', signal: ctl ? ctl.signal : undefined, headers: { Accept: 'application/json' } })
      .then(function (res) {
        status = res.status;
        return res.json().catch(function () { return null; }).then(function (b) { return { res: res, body: b }; });
      })
      .then(function (r) {
        if (job.dead) return;
        self.showAlternatives(box, r.res.ok && r.body && Array.isArray(r.body.suggestions) ? r.body.suggestions : null);
        self.emit(r.res.ok, r.res.status, r.body, 'dsa:alternatives');
      }, function () {
        if (job.dead) return;
        self.showAlternatives(box, null);
        self.emit(false, status, null, 'dsa:alternatives');
      })
      .then(function () { clearTimeout(timeout); if (self.alt === job) self.alt = null; });
  };

  // Only names the registry confirmed (available === true) are offered; on an error the box
  // goes away quietly (the verdict above is the answer the visitor asked for).
  Widget.prototype.showAlternatives = function (box, items) {
    var t = this.t, self = this;
    while (box.firstChild) box.removeChild(box.firstChild);
    box.setAttribute('aria-busy', 'false');
    if (!items) { if (box.parentNode) box.parentNode.removeChild(box); return; }
    var names = [];
    for (var i = 0; i < items.length && names.length < MAX_ALTERNATIVES; i++) {
      var s = items[i];
      if (s && s.available === true && typeof s.domain === 'string') names.push({ domain: s.domain, unicode: typeof s.unicode === 'string' ? s.unicode : s.domain });
    }
    if (!names.length) { box.appendChild(el('p', { 'class': 'muted' }, t.altNone)); return; }
    box.appendChild(el('p', null, t.altTitle));
    var ul = el('ul');
    names.forEach(function (name) {
      var li = el('li');
      var b = el('button', { type: 'button', 'class': 'alt', 'aria-label': fmt(t.altCheck, { domain: name.unicode }) });
      b.appendChild(el('span', { 'class': 'dom' }, name.unicode));
      b.addEventListener('click', function () {
        self.input.value = name.unicode;
        self.schedule();
      });
      li.appendChild(b);
      ul.appendChild(li);
    });
    box.appendChild(ul);
  };

  Widget.prototype.emit = function (ok, status, body, type) {
    var detail = { ok: ok, status: status, response: body };
    var ev, name = type || 'dsa:result';
    try { ev = new CustomEvent(name, { bubbles: true, composed: true, detail: detail }); } catch (e) {
      ev = document.createEvent('CustomEvent'); ev.initCustomEvent(name, true, false, detail);
    }
    this.container.dispatchEvent(ev);
  };

  function mount(container) {
    if (!container || container.nodeType !== 1) throw new TypeError('DSA.mount needs an element');
    if (widgets ? widgets.has(container) : container.__dsa) return widgets ? widgets.get(container) : container.__dsa;
    var w = new Widget(container);
    if (widgets) widgets.set(container, w); else container.__dsa = w;
    return w;
  }

  function scan(root) {
    if (root.nodeType === 1 && root.hasAttribute('data-dsa-widget')) mount(root);
    var found = root.querySelectorAll ? root.querySelectorAll('[data-dsa-widget]') : [];
    for (var i = 0; i < found.length; i++) mount(found[i]);
  }

  window.DSA = { mount: mount, version: '1' };

  function start() {
    scan(document);
    if (typeof MutationObserver === 'function') {
      new MutationObserver(function (records) {
        for (var i = 0; i < records.length; i++) {
          var added = records[i].addedNodes;
          for (var j = 0; j < added.length; j++) if (added[j].nodeType === 1) scan(added[j]);
        }
      }).observe(document.documentElement, { childList: true, subtree: true });
    }
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
