#!/usr/bin/env python3
"""Generator F: labelled traffic of a retail-banking / banking-as-a-service API behind
ratewarden's example policy (ratewarden.yaml), written independently of the project's
simulator and of generator E.

    f.py SEED OUT.jsonl

The API ("Ledgerly"), two faces on one gateway:

* Partner API (/v2/..., /api/search, /api/export): called by businesses with an API key.
  The gateway puts the key in X-Api-Key, so the subject is the key; it knows the key's plan
  and sends it as the tier (free for sandbox/trial keys, pro, enterprise).
* Consumer app (web and mobile banking, /app/..., /login, /sms/send, /api/search and
  /api/export for statements): after sign-in the subject is the customer's account id
  (X-User-Id set by the session layer), no tier sent, so the default tier (free); business
  accounts (SME banking) have their plan sent as pro.  Before sign-in, /login is keyed by the
  login identifier being authenticated (the user), the policy's /login rule adds a per-address
  count; /sms/send and /app/otp/verify are keyed by the phone number, as the policy's comment
  says.

Statuses are what the upstream answered (never the limiter's 429).  One JSON object per line,
sorted by ts: ts, user, endpoint, ip, tier (when sent), status, latency_ms, label
(legit|abuse), actor (<kind>-<NN>).  1.5 hours from 2026-03-10 09:00 UTC.
Deterministic per seed; standard library only.
"""
import json
import math
import random
import sys

DUR = 5400.0
T0 = 1773133200.0  # 2026-03-10T09:00:00Z, a Tuesday morning in Europe

# ----------------------------------------------------------------------------- addresses

RES16 = ["81.2", "81.10", "86.1", "86.13", "90.2", "92.4", "94.1", "109.1", "176.2", "2.2",
         "5.6", "62.3", "77.9", "78.1", "79.6", "82.1", "84.9", "87.1", "88.1", "95.1",
         "151.2", "212.1", "217.4", "24.1", "73.1", "98.2", "67.1", "71.2", "99.2", "174.6",
         "80.4", "83.7", "93.2", "37.2", "46.5"]
FOREIGN16 = ["41.2", "102.8", "105.1", "180.2", "182.5", "186.1", "190.2", "200.1", "201.2",
             "197.1", "113.1", "117.2", "125.1", "14.1", "27.3", "36.7", "39.4", "49.3",
             "103.4", "110.5", "116.8", "122.1", "177.3", "187.4", "189.6", "191.8"]
CLOUD16 = ["3.8", "3.120", "18.130", "18.169", "34.89", "34.105", "35.176", "35.197", "52.16",
           "52.49", "54.72", "54.154", "13.48", "20.61", "20.108", "40.74", "51.104", "104.196"]
VPS16 = ["45.8", "45.138", "45.155", "185.220", "185.100", "193.142", "194.26", "91.92",
         "5.188", "195.123", "46.166", "149.56", "167.99", "159.89", "142.93", "139.59",
         "178.128", "104.248"]
CARRIERS = [
    {"v4": ["172.56", "172.58", "172.59"], "v6": "2607:fb90"},
    {"v4": ["31.94", "31.95"], "v6": "2a01:4c8"},
    {"v4": ["37.120", "37.121", "37.122"], "v6": "2a02:3030"},
    {"v4": ["46.114", "46.115"], "v6": "2a00:23c6"},
    {"v4": ["89.204", "89.205"], "v6": "2a02:c7f"},
    {"v4": ["188.29", "188.28"], "v6": "2a01:598"},
    {"v4": ["213.55"], "v6": "2a02:810d"},
]
OFFICES = []  # shared office NAT addresses, filled per seed


def ip16(r, pref):
    return f"{pref}.{r.randrange(0, 256)}.{r.randrange(1, 255)}"


def ip_res(r):
    return ip16(r, r.choice(RES16))


def ip_cloud(r):
    return ip16(r, r.choice(CLOUD16))


def ip_vps(r):
    return ip16(r, r.choice(VPS16))


def ip_foreign(r):
    return ip16(r, r.choice(FOREIGN16))


def ip_proxy(r):
    x = r.random()
    if x < 0.45:
        return ip_res(r)
    if x < 0.75:
        return ip_foreign(r)
    if x < 0.9:
        return ip16(r, r.choice(r.choice(CARRIERS)["v4"]))
    return ip_vps(r)


def ip_carrier_v4(r, c):
    return ip16(r, r.choice(c["v4"]))


def ip_carrier_v6(r, c, prefix64=None):
    if prefix64 is None:
        prefix64 = f"{c['v6']}:{r.randrange(0x10000):x}:{r.randrange(0x10000):x}"
    return f"{prefix64}:{r.randrange(0x10000):x}:{r.randrange(0x10000):x}:" \
           f"{r.randrange(0x10000):x}:{r.randrange(0x10000):x}"


# ----------------------------------------------------------------------------- identifiers

WORDS = ["anna", "ben", "chloe", "dan", "eva", "finn", "grace", "harry", "isla", "jack",
         "kate", "leo", "mia", "noah", "olga", "paul", "rosa", "sam", "tom", "una", "vik",
         "will", "yara", "zoe", "omar", "lena", "ravi", "nina", "igor", "aisha"]
MAILS = ["example.com", "example.net", "example.org", "mail.example", "post.example"]
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def hexid(r, n):
    return "".join(r.choice("0123456789abcdef") for _ in range(n))


def alid(r, n):
    return "".join(r.choice(ALNUM) for _ in range(n))


def new_key(r, live=True):
    return ("pk_live_" if live else "pk_test_") + hexid(r, 24)


def new_cus(r):
    return "cus_" + alid(r, 14)


def new_email(r):
    return f"{r.choice(WORDS)}.{r.choice(WORDS)}{r.randrange(1, 999)}@{r.choice(MAILS)}"


def new_phone(r):
    return "+447" + "".join(str(r.randrange(10)) for _ in range(9))


def new_acc(r):
    return "acc_" + alid(r, 12)


def new_pay(r):
    return "pay_" + alid(r, 16)


# ----------------------------------------------------------------------------- timing

def lognorm(r, median, sigma):
    return median * math.exp(r.gauss(0.0, sigma))


def poisson(r, rate, t0, t1):
    """event times of a Poisson process of `rate` per second in [t0, t1)"""
    out = []
    if rate <= 0:
        return out
    t = t0
    while True:
        t += r.expovariate(rate)
        if t >= t1:
            return out
        out.append(t)


def onoff(r, t0, t1, on_med, off_med, sigma=0.6):
    """alternating active spans [(a, b)] starting active at t0"""
    spans, t = [], t0
    while t < t1:
        d = lognorm(r, on_med, sigma)
        spans.append((t, min(t1, t + d)))
        t += d + lognorm(r, off_med, sigma)
    return spans


# ----------------------------------------------------------------------------- latency

def base_latency(ep):
    if ep.startswith("/login"):
        return 210
    if ep.startswith("/sms/"):
        return 480
    if ep.startswith("/api/export"):
        return 1600
    if ep.startswith("/api/search"):
        return 240
    if ep.startswith("/v2/connect"):
        return 2300
    if ep.startswith("/v2/kyc"):
        return 900
    if ep.startswith("/v2/payments") or ep.startswith("/app/transfers"):
        return 380
    if ep.startswith("/v2/payee-verification") or ep.startswith("/app/payees/verify"):
        return 320
    if "/transactions" in ep:
        return 150
    if ep.startswith("/v2/status"):
        return 12
    return 70


def latency(r, ep, status):
    if status == 504:
        return round(r.uniform(29000, 30500), 1)
    if status == 503:
        return round(r.uniform(2, 40), 1)
    if status == 502:
        return round(r.uniform(15, 400), 1)
    b = base_latency(ep)
    if 400 <= status < 500:
        b *= 0.5
    return round(max(1.0, lognorm(r, b, 0.55)), 1)


