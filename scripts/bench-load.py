#!/usr/bin/env python3
"""The load-source goal benchmark (scripts/bench-load runs it; standard library only).

A test backend whose latency grows with its in-flight requests: each request takes
SERVICE_MS x max(1, in_flight / WORKERS), decided when it arrives, so the backend serves
WORKERS / SERVICE_MS requests a second and past that its latency climbs without bound. An
open-loop client sends Poisson arrivals from USERS subjects, ramping from half the capacity
to three times it, then holding there. Each arrival asks ratewarden (`POST /v1/check`); an
admitted one calls the backend and reports its status and latency (`POST /v1/report`).

Usage: bench-load.py RATEWARDEN_ADDR BACKEND_PORT LABEL
Prints one JSON line: what the hold at 3x offered, admitted, and the backend's p90 latency.
"""

import asyncio
import json
import random
import sys
import time

SERVICE_MS = 20.0
WORKERS = 2
CAPACITY = WORKERS / (SERVICE_MS / 1000.0)  # requests a second
USERS = 20
RAMP_S = 40.0
HOLD_S = 30.0
START, PEAK = 0.5, 3.0  # offered load, as shares of the capacity


class Backend:
    def __init__(self):
        self.in_flight = 0

    async def handle(self, reader, writer):
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.in_flight += 1
            try:
                delay = SERVICE_MS * max(1.0, self.in_flight / WORKERS)
                await asyncio.sleep(delay / 1000.0)
            finally:
                self.in_flight -= 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def http(host, port, method, path, body=None):
    """One request on a new connection; the status."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        data = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        writer.write(head.encode() + data)
        await writer.drain()
        status_line = await reader.readline()
        await reader.read()
        return int(status_line.split()[1])
    finally:
        writer.close()


class Run:
    def __init__(self, rw_host, rw_port, backend_port, hold_from):
        self.rw = (rw_host, rw_port)
        self.backend_port = backend_port
        self.hold_from = hold_from
        self.offered = 0
        self.admitted = 0
        self.errors = 0
        self.latencies = []

    async def one(self, user, in_hold):
        try:
            status = await http(*self.rw, "POST", "/v1/check", {"user": user, "endpoint": "/api/items"})
            if status != 200:
                return
            started = time.monotonic()
            backend = await http("127.0.0.1", self.backend_port, "GET", "/items")
            latency_ms = (time.monotonic() - started) * 1000.0
            if in_hold:
                self.admitted += 1
                self.latencies.append(latency_ms)
            report = {"user": user, "endpoint": "/api/items", "status": backend, "latency_ms": latency_ms}
            await http(*self.rw, "POST", "/v1/report", report)
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError):
            self.errors += 1


async def drive(rw_addr, backend_port):
    host, port = rw_addr.rsplit(":", 1)
    backend = Backend()
    server = await asyncio.start_server(backend.handle, "127.0.0.1", backend_port, backlog=4096)
    rng = random.Random(17)
    start = time.monotonic()
    run = Run(host, int(port), backend_port, start + RAMP_S)
    tasks = set()
    now = start
    while now < start + RAMP_S + HOLD_S:
        elapsed = now - start
        share = START + (PEAK - START) * min(1.0, elapsed / RAMP_S)
        rate = share * CAPACITY
        now += rng.expovariate(rate)
        delay = now - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        in_hold = now >= run.hold_from
        run.offered += in_hold
        user = f"user-{rng.randrange(USERS)}"
        task = asyncio.create_task(run.one(user, in_hold))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks, timeout=30)
    server.close()
    return run


def p90(values):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def main():
    rw_addr, backend_port, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    run = asyncio.run(drive(rw_addr, backend_port))
    print(
        json.dumps(
            {
                "label": label,
                "capacity_per_s": CAPACITY,
                "offered_per_s": run.offered / HOLD_S,
                "admitted_per_s": run.admitted / HOLD_S,
                "p90_ms": p90(run.latencies),
                "errors": run.errors,
            }
        )
    )


if __name__ == "__main__":
    main()
