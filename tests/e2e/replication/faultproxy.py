#!/usr/bin/env python3
"""faultproxy.py - a loopback reverse proxy that injects S3 faults.

Listens on 127.0.0.1 (port 0 = any; the port is printed on stdout as
"PORT <n>"), forwards every request to --upstream unchanged (the Host
header included, so SigV4 signatures stay valid), and replies instead with
503 SlowDown (with Retry-After: 0 half of the time) for a --rate fraction of
requests, or cuts the connection for a --reset fraction. Counts go to
--stats FILE as "requests N injected_503 N resets N" after every request.
Used by tests/e2e/replication to prove the client's retries against a real
server; it is not an S3 implementation.
"""
import argparse
import http.client
import random
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b'<Message>Please reduce your request rate.</Message>'
            b'<RequestId>faultproxy</RequestId></Error>')

lock = threading.Lock()
counts = {"requests": 0, "injected_503": 0, "resets": 0}


def bump(name, args):
    with lock:
        counts[name] += 1
        if args.stats:
            with open(args.stats, "w") as f:
                f.write(" ".join(f"{k} {v}" for k, v in counts.items()) + "\n")


def make_handler(args, rng):
    up = urlsplit(args.upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _body(self):
            n = int(self.headers.get("Content-Length", "0") or 0)
            return self.rfile.read(n) if n else b""

        def _any(self):
            body = self._body()
            bump("requests", args)
            with lock:
                r = rng.random()
            if r < args.reset:
                bump("resets", args)
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if r < args.reset + args.rate:
                bump("injected_503", args)
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(SLOWDOWN)))
                if rng.random() < 0.5:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(SLOWDOWN)
                return
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("connection", "expect")}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() in ("content-length", "connection", "transfer-encoding"):
                    continue
                self.send_header(k, v)
            if self.command == "HEAD":
                # A HEAD answer carries the length of the body it does not send.
                self.send_header("Content-Length", resp.getheader("Content-Length", "0"))
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _safe(self):
            try:
                self._any()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _safe

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--rate", type=float, default=0.3)
    p.add_argument("--reset", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stats")
    args = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args, random.Random(args.seed)))
    srv.daemon_threads = True
    print(f"PORT {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