# ----------------------------------------------------------------------------- world

class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(f"genF/{seed}/world")
        r = self.r
        # the core-banking outage of the day: most of the partner API and the app's
        # authenticated routes fail with 5xx (sign-in and SMS are another service)
        s = r.uniform(1700, 3500)
        self.outage = (s, s + r.uniform(240, 540), r.uniform(0.55, 0.85))
        self.events = []
        OFFICES[:] = [ip_res(r) for _ in range(12)]

    def in_outage(self, t):
        return self.outage[0] <= t < self.outage[1]

    def st(self, r, t, ep, status):
        """the upstream's answer at time t: `status`, or a 5xx during the outage"""
        s, e, p = self.outage
        if s <= t < e and not ep.startswith(("/login", "/sms/", "/app/otp")):
            # worse in the middle of the incident than at its edges
            mid = (s + e) / 2
            q = p * (1 - 0.5 * abs(t - mid) / ((e - s) / 2))
            if r.random() < q:
                return r.choice((503, 503, 504, 502))
        return status


class Actor:
    def __init__(self, gen, kind, idx, label, attempt=0):
        self.gen = gen
        self.kind = kind
        self.name = f"{kind}-{idx:02d}"
        self.label = label
        self.rng = random.Random(f"genF/{gen.seed}/{kind}/{idx}" + (f"/{attempt}" if attempt else ""))

    def emit(self, t, user, ep, ip, status, tier=None):
        if t < 0 or t >= DUR:
            return
        self.gen.events.append((t, user, ep, ip, tier, status, latency(self.rng, ep, status),
                                self.label, self.name))

    def call(self, t, user, ep, ip, status, tier=None):
        """emit with the outage applied; returns the status the upstream gave"""
        s = self.gen.st(self.rng, t, ep, status)
        self.emit(t, user, ep, ip, s, tier)
        return s


def pick(r, weighted):
    tot = sum(w for _, w in weighted)
    x = r.random() * tot
    for v, w in weighted:
        x -= w
        if x <= 0:
            return v
    return weighted[-1][0]


# ----------------------------------------------------------------------------- consumer app

class Customer:
    def __init__(self, r, business=False):
        self.cus = new_cus(r)
        self.login = new_email(r)
        self.phone = new_phone(r)
        self.accs = [new_acc(r) for _ in range(r.choice((1, 1, 2, 2, 3)) + (2 if business else 0))]
        self.cards = ["card_" + alid(r, 10) for _ in range(r.choice((1, 1, 2)))]
        self.payees = ["pye_" + alid(r, 10) for _ in range(r.randrange(2, 12))]
        self.txs = ["tx_" + alid(r, 14) for _ in range(r.randrange(40, 260))]
        self.tier = "pro" if business else None


def screen(r, c, web=False, business=False):
    """one screen of the app: [(endpoint, status)]"""
    acc = r.choice(c.accs)
    tx = c.txs[min(len(c.txs) - 1, int(r.expovariate(1 / 12)))]
    choices = [
        ("acct", 30), ("tx", 18), ("home", 10), ("search", 12 if web else 7), ("cards", 7),
        ("transfer", 8 if not business else 20), ("statements", 4 if web else 2), ("insights", 5),
        ("profile", 2), ("deeplink", 3),
    ]
    if business:
        choices += [("approve", 15), ("bulk", 4)]
    k = pick(r, choices)
    if k == "acct":
        out = [(f"/app/accounts/{acc}/transactions", 200)]
        if r.random() < 0.3:
            out.append((f"/app/accounts/{acc}/transactions", 200))  # scrolled: next page
        return out
    if k == "tx":
        return [(f"/app/transactions/{tx}", 404 if r.random() < 0.01 else 200)]
    if k == "home":
        return [("/app/home", 200), ("/app/notifications", 200)]
    if k == "search":
        return [("/api/search", 200)] * r.choice((1, 1, 2, 3))
    if k == "cards":
        card = r.choice(c.cards)
        out = [("/app/cards", 200), (f"/app/cards/{card}", 200)]
        if r.random() < 0.1:
            out.append((f"/app/cards/{card}/freeze", 200))
        return out
    if k == "transfer":
        out = [("/app/payees", 200)]
        if r.random() < 0.25:
            out.append(("/app/payees/verify", 404 if r.random() < 0.15 else 200))
            out.append(("/app/payees", 201))
        out.append(("/app/transfers", 422 if r.random() < 0.05 else 201))
        return out
    if k == "statements":
        return [("/app/statements", 200), ("/api/export", 202)]
    if k == "insights":
        return [("/app/insights", 200)]
    if k == "profile":
        return [("/app/profile", 200)]
    if k == "deeplink":
        return [("/app/notifications", 200),
                (f"/app/transactions/{'tx_' + alid(r, 14)}" if r.random() < 0.05 else f"/app/transactions/{tx}",
                 200)]
    if k == "approve":
        pid = "bp_" + alid(r, 10)
        return [("/app/approvals", 200), (f"/app/approvals/{pid}", 200),
                (f"/app/approvals/{pid}/approve", 409 if r.random() < 0.04 else 200)]
    if k == "bulk":
        return [("/app/bulk-payments", 201), ("/app/bulk-payments", 200)]
    return [("/app/home", 200)]


def sign_in(a, t, c, ipf, typo_p, otp_p):
    r = a.rng
    if r.random() < typo_p:
        for _ in range(r.choice((1, 1, 1, 2, 3))):
            a.emit(t, c.login, "/login", ipf(t), 401)
            t += lognorm(r, 9, 0.5)
    a.emit(t, c.login, "/login", ipf(t), 200)
    t += lognorm(r, 1.2, 0.4)
    if r.random() < otp_p:
        a.emit(t, c.phone, "/sms/send", ipf(t), 200)
        t += lognorm(r, 22, 0.4)
        if r.random() < 0.12:
            a.emit(t, c.phone, "/app/otp/verify", ipf(t), 401)
            t += lognorm(r, 9, 0.4)
        a.emit(t, c.phone, "/app/otp/verify", ipf(t), 200)
        t += lognorm(r, 1.0, 0.3)
    return t


def app_session(a, t, c, ipf, n_screens, login_p=0.3, otp_p=0.1, typo_p=0.06, expiry_p=0.12,
                gap_med=9.0, web=False, business=False, retry_p=0.6):
    r = a.rng
    if r.random() < login_p:
        t = sign_in(a, t, c, ipf, typo_p, otp_p)
    launch = ["/app/home", "/app/accounts", "/app/notifications"]
    if r.random() < 0.5:
        launch.append("/app/cards")
    if business:
        launch.append("/app/approvals")
    for ep in launch:
        a.call(t, c.cus, ep, ipf(t), 200, c.tier)
        t += r.uniform(0.03, 0.4)
    expired_at = r.randrange(max(1, n_screens)) if r.random() < expiry_p else -1
    for i in range(n_screens):
        t += lognorm(r, gap_med, 0.8)
        if t >= DUR:
            break
        for j, (ep, s) in enumerate(screen(r, c, web, business)):
            if i == expired_at and j == 0:
                a.emit(t, c.cus, ep, ipf(t), 401, c.tier)
                t += r.uniform(0.05, 0.3)
                a.emit(t, c.cus, "/app/session/refresh", ipf(t), 200, c.tier)
                t += r.uniform(0.1, 0.4)
            got = a.call(t, c.cus, ep, ipf(t), s, c.tier)
            t += r.uniform(0.05, 0.6)
            if got >= 500 and r.random() < retry_p:
                t += r.uniform(0.8, 3)
                a.call(t, c.cus, ep, ipf(t), s, c.tier)
                t += r.uniform(0.05, 0.6)
    return t


