#!/usr/bin/env python3
"""An HTTP server on 127.0.0.1 that serves one object, /object, as a server that lies would, for
the remote tests (components/remote/tests/lying_server.h starts it).

Usage: lying_http_server.py PORT_FILE MODE SIZE

Version 1 of the object is SIZE bytes, byte i = i % 251; version 2, byte i = (7 * i + 3) % 251.
- A GET with no Range (a download from its first byte) gets the headers of the whole object
  (ETag "v1", a Last-Modified) and half its body; then the connection is closed.
- A GET of a bounded range (a size probe) gets that range of version 1, honestly.
- A GET of an open range from byte N > 0 (a resumed download) is answered as MODE says:
    honest    206, ETag "v1", the range of version 1 (the control)
    etag      206, ETag "v2", the range of version 2: If-Match ignored
    lastmod   206, no ETag, another Last-Modified, the range of version 2
    range     206, Content-Range bytes 0-(SIZE/2-1)/SIZE and those bytes: another range
- MODE redirect: every GET is a 302 to the same URL.
- MODE trickle: every GET gets the headers of the whole object, then 2 bytes a second.
Writes the port to PORT_FILE once it listens; serves until killed.
"""
import http.server
import os
import sys
import time

LAST_MODIFIED = ["Mon, 02 Nov 2026 10:00:00 GMT", "Tue, 03 Nov 2026 11:00:00 GMT"]


def version(which, first, last):
    if which == 1:
        return bytes(i % 251 for i in range(first, last + 1))
    return bytes((7 * i + 3) % 251 for i in range(first, last + 1))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.requestline, self.headers.get("Range", "-")))

    def send(self, status, body, headers, length=None):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self):
        size, mode = self.server.size, self.server.mode
        if mode == "redirect":
            self.send(302, b"", {"Location": self.path})
            return
        if mode == "trickle":
            self.send(200, b"", {"ETag": '"v1"'}, length=size)
            for i in range(size // 2):
                self.wfile.write(version(1, 2 * i, 2 * i + 1))
                self.wfile.flush()
                time.sleep(1)
            return
        v1 = {"ETag": '"v1"', "Last-Modified": LAST_MODIFIED[0]}
        ranged = self.headers.get("Range")
        if ranged is None:  # a download from byte 0: cut after half the body
            self.send(200, version(1, 0, size // 2 - 1), v1, length=size)
            self.close_connection = True
            return
        first, _, last = ranged[len("bytes="):].partition("-")
        first = int(first)
        if last:  # a probe: the truth
            last = min(int(last), size - 1)
            self.send(206, version(1, first, last),
                      dict(v1, **{"Content-Range": f"bytes {first}-{last}/{size}"}))
            return
        last = size - 1
        if mode == "honest":
            headers, body = v1, version(1, first, last)
        elif mode == "etag":
            headers = {"ETag": '"v2"', "Last-Modified": LAST_MODIFIED[1]}
            body = version(2, first, last)
        elif mode == "lastmod":
            headers, body = {"Last-Modified": LAST_MODIFIED[1]}, version(2, first, last)
        else:  # range: the first half again
            first, last = 0, size // 2 - 1
            headers, body = v1, version(1, first, last)
        self.send(206, body, dict(headers, **{"Content-Range": f"bytes {first}-{last}/{size}"}))


def main():
    port_file, mode, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.mode, server.size = mode, size
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
