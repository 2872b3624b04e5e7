"""A git repository served over git's smart HTTP (``git http-backend``) on this machine, behind a login: a private
upstream whose URL takes a user and token, for the tests of where a credential goes."""

from __future__ import annotations

import base64
import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def served_over_http(repository: Path, user: str, password: str) -> Iterator[str]:
    """``repository`` (its ``.git``) served at the yielded ``127.0.0.1:PORT/repo``; a request without the login
    ``user``/``password`` is answered 401, as a private repository's host answers it (git then sends the login
    of the URL, or asks its credential helper)."""
    login = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    class Backend(http.server.BaseHTTPRequestHandler):
        def serve(self) -> None:
            if self.headers.get("Authorization") != login:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "PATH": os.environ["PATH"],
                "GIT_PROJECT_ROOT": str(repository / ".git"),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path.removeprefix("/repo"),
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            }
            answer = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
            head, _, rest = answer.partition(b"\r\n\r\n")
            fields = [line.partition(": ")[::2] for line in head.decode().split("\r\n") if line]
            status = next((int(value.split()[0]) for name, value in fields if name.lower() == "status"), 200)
            self.send_response(status)
            for name, value in fields:
                if name.lower() != "status":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(rest)))
            self.end_headers()
            self.wfile.write(rest)

        do_GET = do_POST = serve  # noqa: N815 - the names http.server calls

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}/repo"
    finally:
        server.shutdown()
        server.server_close()
