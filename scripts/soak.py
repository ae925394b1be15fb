"""The traffic of scripts/soak: mixed, paced load on a running ratewarden, and a table per minute.

Threads send, each at a fixed pace: single checks (HTTP keep-alive), batches of 50, reports,
gRPC ShouldRateLimit (native descriptors; request classes built from server reflection, as
tests/grpc/wire_client.py does), reloads (SIGHUP and POST /v1/admin/reload in turn) and admin
threshold changes. Every 10 s the daemon's RSS (/proc/PID/status) and open file descriptors
(/proc/PID/fd) are sampled. Each minute one row: requests and errors per kind, p50/p99 of the
decisions, RSS and fds. An error is a transport failure, a 5xx, or a status the call must not
get (a check: 200 or 429; a batch and admin calls: 200; a report: 202; gRPC: OK).

Usage: soak.py HTTP_ADDR GRPC_ADDR PID MINUTES ADMIN_TOKEN
"""
import http.client
import json
import math
import os
import random
import signal
import sys
import threading
import time

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

SERVICE = "envoy.service.ratelimit.v3.RateLimitService"
USERS = 20_000
ENDPOINTS = ["/api/search", "/api/export", "/sms/send", "/login", "/", "/api/items"]


class Record:
    """Per minute and kind: latencies (s) and error count."""

    def __init__(self, start):
        self.start = start
        self.lock = threading.Lock()
        self.latencies = {}
        self.errors = {}
        self.samples = {}
        self.first_errors = []

    def minute(self):
        return int((time.monotonic() - self.start) // 60)

    def add(self, kind, latency, error=None):
        with self.lock:
            key = (self.minute(), kind)
            self.latencies.setdefault(key, []).append(latency)
            if error is not None:
                self.errors[key] = self.errors.get(key, 0) + 1
                if len(self.first_errors) < 20:
                    self.first_errors.append(f"{kind}: {error}")


def paced(rate, until, body):
    """Calls body() `rate` times a second until `until`, catching up at most one second."""
    period = 1.0 / rate
    next_at = time.monotonic()
    while time.monotonic() < until:
        body()
        next_at = max(next_at + period, time.monotonic() - 1.0)
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)


class Http:
    def __init__(self, addr, token=None):
        self.host, self.port = addr.rsplit(":", 1)
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.connection = None

    def call(self, method, path, body=None):
        """(status, body); reconnects once when a kept-alive connection was closed."""
        for attempt in (0, 1):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, int(self.port), timeout=10)
            try:
                data = None if body is None else json.dumps(body)
                self.connection.request(method, path, body=data, headers=self.headers)
                response = self.connection.getresponse()
                payload = response.read()
                if response.getheader("connection", "").lower() == "close":
                    self.connection.close()
                    self.connection = None
                return response.status, payload
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # An idle keep-alive connection the server closed (after 10 s): a new one,
                # as HTTP clients do for a request the server never read.
                self.connection.close()
                self.connection = None
                if attempt == 1:
                    raise


def timed(record, kind, call, ok):
    started = time.perf_counter()
    try:
        result = call()
        error = None if ok(result) else f"unexpected {str(result)[:200]}"
    except Exception as e:  # noqa: BLE001 - every failure is counted and shown
        error = repr(e)
    record.add(kind, time.perf_counter() - started, error)


def user():
    return f"soak-{random.randrange(USERS)}"


def ip():
    return f"10.0.{random.randrange(256)}.{random.randrange(256)}"


def check_worker(record, addr, until, rate):
    client = Http(addr)

    def one():
        body = {"user": user(), "endpoint": random.choice(ENDPOINTS), "ip": ip()}
        timed(record, "check", lambda: client.call("POST", "/v1/check", body)[0],
              lambda s: s in (200, 429))

    paced(rate, until, one)


def batch_worker(record, addr, until, rate):
    client = Http(addr)

    def one():
        body = {"requests": [{"user": user(), "endpoint": random.choice(ENDPOINTS), "ip": ip()}
                             for _ in range(50)]}
        timed(record, "batch", lambda: client.call("POST", "/v1/check/batch", body)[0],
              lambda s: s == 200)

    paced(rate, until, one)


def report_worker(record, addr, until, rate):
    client = Http(addr)

    def one():
        body = {"user": user(), "endpoint": random.choice(ENDPOINTS),
                "status": random.choice([200, 200, 200, 404, 401, 500]), "latency_ms": 12}
        timed(record, "report", lambda: client.call("POST", "/v1/report", body)[0],
              lambda s: s == 202)

    paced(rate, until, one)


