#!/usr/bin/env python3
"""Labelled traffic of a travel platform (airline seats and event tickets) for ratewarden's example policy.

    g.py SEED OUT.jsonl

Writes 90 minutes (Tuesday 2026-03-10 07:00:00Z to 08:30:00Z) of API traffic as replay JSON lines,
sorted by ts: ts (seconds since the epoch, ms precision), user (the subject), endpoint (the path as
the gateway logged it, query string included where the client sent one), ip, tier (only when the
gateway knows it: partner API keys), status (what the upstream answered, never the limiter's 429),
latency_ms (upstream time), label ("legit" or "abuse") and actor ("<kind>-<NN>").
Standard library only; the output depends on SEED alone.

Subject of a request (what the gateway puts in `user`), as a deployment of this policy would:
  * partner API (/partner/v2/..., and /api/search, /api/export, ... called with an X-Api-Key):
    the API key id ("ak_live_..."); the gateway also sends the key's tier (free, pro, enterprise);
  * signed-in consumer (web or app, a session token): the account id ("acct_..."), no tier
    (the policy's default, free);
  * /sms/send: the destination phone number in E.164 ("+447700900123"), as the /sms/send rule's
    comment says (10 SMS per phone number per hour);
  * everything else without a key or a session (public search, seat maps, manage-booking look-ups,
    /login, /login/otp, /api/account/register, password reset, guest checkout): the client address,
    which is also what ratewarden's forward auth falls back to. /login is therefore counted per
    address twice (tier limits by subject = address, the /login rule by ip).
Behind a NAT (offices, airports) many people share one address subject; people on phones and VPNs
move between addresses while keeping one account subject.

The world per seed: one backend (search, inventory, booking, payments, identity or loyalty) fails
for 2.5 to 7 minutes at a random time (mostly 502/503/504, slow 504s); clients retry by their own
policy, some of them in storms. An event on-sale opens at 08:00Z. A few subjects are shared on
purpose by a legitimate and an abusive actor (a leaked partner key, a taken-over loyalty account).
The list of kinds is at the end of the file (KINDS).
"""
import datetime
import json
import math
import random
import sys

