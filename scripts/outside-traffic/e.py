#!/usr/bin/env python3
"""Labelled synthetic API traffic for ratewarden's example policy (outside generator E).

usage: e.py SEED OUT.jsonl [--summary]

Writes 1.5 h of requests, one JSON object a line in time order, in the JSON-lines format
`ratewarden replay` reads (ts, user, endpoint, ip, tier, status, latency_ms), plus two
extra fields: `label` ("legit"/"abuse") and `actor` ("<kind>-<NN>").

The API is an e-commerce / SaaS platform: catalogue, search, carts, orders, payments,
reports and exports, notifications, sign-up/login with SMS one-time codes, webhooks.

Who the subject (`user`) is, as a forward-auth deployment with the example policy sees it:
  * authenticated API clients: their API key (sk_/pk_/ek_...), tier sent by the gateway;
  * logged-in app users (web / mobile): their account id (u_...), tier of their plan;
  * unauthenticated calls (/login, /signup, /password/reset, webhooks from providers,
    anonymous public catalogue reads): the client address (no tier: default tier);
  * /sms/send: the destination phone number (the policy's "per phone number (user)").
Statuses are what the upstream answered (the recorded outcome), never ratewarden's 429.
"""
import json
import math
import random
import sys

T0 = 1773151200.0            # 2026-03-10T14:00:00Z
DUR = 5400.0                 # 1.5 h
INCIDENT = (3000.0, 3330.0)  # orders/payments database incident: 5xx on the affected routes
INCIDENT_P = 0.45
DROP = 2700.0                # a limited sneaker drop goes on sale (scalpers, and some real buyers)
DROP_PID = 777001

# ----------------------------------------------------------------------------- addresses

class Addr:
    """Address allocation: unique per actor unless a pool is deliberately shared."""

    def __init__(self, seed):
        self.used = set()
        r = random.Random(f"{seed}:cgnat")
        # carrier-grade NAT egress addresses of three mobile carriers: shared by mobile users
        self.cgnat = [f"100.{64 + r.randrange(3) * 8 + r.randrange(8)}.{r.randrange(256)}.{r.randrange(1, 255)}"
                      for _ in range(350)]
        self.used.update(self.cgnat)

    def _take(self, fn):
        for _ in range(1000):
            a = fn()
            if a not in self.used:
                self.used.add(a)
                return a
        raise RuntimeError("address space exhausted")

    def residential(self, r, isp=None):
        isp = r.randrange(1, 250) if isp is None else isp
        return self._take(lambda: f"10.{isp}.{r.randrange(256)}.{r.randrange(1, 255)}")

    def datacenter(self, r, block=None):
        if block is None:
            return self._take(lambda: f"172.{r.randrange(16, 32)}.{r.randrange(256)}.{r.randrange(1, 255)}")
        return self._take(lambda: f"{block}.{r.randrange(1, 255)}")

    def cloud(self, r, region):
        """an address of a large cloud region (a /16)"""
        return self._take(lambda: f"{region}.{r.randrange(256)}.{r.randrange(1, 255)}")

    def cloud_region(self, r):
        return f"172.{r.randrange(16, 32)}"

    def dc_block(self, r):
        return f"172.{r.randrange(16, 32)}.{r.randrange(256)}"

    def ipv6_mobile(self, r):
        return self._take(lambda: "2001:db8:%x:%x:%x:%x:%x:%x" % (
            r.choice([0x10, 0x11, 0x20]), r.randrange(65536), r.randrange(65536),
            r.randrange(65536), r.randrange(65536), r.randrange(65536)))

    def doc(self, r):
        return self._take(lambda: f"{r.choice(['192.0.2', '198.51.100', '203.0.113'])}.{r.randrange(1, 255)}")


# ----------------------------------------------------------------------------- catalogue

def rotating(pick, uses):
    """Each request's address, a new one from `pick()` every `uses()` requests (proxy rotation)."""
    while True:
        ip = pick()
        for _ in range(uses()):
            yield ip


def prod_exists(pid):
    # about 8 % of the id space is deleted or never existed (gaps)
    return (pid * 2654435761) % 1000 >= 80


def hexid(r, n=16):
    return "%0*x" % (n, r.getrandbits(4 * n))


QUERIES = ["shoes", "running shoes", "jacket", "rain jacket", "usb c cable", "laptop stand",
           "headphones", "coffee", "mug", "backpack", "desk lamp", "socks", "sneakers", "watch",
           "phone case", "charger", "water bottle", "yoga mat", "keyboard", "mouse", "tent",
           "gift card", "kids", "sale", "winter boots", "sunglasses", "monitor", "chair"]
CATS = ["shoes", "apparel", "electronics", "home", "outdoor", "sports", "kids", "beauty", "office"]


def typeahead(q, r):
    """Prefixes a debounced search box sends while the user types q."""
    out, i = [], 0
    while i < len(q):
        i += r.randint(1, 4)
        out.append(q[:min(i, len(q))])
    return out


def qs(s):
    return s.replace(" ", "+")


# ----------------------------------------------------------------------------- generator

LAT = {"/api/search": 140, "/api/export": 900, "/login": 180, "/sms/send": 250, "/signup": 300,
       "/api/payments": 600, "/api/checkout": 350}


def base_path(ep):
    return ep.split("?", 1)[0]


def affected(p):
    return p.startswith(("/api/orders", "/api/checkout", "/api/payments", "/api/cart", "/webhooks/"))


class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.rows = []
        self.addr = Addr(seed)
        self.actors = []


class Actor:
    def __init__(self, g, kind, idx, label):
        self.g = g
        self.kind = kind
        self.name = f"{kind}-{idx:02d}"
        self.label = label
        self.r = random.Random(f"{g.seed}:{self.name}")
        self.n = 0

    def req(self, t, user, ep, ip, tier=None, status=200):
        """Record one request; returns the upstream status (the incident may turn it into a 5xx)."""
        if t < 0 or t >= DUR:
            return status
        r = self.r
        p = base_path(ep)
        if status < 400 and INCIDENT[0] <= t < INCIDENT[1] and affected(p) and r.random() < INCIDENT_P:
            status = r.choice([503, 503, 502, 504])
        elif status < 400 and r.random() < 0.0015:
            status = 500
        lat = LAT.get(p, 45)
        lat = lat * r.lognormvariate(0, 0.5)
        if status == 504:
            lat = 30000.0
        elif status >= 500:
            lat = lat * 3
        elif status in (401, 403, 404):
            lat = lat * 0.3
        self.g.rows.append((round(t, 3), user, ep, ip, tier, status, round(lat, 1), self.label, self.name))
        self.n += 1
        return status

    # helpers ---------------------------------------------------------------
    def think(self, med, sigma=0.9):
        return self.r.lognormvariate(math.log(med), sigma)

    def poisson_times(self, rate, t0=0.0, t1=DUR):
        out, t = [], t0
        if rate <= 0:
            return out
        while True:
            t += self.r.expovariate(rate)
            if t >= t1:
                return out
            out.append(t)


# ----------------------------------------------------------------------------- shared behaviours

def phone(r, cc="1"):
    return f"+{cc}{r.randrange(200, 999)}{r.randrange(1000000, 9999999)}"


def login_flow(a, t, ip, user, tier, phone_no=None, p_typo=0.08, p_2fa=0.25, p_lock=0.015):
    """A person signing in: /login keyed by address; maybe an SMS code. Returns the time after."""
    r = a.r
    if r.random() < p_lock:  # forgot the password: several failures, a reset, then in
        for _ in range(r.randint(3, 6)):
            a.req(t, ip, "/login", ip, None, 401)
            t += a.think(6, 0.6)
        a.req(t, ip, "/password/reset", ip, None, 202)
        t += a.think(90, 0.5)
        a.req(t, ip, "/password/reset/confirm", ip, None, 200)
        t += a.think(10, 0.5)
    elif r.random() < p_typo:
        for _ in range(r.choice([1, 1, 1, 2])):
            a.req(t, ip, "/login", ip, None, 401)
            t += a.think(5, 0.5)
    a.req(t, ip, "/login", ip, None, 200)
    t += r.uniform(0.3, 1.5)
    if phone_no and r.random() < p_2fa:
        a.req(t, phone_no, "/sms/send", ip, None, 200)
        t += a.think(20, 0.5)
        if r.random() < 0.12:  # code did not arrive: resend
            a.req(t, phone_no, "/sms/send", ip, None, 200)
            t += a.think(15, 0.5)
        if r.random() < 0.06:
            a.req(t, user, "/auth/2fa/verify", ip, tier, 401)
            t += a.think(8, 0.5)
        a.req(t, user, "/auth/2fa/verify", ip, tier, 200)
        t += r.uniform(0.2, 1.0)
    return t


