#!/usr/bin/env python3
"""faultproxy.py - the chaos suite's fault injector: TCP forwarders, switched
at run time, between the hub and the lab's servers.

Each route listens on one address and forwards every connection to one
upstream. A `tcp` route forwards bytes untouched (TLS passes through, so a
kubeconfig pointing at the proxy with `tls-server-name` set to a name in
the API server's certificate verifies), and can:
  - delay every chunk, in each direction, by `latency` milliseconds;
  - drop connections: a new connection is reset at once with probability
    `drop`; `cut=1` resets every open connection now;
  - partition: nothing passes either way while `partition=1` (new
    connections are accepted and held, open ones stall; what was sent
    flows again once the partition is lifted, as TCP would retransmit).
An `http` route (in front of an S3 server) reads each request's head and
answers `503 SlowDown` to a fraction `err503` of requests while a storm
lasts (`for` seconds); the others are forwarded with `Connection: close`,
so that every request of a client that keeps connections alive is decided
on its own. The request line and the headers the client signed are not
changed: SigV4 still verifies.

Control, on HTTP (curl): GET /set?route=NAME&latency=MS&drop=P&partition=0|1
&cut=1&err503=P&for=SECONDS sets the route's faults (absent keys keep
their value); GET /clear resets every route; GET /stats answers JSON
counters per route.

usage: faultproxy.py CTL_HOST:PORT NAME=LISTEN_HOST:PORT=UP_HOST:PORT[=http]...
"""
import asyncio
import json
import random
import sys
import time
import urllib.parse

BUF = 65536


class Route:
    def __init__(self, name, listen, upstream, kind):
        self.name, self.listen, self.upstream, self.kind = name, listen, upstream, kind
        self.latency = 0.0  # seconds
        self.drop = 0.0
        self.partition = False
        self.err503 = 0.0
        self.storm_until = 0.0
        self.open = set()  # writers of open client connections
        self.healed = asyncio.Event()
        self.healed.set()
        self.stats = {"connections": 0, "dropped": 0, "cut": 0, "held": 0,
                      "requests": 0, "errors503": 0}

    def set(self, q):
        if "latency" in q:
            self.latency = float(q["latency"]) / 1000.0
        if "drop" in q:
            self.drop = float(q["drop"])
        if "partition" in q:
            self.partition = q["partition"] == "1"
            if self.partition:
                self.healed.clear()
            else:
                self.healed.set()
        if "err503" in q:
            self.err503 = float(q["err503"])
            self.storm_until = time.monotonic() + float(q.get("for", "3600"))
        if q.get("cut") == "1":
            for w in list(self.open):
                self.stats["cut"] += 1
                reset(w)

    def storming(self):
        return self.err503 > 0 and time.monotonic() < self.storm_until


def reset(writer):
    """Closes a connection with a TCP reset (SO_LINGER 0), as a dropped
    connection looks to its peer."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            import socket
            import struct
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    except OSError:
        pass


async def pump(route, reader, writer):
    """Copies one direction, chunk by chunk, each after the route's latency
    (chunks keep their order and overlap their delays), and stalls while
    the route is partitioned."""
    queue = asyncio.Queue()

    async def read_side():
        try:
            while True:
                data = await reader.read(BUF)
                await queue.put((time.monotonic() + route.latency, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            await queue.put((0, b""))

    async def write_side():
        try:
            while True:
                due, data = await queue.get()
                await route.healed.wait()
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await route.healed.wait()
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    r = asyncio.ensure_future(read_side())
    try:
        await write_side()
    finally:
        r.cancel()


async def splice(route, creader, cwriter, first=b""):
    """Forwards a client connection to the route's upstream, both ways."""
    host, port = route.upstream
    await route.healed.wait()
    try:
        ureader, uwriter = await asyncio.open_connection(host, port)
    except OSError:
        reset(cwriter)
        return
    try:
        if first:
            uwriter.write(first)
        up = asyncio.ensure_future(pump(route, creader, uwriter))
        down = asyncio.ensure_future(pump(route, ureader, cwriter))
        # The answer's end ends the connection (an http route asked the
        # upstream to close after one response).
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED if route.kind == "http" else
                           asyncio.ALL_COMPLETED)
        if route.kind == "http":
            await down
            up.cancel()
    finally:
        uwriter.close()
        cwriter.close()