def session_starts(r, n, min_gap=240):
    starts = sorted(r.uniform(-300, DUR - 120) for _ in range(n))
    out = []
    for s in starts:
        if not out or s - out[-1] > min_gap:
            out.append(s)
    return out


# ----------------------------------------------------------------------------- legit kinds

def g_mobile_user(a):
    r = a.rng
    c = Customer(r)
    carrier = r.choice(CARRIERS)
    home = ip_res(r)
    shared = r.random() < 0.12  # a couple sharing one login on two phones
    carrier2 = r.choice(CARRIERS)
    n = pick(r, [(1, 25), (2, 30), (3, 25), (4, 12), (6, 8)])
    for s in session_starts(r, n):
        who = r.random()
        if who < 0.45:
            ip0 = home
        elif shared and who > 0.75:
            ip0 = ip_carrier_v4(r, carrier2)
        else:
            ip0 = ip_carrier_v6(r, carrier) if r.random() < 0.3 else ip_carrier_v4(r, carrier)
        state = {"ip": ip0}

        def ipf(t, state=state):
            if r.random() < 0.015:  # CGNAT re-mapping or a wifi drop mid-session
                state["ip"] = ip_carrier_v4(r, carrier)
            return state["ip"]
        app_session(a, s, c, ipf, int(lognorm(r, 9, 0.6)) + 1, login_p=0.3, otp_p=0.1,
                    gap_med=lognorm(r, 8, 0.3))


def g_web_user(a):
    r = a.rng
    c = Customer(r)
    home = ip_res(r)
    office = r.choice(OFFICES)
    n = pick(r, [(1, 30), (2, 35), (3, 25), (4, 10)])
    for s in session_starts(r, n, 600):
        ip = office if r.random() < 0.45 else home
        app_session(a, s, c, lambda t, ip=ip: ip, int(lognorm(r, 12, 0.6)) + 2, login_p=0.95,
                    otp_p=0.45, typo_p=0.12, expiry_p=0.08, gap_med=lognorm(r, 12, 0.3), web=True)


def g_commuter_handover(a):
    r = a.rng
    c = Customer(r)
    carrier = r.choice(CARRIERS)
    wifis = [ip_res(r), r.choice(OFFICES), ip_res(r)]
    n = r.randrange(3, 7)
    for s in session_starts(r, n, 300):
        state = {"ip": ip_carrier_v4(r, carrier), "until": s + lognorm(r, 70, 0.6)}

        def ipf(t, state=state):
            if t > state["until"]:
                x = r.random()
                if x < 0.45:
                    state["ip"] = ip_carrier_v4(r, carrier)
                elif x < 0.8:
                    state["ip"] = ip_carrier_v6(r, carrier)
                else:
                    state["ip"] = r.choice(wifis)
                state["until"] = t + lognorm(r, 70, 0.7)
            return state["ip"]
        app_session(a, s, c, ipf, int(lognorm(r, 14, 0.5)) + 2, login_p=0.25, otp_p=0.1,
                    gap_med=lognorm(r, 9, 0.3))


def g_travel_user(a):
    r = a.rng
    c = Customer(r)
    carrier = r.choice(CARRIERS)
    hotel = ip_foreign(r)
    vpn = ip_cloud(r)
    n = r.randrange(2, 5)
    first = True
    for s in session_starts(r, n, 300):
        x = r.random()
        ip = hotel if x < 0.4 else (vpn if x < 0.6 else (ip_carrier_v4(r, carrier) if x < 0.8 else ip_foreign(r)))
        ipf = (lambda t, ip=ip: ip)
        t = s
        if first:
            # sign-in from a new country: refused once by the risk engine, then step-up by SMS
            a.emit(t, c.login, "/login", ip, 403)
            t += lognorm(r, 15, 0.5)
            a.emit(t, c.phone, "/sms/send", ip, 200)
            t += lognorm(r, 30, 0.4)
            if r.random() < 0.3:
                a.emit(t, c.phone, "/app/otp/verify", ip, 401)
                t += lognorm(r, 12, 0.4)
            a.emit(t, c.phone, "/app/otp/verify", ip, 200)
            t += 2
            a.emit(t, c.login, "/login", ip, 200)
            t += 1
            # card declined abroad: unfreeze / travel notice
            card = r.choice(c.cards)
            a.emit(t, c.cus, f"/app/cards/{card}", ip, 200)
            a.emit(t + 3, c.cus, f"/app/cards/{card}/travel-notice", ip, 201)
            first = False
        app_session(a, t + 5, c, ipf, int(lognorm(r, 8, 0.5)) + 1, login_p=0.2, otp_p=0.5,
                    gap_med=lognorm(r, 10, 0.3))


def g_sme_team(a):
    r = a.rng
    c = Customer(r, business=True)
    office = r.choice(OFFICES)
    staff = r.randrange(3, 9)
    for k in range(staff):
        login = new_email(r)
        phone = new_phone(r)
        home = ip_res(r)
        carrier = r.choice(CARRIERS)
        cc = Customer.__new__(Customer)
        cc.__dict__.update(c.__dict__)
        cc.login, cc.phone = login, phone
        n = pick(r, [(1, 30), (2, 40), (3, 30)])
        for s in session_starts(r, n, 400):
            x = r.random()
            ip = office if x < 0.6 else (home if x < 0.85 else ip_carrier_v4(r, carrier))
            app_session(a, s, cc, lambda t, ip=ip: ip, int(lognorm(r, 16, 0.5)) + 2, login_p=0.9,
                        otp_p=0.3, typo_p=0.1, gap_med=lognorm(r, 10, 0.3), web=True, business=True)


def pacer(r, aware, per_min):
    """gap between sequential machine requests: throttled under `per_min` when aware"""
    def gap():
        g = lognorm(r, 0.35, 0.5)
        if aware:
            g = max(g, 60.0 / per_min * r.uniform(0.9, 1.3))
        return g
    return gap


def g_accounting_sync(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_cloud(r) for _ in range(r.randrange(1, 4))]
    n_acc = r.randrange(8, 50)
    accs = [new_acc(r) for _ in range(n_acc)]
    revoked = set(r.sample(accs, int(n_acc * r.uniform(0.0, 0.15))))
    period = r.uniform(300, 900)
    gap = pacer(r, r.random() < 0.7, r.uniform(25, 45))
    t = r.uniform(0, period)
    while t < DUR:
        ip = r.choice(ips)
        a.call(t, key, "/v2/accounts", ip, 200, "pro")
        t += gap()
        for acc in accs:
            if acc in revoked:
                a.call(t, key, f"/v2/accounts/{acc}/transactions", ip, 403, "pro")
                t += gap()
                continue
            for _ in range(pick(r, [(1, 75), (2, 20), (3, 5)])):
                s = a.call(t, key, f"/v2/accounts/{acc}/transactions", ip, 200, "pro")
                t += gap()
                if s >= 500:
                    break
            a.call(t, key, f"/v2/accounts/{acc}/balance", ip, 200, "pro")
            t += gap()
        if r.random() < 0.3:
            a.call(t, key, "/api/search", ip, 200, "pro")
        t += period * r.uniform(0.9, 1.1) if not a.gen.in_outage(t) else period * 0.3