def page(a, t, user, ip, tier, kind, state):
    """One page/screen of a web or mobile client: a few API calls within a second."""
    r = a.r
    calls = []
    if kind == "home":
        calls = [f"/api/products?page=1&sort={r.choice(['popular', 'new'])}", "/api/categories", "/api/cart"]
    elif kind == "list":
        state["lp"] = state.get("lp", 0) + 1
        calls = [f"/api/products?category={r.choice(CATS)}&page={state['lp'] % 6 + 1}"]
    elif kind == "product":
        pid = r.randrange(100000, 160000)
        while not prod_exists(pid):
            pid += 1
        state["last_pid"] = pid
        calls = [f"/api/products/{pid}", f"/api/products/{pid}/reviews?page=1", f"/api/inventory/SKU-{pid}"]
    elif kind == "search":
        q = r.choice(QUERIES)
        for pre in typeahead(q, r)[: r.randint(1, 4)]:
            a.req(t, user, f"/api/search?q={qs(pre)}", ip, tier, 200)
            t += r.uniform(0.25, 0.9)
        return t
    elif kind == "cart":
        pid = state.get("last_pid", 123457)
        st = 409 if r.random() < 0.02 else 201
        a.req(t, user, "/api/cart/items", ip, tier, st)
        t += r.uniform(0.1, 0.4)
        calls = ["/api/cart"]
    elif kind == "checkout":
        a.req(t, user, "/api/checkout", ip, tier, 200)
        t += a.think(25, 0.5)
        st = a.req(t, user, "/api/payments", ip, tier, 402 if r.random() < 0.06 else 201)
        if st == 402:  # card declined: try another card
            t += a.think(40, 0.5)
            a.req(t, user, "/api/payment-methods", ip, tier, 201)
            t += a.think(5, 0.5)
            st = a.req(t, user, "/api/payments", ip, tier, 201)
        if st >= 500:  # the incident: the user clicks "pay" again
            t += a.think(6, 0.5)
            a.req(t, user, "/api/payments", ip, tier, 201)
        t += r.uniform(0.5, 2)
        calls = ["/api/orders?page=1"]
    elif kind == "orders":
        oid = state.setdefault("oid", r.randrange(5_000_000, 9_000_000))
        calls = ["/api/orders?page=1", f"/api/orders/{oid}", f"/api/orders/{oid}/shipments"]
    elif kind == "account":
        calls = ["/api/users/me", "/api/users/me/addresses"]
        if r.random() < 0.2:
            calls.append("/api/users/me/preferences")
    elif kind == "notif":
        calls = ["/api/notifications?page=1"]
        if r.random() < 0.5:
            calls.append("/api/notifications/read")
    for ep in calls:
        st = 200
        x = r.random()
        if x < 0.006:
            st = 404
        elif x < 0.010:
            st = 400
        a.req(t, user, ep, ip, tier, st)
        t += r.uniform(0.03, 0.35)
    return t


WEB_PAGES = (["home", "list", "product", "search", "cart", "checkout", "orders", "account", "notif"],
             [10, 14, 30, 16, 8, 2, 6, 4, 5])


def browse(a, user, tier, ip, t, t_end, think_med=14.0, weights=None, poll=None, state=None,
           session_ttl=None, login_at=None):
    """A browsing session from t to t_end; optional SPA poll of unread-count; token expiry."""
    r = a.r
    state = {} if state is None else state
    pages, w = WEB_PAGES if weights is None else (WEB_PAGES[0], weights)
    t = page(a, t, user, ip, tier, "home", state)
    next_poll = t + poll if poll else None
    expired_at = (login_at + session_ttl) if (session_ttl and login_at is not None) else None
    while t < t_end:
        gap = a.think(think_med, 0.9)
        # SPA poll while the tab is open
        while next_poll is not None and next_poll < min(t + gap, t_end):
            a.req(next_poll, user, "/api/notifications/unread-count", ip, tier, 200)
            next_poll += poll + r.uniform(-0.05, 0.3)
        t += gap
        if t >= t_end:
            break
        if expired_at is not None and t > expired_at:
            a.req(t, user, "/api/users/me", ip, tier, 401)
            t += r.uniform(0.1, 0.5)
            a.req(t, user, "/auth/refresh", ip, tier, 200)
            t += r.uniform(0.1, 0.4)
            expired_at = t + session_ttl
        k = r.choices(pages, w)[0]
        if k == "checkout" and r.random() < 0.5:
            k = "cart"
        t = page(a, t, user, ip, tier, k, state)
    return t


def plan_tier(r, p_free=0.7, p_pro=0.25):
    x = r.random()
    return "free" if x < p_free else ("pro" if x < p_free + p_pro else "enterprise")


def user_id(r):
    return f"u_{r.randrange(10**7, 10**8)}"


# ============================================================================= LEGITIMATE

def web_user(a, style="normal"):
    r, g = a.r, a.g
    user, tier = user_id(r), plan_tier(r)
    ip = g.addr.residential(r)
    ph = phone(r)
    poll = 60.0 if r.random() < 0.5 else None
    n = r.choice([1, 1, 1, 2, 2, 3])
    state = {}
    for _ in range(n):
        t = r.uniform(-900, DUR - 60)
        length = min(a.think(600 if style == "normal" else 900, 0.7), 3600)
        if r.random() < 0.12:  # switched networks (home wifi -> phone hotspot / VPN)
            ip = g.addr.residential(r)
        login_at = None
        if r.random() < 0.6:
            t = login_flow(a, t, ip, user, tier, ph)
            login_at = t
        weights = None
        think = 20.0
        if style == "search":
            weights = [4, 6, 16, 60, 6, 1, 3, 2, 2]
            think = 8.0
        # some real buyers come for the limited drop too
        if style == "normal" and r.random() < 0.15:
            t = max(t, DROP - r.uniform(0, 240))
            for _ in range(r.randint(2, 8)):  # refreshing the product page before the drop
                a.req(t, user, f"/api/products/{DROP_PID}", ip, tier, 200)
                a.req(t + 0.1, user, f"/api/inventory/SKU-{DROP_PID}", ip, tier, 200)
                t += a.think(20, 0.6)
            a.req(t, user, "/api/cart/items", ip, tier, 409 if t > DROP + 40 else 201)
            t += 1
        browse(a, user, tier, ip, t, t + length, think, weights, poll, state,
               session_ttl=1800, login_at=login_at)


def mobile_user(a, reconnect=False):
    r, g = a.r, a.g
    user, tier = user_id(r), plan_tier(r, 0.8, 0.18)
    ph = phone(r)
    v6 = r.random() < 0.5
    state = {}
    n = r.choice([1, 1, 2, 2, 3, 4, 6])
    starts = sorted(r.uniform(-60, DUR - 30) for _ in range(n))
    flushes = set(r.sample(range(n), min(n, r.randint(1, 3)))) if reconnect else set()
    for i, t in enumerate(starts):
        ip = g.addr.ipv6_mobile(r) if v6 and r.random() < 0.7 else r.choice(g.addr.cgnat)
        if r.random() < 0.05:
            t = login_flow(a, t, ip, user, tier, ph, p_2fa=0.5)
        elif r.random() < 0.4:
            a.req(t, user, "/auth/refresh", ip, tier, 200)
            t += r.uniform(0.2, 0.8)
        if i in flushes:  # back online after the metro / a flight: flush the offline queue
            for _ in range(r.randint(15, 60)):
                ep = r.choice(["/api/cart/items", "/api/notifications/read", "/api/users/me/preferences",
                               "/api/orders/sync", "/api/wishlist/items", "/api/events"])
                a.req(t, user, ep, ip, tier, 409 if r.random() < 0.15 else 200)
                t += r.uniform(0.05, 0.5)
        for ep in ["/api/users/me", "/api/notifications?page=1", "/api/cart", "/api/products?page=1&feed=home"]:
            a.req(t, user, ep, ip, tier, 304 if r.random() < 0.3 else 200)
            t += r.uniform(0.02, 0.2)
        length = min(a.think(150, 0.7), 900)
        browse(a, user, tier, ip, t, t + length, 10.0, [2, 12, 32, 18, 8, 2, 8, 3, 8], None, state)
        # background refresh while the app is suspended
        bt = t + length + r.uniform(600, 1200)
        if r.random() < 0.5:
            a.req(bt, user, "/api/notifications/unread-count", ip, tier, 200)


