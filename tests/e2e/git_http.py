"""A loopback git server over smart HTTP, so ``claude plugin marketplace add <url>`` clones as
it would from GitHub (shallow; git's dumb HTTP transport cannot) without leaving the machine.

Each request runs ``git http-backend`` (git's own CGI program) on the repositories under one
folder; the test's repository stands in for ``github.com/ctxkeeper/ctxkeeper``.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import subprocess
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class _Backend(http.server.BaseHTTPRequestHandler):
    root = ""

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        ).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def git_over_http(folder: str) -> Iterator[Callable[[str], str]]:
    """Serve each bare repository ``folder/name``; yields ``name`` -> its URL."""
    handler = type("Backend", (_Backend,), {"root": folder})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield lambda name: f"http://127.0.0.1:{port}/{name}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