def grpc_worker(record, addr, until, rate):
    channel = grpc.insecure_channel(addr)
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    method = pool.FindServiceByName(SERVICE).FindMethodByName("ShouldRateLimit")
    request_class = message_factory.GetMessageClass(method.input_type)
    response_class = message_factory.GetMessageClass(method.output_type)
    call = channel.unary_unary(
        f"/{SERVICE}/ShouldRateLimit",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )

    def one():
        body = {"domain": "web", "descriptors": [{"entries": [
            {"key": "user", "value": user()},
            {"key": "remote_address", "value": ip()},
            {"key": "path", "value": random.choice(ENDPOINTS)}]}]}
        request = json_format.ParseDict(body, request_class())
        timed(record, "grpc", lambda: call(request, timeout=10), lambda r: True)

    paced(rate, until, one)
    channel.close()


def admin_worker(record, addr, pid, until, token):
    client = Http(addr, token)
    turn = 0

    def one():
        nonlocal turn
        turn += 1
        if turn % 2:
            timed(record, "reload", lambda: os.kill(pid, signal.SIGHUP), lambda r: True)
        else:
            timed(record, "reload", lambda: client.call("POST", "/v1/admin/reload")[0],
                  lambda s: s == 200)
        change = {"anomaly_threshold": round(random.uniform(0.7, 0.9), 2),
                  "load_factor_override": random.choice([None, 0.5, 1.0])}
        timed(record, "admin", lambda: client.call("PUT", "/v1/admin/thresholds", change)[0],
              lambda s: s == 200)

    paced(1 / 3, until, one)  # every 3 s


def sample(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    rss_kib = int(fields["VmRSS"].split()[0])
    return rss_kib / 1024, len(os.listdir(f"/proc/{pid}/fd")), int(fields["Threads"])


def sampler(record, pid, until):
    while time.monotonic() < until:
        with record.lock:
            record.samples.setdefault(record.minute(), []).append(sample(pid))
        time.sleep(10)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def main():
    http_addr, grpc_addr, pid, minutes, token = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    start = time.monotonic()
    until = start + minutes * 60
    record = Record(start)
    rss, fds, threads = sample(pid)
    print(f"start: RSS {rss:.1f} MiB, {fds} fds, {threads} threads", flush=True)
    workers = [
        threading.Thread(target=check_worker, args=(record, http_addr, until, 150)),
        threading.Thread(target=check_worker, args=(record, http_addr, until, 150)),
        threading.Thread(target=batch_worker, args=(record, http_addr, until, 10)),
        threading.Thread(target=report_worker, args=(record, http_addr, until, 100)),
        threading.Thread(target=grpc_worker, args=(record, grpc_addr, until, 100)),
        threading.Thread(target=admin_worker, args=(record, http_addr, pid, until, token)),
        threading.Thread(target=sampler, args=(record, pid, until)),
    ]
    for worker in workers:
        worker.start()
    kinds = ["check", "batch", "report", "grpc", "reload", "admin"]
    header = ("| minute | checks | batches | reports | gRPC | reloads | admin | errors "
              "| check p50 / p99 ms | batch p99 ms | gRPC p99 ms | RSS MiB | fds | threads |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1), flush=True)

    def row(m):
        with record.lock:
            lat = {k: record.latencies.get((m, k), []) for k in kinds}
            errors = sum(record.errors.get((m, k), 0) for k in kinds)
            samples = record.samples.get(m) or [sample(pid)]
        ms = lambda k, p: percentile(lat[k], p) * 1000  # noqa: E731
        rss, fds, threads = samples[-1]
        print(f"| {m + 1} | {len(lat['check'])} | {len(lat['batch'])} | {len(lat['report'])} "
              f"| {len(lat['grpc'])} | {len(lat['reload'])} | {len(lat['admin'])} | {errors} "
              f"| {ms('check', 0.5):.1f} / {ms('check', 0.99):.1f} | {ms('batch', 0.99):.1f} "
              f"| {ms('grpc', 0.99):.1f} | {rss:.1f} | {fds} | {threads} |", flush=True)

    printed = 0
    while any(w.is_alive() for w in workers):
        time.sleep(1)
        while printed < record.minute():
            row(printed)
            printed += 1
    while printed < math.ceil(minutes):
        row(printed)
        printed += 1
    total_errors = sum(record.errors.values())
    print(f"errors: {total_errors}")
    for line in record.first_errors:
        print(f"  {line}")
    sys.exit(1 if total_errors else 0)


if __name__ == "__main__":
    main()