def office_nat(a):
    """A company office behind one NAT address: a login wave and the employees' sessions."""
    r, g = a.r, a.g
    ips = [g.addr.doc(r)] + ([g.addr.doc(r)] if r.random() < 0.3 else [])
    tier = r.choice(["pro", "enterprise"])
    n = r.randint(20, 120)
    wave = r.uniform(300, 2700)
    for _ in range(n):
        user = user_id(r)
        ip = r.choice(ips)
        t = r.gauss(wave, 600) if r.random() < 0.7 else r.uniform(0, DUR)
        t = login_flow(a, t, ip, user, tier, phone(r), p_typo=0.12, p_2fa=0.1, p_lock=0.03)
        browse(a, user, tier, ip, t, t + min(a.think(900, 0.8), 4000), 30.0,
               [6, 10, 18, 10, 2, 1, 20, 8, 10], poll=60.0 if r.random() < 0.4 else None,
               session_ttl=1800, login_at=t)


RESOURCES = ["/api/orders", "/api/products", "/api/customers", "/api/webhooks", "/api/users",
             "/api/invoices", "/api/shipments", "/api/reports"]


def free_dev(a):
    """A developer building against a free key: script runs with many mistakes, fewer later."""
    r, g = a.r, a.g
    key, tier = f"sk_test_{hexid(r)}", "free"
    ip = g.addr.residential(r)
    for _ in range(r.choice([1, 1, 2, 3])):
        t = r.uniform(0, DUR - 300)
        t_end = t + a.think(1500, 0.5)
        it = 0
        res = r.choice(RESOURCES)
        while t < t_end:
            perr = max(0.05, 0.6 * math.exp(-it / 4.0))
            code = r.choice([400, 401, 404, 422, 422, 403])
            for _ in range(max(1, int(a.think(6, 0.9)))):
                oid = r.randrange(1000, 99999)
                ep = r.choice([f"{res}?page=1", f"{res}/{oid}", res])
                a.req(t, key, ep, ip, tier, code if r.random() < perr else 200)
                t += r.uniform(0.08, 0.6)
            it += 1
            t += a.think(150, 0.8)


def paced(a, t, rate_per_min):
    """Client-side pacing: next send time for a client keeping under rate_per_min."""
    return t + 60.0 / rate_per_min * a.r.uniform(0.85, 1.15)