def g_aggregator(a):
    r = a.rng
    nkeys = r.randrange(2, 6)
    keys = [new_key(r) for _ in range(nkeys)]
    workers = [ip_cloud(r) for _ in range(r.randrange(6, 30))]
    revoke_p = r.uniform(0.02, 0.08)
    for key in keys:
        rate = r.uniform(15, 48) / 60.0
        accs = [new_acc(r) for _ in range(r.randrange(500, 3000))]
        # consents revoked by end users: those accounts answer 403 every time they are polled
        dead = set(r.sample(range(len(accs)), int(len(accs) * revoke_p)))
        for t in poisson(r, rate, 0, DUR):
            ip = r.choice(workers)
            i = r.randrange(len(accs))
            acc = accs[i]
            k = pick(r, [("bal", 40), ("tx", 45), ("list", 4), ("connect", 3), ("consent", 6), ("search", 2)])
            if k in ("bal", "tx") and i in dead:
                a.call(t, key, f"/v2/accounts/{acc}/{'balance' if k == 'bal' else 'transactions'}", ip, 403, "enterprise")
            elif k == "bal":
                a.call(t, key, f"/v2/accounts/{acc}/balance", ip, 200, "enterprise")
            elif k == "tx":
                a.call(t, key, f"/v2/accounts/{acc}/transactions", ip, 200, "enterprise")
            elif k == "list":
                a.call(t, key, "/v2/accounts", ip, 200, "enterprise")
            elif k == "connect":
                a.call(t, key, "/v2/connect", ip, 401 if r.random() < 0.2 else 201, "enterprise")
            elif k == "consent":
                a.call(t, key, f"/v2/consents/{'con_' + acc[4:]}", ip, 404 if r.random() < 0.1 else 200, "enterprise")
            else:
                a.call(t, key, "/api/search", ip, 200, "enterprise")


def g_payroll(a):
    r = a.rng
    key = new_key(r)
    ip = ip_cloud(r)
    accs = [new_acc(r) for _ in range(r.randrange(1, 4))]
    t = r.uniform(0, 300)
    while t < DUR:  # treasury dashboard refresh
        a.call(t, key, f"/v2/accounts/{r.choice(accs)}/balance", ip, 200, "pro")
        t += r.uniform(240, 360)
    aware = r.random() < 0.65
    gap = pacer(r, aware, r.uniform(30, 48))
    for _ in range(pick(r, [(1, 70), (2, 30)])):
        t = r.uniform(300, 4200)
        n = r.randrange(60, 400)
        pays = []
        for _ in range(n):
            a.call(t, key, "/v2/payee-verification", ip, pick(r, [(200, 95), (404, 3), (422, 2)]), "pro")
            t += gap()
        for _ in range(n):
            s = a.call(t, key, "/v2/payments", ip, 422 if r.random() < 0.015 else 201, "pro")
            if s == 201:
                pays.append(new_pay(r))
            elif s >= 500:
                t += r.uniform(1, 5)
                a.call(t, key, "/v2/payments", ip, 201, "pro")
            t += gap()
        end = t + r.uniform(300, 900)
        while t < end:
            a.call(t, key, "/v2/payments", ip, 200, "pro")  # the batch's list, by status
            t += r.uniform(25, 40)
        for p in r.sample(pays, min(len(pays), r.randrange(0, 10))):
            a.call(t, key, f"/v2/payments/{p}", ip, 200, "pro")
            t += gap()


def g_merchant(a):
    r = a.rng
    key = new_key(r)
    ent = r.random() < 0.35
    tier = "enterprise" if ent else "pro"
    ips = [ip_cloud(r) for _ in range(r.randrange(2, 7))]
    lam = r.uniform(4, 11) if ent else r.uniform(1, 4)  # checkouts a minute
    decline = r.uniform(0.04, 0.12)
    sale = r.uniform(600, 4800)
    sale_end = sale + r.uniform(300, 900)
    boost = r.uniform(1.5, 3.0)
    t = 0.0
    while t < DUR:
        rate = lam * (boost if sale <= t < sale_end else 1.0) / 60.0
        t += r.expovariate(rate)
        ip = r.choice(ips)
        tt = t
        if r.random() < 0.6:
            a.call(tt, key, f"/v2/cards/bin/{r.randrange(400000, 560000)}", ip, 404 if r.random() < 0.02 else 200, tier)
            tt += r.uniform(0.2, 1.5)
        if r.random() < 0.005:
            a.call(tt, key, "/v2/payments", ip, 422, tier)
            continue
        s = a.call(tt, key, "/v2/payments", ip, 402 if r.random() < decline else 201, tier)
        if s >= 500:
            tt += r.uniform(0.5, 2)
            s = a.call(tt, key, "/v2/payments", ip, 402 if r.random() < decline else 201, tier)
        if s != 201:
            continue
        p = new_pay(r)
        if r.random() < 0.3:  # 3-D Secure: poll until the challenge is done
            for _ in range(r.randrange(1, 4)):
                tt += r.uniform(2, 8)
                a.call(tt, key, f"/v2/payments/{p}", ip, 200, tier)
        if r.random() < 0.8:
            a.call(tt + r.uniform(0.3, 3), key, f"/v2/payments/{p}/capture", ip, 200, tier)
        if r.random() < 0.02:
            a.call(tt + r.uniform(60, 900), key, f"/v2/payments/{p}/refunds", ip, 201, tier)


def g_serverless(a):
    r = a.rng
    key = new_key(r)
    tier = "pro"
    rate = r.uniform(3, 14) / 60.0
    containers = []  # (ip, dies_at)
    accs = [new_acc(r) for _ in range(r.randrange(3, 40))]
    pays = [new_pay(r) for _ in range(200)]
    edge = r.random() < 0.5  # some run on an edge platform: one of its egress addresses per request
    edge_pool = [ip_cloud(r) for _ in range(r.randrange(40, 300))]
    for t in poisson(r, rate, 0, DUR):
        burst = 1 if r.random() < 0.85 else r.randrange(3, 12)  # a webhook fan-out
        for b in range(burst):
            tt = t + b * r.uniform(0.05, 0.5)
            if edge:
                ip = r.choice(edge_pool)
            else:
                containers = [cc for cc in containers if cc[1] > tt]
                if not containers or (len(containers) < 5 and r.random() < 0.15):
                    containers.append((ip_cloud(r), tt + lognorm(r, 900, 0.6)))
                ip = r.choice(containers)[0]
            k = pick(r, [("pay", 35), ("bal", 25), ("quote", 15), ("event", 20), ("create", 5)])
            if k == "pay":
                a.call(tt, key, f"/v2/payments/{r.choice(pays)}", ip, 404 if r.random() < 0.02 else 200, tier)
            elif k == "bal":
                a.call(tt, key, f"/v2/accounts/{r.choice(accs)}/balance", ip, 200, tier)
            elif k == "quote":
                a.call(tt, key, "/v2/fx/quote", ip, 201, tier)
            elif k == "event":
                a.call(tt, key, f"/v2/events/evt_{alid(r, 12)}", ip, 200, tier)
            else:
                a.call(tt, key, "/v2/payments", ip, 201, tier)


DEV_EPS = ["/v2/accounts", "/v2/payments", "/v2/payee-verification", "/v2/fx/quote",
           "/v2/fx/rates", "/v2/customers", "/v2/kyc/verify", "/v2/webhooks", "/api/search",
           "/v2/cards/bin/424242", "/v2/status", "/v2/connect"]