def slowdown():
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")
    return (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


async def http_request(route, reader, writer):
    """One request of an http route: a 503 SlowDown while a storm lasts and
    the dice say so, else forwarded with Connection: close."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    route.stats["requests"] += 1
    lines = head.split(b"\r\n")
    headers = {}
    for ln in lines[1:]:
        if b":" in ln:
            k, v = ln.split(b":", 1)
            headers[k.strip().lower()] = v.strip()
    if route.storming() and random.random() < route.err503:
        route.stats["errors503"] += 1
        # A body the client sends anyway (no Expect: 100-continue) is read
        # first, so that the client sees the answer and not a reset.
        n = int(headers.get(b"content-length", b"0") or 0)
        if b"100-continue" not in headers.get(b"expect", b"").lower():
            try:
                while n > 0:
                    chunk = await reader.read(min(n, BUF))
                    if not chunk:
                        break
                    n -= len(chunk)
            except ConnectionError:
                pass
        writer.write(slowdown())
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()
        return
    kept = [ln for ln in lines[1:] if ln and not ln.lower().startswith(b"connection:")]
    first = b"\r\n".join([lines[0]] + kept + [b"Connection: close", b"", b""])
    await splice(route, reader, writer, first)


async def client(route, reader, writer):
    route.stats["connections"] += 1
    route.open.add(writer)
    try:
        if route.partition:
            route.stats["held"] += 1
        if route.drop > 0 and random.random() < route.drop:
            route.stats["dropped"] += 1
            reset(writer)
            return
        if route.kind == "http":
            await route.healed.wait()
            await http_request(route, reader, writer)
        else:
            await splice(route, reader, writer)
    except (ConnectionError, OSError):
        pass
    finally:
        route.open.discard(writer)


async def control(routes, reader, writer):
    try:
        line = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0].decode()
        target = line.split(" ")[1]
        u = urllib.parse.urlsplit(target)
        q = dict(urllib.parse.parse_qsl(u.query))
        code, body = 200, {}
        if u.path == "/set":
            r = routes.get(q.get("route", ""))
            if r is None:
                code, body = 404, {"error": f"no route {q.get('route')!r}"}
            else:
                r.set(q)
                body = {"ok": True}
        elif u.path == "/clear":
            for r in routes.values():
                r.set({"latency": "0", "drop": "0", "partition": "0", "err503": "0", "for": "0"})
            body = {"ok": True}
        elif u.path == "/stats":
            body = {n: dict(r.stats, latencyMs=r.latency * 1000, drop=r.drop, partition=r.partition,
                            storming=r.storming()) for n, r in routes.items()}
        else:
            code, body = 404, {"error": "unknown path"}
        data = json.dumps(body).encode() + b"\n"
        writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % (code, len(data)) + data)
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, IndexError, ValueError):
        pass
    finally:
        writer.close()


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


async def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("usage: ")[1])
    routes = {}
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        parts = rest.split("=")
        kind = parts[2] if len(parts) > 2 else "tcp"
        if kind not in ("tcp", "http"):
            sys.exit(f"faultproxy.py: route {name}: kind {kind!r}, expected tcp or http")
        routes[name] = Route(name, hostport(parts[0]), hostport(parts[1]), kind)
    servers = []
    for r in routes.values():
        servers.append(await asyncio.start_server(lambda rd, wr, r=r: client(r, rd, wr), *r.listen))
    ch, cp = hostport(sys.argv[1])
    servers.append(await asyncio.start_server(lambda rd, wr: control(routes, rd, wr), ch, cp))
    print("faultproxy ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