def pro_integration(a, tier="pro", key=None, t_from=0.0, t_to=DUR, ips=None, fail=None):
    """A back-office integration (order sync / fulfilment). fail(t, ep) may force a status."""
    r, g = a.r, a.g
    key = key or f"pk_live_{hexid(r)}"
    ips = ips or [g.addr.datacenter(r) for _ in range(r.randint(1, 3))]
    target = r.uniform(100, 950) if tier == "pro" else r.uniform(800, 2800)
    pace = r.random() < 0.7
    if r.random() < 0.6:  # cron
        period = r.choice([60, 120, 300, 300, 600, 900])
        per_run = max(1, int(target * period / 3600))
        off = r.uniform(0, period)
        t_run = math.floor(t_from / period) * period + off
        while t_run < t_to:
            t = t_run + r.uniform(0.3, 2.5)  # process start-up
            pages = max(1, per_run // 40)
            items = per_run - pages
            for p in range(pages):
                st = fail(t, "/api/orders") if fail else None
                a.req(t, key, f"/api/orders?updated_since=1h&page={p + 1}&limit=50", r.choice(ips), tier, st or 200)
                t = paced(a, t, 45) if pace else t + r.uniform(0.08, 0.3)
            for _ in range(items):
                oid = r.randrange(5_000_000, 9_000_000)
                ep = r.choice([f"/api/orders/{oid}", f"/api/orders/{oid}/fulfillment", f"/api/shipments/{oid}",
                               f"/api/inventory/SKU-{r.randrange(100000, 160000)}"])
                st = fail(t, ep) if fail else None
                if st is None:
                    x = r.random()
                    st = 404 if x < 0.005 else (409 if x < 0.008 else 200)
                st2 = a.req(t, key, ep, r.choice(ips), tier, st)
                if st2 >= 500:  # one retry after a second
                    t += 1.0
                    a.req(t, key, ep, r.choice(ips), tier, 200)
                t = paced(a, t, 45) if pace else t + r.uniform(0.05, 0.4)
            t_run += period
    else:  # event driven (orders arrive, the ERP reacts)
        for t in a.poisson_times(target / 3600.0, t_from, t_to):
            oid = r.randrange(5_000_000, 9_000_000)
            for ep in r.choice([[f"/api/orders/{oid}"], [f"/api/orders/{oid}", f"/api/orders/{oid}/fulfillment"],
                                [f"/api/customers/{r.randrange(10**5, 10**6)}"]]):
                st = fail(t, ep) if fail else None
                a.req(t, key, ep, r.choice(ips), tier, st or (404 if r.random() < 0.005 else 200))
                t += r.uniform(0.05, 0.3)
    return key


def enterprise_sync(a):
    """Partner catalogue sync: paginated catalogue + inventory, paced under the endpoint limit."""
    r, g = a.r, a.g
    key, tier = f"ek_live_{hexid(r)}", "enterprise"
    block = g.addr.dc_block(r)
    ips = [g.addr.datacenter(r, block) for _ in range(r.randint(2, 8))]
    period = r.choice([600, 900, 1200, 1800])
    rate = r.uniform(30, 49)            # requests per minute on default-rule endpoints
    busy = r.uniform(0.5, 0.95)          # share of each period spent syncing
    t_run = r.uniform(0, period)
    t_run -= period
    while t_run < DUR:
        t = t_run
        end = t_run + period * busy
        page_no = 0
        while t < end:
            if page_no < 40 and r.random() < 0.08:
                page_no += 1
                ep = f"/api/products?updated_since=15m&page={page_no}&limit=200"
            else:
                pid = r.randrange(100000, 160000)
                ep = r.choice([f"/api/inventory/SKU-{pid}", f"/api/products/{pid}/prices", f"/api/products/{pid}"])
                if not prod_exists(pid) and r.random() < 0.3:
                    a.req(t, key, ep, r.choice(ips), tier, 404)
                    t = paced(a, t, rate)
                    continue
            a.req(t, key, ep, r.choice(ips), tier, 200)
            t = paced(a, t, rate)
        # hourly full export, respecting 5/min
        if r.random() < period / 3600.0:
            t2 = t_run + r.uniform(0, period)
            for p in range(r.randint(5, 30)):
                a.req(t2, key, f"/api/export?type=catalogue&page={p + 1}", r.choice(ips), tier, 200)
                t2 += r.uniform(12.5, 14)
        t_run += period
    # a few ad-hoc searches from their merchandising tool
    for t in a.poisson_times(r.uniform(1, 5) / 60.0):
        a.req(t, key, f"/api/search?q={qs(r.choice(QUERIES))}", r.choice(ips), tier, 200)


def payment_webhooks(a):
    """A payment/shipping provider posting events; no API key, so each source address is a subject."""
    r, g = a.r, a.g
    block = g.addr.dc_block(r)
    batchy = r.random() < 0.34
    ips = [g.addr.datacenter(r, block) for _ in range(r.randint(2, 4) if batchy else r.randint(8, 25))]
    path = r.choice(["/webhooks/payments", "/webhooks/shipping", "/webhooks/payments/stripe"])
    bad_secret = (r.uniform(0, DUR - 1800), r.uniform(600, 1500)) if r.random() < 0.4 else None

    def status(t):
        if bad_secret and bad_secret[0] <= t < bad_secret[0] + bad_secret[1]:
            return 401  # signing secret rotated on one side only
        return 400 if r.random() < 0.005 else 200

    def deliver(t, attempt=0):
        ip = r.choice(ips)
        st = a.req(t, ip, path, ip, None, status(t))
        if st >= 400 and attempt < 4:  # provider retries with backoff
            deliver(t + 60 * (3 ** attempt) * r.uniform(0.9, 1.1), attempt + 1)

    if batchy:  # status updates every 5 minutes in batches
        t = r.uniform(0, 300)
        while t < DUR:
            for _ in range(r.randint(10, 60)):
                deliver(t)
                t += r.uniform(0.05, 0.3)
            t += 300 - r.uniform(0, 10)
    else:
        for t in a.poisson_times(r.uniform(2, 20) / 60.0):
            deliver(t)


def monitoring_probe(a):
    """Uptime / synthetic monitoring from several locations on an exact schedule."""
    r, g = a.r, a.g
    key, tier = f"mon_{hexid(r, 12)}", "pro"
    locs = [g.addr.datacenter(r) for _ in range(r.randint(3, 12))]
    synthetic_login = r.random() < 0.35
    broken = r.random() < 0.2
    checks = ["/health", "/api/products?limit=1"] if not broken else ["/health", "/api/v1/status"]
    per = len(checks) + (2 if synthetic_login else 0)
    period = max(30, min(300, math.ceil(len(locs) * per * 3600 / 850 / 30) * 30))
    synth_user = f"u_synthetic_{hexid(r, 6)}"
    for li, ip in enumerate(locs):
        t = r.uniform(0, period)
        while t < DUR:
            tt = t + r.uniform(-0.4, 0.4)
            for c in checks:
                a.req(tt, key, c, ip, tier, 404 if c == "/api/v1/status" else 200)
                tt += r.uniform(0.05, 0.2)
            if synthetic_login:
                a.req(tt, ip, "/login", ip, None, 200)
                tt += r.uniform(0.2, 0.5)
                a.req(tt, synth_user, "/api/users/me", ip, "free", 200)
                tt += r.uniform(0.05, 0.2)
                a.req(tt, synth_user, "/logout", ip, "free", 204)
            t += period


def serverless_client(a):
    """Lambda/Cloud Functions consumers: each cold container egresses from another address."""
    r, g = a.r, a.g
    key, tier = f"pk_live_{hexid(r)}", "pro"
    block_pool = [g.addr.cloud_region(r) for _ in range(r.randint(1, 3))]
    target = r.uniform(250, 950)          # requests an hour
    lam = target / 3600.0 / 5.0            # about 5 requests per event (fan-out x calls)
    warm = []
    for t in a.poisson_times(lam):
        batch = r.choice([1, 1, 1, 2, 5, 10])  # queue batches fan out to parallel invocations
        for b in range(batch):
            if not warm or r.random() < 0.3:
                warm.append(g.addr.cloud(r, r.choice(block_pool)))
                if len(warm) > 30:
                    warm.pop(0)
            ip = r.choice(warm[-8:])
            tt = t + r.uniform(0, 0.3)
            oid = r.randrange(5_000_000, 9_000_000)
            for ep in r.choice([[f"/api/orders/{oid}"], [f"/api/orders/{oid}", f"/api/orders/{oid}/fulfillment"],
                                [f"/api/users/{r.randrange(10**6, 10**7)}"], ["/api/notifications"]]):
                st = a.req(tt, key, ep, ip, tier, 404 if r.random() < 0.01 else 200)
                tt += r.uniform(0.05, 0.2)
                if st >= 500:  # the platform retries the whole invocation
                    a.req(tt + r.uniform(1, 3), key, ep, ip, tier, 200)


def expired_creds(a):
    """Key rotated/revoked; the integration keeps calling with the old key (401s) until fixed."""
    r = a.r
    tier = r.choice(["pro", "pro", "enterprise"])
    old = f"pk_live_{hexid(r)}" if tier == "pro" else f"ek_live_{hexid(r)}"
    new = f"pk_live_{hexid(r)}" if tier == "pro" else f"ek_live_{hexid(r)}"
    t_rot = r.uniform(600, 3600)
    t_fix = t_rot + r.uniform(900, 3600)
    retries = r.random() < 0.5
    ips = [a.g.addr.datacenter(r) for _ in range(r.randint(1, 2))]

    def fail(t, ep):
        return 401 if t >= t_rot else None

    pro_integration(a, tier, old, 0, min(t_fix, DUR), ips, fail)
    if retries:  # immediate retries on 401, from a generic HTTP client wrapper
        extra = [(row[0], row[2]) for row in a.g.rows if row[-1] == a.name and row[5] == 401]
        for t, ep in extra:
            for k in range(3):
                a.req(t + (2 ** k) * r.uniform(0.8, 1.2), old, ep, ips[0], tier, 401)
    if t_fix < DUR:
        pro_integration(a, tier, new, t_fix, DUR, ips)


def broken_release(a):
    """A deploy sends a payload the API rejects for a while; retries with backoff; then a rollback."""
    r = a.r
    t_rel = r.uniform(300, DUR - 900)
    t_back = t_rel + r.uniform(600, 2400)
    code = r.choice([400, 422, 422])
    attempts = r.randint(3, 6)
    backoff = r.random() < 0.6
    ips = [a.g.addr.datacenter(r)]
    key = f"pk_live_{hexid(r)}"
    fail_log = []

    def fail(t, ep):
        if t_rel <= t < t_back and "fulfillment" in ep:
            fail_log.append((t, ep))
            return code
        return None

    pro_integration(a, "pro", key, 0, DUR, ips, fail)
    for t, ep in fail_log:
        d = 0.0
        for k in range(attempts - 1):
            d += (2 ** k) if backoff else 0.2
            a.req(t + d, key, ep, ips[0], "pro", code)


def deleted_poller(a):
    """Polls the status of a job/order that was deleted: 404 on a fixed interval."""
    r, g = a.r, a.g
    tier = r.choice(["free", "pro", "pro"])
    key = f"{'sk' if tier == 'free' else 'pk'}_live_{hexid(r)}"
    ip = g.addr.datacenter(r) if r.random() < 0.7 else g.addr.residential(r)
    period = r.choice([5, 10, 15, 30, 60]) if tier == "pro" else r.choice([30, 60, 120])
    t_del = r.choice([0.0, r.uniform(0, DUR / 2)])
    job = r.choice([f"/api/jobs/{hexid(r, 12)}", f"/api/orders/{r.randrange(5_000_000, 9_000_000)}/status",
                    f"/api/reports/runs/{r.randrange(10**5, 10**6)}"])
    t = r.uniform(0, period)
    while t < DUR:
        a.req(t, key, job, ip, tier, 404 if t >= t_del else 200)
        t += period + r.uniform(0.0, 0.08)  # setInterval drift
    if r.random() < 0.5:  # plus its ordinary light traffic
        for t in a.poisson_times(r.uniform(10, 60) / 3600.0):
            a.req(t, key, r.choice(["/api/orders?page=1", "/api/users/me", "/api/invoices?page=1"]), ip, tier, 200)


def retry_storm(a):
    """Naive retries on 5xx: during the incident each failure is retried immediately, many times."""
    r = a.r
    key, tier = f"pk_live_{hexid(r)}", "pro"
    ips = [a.g.addr.datacenter(r) for _ in range(r.randint(1, 4))]
    lam = r.uniform(0.03, 0.2)
    max_tries = r.randint(5, 25)
    gap = r.uniform(0.05, 0.5)
    for t in a.poisson_times(lam):
        oid = r.randrange(5_000_000, 9_000_000)
        ep = r.choice([f"/api/orders/{oid}", "/api/checkout", f"/api/orders/{oid}/fulfillment", "/api/payments"])
        for k in range(max_tries):
            st = a.req(t, key, ep, r.choice(ips), tier, 404 if r.random() < 0.003 else 200)
            if st < 500:
                break
            t += gap * r.uniform(0.7, 1.3)


def report_export(a):
    """Someone exports a large report page by page; some pace, some loop as fast as they can."""
    r, g = a.r, a.g
    tier = r.choice(["pro", "enterprise"])
    user = user_id(r) if r.random() < 0.5 else f"pk_live_{hexid(r)}"
    ip = g.addr.residential(r) if user.startswith("u_") else g.addr.datacenter(r)
    fast = r.random() < 0.4
    for _ in range(r.randint(1, 3)):
        t = r.uniform(0, DUR - 600)
        rep = r.choice(["orders", "customers", "sales-by-day", "inventory", "refunds"])
        a.req(t, user, f"/api/reports/{rep}", ip, tier, 200)
        t += a.think(10, 0.5)
        n = r.randint(10, 200)
        for p in range(n):
            a.req(t, user, f"/api/export?report={rep}&page={p + 1}&size=500", ip, tier, 204 if p == n - 1 else 200)
            t += r.uniform(0.6, 2.0) if fast else r.uniform(12.2, 15)
        a.req(t, user, f"/api/reports/{rep}/download", ip, tier, 200)


def shared_team_key(a):
    """One pro key shared by a small team: laptops at home and office, CI, a staging server."""
    r, g = a.r, a.g
    key, tier = f"pk_live_{hexid(r)}", "pro"
    members = []
    for _ in range(r.randint(3, 12)):
        members.append(g.addr.residential(r) if r.random() < 0.6 else g.addr.datacenter(r))
    target = r.uniform(200, 900)          # the team's requests an hour
    for ip in members:
        lam = target / len(members) / 3.8 / 3600.0 * r.uniform(0.4, 1.6)
        for t in a.poisson_times(lam):
            res = r.choice(RESOURCES)
            for _ in range(r.choice([1, 1, 2, 5, 10])):
                a.req(t, key, r.choice([f"{res}?page=1", f"{res}/{r.randrange(1000, 99999)}"]), ip, tier,
                      r.choice([200] * 12 + [404, 400, 422]))
                t += r.uniform(0.1, 1.0)


def search_heavy_user(a):
    web_user(a, style="search")


def ci_test_suite(a):
    """Integration tests on each merge: fast, many deliberate 4xx, login tests with wrong passwords."""
    r, g = a.r, a.g
    key, tier = f"sk_test_{hexid(r)}", "pro"
    block = g.addr.dc_block(r)
    t = r.uniform(0, 900)
    while t < DUR:
        ip = g.addr.datacenter(r, block)
        n = r.randint(80, 300)
        neg = r.uniform(0.2, 0.4)
        tt = t
        for i in range(n):
            res = RESOURCES[i % len(RESOURCES)]
            if r.random() < neg:
                a.req(tt, key, r.choice([f"{res}/0", f"{res}/does-not-exist", res]), ip, tier,
                      r.choice([400, 401, 403, 404, 404, 409, 422]))
            else:
                a.req(tt, key, r.choice([res, f"{res}/{r.randrange(1, 500)}", f"{res}?page=2"]), ip, tier, 200)
            tt += r.uniform(0.05, 0.8)
        for _ in range(r.randint(4, 12)):  # auth tests: half use a wrong password on purpose
            a.req(tt, ip, "/login", ip, None, r.choice([200, 401]))
            tt += r.uniform(0.1, 0.5)
        t += a.think(1500, 0.5)


def public_crawler(a):
    """A search engine fetching public product data from a pool of crawler addresses, no key."""
    r, g = a.r, a.g
    block = g.addr.dc_block(r)
    pool = [g.addr.datacenter(r, block) for _ in range(r.randint(20, 80))]
    for t in a.poisson_times(r.uniform(0.15, 0.8)):
        ip = r.choice(pool)
        pid = r.randrange(100000, 160000)
        if r.random() < 0.85:
            while not prod_exists(pid) and r.random() < 0.95:  # from the sitemap: mostly existing
                pid += 1
            a.req(t, ip, f"/api/products/{pid}", ip, None, 200 if prod_exists(pid) else 404)
        else:
            a.req(t, ip, f"/api/products?category={r.choice(CATS)}&page={r.randint(1, 30)}", ip, None, 200)


def storefront_backend(a):
    """A merchant's storefront server calling the API on behalf of its shoppers."""
    r, g = a.r, a.g
    key, tier = f"ek_live_{hexid(r)}", "enterprise"
    ips = [g.addr.datacenter(r) for _ in range(r.randint(2, 4))]
    base = r.uniform(15, 42) / 60.0
    t = 0.0
    while t < DUR:
        lam = base * (1 + 0.4 * math.sin(t / 900.0 + r.random()))
        t += r.expovariate(lam)
        x = r.random()
        if x < 0.12:
            ep, st = f"/api/search?q={qs(r.choice(QUERIES))}", 200
        elif x < 0.6:
            pid = r.randrange(100000, 160000)
            ep, st = f"/api/products/{pid}", 200 if prod_exists(pid) or r.random() < 0.9 else 404
        elif x < 0.8:
            ep, st = r.choice(["/api/cart", "/api/cart/items"]), 200 if r.random() > 0.01 else 409
        elif x < 0.85:
            ep, st = "/api/checkout", 200
        elif x < 0.88:
            ep, st = "/api/payments", 402 if r.random() < 0.06 else 201
        else:
            ep, st = f"/api/orders/{r.randrange(5_000_000, 9_000_000)}", 200 if r.random() > 0.02 else 404
        a.req(t, key, ep, r.choice(ips), tier, st)


def mobile_reconnect(a):
    mobile_user(a, reconnect=True)


def nightly_batch(a):
    """A bulk price/inventory update run: hundreds of PUTs in a few minutes."""
    r, g = a.r, a.g
    key, tier = f"pk_live_{hexid(r)}", "pro"
    ip = g.addr.datacenter(r)
    paced_run = r.random() < 0.5
    t = r.uniform(0, DUR - 900)
    n = r.randint(300, 900)
    for _ in range(n):
        pid = r.randrange(100000, 160000)
        st = 200 if prod_exists(pid) else 404
        if st == 200 and r.random() < 0.01:
            st = 422
        a.req(t, key, r.choice([f"/api/products/{pid}/price", f"/api/inventory/SKU-{pid}"]), ip, tier, st)
        t = paced(a, t, 45) if paced_run else t + r.uniform(0.1, 0.5)
    for t in a.poisson_times(r.uniform(10, 40) / 3600.0):
        a.req(t, key, r.choice(["/api/products?page=1", "/api/reports/price-changes"]), ip, tier, 200)


def buggy_spa_poller(a):
    """A logged-in tab with a polling bug: GET /api/cart every 1-3 s while it is open."""
    r, g = a.r, a.g
    user, tier = user_id(r), plan_tier(r, 0.6, 0.4)
    ip = g.addr.residential(r)
    t0 = r.uniform(0, DUR - 1800)
    t1 = t0 + r.uniform(1200, 5400)
    period = r.uniform(1.0, 3.0)
    state = {}
    browse(a, user, tier, ip, t0, t0 + a.think(600, 0.5), 14.0, None, None, state)
    t = t0
    while t < t1:
        a.req(t, user, "/api/cart", ip, tier, 200)
        t += period + r.uniform(0, 0.02)


def bulk_order_import(a):
    """A CSV import of orders; rerun after a crash makes the first rows 409 duplicates."""
    r, g = a.r, a.g
    key, tier = f"pk_live_{hexid(r)}", "pro"
    ip = g.addr.datacenter(r)
    n = r.randint(150, 600)
    crash = r.randint(20, n - 1) if r.random() < 0.6 else None
    rate = r.uniform(0.5, 3.0)
    t = r.uniform(0, DUR - 1500)
    rows = range(crash if crash else n)
    for i in rows:
        a.req(t, key, "/api/orders", ip, tier, 422 if r.random() < 0.05 else 201)
        t += r.expovariate(rate)
    if crash:
        t += r.uniform(300, 1200)
        for i in range(n):
            a.req(t, key, "/api/orders", ip, tier, 409 if i < crash else (422 if r.random() < 0.05 else 201))
            t += r.expovariate(rate)


# ============================================================================= ABUSE

def ato_followup(a, t, ip, r):
    """What a stuffer does with a working login: look around, take what is quick."""
    victim = user_id(r)
    for ep in r.sample(["/api/users/me", "/api/payment-methods", "/api/giftcards/balance", "/api/orders?page=1",
                        "/api/users/me/addresses", "/api/loyalty/points"], r.randint(2, 5)):
        a.req(t, victim, ep, ip, "free", 200)
        t += r.uniform(0.2, 1.5)


def cred_stuff_fast(a):
    r, g = a.r, a.g
    block = g.addr.dc_block(r)
    ips = [g.addr.datacenter(r, block) for _ in range(r.randint(1, 3))]
    t0 = r.uniform(0, DUR - 1200)
    t1 = t0 + r.uniform(600, 3000)
    hit = r.uniform(0.005, 0.02)
    for ip in ips:
        rate = r.uniform(0.4, 3.0)
        t = t0 + r.uniform(0, 30)
        while t < t1:
            if r.random() < hit:
                a.req(t, ip, "/login", ip, None, 200)
                ato_followup(a, t + 0.5, ip, r)
            else:
                a.req(t, ip, r.choice(["/login", "/login", "/login?redirect=%2Faccount"]), ip, None,
                      423 if r.random() < 0.01 else 401)
            t += r.expovariate(rate)


def cred_stuff_distributed(a):
    r, g = a.r, a.g
    n = r.randint(300, 3000)
    pool = [g.addr.residential(r) for _ in range(n)]
    sticky = r.random() < 0.5
    t = r.uniform(0, DUR / 2)
    t1 = t + r.uniform(1800, 5400)
    rate = r.uniform(0.3, 2.0)
    ips = rotating(lambda: r.choice(pool), lambda: r.randint(1, 10) if sticky else 1)
    while t < t1 and t < DUR:
        ip = next(ips)
        if r.random() < 0.01:
            a.req(t, ip, "/login", ip, None, 200)
            ato_followup(a, t + 0.7, ip, r)
        else:
            a.req(t, ip, "/login", ip, None, 401)
        t += r.expovariate(rate)


def cred_stuff_slow(a):
    r, g = a.r, a.g
    ips = [g.addr.residential(r) if r.random() < 0.5 else g.addr.datacenter(r) for _ in range(r.randint(3, 15))]
    fixed = r.random() < 0.5
    for ip in ips:
        period = r.uniform(20, 120)
        t = r.uniform(0, period)
        while t < DUR:
            if r.random() < 0.01:
                a.req(t, ip, "/login", ip, None, 200)
                ato_followup(a, t + 1, ip, r)
            else:
                a.req(t, ip, "/login", ip, None, 401)
            t += period * (r.uniform(0.98, 1.02) if fixed else r.uniform(0.5, 1.5))


def password_spray(a):
    r, g = a.r, a.g
    ips = [g.addr.residential(r) for _ in range(r.randint(20, 100))]
    for ip in ips:
        t = r.uniform(0, 600)
        while t < DUR:
            a.req(t, ip, "/login", ip, None, 200 if r.random() < 0.003 else 401)
            t += r.uniform(180, 600)


def account_takeover(a):
    """Phished/bought valid credentials: log in as each victim and drain or hijack the account."""
    r, g = a.r, a.g
    ips = [g.addr.residential(r) for _ in range(r.randint(1, 5))]
    t = r.uniform(0, DUR / 2)
    for _ in range(r.randint(5, 30)):
        ip = r.choice(ips)
        victim = user_id(r)
        tier = plan_tier(r)
        if r.random() < 0.15:
            a.req(t, ip, "/login", ip, None, 401)
            t += a.think(60, 1)
            continue
        a.req(t, ip, "/login", ip, None, 200)
        t += r.uniform(0.3, 1.5)
        if r.random() < 0.3:  # 2FA on: the code goes to the victim's phone; guess a few
            for _ in range(r.randint(1, 4)):
                a.req(t, victim, "/auth/2fa/verify", ip, tier, 401)
                t += r.uniform(1, 4)
            t += a.think(60, 1)
            continue
        steps = ["/api/users/me", "/api/users/me/addresses", "/api/payment-methods", "/api/giftcards/balance",
                 "/api/loyalty/points", "/api/orders?page=1"]
        steps += r.sample(["/api/users/me/email", "/api/users/me/password", "/api/users/me/phone",
                           "/api/loyalty/transfer", "/api/orders", "/api/giftcards/redeem", "/api/export?type=orders"],
                          r.randint(2, 5))
        for ep in steps:
            st = 402 if ep == "/api/orders" and r.random() < 0.3 else 200
            a.req(t, victim, ep, ip, tier, st)
            t += r.uniform(0.3, 2.0)
        t += a.think(120, 1)


def scraper_fast(a):
    r, g = a.r, a.g
    keys = [(f"sk_live_{hexid(r)}", r.choice(["free", "pro"])) for _ in range(r.randint(1, 2))]
    ips = [g.addr.datacenter(r) for _ in range(r.randint(1, 3))]
    t = r.uniform(0, DUR - 1200)
    t1 = t + r.uniform(600, 2400)
    rate = r.uniform(2, 8)
    pid = r.randrange(100000, 150000)
    while t < t1:
        key, tier = r.choice(keys)
        ip = r.choice(ips)
        st = 200 if prod_exists(pid) else 404
        a.req(t, key, f"/api/products/{pid}", ip, tier, st)
        if st == 200 and r.random() < 0.3:
            t += r.expovariate(rate)
            a.req(t, key, f"/api/inventory/SKU-{pid}", ip, tier, 200)
        if st == 200 and r.random() < 0.2:
            t += r.expovariate(rate)
            a.req(t, key, f"/api/products/{pid}/reviews?page=1", ip, tier, 200)
        pid += 1
        t += r.expovariate(rate)


def scraper_polite(a):
    """A competitor's price monitor on a paid key, staying under the hourly quota."""
    r, g = a.r, a.g
    key, tier = f"pk_live_{hexid(r)}", "pro"
    ips = [g.addr.datacenter(r) for _ in range(r.randint(1, 2))]
    per_hour = r.uniform(600, 980)
    step = 3600.0 / per_hour
    pid = r.randrange(100000, 150000)
    t = r.uniform(0, step)
    while t < DUR:
        if r.random() < 0.05:
            a.req(t, key, f"/api/products?category={r.choice(CATS)}&page={r.randint(1, 50)}", r.choice(ips), tier, 200)
        else:
            a.req(t, key, r.choice([f"/api/products/{pid}", f"/api/products/{pid}/prices"]), r.choice(ips), tier,
                  200 if prod_exists(pid) else 404)
            pid += r.choice([1, 1, 1, 2])
        t += step * r.uniform(0.7, 1.3)


def scraper_distributed(a):
    """Many free accounts, each behind rotating residential proxies, each just under 100/h."""
    r, g = a.r, a.g
    nkeys = r.randint(10, 40)
    pid0 = r.randrange(100000, 140000)
    for k in range(nkeys):
        key = f"sk_live_{hexid(r)}"
        per_hour = r.uniform(50, 95)
        t = r.uniform(0, 600)
        pid = pid0 + k * 2000
        ips = rotating(lambda: g.addr.residential(r), lambda: r.randint(1, 20))
        end = r.uniform(DUR * 0.6, DUR)
        while t < end:
            ip = next(ips)
            a.req(t, key, f"/api/products/{pid}", ip, "free", 200 if prod_exists(pid) else 404)
            pid += 1
            t += r.expovariate(per_hour / 3600.0)


def id_enumeration(a):
    """IDOR probing: walk order/user ids with a real account's key."""
    r, g = a.r, a.g
    keys = [(f"sk_live_{hexid(r)}", r.choice(["free", "pro"])) for _ in range(r.randint(1, 3))]
    ip = g.addr.residential(r) if r.random() < 0.5 else g.addr.datacenter(r)
    res = r.choice(["/api/orders/{}", "/api/users/{}", "/api/invoices/{}", "/api/orders/{}/shipments"])
    slow = r.random() < 0.4
    rate = r.uniform(0.01, 0.03) if slow else r.uniform(0.3, 3)
    t = r.uniform(0, DUR / 2)
    t1 = DUR if slow else t + r.uniform(300, 2400)
    i = r.randrange(5_000_000, 9_000_000)
    idor = r.uniform(0, 0.08)
    while t < t1:
        key, tier = r.choice(keys)
        x = r.random()
        st = 200 if x < idor else (404 if x < idor + 0.25 else 403)
        a.req(t, key, res.format(i), ip, tier, st)
        i += r.choice([1, 1, 1, 7, 13])
        t += r.expovariate(rate)


def token_enumeration(a):
    """Gift card / coupon code guessing."""
    r, g = a.r, a.g
    if r.random() < 0.5:  # with many throwaway free keys
        keys = [f"sk_live_{hexid(r)}" for _ in range(r.randint(15, 50))]
        for key in keys:
            t = r.uniform(0, DUR - 600)
            end = t + r.uniform(900, 3600)
            ip = g.addr.residential(r)
            while t < end:
                a.req(t, key, f"/api/giftcards/{hexid(r, 4).upper()}-{hexid(r, 4).upper()}/balance", ip, "free",
                      200 if r.random() < 0.002 else 404)
                t += r.expovariate(r.uniform(60, 95) / 3600.0)
    else:  # anonymous coupon validation through rotating proxies
        t = r.uniform(0, 1800)
        rate = r.uniform(0.2, 1.5)
        ips = rotating(lambda: g.addr.residential(r), lambda: r.randint(3, 30))
        while t < DUR:
            ip = next(ips)
            code = "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(8))
            a.req(t, ip, f"/api/coupons/{code}", ip, None, 200 if r.random() < 0.003 else 404)
            t += r.expovariate(rate)


def sms_pumping(a):
    """International revenue share fraud: OTP SMS to premium number ranges the fraudster earns on."""
    r, g = a.r, a.g
    cc = r.choice(["8823", "88216", "4470", "37069", "2917", "67574"])
    base = r.randrange(1000000, 9000000)
    nnum = r.randint(50, 500)
    per_num = r.choice([(1, 2), (3, 10), (15, 40)])
    ips = [g.addr.residential(r) if r.random() < 0.7 else g.addr.datacenter(r) for _ in range(r.randint(5, 200))]
    with_signup = r.random() < 0.5
    t = r.uniform(0, DUR / 2)
    rate = r.uniform(0.1, 2.0)
    for i in range(nnum):
        num = f"+{cc}{base + i * r.choice([1, 1, 2])}"
        ip = r.choice(ips)
        if with_signup:
            a.req(t, ip, "/signup", ip, None, 201 if r.random() < 0.8 else 422)
            t += r.uniform(0.3, 2)
        for _ in range(r.randint(*per_num)):
            a.req(t, num, "/sms/send", ip, None, 200)
            t += r.expovariate(rate)
            if t >= DUR:
                return


def scalper(a):
    """Inventory hoarding at a limited drop: many accounts poll stock, then grab and hold carts."""
    r, g = a.r, a.g
    accts = [(user_id(r), r.choice(["free", "free", "pro"]), g.addr.residential(r)) for _ in range(r.randint(5, 30))]
    poll = r.uniform(1.5, 6)
    start = DROP - r.uniform(600, 1500)
    for user, tier, ip in accts:
        t = start + r.uniform(0, 60)
        while t < DROP:
            a.req(t, user, r.choice([f"/api/inventory/SKU-{DROP_PID}", f"/api/products/{DROP_PID}"]), ip, tier, 200)
            t += poll * r.uniform(0.8, 1.2)
        t = DROP + r.uniform(0, 2)
        for k in range(r.randint(3, 10)):
            a.req(t, user, "/api/cart/items", ip, tier, 201 if k < 2 and r.random() < 0.5 else 409)
            t += r.uniform(0.05, 0.4)
        a.req(t, user, "/api/checkout", ip, tier, 200)
        t += r.uniform(0.5, 2)
        # hold the reservation without paying: refresh the cart before it expires
        end = DROP + r.uniform(1200, 2700)
        while t < end:
            a.req(t, user, "/api/cart", ip, tier, 200)
            a.req(t + r.uniform(0.1, 0.5), user, "/api/cart/items", ip, tier, 200)
            t += r.uniform(300, 540)


def carding(a):
    """Card testing: small authorisations with stolen card numbers; most decline."""
    r, g = a.r, a.g
    if r.random() < 0.6:
        for _ in range(r.randint(1, 5)):
            user, ip = user_id(r), g.addr.residential(r)
            t = r.uniform(0, DUR - 900)
            gap = r.uniform(3, 30)
            for _ in range(r.randint(10, 80)):
                a.req(t, user, "/api/payment-methods", ip, "free", 201)
                t += r.uniform(0.5, 2)
                a.req(t, user, "/api/payments", ip, "free", 201 if r.random() < 0.1 else 402)
                t += gap * r.uniform(0.6, 1.4)
    else:  # guest checkout, a new proxy address every few cards
        t = r.uniform(0, 1800)
        gap = r.uniform(2, 20)
        ips = rotating(lambda: g.addr.residential(r), lambda: r.randint(1, 5))
        while t < DUR:
            ip = next(ips)
            a.req(t, ip, "/api/checkout/guest", ip, None, 402 if r.random() < 0.9 else 201)
            t += gap * r.uniform(0.5, 1.5)


def downstream_customer(a, key, tier, ip, rate):
    r = a.r
    for t in a.poisson_times(rate):
        for _ in range(r.choice([1, 1, 2, 4, 8])):
            x = r.random()
            if x < 0.15:
                ep = f"/api/search?q={qs(r.choice(QUERIES))}"
            elif x < 0.75:
                ep = f"/api/products/{r.randrange(100000, 160000)}"
            else:
                ep = r.choice(["/api/products?page=1", f"/api/orders/{r.randrange(5_000_000, 9_000_000)}",
                               "/api/categories"])
            a.req(t, key, ep, ip, tier, 200 if r.random() > 0.03 else 404)
            t += r.uniform(0.05, 0.6)


def resold_key(a):
    """An account whose key is resold: dozens to hundreds of unrelated clients on one key."""
    r, g = a.r, a.g
    tier = r.choice(["pro", "pro", "enterprise"])
    key = f"{'pk' if tier == 'pro' else 'ek'}_live_{hexid(r)}"
    n = r.randint(30, 300)
    total = r.uniform(600, 2500) / 3600.0
    for _ in range(n):
        ip = g.addr.residential(r) if r.random() < 0.5 else g.addr.datacenter(r)
        downstream_customer(a, key, tier, ip, total / n / 2.5)


def key_sharing(a):
    """A free key leaked in a browser extension / public repo: many users, far over the quota."""
    r, g = a.r, a.g
    key = f"sk_live_{hexid(r)}"
    t_leak = r.uniform(0, 2400)
    n = r.randint(50, 500)
    for _ in range(n):
        ip = g.addr.residential(r)
        for _ in range(r.randint(1, 5)):
            t = r.uniform(t_leak, DUR) + r.uniform(0, 600)
            for _ in range(r.randint(2, 15)):
                a.req(t, key, r.choice([f"/api/products/{r.randrange(100000, 160000)}",
                                        f"/api/search?q={qs(r.choice(QUERIES))}",
                                        f"/api/products/{r.randrange(100000, 160000)}/prices"]), ip, "free", 200)
                t += a.think(4, 0.8)


def low_slow_otp(a):
    """One-time-code guessing on half-authenticated victim sessions, slow enough to dodge lockout."""
    r, g = a.r, a.g
    ips = [g.addr.residential(r) for _ in range(r.randint(1, 3))]
    t = r.uniform(0, 900)
    for _ in range(r.randint(2, 5)):
        victim = user_id(r)
        tier = plan_tier(r)
        ph = phone(r)
        gap = r.uniform(45, 120)
        for k in range(r.randint(20, 60)):
            ip = r.choice(ips)
            if k % 10 == 0:
                a.req(t, ph, "/sms/send", ip, None, 200)  # ask for a fresh code: the victim gets texts
                t += r.uniform(2, 10)
            a.req(t, victim, "/auth/2fa/verify", ip, tier, 401)
            t += gap * r.uniform(0.8, 1.2)
            if t >= DUR:
                return


def fake_accounts(a):
    """Sign-up bot: accounts for promo/referral abuse, verified with virtual numbers."""
    r, g = a.r, a.g
    ips = [g.addr.residential(r) for _ in range(r.randint(5, 50))]
    nbase = r.randrange(2000000, 9000000)
    t = r.uniform(0, 1200)
    gap = r.uniform(20, 120)
    i = 0
    while t < DUR:
        ip = r.choice(ips)
        st = a.req(t, ip, "/signup", ip, None, 201 if r.random() < 0.85 else r.choice([409, 422]))
        tt = t + r.uniform(0.5, 3)
        if st == 201:
            user = user_id(r)
            a.req(tt, f"+1555{nbase + i}", "/sms/send", ip, None, 200)
            tt += r.uniform(5, 20)
            a.req(tt, user, "/auth/2fa/verify", ip, "free", 200)
            tt += r.uniform(0.5, 3)
            for ep in ["/api/users/me", "/api/users/me/profile", "/api/users/me/addresses",
                       r.choice(["/api/referrals/claim", "/api/coupons/WELCOME10/redeem"])]:
                a.req(tt, user, ep, ip, "free", 200 if r.random() < 0.9 else 409)
                tt += r.uniform(0.5, 3)
            for _ in range(r.randint(0, 4)):
                a.req(tt, user, f"/api/products/{r.randrange(100000, 160000)}", ip, "free", 200)
                tt += r.uniform(1, 6)
        i += 1
        t += gap * r.uniform(0.5, 1.5)


SCAN_PATHS = ["/.env", "/admin", "/wp-login.php", "/api/v1/users", "/api/users/1", "/api/debug", "/actuator/env",
              "/swagger.json", "/graphql", "/api/orders?id=1%27%20OR%201=1--", "/.git/config", "/server-status",
              "/api/internal/metrics", "/api/admin/users", "/api/users?role=admin", "/phpinfo.php", "/api/v2/keys",
              "/api/products/1%20UNION%20SELECT%20null", "/console", "/api/export?file=../../etc/passwd",
              "/backup.zip", "/api/config", "/api/users/me/../admin", "/.aws/credentials", "/api/health/full"]


def vuln_scanner(a):
    r, g = a.r, a.g
    ip = g.addr.datacenter(r)
    if r.random() < 0.5:
        subj, tier = ip, None
    else:
        subj, tier = f"sk_live_{hexid(r)}", "free"
    t = r.uniform(0, DUR - 1200)
    t1 = t + r.uniform(180, 900)
    rate = r.uniform(3, 15)
    while t < t1:
        p = r.choice(SCAN_PATHS)
        if r.random() < 0.4:
            p = f"/api/{r.choice(['v1', 'v2', 'internal', 'admin', 'private'])}/{r.choice(RESOURCES)[5:]}"
        st = r.choices([404, 401, 403, 400, 405], [70, 8, 7, 10, 5])[0]
        a.req(t, subj, p, ip, tier, st)
        t += r.expovariate(rate)


def search_flood(a):
    """Layer-7 flood on the expensive search endpoint from a small botnet, no key."""
    r, g = a.r, a.g
    bots = [g.addr.residential(r) for _ in range(r.randint(30, 200))]
    t0 = r.uniform(0, DUR - 1500)
    dur = r.uniform(300, 1200)
    for ip in bots:
        t = t0 + r.uniform(0, 20)
        per = r.uniform(1, 5)
        while t < t0 + dur:
            q = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(3, 12)))
            a.req(t, ip, f"/api/search?q={q}&sort=relevance&page={r.randint(1, 50)}", ip, None,
                  504 if r.random() < 0.05 else 200)
            t += per * r.uniform(0.7, 1.3)