def g_dev_sandbox(a):
    r = a.rng
    key = new_key(r, live=False)
    ips = [ip_res(r), r.choice(OFFICES), ip_cloud(r)]
    phone = new_phone(r)
    spans = onoff(r, r.uniform(-600, 2400), DUR, r.uniform(400, 1100), r.uniform(500, 1500))
    bad_paths = ["/v2/acounts", "/v2/payment", "/v2/accounts/undefined", "/v1/accounts",
                 "/v2/payments/null", "/v2/fx/rate"]
    for (s, e) in spans:
        t = s
        ip = r.choice(ips[:2])
        while t < e:
            if r.random() < 0.12:  # run the integration test suite from CI
                ci = ips[2]
                for _ in range(r.randrange(25, 80)):
                    ep = r.choice(DEV_EPS)
                    st = pick(r, [(200, 70), (201, 10), (400, 6), (404, 5), (422, 6), (401, 3)])
                    a.call(t, key, ep, ci, st, "free")
                    t += lognorm(r, 0.4, 0.6)
                t += lognorm(r, 60, 0.5)
                continue
            ep = r.choice(DEV_EPS)
            x = r.random()
            if x < 0.08:
                a.emit(t, key, r.choice(bad_paths), ip, 404, "free")
            elif x < 0.16:
                a.emit(t, key, ep, ip, 401, "free")  # request signature wrong
            elif x < 0.3:
                a.emit(t, key, ep, ip, r.choice((400, 400, 422, 422, 405)), "free")
            elif x < 0.32:
                a.emit(t, phone, "/sms/send", ip, 200)  # the developer's own phone, sandbox OTP
            else:
                a.call(t, key, ep, ip, 201 if ep in ("/v2/payments", "/v2/customers") and r.random() < 0.5 else 200, "free")
            t += lognorm(r, 12, 1.0)
            if r.random() < 0.15:  # same request again after a change
                t += lognorm(r, 2, 0.5)


def g_expired_credential(a):
    r = a.rng
    old, new = new_key(r), new_key(r)
    servers = [ip_cloud(r) for _ in range(r.randrange(2, 5))]
    stale = servers[0]
    t_rot = r.uniform(600, 3000)
    t_fix = t_rot + r.uniform(1200, 4000)
    period = r.uniform(30, 90)
    retry401 = r.random() < 0.5
    pending = [new_pay(r) for _ in range(30)]
    for srv in servers:
        t = r.uniform(0, period)
        while t < DUR:
            using_old = t < t_rot or (srv == stale and t < t_fix)
            key = old if using_old else new
            bad = using_old and t >= t_rot
            s = 401 if bad else 200
            a.call(t, key, "/v2/payments", srv, s, "pro")
            if bad and retry401:
                for k in range(2):
                    a.emit(t + 0.5 * (k + 1), key, "/v2/payments", srv, 401, "pro")
            tt = t + 0.3
            if not bad:
                for p in r.sample(pending, r.randrange(0, 4)):
                    a.call(tt, key, f"/v2/payments/{p}", srv, 200, "pro")
                    tt += r.uniform(0.1, 0.5)
            t += period * r.uniform(0.95, 1.05)


def g_broken_deploy(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_cloud(r) for _ in range(r.randrange(1, 4))]
    rate = r.uniform(5, 20) / 60.0
    d0 = r.uniform(600, 4000)
    d1 = d0 + r.uniform(480, 1500)
    accs = [new_acc(r) for _ in range(r.randrange(5, 40))]
    for t in poisson(r, rate, 0, DUR):
        ip = r.choice(ips)
        broken = d0 <= t < d1
        k = pick(r, [("create", 35), ("get", 35), ("bal", 30)])
        if not broken:
            if k == "create":
                a.call(t, key, "/v2/payments", ip, 201, "pro")
            elif k == "get":
                a.call(t, key, f"/v2/payments/{new_pay(r)}", ip, 200, "pro")
            else:
                a.call(t, key, f"/v2/accounts/{r.choice(accs)}/balance", ip, 200, "pro")
            continue
        # the new build: a renamed field (422), a wrong path (404), an empty id (400), and a
        # client that retries 4xx as if they were transient
        if k == "create":
            ep, s = "/v2/payments", 422
        elif k == "get":
            ep, s = f"/v2/payment/{new_pay(r)}", 404
        else:
            ep, s = ("/v2/accounts//balance", 400) if r.random() < 0.5 else (f"/v2/accounts/{r.choice(accs)}/balance", 200)
        tt = t
        for _ in range(1 + (r.randrange(1, 4) if s >= 400 else 0)):
            a.emit(tt, key, ep, ip, s, "pro")
            tt += r.uniform(0.5, 3)


def g_deleted_poller(a):
    r = a.rng
    key = new_key(r)
    ip = ip_cloud(r)
    n = r.randrange(10, 40)
    watch = [(f"/v2/{r.choice(('payments', 'mandates'))}/{alid(r, 16)}", None) for _ in range(n)]
    gone = r.uniform(0.2, 0.7)
    watch = [(ep, (404 if r.random() < 0.8 else 410) if r.random() < gone else 200) for ep, _ in watch]
    per_h = r.uniform(300, 900)
    period = n * 3600.0 / per_h
    t = r.uniform(0, period)
    while t < DUR:
        tt = t
        for ep, s in watch:
            a.call(tt, key, ep, ip, s, "pro")
            tt += lognorm(r, 0.3, 0.4)
        if r.random() < 0.2:
            a.call(tt, key, "/v2/payments", ip, 201, "pro")
        t += period * r.uniform(0.9, 1.1)


def g_outage_retrier(a):
    r = a.rng
    key = new_key(r)
    tier = "enterprise" if r.random() < 0.4 else "pro"
    ips = [ip_cloud(r) for _ in range(r.randrange(1, 5))]
    rate = (r.uniform(10, 35) if tier == "enterprise" else r.uniform(4, 14)) / 60.0
    accs = [new_acc(r) for _ in range(r.randrange(5, 100))]
    max_retry = r.randrange(3, 11)
    os_, oe, _ = a.gen.outage
    backlog = []
    for t in poisson(r, rate, 0, DUR):
        ip = r.choice(ips)
        k = pick(r, [("create", 30), ("bal", 40), ("quote", 30)])
        ep = {"create": "/v2/payments", "bal": f"/v2/accounts/{r.choice(accs)}/balance", "quote": "/v2/fx/quote"}[k]
        ok = 201 if k in ("create", "quote") else 200
        s = a.call(t, key, ep, ip, ok, tier)
        tt = t
        tries = 0
        while s >= 500 and tries < max_retry:  # no backoff: retried at once
            tt += r.uniform(0.1, 0.8)
            s = a.call(tt, key, ep, ip, ok, tier)
            tries += 1
        if s >= 500 and k == "create":
            backlog.append((ep, ok))
    # the queue drains when the service is back
    t = oe + r.uniform(5, 60)
    for ep, ok in backlog:
        a.call(t, key, ep, r.choice(ips), ok, tier)
        t += r.uniform(0.1, 0.6)


def g_bi_exporter(a):
    r = a.rng
    key = new_key(r)
    ip = ip_cloud(r)
    aware = r.random() < 0.6
    gap = pacer(r, aware, r.uniform(35, 48))
    t = r.uniform(0, 1800)
    for _ in range(r.randrange(1, 3)):
        accs = [new_acc(r) for _ in range(r.randrange(5, 25))]
        for acc in accs:
            for _ in range(r.randrange(3, 40)):  # pages of transactions, cursor in the query
                s = a.call(t, key, f"/v2/accounts/{acc}/transactions", ip, 200, "pro")
                t += gap()
                if s >= 500:
                    t += r.uniform(2, 10)
        # statements as files: one export job per account, polled until ready
        for acc in accs:
            a.call(t, key, "/api/export", ip, 202, "pro")
            t += r.uniform(0.2, 1.0) if not aware else r.uniform(12, 16)
            job = "exp_" + alid(r, 12)
            for _ in range(r.randrange(1, 4)):
                t += r.uniform(1, 4)
                a.call(t, key, f"/v2/exports/{job}", ip, 200, "pro")
            a.call(t + 0.5, key, f"/v2/exports/{job}/file", ip, 200, "pro")
            t += 1
        t += r.uniform(600, 1800)