T0 = datetime.datetime(2026, 3, 10, 7, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
DUR = 5400.0
T1 = T0 + DUR

AIRPORTS = ("LHR LGW MAN EDI DUB CDG ORY AMS FRA MUC BER ZRH VIE MAD BCN LIS FCO MXP ATH IST CPH ARN OSL HEL "
            "WAW PRG BUD JFK EWR BOS ORD LAX SFO MIA YYZ DXB DOH SIN HKG NRT BKK DEL BOM").split()
AIRLINES = "TV XQ NB RJ LW KE AZ MV".split()
DATES = ["2026-%02d-%02d" % (m, d) for m in (3, 4, 5, 6, 7) for d in range(1, 29, 2)]
HOT_ROUTES = [("LHR", "JFK"), ("LGW", "BCN"), ("MAN", "DXB"), ("DUB", "BOS"), ("CDG", "NRT"), ("AMS", "SIN"),
              ("FRA", "ORD"), ("MAD", "MIA"), ("LHR", "DEL"), ("EDI", "AMS")]
COUNTRY_PHONE = [("+44", "7700", 6), ("+1", "415555", 4), ("+49", "1512", 7), ("+33", "612", 6), ("+34", "612", 6),
                 ("+39", "347", 7), ("+31", "612", 6), ("+61", "412", 6), ("+91", "98", 8), ("+353", "87", 7)]
PREMIUM_PHONE = [("+882", "35", 8), ("+252", "61", 7), ("+675", "7", 7), ("+960", "7", 6), ("+371", "81", 6),
                 ("+228", "90", 6), ("+224", "62", 7), ("+998", "90", 7), ("+237", "65", 7), ("+53", "5", 7)]
RESERVED = ((0,), (10,), (100, 64), (127,), (169, 254), (172, 16), (192, 168), (198, 18), (224,), (240,))

RES_A = [2, 5, 24, 31, 37, 46, 47, 50, 62, 67, 68, 71, 73, 76, 77, 78, 79, 81, 82, 84, 86, 87, 88, 89, 90, 91, 92,
         93, 94, 95, 98, 99, 109, 151, 174, 176, 177, 178, 186, 188, 189, 190, 195, 200, 201, 212, 213, 217]
MOB_A = [31, 37, 46, 80, 85, 89, 92, 94, 109, 141, 176, 178, 188, 193, 213]
DC_A = [3, 13, 18, 20, 34, 35, 44, 52, 54, 64, 104, 107, 128, 138, 139, 142, 143, 146, 147, 157, 159, 161, 164, 165,
        167, 170, 185, 192, 194, 206, 209]
V6_MOB = ["2a01:4c8", "2a02:c7f", "2607:fb90", "2600:380", "2a00:23c5", "2a02:8109", "2a01:e0a", "2409:4042"]
V6_RES = ["2a02:8084", "2001:818", "2a01:cb19", "2a00:23c8", "2600:1700", "2601:646"]


def gap(r, mean, cv):
    if cv <= 0.02:
        return mean * r.uniform(0.99, 1.01)
    k = 1.0 / (cv * cv)
    return r.gammavariate(k, mean / k)


def think(r, median, sigma=0.8):
    return median * math.exp(sigma * r.gauss(0, 1))


def hexid(r, n):
    return "%0*x" % (n, r.getrandbits(4 * n))


PNR_ALPH = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def pnr(r):
    return "".join(r.choice(PNR_ALPH) for _ in range(6))


def backend_of(ep):
    p = ep.split("?", 1)[0]
    if p.startswith(("/api/search", "/api/fares", "/partner/v2/availability", "/partner/v2/fares",
                     "/api/loyalty/awards", "/api/events/search")):
        return "search"
    if "/seatmap" in p or p.startswith(("/api/holds", "/partner/v2/holds", "/partner/v2/seatmaps")) or \
            (p.startswith("/api/events/") and p.endswith("/seats")):
        return "inventory"
    if p.startswith(("/api/payments", "/api/vouchers", "/partner/v2/payments")):
        return "payments"
    if p.startswith(("/api/bookings", "/api/checkin", "/api/boardingpass", "/partner/v2/bookings",
                     "/partner/v2/orders", "/api/offers")):
        return "booking"
    if p.startswith(("/login", "/sms", "/api/account", "/api/token", "/logout")):
        return "identity"
    if p.startswith(("/api/loyalty", "/partner/v2/loyalty")):
        return "loyalty"
    if p.startswith("/api/export"):
        return "export"
    if p.endswith("/status") and p.startswith("/api/flights"):
        return "status"
    return "web"


LAT = {"search": (650, 0.55), "inventory": (170, 0.5), "booking": (140, 0.5), "payments": (1300, 0.45),
       "identity": (110, 0.45), "loyalty": (190, 0.5), "export": (3500, 0.7), "status": (45, 0.4),
       "web": (90, 0.5)}


class World:
    def __init__(self, seed):
        self.seed = seed
        r = self.r = random.Random("world/%s" % seed)
        self.events = []
        self.used_ips = set()
        self.used_ids = set()
        self.outage_backend = r.choice(["search", "inventory", "booking", "payments", "identity", "loyalty"])
        self.out_start = T0 + r.uniform(1300, 4200)
        self.out_end = self.out_start + r.uniform(150, 420)
        self.out_err = r.uniform(0.6, 0.95)
        self.out_mix = r.choice([(502, 503, 504), (503, 503, 504), (502, 504, 504), (500, 503, 503)])
        self.onsale = T0 + 3600.0
        self.onsale_event = "ev_%05d" % r.randint(10000, 99999)
        self.events_ids = ["ev_%05d" % r.randint(10000, 99999) for _ in range(60)]
        self.flights = ["%s%d-%s" % (r.choice(AIRLINES), r.randint(10, 2999), r.choice(DATES).replace("-", ""))
                        for _ in range(3000)]
        self.leakable = []        # (key, tier) of legitimate partners whose key may leak
        self.loyalty_accts = []   # accounts of legitimate loyalty members (ATO may hit one)

    # ---------------------------------------------------------------- identities
    def uniq(self, make):
        while True:
            v = make()
            if v not in self.used_ids:
                self.used_ids.add(v)
                return v

    def acct(self, r):
        return self.uniq(lambda: "acct_%s" % hexid(r, 10))

    def key(self, r):
        return self.uniq(lambda: "ak_live_%s" % hexid(r, 20))

    def phone(self, r, premium=False, base=None):
        if base is not None:
            return base
        cc, pre, n = r.choice(PREMIUM_PHONE if premium else COUNTRY_PHONE)
        return self.uniq(lambda: cc + pre + "".join(str(r.randint(0, 9)) for _ in range(n)))

    def ip(self, r, kind="res"):
        while True:
            if kind in ("mob6", "res6"):
                pre = r.choice(V6_MOB if kind == "mob6" else V6_RES)
                v = "%s:%x:%x:%x:%x:%x:%x" % (pre, r.getrandbits(16), r.getrandbits(16), r.getrandbits(16),
                                              r.getrandbits(16), r.getrandbits(16), r.getrandbits(16))
            else:
                a = r.choice({"res": RES_A, "mob": MOB_A, "dc": DC_A, "corp": RES_A + DC_A}[kind])
                b, c, d = r.randint(0, 255), r.randint(0, 255), r.randint(1, 254)
                if any((a,) == x or (a, b) == x for x in RESERVED) or (a == 172 and 16 <= b < 32):
                    continue
                v = "%d.%d.%d.%d" % (a, b, c, d)
            if v not in self.used_ips:
                self.used_ips.add(v)
                return v

    def ip_block(self, r, n, kind="dc"):
        """n addresses of one provider block (a /16 or /20)."""
        while True:
            a = r.choice(DC_A if kind == "dc" else RES_A)
            b = r.randint(0, 255)
            if not any((a,) == x or (a, b) == x for x in RESERVED):
                break
        out = []
        for _ in range(n * 3):
            v = "%d.%d.%d.%d" % (a, b, r.randint(0, 15) + 16 * r.randint(0, 15), r.randint(1, 254))
            if v not in self.used_ips:
                self.used_ips.add(v)
                out.append(v)
            if len(out) >= n:
                break
        return out

    # ---------------------------------------------------------------- catalogue
    def route(self, r, hot=0.4):
        if r.random() < hot:
            return r.choice(HOT_ROUTES)
        o, d = r.sample(AIRPORTS, 2)
        return o, d

    def search_ep(self, r, o=None, d=None, date=None):
        if o is None:
            o, d = self.route(r)
        q = "/api/search?from=%s&to=%s&date=%s&adults=%d" % (o, d, date or r.choice(DATES), r.choice((1, 1, 1, 2, 2, 3, 4)))
        if r.random() < 0.3:
            q += "&return=%s" % r.choice(DATES)
        return q

    def flight(self, r, pool=None):
        return r.choice(pool or self.flights)

    # ---------------------------------------------------------------- emission
    def outage(self, backend, t, r):
        if backend == self.outage_backend and self.out_start <= t < self.out_end:
            ramp = min(1.0, (t - self.out_start) / 40.0, (self.out_end - t) / 40.0)
            if r.random() < self.out_err * (0.3 + 0.7 * ramp):
                return r.choice(self.out_mix)
        return None

    def latency(self, backend, status, r):
        med, sig = LAT[backend]
        if status in (504,):
            return round(r.uniform(10000, 30000), 1)
        if status in (502, 503):
            return round(r.uniform(2, 80) if r.random() < 0.6 else r.uniform(1000, 6000), 1)
        x = med * math.exp(sig * r.gauss(0, 1))
        if 400 <= status < 500:
            x *= 0.35
        return round(max(1.0, x), 1)


class Actor:
    def __init__(self, w, kind, label, idx):
        self.w, self.kind, self.label = w, kind, label
        self.name = "%s-%02d" % (kind, idx)
        self.r = random.Random("%s/%s/%d" % (w.seed, kind, idx))
        self.retry = (1, 4.0, 1.5) if label == "legit" else None
        self.n = 0

    def req(self, t, user, ep, ip, status=200, tier=None, retry=True):
        st = self._emit(t, user, ep, ip, status, tier)
        if st >= 500 and retry and self.retry:
            n, d, mult = self.retry
            for _ in range(n):
                t += d * self.r.uniform(0.6, 1.4)
                st = self._emit(t, user, ep, ip, status, tier)
                if st < 500:
                    break
                d *= mult
        return st

    def _emit(self, t, user, ep, ip, status, tier):
        w, r = self.w, self.r
        b = backend_of(ep)
        bad = w.outage(b, t, r)
        if bad is None and status < 500 and r.random() < 0.0012:
            bad = r.choice((500, 502, 503))
        st = bad or status
        if T0 <= t < T1:
            w.events.append((round(t, 3), user, ep, ip, tier, st, w.latency(b, st, r), self.label, self.name))
            self.n += 1
        return st


# ====================================================================== legitimate kinds

def k_shopper(a):
    """anonymous browsing of fares and seat maps from one home or phone address."""
    w, r = a.w, a.r
    ip = w.ip(r, r.choice(["res", "res", "res6", "mob", "mob6"]))
    for _ in range(r.choice((1, 1, 1, 2, 2, 3))):
        t = T0 + r.uniform(0, DUR - 200)
        o, d = w.route(r)
        for _ in range(r.randint(4, 28)):
            x = r.random()
            if x < 0.45:
                a.req(t, ip, w.search_ep(r, o, d), ip, 400 if r.random() < 0.02 else 200)
                if r.random() < 0.4:
                    a.req(t + r.uniform(0.05, 0.4), ip, "/api/fares/calendar?from=%s&to=%s&month=2026-%02d" % (o, d, r.randint(3, 7)), ip)
            elif x < 0.7:
                a.req(t, ip, "/api/flights/%s/seatmap" % w.flight(r), ip)
            elif x < 0.85:
                a.req(t, ip, "/api/offers/%s" % hexid(r, 12), ip, 410 if r.random() < 0.1 else 200)
            elif x < 0.92:
                a.req(t, ip, "/api/events/search?q=%s" % r.choice(["concert", "opera", "football", "comedy", "festival"]), ip)
            else:
                o, d = w.route(r)
            t += think(r, r.uniform(6, 25))


def k_booker(a):
    """shops anonymously, logs in (SMS code), holds a seat, pays (sometimes after a decline), views the booking."""
    w, r = a.w, a.r
    ip = w.ip(r, r.choice(["res", "res", "mob", "res6"]))
    acct, ph = w.acct(r), w.phone(r)
    t = T0 + r.uniform(0, DUR - 900)
    o, d = w.route(r)
    for _ in range(r.randint(3, 14)):
        a.req(t, ip, w.search_ep(r, o, d), ip)
        t += think(r, 15)
    fl = w.flight(r)
    a.req(t, ip, "/api/flights/%s/seatmap" % fl, ip)
    t += think(r, 20)
    for _ in range(r.choice((0, 0, 0, 1, 1, 2))):
        a.req(t, ip, "/login", ip, 401)
        t += think(r, 12)
    a.req(t, ip, "/login", ip, 200)
    a.req(t + r.uniform(0.3, 1), ph, "/sms/send", ip, 200)
    t += think(r, 25, 0.5)
    if r.random() < 0.1:
        a.req(t, ip, "/login/otp", ip, 401)
        t += think(r, 10)
    a.req(t, ip, "/login/otp", ip, 200)
    t += 1
    a.req(t, acct, "/api/account/profile", ip)
    t += think(r, 8)
    for _ in range(r.randint(1, 3)):
        hs = 201 if r.random() < 0.85 else 409
        a.req(t, acct, "/api/holds", ip, hs)
        t += think(r, 30)
        if hs == 201:
            break
    a.req(t, acct, "/api/bookings/draft/passengers", ip)
    t += think(r, 60, 0.5)
    for _ in range(r.choice((1, 1, 1, 2, 3))):
        st = a.req(t, acct, "/api/payments", ip, 402 if r.random() < 0.18 else 200)
        t += think(r, 40)
        if st == 200:
            break
    a.req(t, acct, "/api/payments/%s/3ds" % hexid(r, 10), ip)
    p = pnr(r)
    for _ in range(r.randint(1, 4)):
        t += think(r, 20)
        a.req(t, acct, "/api/bookings/%s" % p, ip)
    if r.random() < 0.5:
        a.req(t + think(r, 30), acct, "/api/bookings/%s/ancillaries" % p, ip)


def k_mobile(a):
    """signed-in app user on a phone: address moves between home wifi, LTE cells and IPv6; status polling."""
    w, r = a.w, a.r
    acct = w.acct(r)
    ips = [w.ip(r, "res")] + [w.ip(r, r.choice(["mob", "mob6", "mob6"])) for _ in range(r.randint(2, 7))]
    fl, p = w.flight(r), pnr(r)
    t = T0 + r.uniform(-200, DUR * 0.6)
    end = min(T1, t + r.uniform(900, 4500))
    ip = ips[0]
    nxt_move = t + r.uniform(120, 900)
    a.req(t, acct, "/api/token/refresh", ip)
    while t < end:
        if t > nxt_move:
            ip = r.choice(ips)
            nxt_move = t + r.uniform(60, 900)
            a.req(t, acct, "/api/token/refresh", ip)
        x = r.random()
        if x < 0.45:
            a.req(t, acct, "/api/flights/%s/status" % fl, ip)
        elif x < 0.6:
            a.req(t, acct, "/api/bookings/%s" % p, ip)
        elif x < 0.7:
            a.req(t, acct, "/api/boardingpass/%s" % p, ip)
        elif x < 0.8:
            a.req(t, acct, "/api/loyalty/points", ip)
        elif x < 0.9:
            a.req(t, acct, w.search_ep(r), ip)
        else:
            a.req(t, acct, "/api/notifications", ip)
        t += think(r, r.uniform(20, 90), 0.7) if r.random() < 0.85 else r.uniform(300, 900)


def k_loyalty(a):
    """loyalty member checking points and history, searching award seats, redeeming or transferring now and then."""
    w, r = a.w, a.r
    acct = w.acct(r)
    w.loyalty_accts.append(acct)
    ip = w.ip(r, r.choice(["res", "res6", "mob"]))
    for _ in range(r.choice((1, 1, 2))):
        t = T0 + r.uniform(0, DUR - 600)
        a.req(t, ip, "/login", ip, 200 if r.random() < 0.85 else 401)
        t += think(r, 5)
        for _ in range(r.randint(5, 30)):
            x = r.random()
            if x < 0.3:
                a.req(t, acct, "/api/loyalty/points", ip)
            elif x < 0.45:
                a.req(t, acct, "/api/loyalty/history?page=%d" % r.randint(1, 4), ip)
            elif x < 0.75:
                o, d = w.route(r)
                a.req(t, acct, "/api/loyalty/awards/search?from=%s&to=%s&date=%s" % (o, d, r.choice(DATES)), ip)
            elif x < 0.85:
                a.req(t, acct, "/api/loyalty/vouchers", ip)
            elif x < 0.93:
                a.req(t, acct, "/api/loyalty/redeem", ip, 200 if r.random() < 0.7 else 409)
            else:
                a.req(t, acct, "/api/loyalty/transfer", ip, 200 if r.random() < 0.8 else 422)
            t += think(r, 18)


def k_checkin(a):
    """day-of-travel: check-in for a party, seat changes, boarding passes re-downloaded, gate/status polling."""
    w, r = a.w, a.r
    acct, p, fl = w.acct(r), pnr(r), w.flight(r)
    home, apt = w.ip(r, r.choice(["res", "mob"])), w.ip(r, r.choice(["mob", "mob6"]))
    t = T0 + r.uniform(0, DUR - 1200)
    ip = home
    a.req(t, ip, "/login", ip, 200)
    t += 3
    pax = r.randint(1, 5)
    a.req(t, acct, "/api/bookings/%s" % p, ip)
    for _ in range(pax):
        t += think(r, 15)
        a.req(t, acct, "/api/checkin/%s" % p, ip, 200 if r.random() < 0.9 else 422)
    a.req(t + 2, acct, "/api/flights/%s/seatmap" % fl, ip)
    for _ in range(r.randint(0, 3)):
        t += think(r, 20)
        a.req(t, acct, "/api/holds", ip, 201 if r.random() < 0.7 else 409)
    for _ in range(pax):
        t += think(r, 4)
        a.req(t, acct, "/api/boardingpass/%s" % p, ip)
    t += r.uniform(600, 1800)
    ip = apt
    while t < T1 and r.random() < 0.93:
        a.req(t, acct, "/api/flights/%s/status" % fl, ip)
        if r.random() < 0.15:
            a.req(t + 1, acct, "/api/boardingpass/%s" % p, ip)
        t += think(r, 90, 0.6)


def k_office_nat(a):
    """corporate travel office: 5-30 agents behind one NAT address; anonymous searches share the address subject."""
    w, r = a.w, a.r
    nat = w.ip(r, "corp")
    agents = [w.acct(r) for _ in range(r.randint(5, 30))]
    for ag in agents:
        t = T0 + r.uniform(-100, 1500)
        signed = False
        while t < T1:
            x = r.random()
            subj = ag if signed else nat
            if x < 0.5:
                a.req(t, subj, w.search_ep(r), nat)
            elif x < 0.62:
                a.req(t, subj, "/api/fares/calendar?from=%s&to=%s&month=2026-04" % w.route(r), nat)
            elif x < 0.72:
                a.req(t, subj, "/api/flights/%s/seatmap" % w.flight(r), nat)
            elif x < 0.78 and not signed:
                a.req(t, nat, "/login", nat, 200 if r.random() < 0.9 else 401)
                signed = True
            elif x < 0.86 and signed:
                a.req(t, ag, "/api/holds", nat, 201)
                if r.random() < 0.6:
                    a.req(t + think(r, 60), ag, "/api/payments", nat, 200)
            elif x < 0.93:
                a.req(t, subj, "/api/bookings/%s" % pnr(r), nat, 200 if signed else (404 if r.random() < 0.05 else 200))
            else:
                t += r.uniform(300, 1500)   # meeting, phone call
            t += think(r, r.uniform(15, 60))


def k_airport(a):
    """airport or hotel public wifi: dozens to hundreds of travellers behind one address, status, check-in, PNR look-ups (typos)."""
    w, r = a.w, a.r
    nat = w.ip(r, "corp")
    for _ in range(r.randint(40, 220)):
        t = T0 + r.uniform(-300, DUR)
        p, fl = pnr(r), w.flight(r)
        signed = r.random() < 0.35
        subj = w.acct(r) if signed else nat
        if signed:
            a.req(t, nat, "/login", nat, 200 if r.random() < 0.9 else 401)
            t += 4
        for _ in range(r.randint(2, 14)):
            x = r.random()
            if x < 0.4:
                a.req(t, subj, "/api/flights/%s/status" % fl, nat)
            elif x < 0.6:
                typo = r.random() < 0.07
                a.req(t, subj, "/api/bookings/%s" % (pnr(r) if typo else p), nat, 404 if typo else 200)
            elif x < 0.75:
                a.req(t, subj, "/api/checkin/%s" % p, nat, 200 if r.random() < 0.9 else 422)
            elif x < 0.9:
                a.req(t, subj, "/api/boardingpass/%s" % p, nat)
            else:
                a.req(t, subj, w.search_ep(r), nat)
            t += think(r, 25)


def partner_loop(a, key, tier, ips, start, end, per_min, cv, mix, err=0.01, pool=None):
    """generic machine client: requests at per_min with interarrival CV, endpoint from mix."""
    w, r = a.w, a.r
    t = start
    mean = 60.0 / per_min
    while t < end:
        ep_kind = mix(r)
        ip = r.choice(ips)
        st = 200
        if ep_kind == "avail":
            o, d = w.route(r, 0.2)
            ep = "/partner/v2/availability?origin=%s&destination=%s&date=%s" % (o, d, r.choice(DATES))
        elif ep_kind == "fares":
            o, d = w.route(r, 0.2)
            ep = "/partner/v2/fares?origin=%s&destination=%s" % (o, d)
        elif ep_kind == "seatmap":
            ep = "/partner/v2/seatmaps/%s" % w.flight(r, pool)
        elif ep_kind == "search":
            ep = w.search_ep(r)
        elif ep_kind == "book":
            ep, st = "/partner/v2/bookings", (201 if r.random() < 0.9 else 409)
        elif ep_kind == "hold":
            ep, st = "/partner/v2/holds", (201 if r.random() < 0.9 else 409)
        elif ep_kind == "getbook":
            ep = "/partner/v2/bookings/%s" % pnr(r)
        elif ep_kind == "ticket":
            ep = "/partner/v2/orders/%s/ticket" % hexid(r, 10)
        elif ep_kind == "pay":
            ep, st = "/partner/v2/payments", (200 if r.random() < 0.95 else 402)
        elif ep_kind == "export":
            ep, st = "/api/export", 202
        elif ep_kind == "webhook":
            ep = "/partner/v2/webhooks"
        else:
            ep = "/partner/v2/%s" % ep_kind
        if st == 200 and r.random() < err:
            st = r.choice((400, 422, 422, 404))
        a.req(t, key, ep, ip, st, tier)
        t += gap(r, mean, cv)


def mix_of(r, weights):
    items = list(weights.items())
    tot = sum(v for _, v in items)

    def pick(rr):
        x = rr.random() * tot
        for k, v in items:
            x -= v
            if x <= 0:
                return k
        return items[-1][0]
    return pick


def k_agency(a):
    """travel agency on a pro key: business-hours shopping and booking from its office servers."""
    w, r = a.w, a.r
    key = w.key(r)
    w.leakable.append((key, "pro"))
    ips = [w.ip(r, r.choice(["corp", "dc"])) for _ in range(r.randint(1, 3))]
    a.retry = (r.randint(1, 3), r.uniform(0.5, 3), 2.0)
    rate = r.uniform(3, 16)
    mix = mix_of(r, {"avail": 6, "fares": 2, "seatmap": 2, "book": 0.5, "getbook": 1.5, "ticket": 0.3,
                     "pay": 0.4, "search": r.choice((0, 0.5, 1))})
    partner_loop(a, key, "pro", ips, T0 + r.uniform(-60, 600), T1, rate, r.uniform(0.6, 1.4), mix, r.uniform(0.003, 0.03))


def k_devfree(a):
    """developer on the free tier: bursts while testing, malformed calls, from laptop and CI."""
    w, r = a.w, a.r
    key = w.key(r)
    ips = [w.ip(r, "res"), w.ip(r, "dc")]
    t = T0 + r.uniform(0, 2000)
    while t < T1:
        ip = r.choice(ips)
        for _ in range(r.randint(3, 22)):
            x = r.random()
            if x < 0.5:
                ep = "/partner/v2/availability?origin=%s&destination=%s" % w.route(r)
            elif x < 0.7:
                ep = w.search_ep(r)
            elif x < 0.85:
                ep = "/partner/v2/seatmaps/%s" % w.flight(r)
            else:
                ep = "/partner/v2/bookings"
            st = r.choices((200, 400, 422, 401, 404), (70, 10, 10, 5, 5))[0]
            a.req(t, key, ep, ip, st, "free")
            t += r.uniform(0.5, 8)
        t += r.uniform(120, 1200)


def k_ent_machine(a):
    """enterprise OTA backend near its limits: steady 35-49/min on the partner API plus searches and exports."""
    w, r = a.w, a.r
    key = w.key(r)
    w.leakable.append((key, "enterprise"))
    ips = w.ip_block(r, r.randint(2, 6))
    a.retry = (3, r.uniform(0.5, 2), 2.0)
    mix = mix_of(r, {"avail": 6, "fares": 3, "seatmap": 2, "hold": 0.4, "book": 0.3, "getbook": 1, "ticket": 0.3,
                     "pay": 0.3})
    partner_loop(a, key, "enterprise", ips, T0 - 10, T1, r.uniform(35, 49), r.uniform(0.15, 0.6), mix, r.uniform(0.002, 0.02))
    partner_loop(a, key, "enterprise", ips, T0 - 10, T1, r.uniform(5, 9.5), r.uniform(0.1, 0.5), lambda rr: "search", 0.005)
    if r.random() < 0.6:
        partner_loop(a, key, "enterprise", ips[:1], T0 + r.uniform(0, 600), T1, r.uniform(0.3, 1.5), 0.5,
                     lambda rr: "export", 0.0)


def k_aggregator(a):
    """meta-search aggregator: 3-6 keys, each spread over dozens of cloud workers, each key near its limits."""
    w, r = a.w, a.r
    pool = w.ip_block(r, r.randint(20, 80)) + w.ip_block(r, r.randint(10, 40))
    a.retry = (2, r.uniform(0.2, 1), 2.0)
    for _ in range(r.randint(3, 6)):
        tier = r.choice(("enterprise", "enterprise", "pro"))
        key = w.key(r)
        workers = r.sample(pool, min(len(pool), r.randint(8, 40)))
        rate = r.uniform(30, 48) if tier == "enterprise" else r.uniform(12, 16)
        mix = mix_of(r, {"avail": 7, "fares": 4, "seatmap": r.uniform(0.5, 3)})
        partner_loop(a, key, tier, workers, T0 - 5, T1, rate, r.uniform(0.3, 1.0), mix, r.uniform(0.002, 0.015))


def k_rotated_key(a):
    """partner whose key was rotated or expired: a stale worker keeps calling with the old key (401s) until ops notice."""
    w, r = a.w, a.r
    tier = r.choice(("pro", "pro", "enterprise"))
    old, new = w.key(r), w.key(r)
    ips = [w.ip(r, "dc") for _ in range(r.randint(1, 3))]
    rate = r.uniform(4, 25)
    mix = mix_of(r, {"avail": 5, "fares": 2, "getbook": 1, "seatmap": 1})
    switch = T0 + r.uniform(600, 4800)
    fixed = switch + r.uniform(300, 2400) if r.random() < 0.7 else T1
    partner_loop(a, new, tier, ips, T0 - 5, switch, rate, 0.6, mix, 0.01)
    t = switch
    while t < fixed:   # the worker still holding the old key
        a.req(t, old, "/partner/v2/availability?origin=%s&destination=%s" % w.route(r), r.choice(ips), 401, tier)
        t += gap(r, 60.0 / (rate * r.uniform(0.3, 1.5)), 0.5)
    partner_loop(a, new, tier, ips, switch + r.uniform(10, 120), T1, rate, 0.6, mix, 0.01)


def k_broken_deploy(a):
    """partner ships a broken release: 400/422 on most calls for 5-25 minutes (with retries), then rolls back."""
    w, r = a.w, a.r
    tier = r.choice(("pro", "enterprise"))
    key = w.key(r)
    ips = [w.ip(r, "dc") for _ in range(r.randint(1, 4))]
    rate = r.uniform(5, 30)
    bad_from = T0 + r.uniform(300, 4000)
    bad_to = bad_from + r.uniform(300, 1500)
    t = T0 - 5
    while t < T1:
        ip = r.choice(ips)
        if bad_from <= t < bad_to:
            ep = r.choice(["/partner/v2/bookings", "/partner/v2/availability", "/partner/v2/holds"])
            st = r.choice((400, 422, 422, 415))
            for k in range(r.choice((1, 1, 2, 3))):
                a.req(t + k * r.uniform(0.2, 2), key, ep, ip, st, tier)
            t += gap(r, 60.0 / (rate * 1.3), 0.5)
        else:
            o, d = w.route(r)
            ep = r.choice(["/partner/v2/availability?origin=%s&destination=%s" % (o, d), "/partner/v2/fares?origin=%s" % o,
                           "/partner/v2/bookings/%s" % pnr(r)])
            a.req(t, key, ep, ip, 200, tier)
            t += gap(r, 60.0 / rate, 0.7)


def k_cancelled_poller(a):
    """integration or app polling a booking that was cancelled: 404/410 every few seconds, beside normal calls."""
    w, r = a.w, a.r
    if r.random() < 0.6:
        subj, tier = w.key(r), r.choice(("pro", "enterprise", "free"))
        ep = "/partner/v2/bookings/%s" % pnr(r)
        ips = [w.ip(r, "dc")]
    else:
        subj, tier = w.acct(r), None
        ep = "/api/bookings/%s" % pnr(r)
        ips = [w.ip(r, "mob"), w.ip(r, "res")]
    st = r.choice((404, 410))
    every = r.uniform(5, 60)
    t = T0 + r.uniform(-60, 2000)
    stop = T1 if r.random() < 0.6 else t + r.uniform(900, 3000)
    while t < stop:
        a.req(t, subj, ep, r.choice(ips), st, tier)
        if r.random() < 0.3:
            a.req(t + r.uniform(0.1, 2), subj, "/partner/v2/availability?origin=%s&destination=%s" % w.route(r)
                  if tier else w.search_ep(r), r.choice(ips), 200, tier)
        t += gap(r, every, 0.15)


def backend_ep(w, r, backend):
    if backend == "search":
        return "/partner/v2/availability?origin=%s&destination=%s" % w.route(r)
    if backend == "inventory":
        return "/partner/v2/seatmaps/%s" % w.flight(r)
    if backend == "booking":
        return "/partner/v2/bookings/%s" % pnr(r)
    if backend == "payments":
        return "/partner/v2/payments"
    if backend == "identity":
        return "/api/token/refresh"
    return "/partner/v2/loyalty/accruals"


def k_retry_storm(a):
    """client of the failing backend with an aggressive retry loop: its rate multiplies during the outage."""
    w, r = a.w, a.r
    tier = r.choice(("pro", "enterprise", "enterprise"))
    key = w.key(r)
    ips = w.ip_block(r, r.randint(1, 12))
    a.retry = (r.randint(4, 15), r.uniform(0.05, 0.6), r.choice((1.0, 1.0, 1.3)))
    rate = r.uniform(6, 30)
    t = T0 - 5
    while t < T1:
        ep = backend_ep(w, r, w.outage_backend) if r.random() < 0.75 else backend_ep(w, r, "search")
        st = 201 if ep.endswith(("/payments", "/accruals")) else 200
        a.req(t, key, ep, r.choice(ips), st, tier)
        t += gap(r, 60.0 / rate, 0.6)


def k_monitor(a):
    """synthetic uptime checks from several regions every 30-60 s on fixed endpoints, one monitoring key."""
    w, r = a.w, a.r
    key = w.key(r)
    tier = r.choice(("pro", "enterprise"))
    regions = w.ip_block(r, r.randint(3, 6))
    every = r.choice((30.0, 60.0, 60.0, 120.0))
    eps = ["/partner/v2/availability?origin=LHR&destination=JFK&date=2026-04-01", "/partner/v2/fares?origin=LHR",
           "/partner/v2/seatmaps/%s" % w.flights[0], "/partner/v2/health"][: r.randint(2, 4)]
    for ip in regions:
        t = T0 + r.uniform(0, every)
        while t < T1:
            for i, ep in enumerate(eps):
                a.req(t + i * r.uniform(0.05, 0.3), key, ep, ip, 200, tier, retry=False)
            t += every + r.uniform(-0.2, 0.2)


def k_crawler(a):
    """verified search-engine crawler on public fare pages from its address block, one subject per address."""
    w, r = a.w, a.r
    ips = w.ip_block(r, r.randint(5, 25))
    rate = r.uniform(4, 20)
    t = T0 + r.uniform(0, 300)
    while t < T1:
        ip = r.choice(ips)
        o, d = w.route(r, 0.1)
        ep = r.choice(["/api/fares/calendar?from=%s&to=%s&month=2026-04" % (o, d), "/api/routes/%s-%s" % (o, d),
                       "/api/deals/%s" % o, "/api/events/%s" % r.choice(w.events_ids)])
        a.req(t, ip, ep, ip, 404 if r.random() < 0.04 else (301 if r.random() < 0.05 else 200), retry=False)
        t += gap(r, 60.0 / rate, 1.0)


def k_agent_desk(a):
    """human airline/agency desk agent on an account: many holds released for customers who change their minds."""
    w, r = a.w, a.r
    acct = w.acct(r)
    ip = w.ip(r, "corp")
    t = T0 + r.uniform(0, 600)
    a.req(t, ip, "/login", ip, 200)
    while t < T1:
        for _ in range(r.randint(2, 8)):
            a.req(t, acct, w.search_ep(r), ip)
            t += think(r, 10)
        fl = w.flight(r)
        a.req(t, acct, "/api/flights/%s/seatmap" % fl, ip)
        for _ in range(r.randint(1, 4)):
            t += think(r, 12)
            hid = hexid(r, 10)
            a.req(t, acct, "/api/holds", ip, 201 if r.random() < 0.85 else 409)
            if r.random() < 0.7:
                a.req(t + think(r, 40), acct, "/api/holds/%s" % hid, ip, 204)
        if r.random() < 0.3:
            a.req(t + think(r, 30), acct, "/api/payments", ip, 200 if r.random() < 0.9 else 402)
        a.req(t + think(r, 20), acct, "/api/bookings/%s" % pnr(r), ip, 200 if r.random() < 0.95 else 404)
        t += think(r, 90)


def k_group(a):
    """group booking coordinator: holds 10-40 seats over several flights, pays some later, lets others go."""
    w, r = a.w, a.r
    acct = w.acct(r)
    ip = w.ip(r, r.choice(["res", "corp"]))
    t = T0 + r.uniform(0, DUR - 2400)
    fls = [w.flight(r) for _ in range(r.randint(1, 4))]
    a.req(t, ip, "/login", ip, 200)
    for fl in fls:
        a.req(t, acct, "/api/flights/%s/seatmap" % fl, ip)
        for _ in range(r.randint(3, 12)):
            t += r.uniform(3, 25)
            a.req(t, acct, "/api/holds", ip, 201 if r.random() < 0.8 else 409)
    t += r.uniform(300, 1800)
    for _ in range(r.randint(0, 6)):
        a.req(t, acct, "/api/payments", ip, 200 if r.random() < 0.85 else 402)
        t += think(r, 60)
    for _ in range(r.randint(0, 10)):
        a.req(t, acct, "/api/holds/%s" % hexid(r, 10), ip, 204)
        t += r.uniform(2, 10)


def k_family(a):
    """one loyalty account shared by a family on 3-5 devices in different places (addresses and IPv6 change)."""
    w, r = a.w, a.r
    acct = w.acct(r)
    w.loyalty_accts.append(acct)
    for _ in range(r.randint(3, 5)):
        ip = w.ip(r, r.choice(["res", "mob", "mob6", "res6"]))
        t = T0 + r.uniform(0, DUR - 300)
        a.req(t, ip, "/login", ip, 200 if r.random() < 0.8 else 401)
        for _ in range(r.randint(3, 15)):
            t += think(r, 20)
            x = r.random()
            if x < 0.35:
                a.req(t, acct, "/api/loyalty/points", ip)
            elif x < 0.6:
                a.req(t, acct, "/api/loyalty/awards/search?from=%s&to=%s" % w.route(r), ip)
            elif x < 0.75:
                a.req(t, acct, "/api/bookings/%s" % pnr(r), ip)
            elif x < 0.85:
                a.req(t, acct, "/api/loyalty/redeem", ip, 200 if r.random() < 0.6 else 409)
            else:
                a.req(t, acct, "/api/account/profile", ip)


def k_forgot_pw(a):
    """forgot the password: failed log-ins, a reset, SMS codes requested again and again, a wrong code, then in."""
    w, r = a.w, a.r
    ip = w.ip(r, r.choice(["res", "mob", "res6"]))
    ph, acct = w.phone(r), w.acct(r)
    t = T0 + r.uniform(0, DUR - 900)
    for _ in range(r.randint(3, 9)):
        a.req(t, ip, "/login", ip, 401)
        t += think(r, 15)
    a.req(t, ip, "/api/account/password-reset", ip, 202)
    for _ in range(r.randint(1, 6)):
        t += think(r, 40, 0.5)
        a.req(t, ph, "/sms/send", ip, 200)
    for _ in range(r.randint(0, 3)):
        t += think(r, 20)
        a.req(t, ip, "/login/otp", ip, 401)
    a.req(t + 15, ip, "/login/otp", ip, 200)
    a.req(t + 40, ip, "/login", ip, 200)
    t += 45
    for _ in range(r.randint(2, 10)):
        a.req(t, acct, r.choice(["/api/account/profile", "/api/loyalty/points", "/api/bookings/%s" % pnr(r)]), ip)
        t += think(r, 15)


def k_vpn(a):
    """privacy-VPN user: the exit address (a data centre) changes every few minutes; signed in for part of it."""
    w, r = a.w, a.r
    acct = w.acct(r)
    t = T0 + r.uniform(0, DUR - 1500)
    end = min(T1, t + r.uniform(900, 3600))
    ip = w.ip(r, "dc")
    mv = t + r.uniform(60, 400)
    signed = False
    while t < end:
        if t > mv:
            ip, mv = w.ip(r, "dc"), t + r.uniform(60, 400)
        subj = acct if signed else ip
        x = r.random()
        if x < 0.45:
            a.req(t, subj, w.search_ep(r), ip)
        elif x < 0.6:
            a.req(t, subj, "/api/flights/%s/seatmap" % w.flight(r), ip)
        elif x < 0.68 and not signed:
            a.req(t, ip, "/login", ip, 200)
            signed = True
        elif x < 0.8:
            a.req(t, subj, "/api/loyalty/points" if signed else "/api/fares/calendar?from=LHR&to=%s" % r.choice(AIRPORTS), ip)
        else:
            a.req(t, subj, "/api/offers/%s" % hexid(r, 12), ip, 410 if r.random() < 0.1 else 200)
        t += think(r, 25)


def k_support(a):
    """internal customer-support console on an enterprise key: many different PNRs looked up (typos 404), changes."""
    w, r = a.w, a.r
    key = w.key(r)
    ips = [w.ip(r, "corp") for _ in range(r.randint(1, 2))]
    agents = r.randint(4, 20)
    t = T0 - 10
    while t < T1:
        p = pnr(r)
        ip = r.choice(ips)
        typo = r.random() < r.uniform(0.03, 0.1)
        a.req(t, key, "/partner/v2/bookings/%s" % p, ip, 404 if typo else 200, "enterprise")
        if not typo:
            for _ in range(r.randint(0, 4)):
                ep = r.choice(["/partner/v2/bookings/%s/history" % p, "/partner/v2/orders/%s/ticket" % hexid(r, 10),
                               "/partner/v2/bookings/%s/refund" % p, "/partner/v2/loyalty/members/%s" % hexid(r, 8)])
                a.req(t + r.uniform(2, 60), key, ep, ip, 200 if r.random() < 0.95 else 409, "enterprise")
        t += gap(r, 240.0 / agents, 1.0)


def k_onsale(a):
    """fan at the 08:00 event on-sale: arrives early, refreshes seat availability every few seconds, fights for holds (409s)."""
    w, r = a.w, a.r
    acct = w.acct(r)
    ip = w.ip(r, r.choice(["res", "mob", "mob6", "res6"]))
    ev = w.onsale_event
    t = w.onsale - r.uniform(60, 900)
    a.req(t, ip, "/login", ip, 200)
    while t < w.onsale:
        a.req(t, acct, "/api/events/%s" % ev, ip, 200)
        t += r.uniform(10, 60)
    t = w.onsale + r.uniform(0, 20)
    got = False
    tries = 0
    while not got and tries < r.randint(6, 60) and t < T1:
        a.req(t, acct, "/api/events/%s/seats" % ev, ip)
        t += r.uniform(1.5, 8)
        if r.random() < 0.5:
            got = r.random() < 0.25
            a.req(t, acct, "/api/holds", ip, 201 if got else 409)
            t += r.uniform(1, 4)
        tries += 1
    if got:
        for _ in range(r.choice((1, 1, 2))):
            t += think(r, 60, 0.4)
            if a.req(t, acct, "/api/payments", ip, 200 if r.random() < 0.85 else 402) == 200:
                break


def k_fare_alert(a):
    """legit fare-alert app on a pro key: polls fares of its users' routes steadily from a few cloud hosts."""
    w, r = a.w, a.r
    key = w.key(r)
    ips = w.ip_block(r, r.randint(1, 3))
    routes = [w.route(r, 0.2) for _ in range(r.randint(80, 400))]
    rate = r.uniform(8, 15)
    t = T0 - 5
    i = 0
    while t < T1:
        o, d = routes[i % len(routes)]
        i += 1
        a.req(t, key, "/partner/v2/fares?origin=%s&destination=%s" % (o, d), r.choice(ips), 200, "pro")
        t += gap(r, 60.0 / rate, 0.25)


def k_loyalty_partner(a):
    """hotel/car-rental partner posting points accruals in batches; some unknown member numbers (404)."""
    w, r = a.w, a.r
    key = w.key(r)
    ips = w.ip_block(r, r.randint(1, 2))
    t = T0 + r.uniform(0, 300)
    every = r.choice((300.0, 600.0, 900.0))
    while t < T1:
        for _ in range(r.randint(20, 140)):
            a.req(t, key, "/partner/v2/loyalty/accruals", r.choice(ips), 404 if r.random() < 0.04 else 201, "enterprise")
            t += r.uniform(0.3, 1.5)
        t += every * r.uniform(0.9, 1.1)


def k_app_bug(a):
    """app release with a token-refresh bug: a phone loops on 401s every 1-3 s for minutes until the user kills the app."""
    w, r = a.w, a.r
    acct = w.acct(r)
    ips = [w.ip(r, r.choice(["mob", "mob6"])) for _ in range(r.randint(1, 3))]
    t = T0 + r.uniform(0, DUR - 1200)
    for _ in range(r.randint(1, 3)):
        ip = r.choice(ips)
        for _ in range(r.randint(5, 20)):
            a.req(t, acct, r.choice(["/api/bookings/%s" % pnr(r), "/api/flights/%s/status" % w.flight(r), "/api/loyalty/points"]), ip)
            t += think(r, 30)
        stop = t + r.uniform(60, 900)
        while t < stop:
            a.req(t, acct, "/api/token/refresh", ip, 401)
            t += r.uniform(0.8, 3.5)
        t += r.uniform(300, 1200)
        a.req(t, ip, "/login", ip, 200)


def k_export_job(a):
    """scheduled reporting job on a pro/enterprise key: runs several exports back to back, polls their status, manages webhooks."""
    w, r = a.w, a.r
    tier = r.choice(("pro", "enterprise"))
    key = w.key(r)
    ip = w.ip(r, "dc")
    every = r.choice((600.0, 900.0, 1800.0))
    t = T0 + r.uniform(0, every)
    while t < T1:
        for _ in range(r.randint(2, 9)):
            eid = hexid(r, 8)
            a.req(t, key, "/api/export", ip, 202, tier)
            tt = t
            for _ in range(r.randint(1, 8)):
                tt += r.uniform(2, 6)
                a.req(tt, key, "/api/export/%s" % eid, ip, 200, tier)
            t += r.uniform(3, 15)
        if r.random() < 0.3:
            a.req(t, key, "/partner/v2/webhooks", ip, 200, tier)
            a.req(t + 1, key, "/partner/v2/webhooks/test", ip, 202 if r.random() < 0.8 else 422, tier)
        t += every * r.uniform(0.95, 1.05)


# ====================================================================== abusive kinds

def k_scraper_fast(a):
    """fare scraper from 1-3 data-centre addresses, anonymous: search, calendar and seat maps at a high steady rate."""
    w, r = a.w, a.r
    ips = w.ip_block(r, r.randint(1, 3))
    start = T0 + r.uniform(-100, 2500)
    end = min(T1, start + r.uniform(1500, 5400))
    rate = r.uniform(25, 110)
    cv = r.uniform(0.1, 0.7)
    t = start
    while t < end:
        ip = r.choice(ips)
        x = r.random()
        if x < 0.55:
            ep = w.search_ep(r)
        elif x < 0.8:
            ep = "/api/fares/calendar?from=%s&to=%s&month=2026-%02d" % (w.route(r, 0.1) + (r.randint(3, 9),))
        else:
            ep = "/api/flights/%s/seatmap" % w.flight(r)
        a.req(t, ip, ep, ip, 200 if r.random() < 0.97 else 400)
        t += gap(r, 60.0 / rate, cv)


def k_scraper_dist(a):
    """polite distributed scraper: residential proxy pool, a new address every 1-10 requests, human-like pacing per address."""
    w, r = a.w, a.r
    npool = r.randint(150, 1200)
    pool = [w.ip(r, r.choice(["res", "res", "mob"])) for _ in range(npool)]
    rate = r.uniform(15, 70)
    t = T0 + r.uniform(-60, 1200)
    while t < T1:
        ip = r.choice(pool)
        for _ in range(r.randint(1, 10)):
            x = r.random()
            ep = w.search_ep(r) if x < 0.6 else ("/api/flights/%s/seatmap" % w.flight(r) if x < 0.85 else
                                                 "/api/fares/calendar?from=%s&to=%s&month=2026-05" % w.route(r))
            a.req(t, ip, ep, ip)
            t += gap(r, 60.0 / rate, 1.0)


def k_scraper_keys(a):
    """scraper on 5-20 free-tier keys signed up under throwaway e-mails, each kept just under 100/h and 20/min."""
    w, r = a.w, a.r
    ips = w.ip_block(r, r.randint(3, 10))
    for _ in range(r.randint(5, 20)):
        key = w.key(r)
        rate = r.uniform(1.3, 1.62)   # per minute: 80-97 an hour
        mix = mix_of(r, {"avail": 5, "fares": 3, "seatmap": 2})
        partner_loop(a, key, "free", ips, T0 + r.uniform(-300, 600), T1, rate, r.uniform(0.05, 0.5), mix, 0.01)


def k_seatmap_harvest(a):
    """signed-in accounts sweeping the seat maps of every flight at 20-45/min (under the 50/min), flights that do not exist 404."""
    w, r = a.w, a.r
    accts = [w.acct(r) for _ in range(r.randint(1, 3))]
    ips = w.ip_block(r, r.randint(1, 4))
    rate = r.uniform(20, 45)
    fl = list(w.flights)
    r.shuffle(fl)
    t = T0 + r.uniform(0, 2000)
    i = 0
    while t < T1:
        acct = accts[i % len(accts)]
        bogus = r.random() < 0.08
        f = ("%s%d-%s" % (r.choice(AIRLINES), r.randint(10, 2999), r.choice(DATES).replace("-", ""))) if bogus else fl[i % len(fl)]
        a.req(t, acct, "/api/flights/%s/seatmap" % f, r.choice(ips), 404 if bogus else 200)
        i += 1
        t += gap(r, 60.0 / (rate / len(accts)) / len(accts), r.uniform(0.05, 0.4))


def k_seat_spinner(a):
    """seat spinning: 3-10 accounts re-hold the same seats on a few flights before each hold expires, never pay."""
    w, r = a.w, a.r
    accts = [w.acct(r) for _ in range(r.randint(3, 10))]
    rotate = r.random() < 0.5
    ips = [w.ip(r, "res") for _ in range(30)] if rotate else w.ip_block(r, 2)
    fls = [w.flight(r) for _ in range(r.randint(1, 4))]
    hold_s = r.choice((600.0, 900.0, 1200.0))
    for acct in accts:
        t = T0 + r.uniform(-200, 600)
        ip = r.choice(ips)
        a.req(t, ip, "/login", ip, 200)
        while t < T1:
            fl = r.choice(fls)
            a.req(t, acct, "/api/flights/%s/seatmap" % fl, ip)
            for _ in range(r.randint(2, 9)):
                t += r.uniform(0.5, 4)
                a.req(t, acct, "/api/holds", ip, 201 if r.random() < 0.9 else 409)
            a.req(t + r.uniform(1, 5), acct, "/api/bookings/draft/passengers", ip, 200)
            t += hold_s * r.uniform(0.85, 0.98)
            if rotate:
                ip = r.choice(ips)


def k_cred_stuffer(a):
    """credential stuffing with a breached list: fast from a few hosts or slow through a proxy pool; 401s, a few hits."""
    w, r = a.w, a.r
    fast = r.random() < 0.5
    pool = w.ip_block(r, r.randint(1, 4)) if fast else [w.ip(r, r.choice(["res", "mob"])) for _ in range(r.randint(100, 800))]
    rate = r.uniform(40, 200) if fast else r.uniform(10, 60)
    start = T0 + r.uniform(-100, 3000)
    end = min(T1, start + r.uniform(900, 5400))
    t = start
    while t < end:
        ip = r.choice(pool)
        hit = r.random() < 0.012
        st = 200 if hit else (403 if r.random() < 0.05 else 401)
        a.req(t, ip, "/login", ip, st)
        if hit and r.random() < 0.5:
            a.req(t + r.uniform(0.5, 3), ip, "/login/otp", ip, 401)
        t += gap(r, 60.0 / rate, r.uniform(0.2, 1.2))


def k_sprayer(a):
    """password spraying: one or two common passwords over many accounts, slowly, from a handful of addresses with pauses."""
    w, r = a.w, a.r
    ips = [w.ip(r, r.choice(["dc", "res"])) for _ in range(r.randint(2, 10))]
    per_ip = r.uniform(2, 12)
    for ip in ips:
        t = T0 + r.uniform(-100, 1500)
        while t < T1:
            for _ in range(r.randint(10, 60)):
                a.req(t, ip, "/login", ip, 200 if r.random() < 0.005 else 401)
                t += gap(r, 60.0 / per_ip, 0.5)
            t += r.uniform(120, 900)


def k_ato(a):
    """loyalty-points account takeover: logs into known-good accounts from new addresses, changes e-mail and phone, redeems."""
    w, r = a.w, a.r
    n = r.randint(3, 12)
    victims = []
    if w.loyalty_accts and r.random() < 0.5:
        victims.append(w.loyalty_accts.pop(r.randrange(len(w.loyalty_accts))))   # shared with its owner
    victims += [w.acct(r) for _ in range(n - len(victims))]
    mule_phone = w.phone(r, premium=r.random() < 0.3)
    t = T0 + r.uniform(0, 1500)
    for v in victims:
        ip = w.ip(r, r.choice(["res", "mob", "dc"]))
        for _ in range(r.choice((0, 0, 1, 2))):
            a.req(t, ip, "/login", ip, 401)
            t += r.uniform(2, 10)
        a.req(t, ip, "/login", ip, 200)
        t += r.uniform(2, 8)
        a.req(t, v, "/api/loyalty/points", ip)
        a.req(t + 1, v, "/api/account/profile", ip)
        t += r.uniform(5, 30)
        if r.random() < 0.8:
            a.req(t, v, "/api/account/email", ip, 200)
            a.req(t + r.uniform(2, 10), v, "/api/account/phone", ip, 200)
            a.req(t + r.uniform(10, 15), mule_phone, "/sms/send", ip, 200)
            t += 20
        for _ in range(r.randint(1, 5)):
            a.req(t, v, r.choice(["/api/loyalty/redeem", "/api/loyalty/transfer", "/api/loyalty/vouchers/giftcard"]),
                  ip, 200 if r.random() < 0.75 else 409)
            t += r.uniform(3, 30)
        t += r.uniform(30, 600)


def k_cashout(a):
    """points cash-out ring: drains many taken-over accounts into 1-3 mule accounts that then book award tickets for resale."""
    w, r = a.w, a.r
    mules = [w.acct(r) for _ in range(r.randint(1, 3))]
    ips = w.ip_block(r, r.randint(1, 5))
    t = T0 + r.uniform(600, 3000)
    for _ in range(r.randint(10, 40)):
        v = w.acct(r)
        ip = r.choice(ips)
        a.req(t, ip, "/login", ip, 200)
        a.req(t + 1, v, "/api/loyalty/points", ip)
        a.req(t + r.uniform(2, 6), v, "/api/loyalty/transfer", ip, 200 if r.random() < 0.85 else 422)
        t += r.uniform(20, 120)
    for m in mules:
        ip = r.choice(ips)
        tm = t
        for _ in range(r.randint(8, 40)):
            a.req(tm, m, "/api/loyalty/awards/search?from=%s&to=%s" % w.route(r), ip)
            if r.random() < 0.5:
                a.req(tm + r.uniform(1, 5), m, "/api/loyalty/redeem", ip, 200 if r.random() < 0.7 else 409)
            if r.random() < 0.3:
                a.req(tm + r.uniform(5, 15), m, "/api/loyalty/points", ip)
            tm += r.uniform(10, 60)


def k_sms_pump(a):
    """SMS pumping (toll fraud): code requests to premium-rate numbers in a range, through the sign-up form from rotating addresses."""
    w, r = a.w, a.r
    cc, pre, nd = r.choice(PREMIUM_PHONE)
    base = r.randint(0, 10 ** nd - 5000)
    nums = [cc + pre + str(base + i).zfill(nd) for i in range(r.randint(30, 400))]
    adaptive = r.random() < 0.5   # keeps each number under the 10/h rule
    ips = [w.ip(r, r.choice(["res", "mob", "dc"])) for _ in range(r.randint(20, 300))]
    rate = r.uniform(10, 120)
    used = {}
    t = T0 + r.uniform(-100, 2500)
    end = min(T1, t + r.uniform(1200, 5400))
    while t < end:
        ip = r.choice(ips)
        n = r.choice(nums)
        if adaptive and used.get(n, 0) >= 9:
            n = r.choice(nums)
        used[n] = used.get(n, 0) + 1
        if r.random() < 0.4:
            a.req(t, ip, "/api/account/register", ip, 201 if r.random() < 0.8 else 422)
        a.req(t + r.uniform(0.2, 1.5), n, "/sms/send", ip, 200 if r.random() < 0.93 else 400)
        t += gap(r, 60.0 / rate, r.uniform(0.3, 1.2))
        if adaptive and r.random() < 0.01:
            t += r.uniform(60, 400)


def k_card_test(a):
    """card testing: guest checkout of a cheap seat add-on or ticket, then payment attempts with card after card; mostly 402."""
    w, r = a.w, a.r
    acct_mode = r.random() < 0.4
    ips = w.ip_block(r, r.randint(1, 3)) if r.random() < 0.5 else [w.ip(r, "res") for _ in range(r.randint(10, 120))]
    accts = [w.acct(r) for _ in range(r.randint(1, 4))]
    rate = r.uniform(4, 40)
    t = T0 + r.uniform(0, 3000)
    end = min(T1, t + r.uniform(600, 3600))
    while t < end:
        ip = r.choice(ips)
        subj = r.choice(accts) if acct_mode else ip
        if r.random() < 0.15:
            a.req(t, subj, "/api/holds", ip, 201)
            t += r.uniform(1, 5)
        st = r.choices((402, 402, 200, 422, 400), (60, 20, 6, 10, 4))[0]
        a.req(t, subj, "/api/payments", ip, st)
        if st == 200 and r.random() < 0.5:
            a.req(t + r.uniform(1, 4), subj, "/api/payments/%s/3ds" % hexid(r, 10), ip, 401)
        t += gap(r, 60.0 / rate, r.uniform(0.2, 1.0))


def k_pnr_enum(a):
    """booking-reference enumeration: guessed PNR and surname pairs on manage-booking, check-in or boarding pass; 404s."""
    w, r = a.w, a.r
    ips = w.ip_block(r, r.randint(1, 5)) if r.random() < 0.6 else [w.ip(r, "res") for _ in range(r.randint(30, 300))]
    ep = r.choice(["/api/bookings/%s?last_name=%s", "/api/checkin/%s?last_name=%s", "/api/boardingpass/%s?last_name=%s"])
    rate = r.uniform(6, 60)
    t = T0 + r.uniform(-100, 3000)
    end = min(T1, t + r.uniform(1200, 5400))
    names = ["SMITH", "JONES", "MULLER", "GARCIA", "ROSSI", "MARTIN", "KUMAR", "WANG", "SILVA", "BROWN"]
    while t < end:
        ip = r.choice(ips)
        x = r.random()
        st = 404 if x < 0.95 else (403 if x < 0.995 else 200)
        a.req(t, ip, ep % (pnr(r), r.choice(names)), ip, st)
        t += gap(r, 60.0 / rate, r.uniform(0.3, 1.0))


def k_leaked_key(a):
    """a legitimate partner's key leaked (public repo, ex-contractor): a third party scrapes with it from new cloud and home addresses."""
    w, r = a.w, a.r
    if w.leakable:
        key, tier = w.leakable.pop(r.randrange(len(w.leakable)))
    else:
        key, tier = w.key(r), "pro"
    ips = w.ip_block(r, r.randint(2, 20)) + [w.ip(r, "res") for _ in range(r.randint(0, 10))]
    mix = mix_of(r, {"avail": 5, "fares": 4, "seatmap": 3, "getbook": r.uniform(0, 2)})
    start = T0 + r.uniform(300, 3500)
    partner_loop(a, key, tier, ips, start, T1, r.uniform(10, 45), r.uniform(0.1, 0.8), mix, r.uniform(0.02, 0.15))


def k_resold_key(a):
    """an enterprise key resold to several resellers: dozens of addresses worldwide, heavy holds against few tickets."""
    w, r = a.w, a.r
    key = w.key(r)
    ips = [w.ip(r, r.choice(["dc", "res", "mob"])) for _ in range(r.randint(20, 80))]
    mix = mix_of(r, {"avail": 5, "fares": 2, "seatmap": 2, "hold": 2, "book": 0.2, "getbook": 1})
    partner_loop(a, key, "enterprise", ips, T0 - 5, T1, r.uniform(20, 45), r.uniform(0.8, 1.5), mix, r.uniform(0.03, 0.1))


def k_burst_pause(a):
    """adaptive scraper: bursts of 30-120 requests, pauses of 2-10 minutes, a new address (or account) after each burst."""
    w, r = a.w, a.r
    use_acct = r.random() < 0.4
    accts = [w.acct(r) for _ in range(r.randint(1, 4))]
    t = T0 + r.uniform(-100, 900)
    while t < T1:
        ip = w.ip(r, r.choice(["dc", "res"]))
        subj = r.choice(accts) if use_acct else ip
        for _ in range(r.randint(30, 120)):
            ep = w.search_ep(r) if r.random() < 0.6 else "/api/flights/%s/seatmap" % w.flight(r)
            a.req(t, subj, ep, ip)
            t += r.uniform(0.2, 2.0)
        t += r.uniform(120, 600)


def k_low_slow(a):
    """stays under every limit: 2-3 accounts each at 8-9.5 searches a minute (the search rule is 10) plus calendar pages, all window."""
    w, r = a.w, a.r
    n = r.randint(1, 3)
    accts = [w.acct(r) for _ in range(n)]
    ips = [w.ip(r, r.choice(["res", "dc"])) for _ in range(n)]
    for acct, ip in zip(accts, ips):
        rate = r.uniform(8, 9.5)
        t = T0 + r.uniform(-60, 300)
        while t < T1:
            a.req(t, acct, w.search_ep(r, *w.route(r, 0.05)), ip)
            if r.random() < 0.3:
                a.req(t + r.uniform(0.5, 3), acct, "/api/fares/calendar?from=%s&to=%s&month=2026-04" % w.route(r), ip)
            t += gap(r, 60.0 / rate, r.uniform(0.05, 0.3))


def k_otp_brute(a):
    """SMS-code brute force on a victim's log-in: code guesses from rotating addresses, code re-sent to the victim's phone."""
    w, r = a.w, a.r
    victim = w.phone(r)
    ips = [w.ip(r, r.choice(["res", "dc", "mob"])) for _ in range(r.randint(5, 60))]
    t = T0 + r.uniform(0, 3000)
    end = min(T1, t + r.uniform(600, 2400))
    while t < end:
        ip = r.choice(ips)
        a.req(t, ip, "/login", ip, 200)
        a.req(t + 1, victim, "/sms/send", ip, 200)
        t += 3
        for _ in range(r.randint(3, 10)):
            a.req(t, ip, "/login/otp", ip, 401 if r.random() < 0.998 else 200)
            t += r.uniform(0.3, 3)
        t += r.uniform(20, 300)


def k_fake_signup(a):
    """fake sign-ups for the loyalty welcome bonus: register, SMS code to virtual numbers, claim the promo, through proxies."""
    w, r = a.w, a.r
    t = T0 + r.uniform(0, 2500)
    for _ in range(r.randint(20, 90)):
        ip = w.ip(r, r.choice(["res", "mob", "dc"]))
        ph, acct = w.phone(r), w.acct(r)
        a.req(t, ip, "/api/account/register", ip, 201 if r.random() < 0.85 else 422)
        a.req(t + r.uniform(1, 3), ph, "/sms/send", ip, 200)
        a.req(t + r.uniform(10, 40), ip, "/login/otp", ip, 200 if r.random() < 0.9 else 401)
        t2 = t + 45
        a.req(t2, acct, "/api/loyalty/promo/claim", ip, 200 if r.random() < 0.8 else 409)
        a.req(t2 + r.uniform(1, 5), acct, "/api/loyalty/points", ip)
        if r.random() < 0.5:
            a.req(t2 + r.uniform(5, 20), acct, "/api/loyalty/transfer", ip, 200)
        t += r.uniform(15, 120)


def k_voucher_brute(a):
    """gift-card and voucher code guessing on the validation endpoint: 404 and 422, a rare hit."""
    w, r = a.w, a.r
    accts = [w.acct(r) for _ in range(r.randint(1, 5))]
    ips = w.ip_block(r, r.randint(1, 3))
    use_acct = r.random() < 0.6
    rate = r.uniform(5, 40)
    t = T0 + r.uniform(0, 3000)
    end = min(T1, t + r.uniform(900, 3600))
    while t < end:
        ip = r.choice(ips)
        subj = r.choice(accts) if use_acct else ip
        st = r.choices((404, 422, 200), (80, 19, 1))[0]
        a.req(t, subj, "/api/vouchers/validate", ip, st)
        t += gap(r, 60.0 / rate, r.uniform(0.2, 1.0))


# ====================================================================== main

def main():
    if len(sys.argv) != 3:
        sys.exit("usage: g.py SEED OUT.jsonl")
    seed = sys.argv[1]
    w = World(seed)
    cr = random.Random("counts/%s" % seed)
    fns = globals()
    for label, target in (("legit", cr.randint(245, 256)), ("abuse", 60)):
        kinds = [(k, b) for lab, k, b, _d in KINDS if lab == label]
        counts = {k: max(1, int(round(b * cr.uniform(0.8, 1.2)))) for k, b in kinds}
        while sum(counts.values()) != target:   # nudge random kinds by one to the seed's total
            k, b = cr.choice(kinds)
            if sum(counts.values()) < target and counts[k] < b * 1.3 + 1:
                counts[k] += 1
            elif sum(counts.values()) > target and counts[k] > max(1, b * 0.7):
                counts[k] -= 1
        for kind, _b in kinds:
            fn = fns["k_" + kind.replace("-", "_")]
            for i in range(1, counts[kind] + 1):
                fn(Actor(w, kind, label, i))
    w.events.sort(key=lambda e: e[0])
    with open(sys.argv[2], "w") as f:
        dumps = json.dumps
        for ts, user, ep, ip, tier, st, lat, label, actor in w.events:
            o = {"ts": ts, "user": user, "endpoint": ep, "ip": ip}
            if tier:
                o["tier"] = tier
            o["status"] = st
            o["latency_ms"] = lat
            o["label"] = label
            o["actor"] = actor
            f.write(dumps(o, separators=(",", ":")) + "\n")
    sys.stderr.write("g.py seed %s: %d requests; outage %s %s-%s\n" % (
        seed, len(w.events), w.outage_backend,
        datetime.datetime.fromtimestamp(w.out_start, datetime.timezone.utc).strftime("%H:%M:%S"),
        datetime.datetime.fromtimestamp(w.out_end, datetime.timezone.utc).strftime("%H:%M:%S")))


# ====================================================================== every kind
# (label, kind, how many per seed (base; each seed draws about 0.8x to 1.2x, totals 245-256 legit and 60 abuse), what it does)
KINDS = [
    ("legit", "shopper", 35, "anonymous fare/seat-map/event browsing from one home or phone address (subject = address)"),
    ("legit", "booker", 25, "shops, logs in with an SMS code, holds, pays (declines then success), views the booking"),
    ("legit", "mobile", 22, "signed-in app user whose address moves between wifi, LTE and IPv6; flight-status polling"),
    ("legit", "loyalty", 14, "loyalty member: points, history, award search, occasional redeem/transfer (409/422)"),
    ("legit", "checkin", 16, "day of travel: party check-in, seat holds, boarding passes, status polling from the airport"),
    ("legit", "office-nat", 6, "travel office of 5-30 agents behind one NAT address; anonymous searches share it"),
    ("legit", "airport", 4, "airport/hotel wifi: 40-220 travellers on one address; status, check-in, PNR typos (404)"),
    ("legit", "agency", 18, "travel agency on a pro key, 3-16/min from office servers; its key may later leak"),
    ("legit", "devfree", 10, "developer on the free tier: bursts of test calls, 400/422/401/404, laptop and CI"),
    ("legit", "ent-machine", 8, "enterprise OTA backend near its limits: 35-49/min partner API + 5-9.5/min search + exports"),
    ("legit", "aggregator", 5, "meta-search aggregator: 3-6 keys over 8-40 cloud workers each, every key near its limits"),
    ("legit", "rotated-key", 5, "stale worker calling with a rotated/expired key: 401 streams until ops fix it"),
    ("legit", "broken-deploy", 5, "partner's broken release: 400/422/415 with retries for 5-25 minutes, then rollback"),
    ("legit", "cancelled-poller", 5, "integration or app polling a cancelled booking every 5-60 s: steady 404/410"),
    ("legit", "retry-storm", 6, "client of the failing backend with tight retry loops (4-15 retries, little backoff)"),
    ("legit", "monitor", 4, "synthetic uptime checks every 30-120 s from 3-6 regions on fixed endpoints, one key"),
    ("legit", "crawler", 3, "verified search-engine crawler on public fare/route/event pages from its address block"),
    ("legit", "agent-desk", 6, "human desk agent on an account: many holds released, few payments, PNR look-ups"),
    ("legit", "group", 3, "group coordinator holding 10-40 seats over several flights, paying part later"),
    ("legit", "family", 5, "one loyalty account shared by a family on 3-5 devices and addresses"),
    ("legit", "forgot-pw", 8, "forgot password: 3-9 failed log-ins, reset, repeated SMS codes, wrong code, then in"),
    ("legit", "vpn", 5, "privacy-VPN user whose data-centre exit address changes every 1-7 minutes"),
    ("legit", "support", 3, "support console on an enterprise key: many distinct PNR look-ups (3-10 % typos), refunds"),
    ("legit", "onsale", 20, "fan at the 08:00 event on-sale: refreshes seats every few seconds, holds fail with 409"),
    ("legit", "fare-alert", 4, "fare-alert app on a pro key polling 80-400 routes at 8-15/min from cloud hosts"),
    ("legit", "loyalty-partner", 3, "hotel/car partner posting points accruals in batches (some 404 unknown members)"),
    ("legit", "app-bug", 4, "app release with a token-refresh bug: 401 every 1-3 s for minutes, then a fresh log-in"),
    ("legit", "export-job", 5, "scheduled reporting job: exports back to back, status polling, webhook tests"),
    ("abuse", "scraper-fast", 4, "fare scraper from 1-3 data-centre addresses at 25-110/min: search, calendar, seat maps"),
    ("abuse", "scraper-dist", 4, "polite scraper over 150-1200 residential proxies, 1-10 requests per address"),
    ("abuse", "scraper-keys", 3, "scraper on 5-20 throwaway free keys, each kept at 80-97/h, under every limit"),
    ("abuse", "seatmap-harvest", 3, "1-3 accounts sweeping every flight's seat map at 20-45/min; bogus flights 404"),
    ("abuse", "seat-spinner", 4, "3-10 accounts re-holding the same seats before each hold expires, never paying"),
    ("abuse", "cred-stuffer", 4, "credential stuffing on /login: fast from a few hosts or slow over 100-800 proxies"),
    ("abuse", "sprayer", 3, "password spraying: 2-12 attempts/min per address from 2-10 addresses, with pauses"),
    ("abuse", "ato", 4, "loyalty account takeover: log in, change e-mail/phone, redeem/transfer; may hit a real member"),
    ("abuse", "cashout", 3, "points cash-out: drain 10-40 accounts into 1-3 mules that book award tickets"),
    ("abuse", "sms-pump", 4, "SMS pumping to premium-rate number ranges via sign-up; half keep each number under 10/h"),
    ("abuse", "card-test", 4, "card testing on /api/payments, guest (address) or throwaway accounts; mostly 402"),
    ("abuse", "pnr-enum", 4, "booking-reference enumeration on manage-booking/check-in/boarding pass: 95 % 404"),
    ("abuse", "leaked-key", 3, "a legitimate agency/enterprise key used by a third party from new addresses"),
    ("abuse", "resold-key", 2, "enterprise key resold: 20-80 addresses worldwide, many holds, few tickets"),
    ("abuse", "burst-pause", 3, "adaptive scraper: bursts of 30-120, pauses of 2-10 min, new address after each burst"),
    ("abuse", "low-slow", 3, "1-3 accounts each at 8-9.5 searches/min (under the 10/min rule) for the whole window"),
    ("abuse", "otp-brute", 2, "SMS-code brute force on one victim from 5-60 addresses, code re-sent to the victim"),
    ("abuse", "fake-signup", 2, "20-90 fake sign-ups for the loyalty welcome bonus, each from a new address"),
    ("abuse", "voucher-brute", 2, "gift-card/voucher code guessing on /api/vouchers/validate; 404/422"),
]

if __name__ == "__main__":
    main()