def data_exfil(a):
    """A stolen admin token: mass download of customers and orders from a VPN exit."""
    r, g = a.r, a.g
    user = f"u_admin_{hexid(r, 6)}"
    ips = [g.addr.datacenter(r) for _ in range(r.randint(1, 2))]
    t = r.uniform(0, DUR - 1800)
    t1 = t + r.uniform(600, 1800)
    rate = r.uniform(0.5, 3)
    pages = {"/api/customers": 0, "/api/orders": 0, "/api/export": 0}
    while t < t1:
        res = r.choices(list(pages), [5, 4, 1])[0]
        pages[res] += 1
        if res == "/api/export":
            ep = f"/api/export?type=customers&page={pages[res]}"
        else:
            ep = f"{res}?page={pages[res]}&limit=100"
        a.req(t, user, ep, r.choice(ips), "enterprise", 200 if r.random() > 0.02 else 403)
        t += r.expovariate(rate)


# ============================================================================= roster

LEGIT = [
    ("web_user", 45, web_user, "browser shopper sessions, logins with typos/2FA/SMS, SPA unread-count polling"),
    ("mobile_user", 40, mobile_user, "mobile app sessions behind carrier NAT / rotating IPv6, token refresh"),
    ("office_nat", 5, office_nat, "office behind one NAT address: a login wave of 20-120 employees, typos, lockouts"),
    ("free_dev", 22, free_dev, "developer iterating on a free key: script bursts with many 4xx early on"),
    ("pro_integration", 25, pro_integration, "back-office order sync on a pro key: cron batches or event driven, up to ~950/h"),
    ("enterprise_sync", 8, enterprise_sync, "partner catalogue/inventory sync from an egress pool, paced just under 50/min"),
    ("payment_webhooks", 3, payment_webhooks, "payment/shipping provider webhooks from many addresses, retries, secret rotation 401s"),
    ("monitoring_probe", 6, monitoring_probe, "uptime/synthetic checks from 3-12 locations on an exact schedule (some 404, some synthetic logins)"),
    ("serverless_client", 8, serverless_client, "Lambda consumers: batches fan out, each container from another address"),
    ("expired_creds", 6, expired_creds, "key rotated: old key keeps calling (401s, maybe retried) for 15-60 min, then a new key"),
    ("broken_release", 6, broken_release, "bad deploy: one call 400/422 for 10-40 min, each failure retried"),
    ("deleted_poller", 6, deleted_poller, "polls a deleted job/order every 5-120 s: 404 on a fixed interval"),
    ("retry_storm", 6, retry_storm, "naive client retrying each 5xx 5-25 times during the incident"),
    ("report_export", 8, report_export, "paginated exports of 10-200 pages, paced or looping fast"),
    ("shared_team_key", 5, shared_team_key, "one pro key used by a small team from 3-12 addresses"),
    ("search_heavy_user", 10, search_heavy_user, "shopper living in the search box: typeahead bursts"),
    ("ci_test_suite", 4, ci_test_suite, "integration tests per merge: fast, 20-40% deliberate 4xx, wrong-password login tests"),
    ("public_crawler", 3, public_crawler, "search engine crawler reading public product data from a 20-80 address pool"),
    ("storefront_backend", 4, storefront_backend, "merchant storefront server calling for its shoppers, 15-42/min, diurnal wobble"),
    ("mobile_reconnect", 6, mobile_reconnect, "mobile user flushing an offline queue (15-60 calls in seconds, 409s)"),
    ("nightly_batch", 5, nightly_batch, "bulk price/inventory update of 300-900 PUTs, paced or not"),
    ("buggy_spa_poller", 4, buggy_spa_poller, "logged-in tab with a bug polling /api/cart every 1-3 s for 20-90 min"),
    ("bulk_order_import", 5, bulk_order_import, "CSV order import; rerun after a crash gives 409 duplicates"),
]