def g_support_desk(a):
    r = a.rng
    key = new_key(r)
    office = r.choice(OFFICES)
    agents = [office] * r.randrange(3, 9) + [ip_res(r) for _ in range(r.randrange(0, 4))]
    for ip in agents:
        t = r.uniform(0, 600)
        while t < DUR:
            t += lognorm(r, 200, 0.6)
            tt = t
            for _ in range(r.randrange(1, 4)):
                a.call(tt, key, "/api/search", ip, 200, "pro")
                tt += lognorm(r, 8, 0.6)
            cid = "cus_" + alid(r, 14)
            a.call(tt, key, f"/v2/customers/{cid}", ip, 404 if r.random() < 0.06 else 200, "pro")
            tt += lognorm(r, 5, 0.5)
            for _ in range(r.randrange(0, 4)):
                a.call(tt, key, f"/v2/payments/{new_pay(r)}", ip, 404 if r.random() < 0.05 else 200, "pro")
                tt += lognorm(r, 10, 0.6)
            if r.random() < 0.5:
                a.call(tt, key, f"/v2/accounts/{new_acc(r)}/transactions", ip, 200, "pro")


def g_uptime_monitor(a):
    r = a.rng
    key = new_key(r)
    regions = [ip_cloud(r) for _ in range(r.randrange(2, 6))]
    period = r.choice((60, 60, 120, 120, 180))
    deep = r.random() < 0.5
    for ip in regions:
        t = r.uniform(0, period)
        while t < DUR:
            a.call(t + r.uniform(-0.3, 0.3), key, "/v2/status", ip, 200, "free")
            if deep:
                a.call(t + 0.4, key, "/v2/fx/rates", ip, 200, "free")
            t += period


def g_kyc_onboarding(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_cloud(r) for _ in range(r.randrange(2, 5))]
    rate = r.uniform(0.4, 2.5) / 60.0
    reject = r.uniform(0.1, 0.25)
    for t in poisson(r, rate, 0, DUR):
        ip = r.choice(ips)
        phone = new_phone(r)
        a.call(t, key, "/v2/customers", ip, 201, "pro")
        a.emit(t + 0.5, phone, "/sms/send", ip, 200)
        tt = t + lognorm(r, 40, 0.5)
        vid = "pv_" + alid(r, 10)
        if r.random() < 0.1:
            a.call(tt, key, f"/v2/phone-verifications/{vid}", ip, 422, "pro")
            tt += lognorm(r, 15, 0.5)
        a.call(tt, key, f"/v2/phone-verifications/{vid}", ip, 200, "pro")
        tt += lognorm(r, 90, 0.5)
        for attempt in range(2):
            s = a.call(tt, key, "/v2/kyc/verify", ip, 422 if r.random() < reject else 202, "pro")
            if s == 202:
                kid = "kyc_" + alid(r, 10)
                for _ in range(r.randrange(1, 5)):
                    tt += r.uniform(3, 10)
                    a.call(tt, key, f"/v2/kyc/verify/{kid}", ip, 200, "pro")
                break
            tt += lognorm(r, 60, 0.5)


def g_fx_ticker(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_cloud(r) for _ in range(r.randrange(1, 3))]
    frac = r.uniform(0.6, 1.08)
    period = 3600.0 / (1000 * frac)
    t = r.uniform(0, period)
    while t < DUR:
        a.call(t, key, "/v2/fx/rates", ips[0], 200, "pro")
        if r.random() < 0.04:
            a.call(t + 0.2, key, "/v2/fx/quote", r.choice(ips), 201, "pro")
        t += period * r.uniform(0.97, 1.03)


# ----------------------------------------------------------------------------- abuse kinds

def takeover_recon(a, t, ip, n):
    """a bot that got in looks around the account"""
    r = a.rng
    cus = new_cus(r)
    acc = new_acc(r)
    for ep, s in [("/app/home", 200), ("/app/accounts", 200), (f"/app/accounts/{acc}/transactions", 200),
                  ("/app/cards", 200), ("/app/payees", 200), ("/app/profile", 200)][:n]:
        a.call(t, cus, ep, ip, s)
        t += lognorm(r, 1.5, 0.6)
    for _ in range(max(0, n - 6)):
        a.call(t, cus, f"/app/accounts/{acc}/transactions", ip, 200)
        t += lognorm(r, 2, 0.6)


def g_stuffing_botnet(a):
    r = a.rng
    pool = [ip_proxy(r) for _ in range(r.randrange(300, 4000))]
    rate = r.uniform(20, 150) / 60.0
    hit = r.uniform(0.005, 0.02)
    sticky = r.random() < 0.4
    spans = onoff(r, r.uniform(0, 2400), DUR, r.uniform(180, 700), r.uniform(60, 900))
    pending = []  # a combo list holds several passwords for one address
    ip = r.choice(pool)
    for (s, e) in spans:
        for t in poisson(r, rate * r.uniform(0.6, 1.4), s, e):
            if pending and r.random() < 0.35:
                login = pending.pop(r.randrange(len(pending)))
            else:
                login = new_email(r)
                if r.random() < 0.4:
                    pending.extend([login] * r.randrange(1, 3))
            if not sticky or r.random() < 0.1:
                ip = r.choice(pool)
            x = r.random()
            if x < hit:
                a.emit(t, login, "/login", ip, 200)
                if r.random() < 0.4:
                    takeover_recon(a, t + 2, ip, r.randrange(4, 30))
            elif x < hit + 0.01:
                a.emit(t, login, "/login", ip, 423)
            else:
                a.emit(t, login, "/login", ip, 401)


def g_password_spray(a):
    r = a.rng
    ips = [ip_vps(r) for _ in range(r.randrange(3, 20))]
    rate = r.uniform(2, 10) / 60.0
    t0 = r.uniform(0, 1500)
    targets = []
    for t in poisson(r, rate, t0, DUR):
        if targets and r.random() < 0.15 and t > t0 + 1800:
            login = targets.pop(0)  # second password of the spray, half an hour on
        else:
            login = new_email(r)
            targets.append(login)
        s = 200 if r.random() < 0.003 else 401
        ip = r.choice(ips)
        a.emit(t + r.uniform(0, 3), login, "/login", ip, s)
        if s == 200:
            takeover_recon(a, t + 5, ip, r.randrange(3, 10))


def g_brute_force(a):
    r = a.rng
    targets = [(new_email(r), new_phone(r)) for _ in range(r.randrange(2, 7))]
    pool = [ip_proxy(r) for _ in range(r.randrange(3, 40))]
    for login, phone in targets:
        t = r.uniform(0, 3000)
        fails = 0
        locked_until = -1
        lockout = r.random() < 0.6  # some sign-in paths (the older web form) never lock
        total = r.randrange(30, 150)
        done = 0
        while done < total and t < DUR:
            for _ in range(r.randrange(5, 30)):  # a burst
                ip = r.choice(pool)
                if t < locked_until:
                    a.emit(t, login, "/login", ip, 423)
                else:
                    a.emit(t, login, "/login", ip, 401)
                    fails += 1
                    if lockout and fails % 10 == 0:
                        locked_until = t + 600
                done += 1
                t += lognorm(r, 4, 0.8)
            if r.random() < 0.2:  # try the reset path too
                a.emit(t, phone, "/sms/send", r.choice(pool), 200)
            t += lognorm(r, 420, 0.6)  # then a pause


def g_otp_bruteforce(a):
    r = a.rng
    pool = [ip_proxy(r) for _ in range(r.randrange(5, 200))]
    for _ in range(r.randrange(1, 4)):
        phone = new_phone(r)
        t = r.uniform(0, 3600)
        for _ in range(r.randrange(10, 40)):
            a.emit(t, phone, "/sms/send", r.choice(pool), 200)
            t += lognorm(r, 3, 0.5)
            tries = r.randrange(3, 6)
            for k in range(tries + 1):
                a.emit(t, phone, "/app/otp/verify", r.choice(pool), 403 if k == tries else 401)
                t += lognorm(r, 2.5, 0.7)
            t += lognorm(r, 20, 1.0)


PREMIUM = ["+8823", "+8818", "+2473", "+2327", "+3716", "+2224", "+6755", "+5016"]