ABUSE = [
    ("cred_stuff_fast", 3, cred_stuff_fast, "credential stuffing from 1-3 hosting addresses at 0.4-3/s, 98% 401"),
    ("cred_stuff_distributed", 3, cred_stuff_distributed, "credential stuffing over 300-3000 residential proxies, few tries each"),
    ("cred_stuff_slow", 3, cred_stuff_slow, "3-15 addresses, one login try every 20-120 s for the whole span"),
    ("password_spray", 3, password_spray, "20-100 addresses, one common-password try every 3-10 min each"),
    ("account_takeover", 4, account_takeover, "valid stolen credentials: log in as 5-30 victims, change email, drain balance"),
    ("scraper_fast", 3, scraper_fast, "catalogue scraper on 1-2 keys at 2-8/s, sequential ids"),
    ("scraper_polite", 3, scraper_polite, "price monitor on a pro key at 600-980/h, sequential ids, under the quota"),
    ("scraper_distributed", 4, scraper_distributed, "10-40 free keys behind rotating residential proxies, each under 100/h"),
    ("id_enumeration", 3, id_enumeration, "IDOR probing of order/user/invoice ids with own keys: mostly 403/404"),
    ("token_enumeration", 2, token_enumeration, "gift card / coupon code guessing via throwaway keys or rotating proxies"),
    ("sms_pumping", 4, sms_pumping, "OTP SMS to premium number ranges (subject = number), from proxy pools"),
    ("scalper", 4, scalper, "5-30 accounts poll stock before a drop, grab and hold carts"),
    ("carding", 3, carding, "card testing on payments: 10-80 tries per account or guest checkout via proxies"),
    ("resold_key", 3, resold_key, "one key resold to 30-300 unrelated downstream clients"),
    ("key_sharing", 3, key_sharing, "free key leaked in an extension/repo: 50-500 addresses, far over quota"),
    ("low_slow_otp", 3, low_slow_otp, "2FA code guessing on victim sessions every 45-120 s, SMS resends"),
    ("fake_accounts", 3, fake_accounts, "sign-up bot with virtual numbers claiming referral/welcome promos"),
    ("vuln_scanner", 2, vuln_scanner, "path/injection scanner at 3-15/s for a few minutes, mostly 404"),
    ("search_flood", 2, search_flood, "L7 flood of random searches from 30-200 bot addresses"),
    ("data_exfil", 2, data_exfil, "stolen admin token paging through customers/orders/exports"),
]


def build(seed):
    g = Gen(seed)
    for label, roster in (("legit", LEGIT), ("abuse", ABUSE)):
        for kind, count, fn, _ in roster:
            for i in range(count):
                a = Actor(g, kind, i + 1, label)
                fn(a)
                g.actors.append(a)
    # time order; ties keep generation order (stable sort)
    g.rows.sort(key=lambda row: row[0])
    return g


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    seed = int(sys.argv[1])
    g = build(seed)
    with open(sys.argv[2], "w") as f:
        w = f.write
        for ts, user, ep, ip, tier, st, lat, label, actor in g.rows:
            o = {"ts": round(T0 + ts, 3), "user": user, "endpoint": ep, "ip": ip}
            if tier is not None:
                o["tier"] = tier
            o["status"] = st
            o["latency_ms"] = lat
            o["label"] = label
            o["actor"] = actor
            w(json.dumps(o, separators=(",", ":")) + "\n")
    if "--summary" in sys.argv:
        from collections import Counter
        reqs = Counter()
        subs = {}
        for row in g.rows:
            reqs[row[-1]] += 1
            subs.setdefault(row[-1], set()).add(row[1])
        n_legit = sum(1 for a in g.actors if a.label == "legit")
        print(f"seed {seed}: {len(g.rows)} requests, {n_legit} legit actors, {len(g.actors) - n_legit} abuse actors",
              file=sys.stderr)
        kinds = {}
        for a in g.actors:
            k = kinds.setdefault((a.label, a.kind), [0, 0, 0])
            k[0] += 1
            k[1] += reqs[a.name]
            k[2] += len(subs.get(a.name, ()))
        for (label, kind), (n, q, s) in kinds.items():
            print(f"  {label:5} {kind:24} actors {n:3}  requests {q:7}  subjects {s:6}", file=sys.stderr)


if __name__ == "__main__":
    main()