def g_sms_pumping(a):
    r = a.rng
    n = int(math.exp(r.uniform(math.log(12), math.log(300))))
    pref = r.sample(PREMIUM, r.randrange(1, 4))
    numbers = [r.choice(pref) + "".join(str(r.randrange(10)) for _ in range(7)) for _ in range(n)]
    pool = [ip_proxy(r) for _ in range(r.randrange(50, 2000))]
    rate = r.uniform(3, 30) / 60.0
    for (s, e) in onoff(r, r.uniform(0, 2000), DUR, r.uniform(300, 1200), r.uniform(120, 900)):
        for t in poisson(r, rate, s, e):
            phone = r.choice(numbers)
            ip = r.choice(pool)
            if r.random() < 0.5:
                a.emit(t, phone, "/app/signup", ip, 201)
                t += lognorm(r, 1.5, 0.5)
            a.emit(t, phone, "/sms/send", ip, 200)


def g_iban_enum(a):
    r = a.rng
    slow = r.random() < 0.4
    key = new_key(r)
    tier = "free" if slow else "pro"
    ips = [ip_vps(r) for _ in range(r.randrange(1, 6))]
    rate = (r.uniform(0.8, 1.6) if slow else r.uniform(10, 45)) / 60.0
    found = r.uniform(0.1, 0.35)
    spans = [(r.uniform(0, 600), DUR)] if slow else onoff(r, r.uniform(0, 1800), DUR, r.uniform(300, 1500), r.uniform(120, 900))
    for (s, e) in spans:
        for t in poisson(r, rate, s, e):
            a.call(t, key, "/v2/payee-verification", r.choice(ips), 200 if r.random() < found else 404, tier)


def g_payment_idor(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_vps(r) for _ in range(r.randrange(1, 4))]
    base = r.randrange(10**6, 10**7)
    rate = r.uniform(5, 30) / 60.0
    n = 0
    for (s, e) in onoff(r, r.uniform(0, 2400), DUR, r.uniform(200, 900), r.uniform(300, 1200)):
        for t in poisson(r, rate, s, e):
            n += 1
            x = r.random()
            if x < 0.05:
                a.call(t, key, f"/v2/payments/pay_{base + n:016d}", r.choice(ips), 200, "pro")
            elif x < 0.8:
                a.call(t, key, f"/v2/payments/pay_{base + n:016d}", r.choice(ips), 403, "pro")
            elif x < 0.95:
                a.call(t, key, f"/v2/payments/pay_{base + n:016d}", r.choice(ips), 404, "pro")
            else:
                a.call(t, key, f"/v2/accounts/acc_{base + n:012d}/balance", r.choice(ips), 403, "pro")


def scrape_path(r, cursor):
    if r.random() < 0.6:
        return f"/v2/cards/bin/{400000 + cursor}", (200 if r.random() < 0.7 else 404)
    return f"/v2/institutions/{cursor:06d}", (200 if r.random() < 0.75 else 404)


def g_scraper_fast(a):
    r = a.rng
    key = new_key(r)
    ips = [ip_vps(r) for _ in range(r.randrange(1, 5))]
    per_min = r.uniform(25, 60)
    cursor = r.randrange(0, 100000)
    threads = r.choice((1, 1, 2, 4))
    t0 = r.uniform(0, 1800)
    for th in range(threads):
        t = t0 + th * 0.1
        while t < DUR:
            cursor += 1
            ep, s = scrape_path(r, cursor)
            a.call(t, key, ep, ips[th % len(ips)], s, "pro")
            t += 60.0 / per_min * threads * r.uniform(0.85, 1.15)


def g_scraper_polite(a):
    r = a.rng
    key = new_key(r)
    ip = r.choice((ip_vps, ip_res))(r)
    per_h = r.uniform(55, 95)
    cursor = r.randrange(0, 100000)
    t = r.uniform(0, 600)
    while t < DUR:
        cursor += r.randrange(1, 3)
        ep, s = scrape_path(r, cursor)
        a.call(t, key, ep, ip, s, "free")
        t += 3600.0 / per_h * r.uniform(0.6, 1.4)


def g_scraper_distributed(a):
    r = a.rng
    pool = [ip_proxy(r) for _ in range(r.randrange(100, 1500))]
    cursor = r.randrange(0, 100000)
    n_keys = r.randrange(8, 26)
    per_key_ip = r.random() < 0.5
    for k in range(n_keys):
        key = new_key(r)
        t = r.uniform(0, DUR - 900)
        end = t + r.uniform(600, 2400)
        per_h = r.uniform(40, 90)
        kip = r.choice(pool)
        while t < min(end, DUR):
            cursor += 1
            ep, s = scrape_path(r, cursor)
            a.call(t, key, ep, kip if per_key_ip else r.choice(pool), s, "free")
            t += 3600.0 / per_h * r.uniform(0.5, 1.5)


def g_key_resale(a):
    r = a.rng
    key = new_key(r)
    tier = r.choice(("pro", "pro", "enterprise"))
    buyers = r.randrange(8, 40)
    for _ in range(buyers):
        ips = [r.choice((ip_foreign, ip_vps, ip_res, ip_cloud))(r) for _ in range(r.randrange(1, 4))]
        rate = lognorm(r, 0.6, 0.8) / 60.0
        start = r.uniform(-1800, DUR)
        end = start + r.uniform(600, 5400)
        mix = r.sample([("fx", "/v2/fx/rates"), ("bin", None), ("pv", "/v2/payee-verification"),
                        ("kyc", "/v2/kyc/verify"), ("search", "/api/search"), ("acc", "/v2/accounts")],
                       r.randrange(1, 4))
        for t in poisson(r, rate, max(0, start), min(DUR, end)):
            k, ep = r.choice(mix)
            ip = r.choice(ips)
            if k == "bin":
                a.call(t, key, f"/v2/cards/bin/{r.randrange(400000, 560000)}", ip, 404 if r.random() < 0.15 else 200, tier)
            elif k == "pv":
                a.call(t, key, ep, ip, 404 if r.random() < 0.3 else 200, tier)
            elif k == "kyc":
                a.call(t, key, ep, ip, 422 if r.random() < 0.3 else 202, tier)
            elif k == "acc":
                a.call(t, key, ep, ip, 403, tier)  # the key has no accounts scope
            else:
                a.call(t, key, ep, ip, 200, tier)


def g_card_testing(a):
    r = a.rng
    key = new_key(r)
    rotate = r.random() < 0.5
    ips = [ip_proxy(r) for _ in range(r.randrange(50, 400))] if rotate else [ip_vps(r)]
    ok = r.uniform(0.05, 0.2)
    for (s, e) in onoff(r, r.uniform(0, 2400), DUR, r.uniform(180, 600), r.uniform(300, 1200)):
        rate = r.uniform(10, 40) / 60.0
        for t in poisson(r, rate, s, e):
            ip = r.choice(ips)
            if r.random() < 0.3:
                a.call(t, key, f"/v2/cards/bin/{r.randrange(400000, 560000)}", ip, 200, "pro")
                t += r.uniform(0.2, 1)
            st = a.call(t, key, "/v2/payments", ip, 201 if r.random() < ok else 402, "pro")
            if st == 201 and r.random() < 0.3:
                a.call(t + r.uniform(1, 5), key, f"/v2/payments/{new_pay(r)}/cancel", ip, 200, "pro")


def g_mule_cashout(a):
    r = a.rng
    t = r.uniform(0, 1500)
    for _ in range(r.randrange(2, 6)):
        c = Customer(r)
        ip = ip_proxy(r)
        ip2 = ip_proxy(r)
        if r.random() < 0.3:
            a.emit(t, c.login, "/login", ip, 401)
            t += lognorm(r, 6, 0.5)
        a.emit(t, c.login, "/login", ip, 200)
        t += 2
        a.emit(t, c.phone, "/sms/send", ip, 200)
        t += lognorm(r, 40, 0.5)  # the phishing page relays the code
        a.emit(t, c.phone, "/app/otp/verify", ip, 200)
        t += 1
        seq = [("/app/home", 200), ("/app/accounts", 200), (f"/app/accounts/{c.accs[0]}/transactions", 200),
               ("/app/payees", 200), ("/app/limits", 200), ("/app/limits", 403 if r.random() < 0.5 else 200)]
        for _ in range(r.randrange(1, 4)):
            seq += [("/app/payees/verify", 404 if r.random() < 0.3 else 200), ("/app/payees", 201)]
        for _ in range(r.randrange(3, 13)):
            seq.append(("/app/transfers", pick(r, [(201, 50), (403, 35), (422, 15)])))
            if r.random() < 0.4:
                seq.append((f"/app/accounts/{c.accs[0]}/transactions", 200))
        if r.random() < 0.5:
            seq += [("/app/profile", 200), ("/app/profile/phone", 403)]
        for ep, s in seq:
            a.call(t, c.cus, ep, ip if r.random() < 0.8 else ip2, s)
            t += lognorm(r, 3, 0.7)
        t += lognorm(r, 600, 0.6)


def g_bursty_enum(a):
    r = a.rng
    carrier = r.choice(CARRIERS)
    for _ in range(r.randrange(1, 3)):
        cus = new_cus(r)
        ips = [ip_carrier_v4(r, carrier) for _ in range(r.randrange(1, 4))]
        found = r.uniform(0.15, 0.4)
        t = r.uniform(0, 1800)
        while t < DUR:
            a.call(t, cus, "/app/home", ips[0], 200)
            t += 2
            for _ in range(r.randrange(15, 60)):
                a.call(t, cus, "/app/payees/verify", r.choice(ips), 200 if r.random() < found else 404)
                t += lognorm(r, 2.2, 0.5)
            t += lognorm(r, 600, 0.6)


def g_connect_cred_check(a):
    r = a.rng
    key = new_key(r)
    slow = r.random() < 0.5
    ips = [r.choice((ip_cloud, ip_vps))(r) for _ in range(r.randrange(1, 4))]
    rate = (r.uniform(0.5, 1.5) if slow else r.uniform(10, 40)) / 60.0
    ok = r.uniform(0.05, 0.2)
    spans = [(r.uniform(0, 900), DUR)] if slow else onoff(r, r.uniform(0, 1800), DUR, r.uniform(400, 1500), r.uniform(200, 900))
    for (s, e) in spans:
        for t in poisson(r, rate, s, e):
            ip = r.choice(ips)
            st = a.call(t, key, "/v2/connect", ip, 201 if r.random() < ok else 401, "pro")
            if st == 201:
                a.call(t + r.uniform(1, 4), key, "/v2/accounts", ip, 200, "pro")
                a.call(t + r.uniform(4, 8), key, f"/v2/accounts/{new_acc(r)}/balance", ip, 200, "pro")


FUZZ = ["/v2/admin", "/v2/internal/users", "/admin", "/.env", "/v2/.git/config", "/v2/debug/vars",
        "/v2/swagger.json", "/v2/graphql", "/v2/payments/1%27%20OR%201=1", "/v2/users/1",
        "/v2/accounts/%7B%7Bid%7D%7D", "/v2/../../etc/passwd", "/actuator/env", "/v2/config", "/v2/export",
        "/v2/keys", "/v2/admin/keys", "/wp-login.php", "/v2/payments/%3Cscript%3E", "/server-status"]


def g_api_fuzzer(a):
    r = a.rng
    key = new_key(r, live=r.random() < 0.5)
    tier = "free" if key.startswith("pk_test") else "pro"
    ips = [ip_vps(r) for _ in range(r.randrange(1, 3))]
    for (s, e) in onoff(r, r.uniform(0, 3000), DUR, r.uniform(30, 150), r.uniform(300, 1500)):
        t = s
        rate = r.uniform(2, 10)
        while t < e:
            x = r.random()
            if x < 0.5:
                ep = r.choice(FUZZ)
            elif x < 0.8:
                ep = f"/v2/{r.choice(('users', 'accounts', 'payments', 'customers', 'keys'))}/{r.randrange(0, 5000)}"
            else:
                ep = r.choice(DEV_EPS)
            st = pick(r, [(404, 68), (400, 10), (405, 8), (401, 5), (403, 6), (200, 3)])
            a.emit(t, key, ep, r.choice(ips), st, tier)
            t += r.expovariate(rate)


# ----------------------------------------------------------------------------- the cast

LEGIT = [
    ("mobile-user", 75, g_mobile_user),
    ("web-user", 35, g_web_user),
    ("commuter-handover", 12, g_commuter_handover),
    ("travel-user", 7, g_travel_user),
    ("sme-team", 10, g_sme_team),
    ("accounting-sync", 15, g_accounting_sync),
    ("aggregator", 6, g_aggregator),
    ("payroll-batch", 6, g_payroll),
    ("merchant-checkout", 8, g_merchant),
    ("serverless-client", 8, g_serverless),
    ("dev-sandbox", 12, g_dev_sandbox),
    ("expired-credential", 6, g_expired_credential),
    ("broken-deploy", 6, g_broken_deploy),
    ("deleted-poller", 6, g_deleted_poller),
    ("outage-retrier", 8, g_outage_retrier),
    ("bi-exporter", 8, g_bi_exporter),
    ("support-desk", 5, g_support_desk),
    ("uptime-monitor", 6, g_uptime_monitor),
    ("kyc-onboarding", 6, g_kyc_onboarding),
    ("fx-ticker", 5, g_fx_ticker),
]
ABUSE = [
    ("stuffing-botnet", 5, g_stuffing_botnet),
    ("password-spray", 4, g_password_spray),
    ("brute-force", 4, g_brute_force),
    ("otp-bruteforce", 4, g_otp_bruteforce),
    ("sms-pumping", 4, g_sms_pumping),
    ("iban-enum", 4, g_iban_enum),
    ("payment-idor", 3, g_payment_idor),
    ("scraper-fast", 3, g_scraper_fast),
    ("scraper-polite", 4, g_scraper_polite),
    ("scraper-distributed", 3, g_scraper_distributed),
    ("key-resale", 4, g_key_resale),
    ("card-testing", 4, g_card_testing),
    ("mule-cashout", 4, g_mule_cashout),
    ("bursty-enum", 3, g_bursty_enum),
    ("connect-cred-check", 4, g_connect_cred_check),
    ("api-fuzzer", 3, g_api_fuzzer),
]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: f.py SEED OUT.jsonl")
    seed = int(sys.argv[1])
    out = sys.argv[2]
    g = Gen(seed)
    for cast, label in ((LEGIT, "legit"), (ABUSE, "abuse")):
        for kind, n, fn in cast:
            for i in range(1, n + 1):
                for attempt in range(10):  # an actor whose whole activity fell outside the span is drawn again
                    before = len(g.events)
                    fn(Actor(g, kind, i, label, attempt))
                    if any(0 <= e[0] < DUR for e in g.events[before:]):
                        break
                    del g.events[before:]
    ev = [e for e in g.events if 0 <= e[0] < DUR]
    ev.sort(key=lambda e: (e[0], e[8]))
    with open(out, "w") as f:
        for (t, user, ep, ip, tier, status, lat, label, actor) in ev:
            o = {"ts": round(T0 + t, 3), "user": user, "endpoint": ep, "ip": ip}
            if tier is not None:
                o["tier"] = tier
            o["status"] = status
            o["latency_ms"] = lat
            o["label"] = label
            o["actor"] = actor
            f.write(json.dumps(o, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
