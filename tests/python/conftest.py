"""Shared fixtures for the `import powertrain` tests (run by ctest with PYTHONPATH=build/python)."""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

powertrain = pytest.importorskip("powertrain", reason="build/python not on PYTHONPATH")

SOURCE_DIR = os.environ.get(
    "POWERTRAIN_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
BUILD_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(powertrain.__file__))))
CLI = os.path.join(BUILD_DIR, "powertrain")
FAKE_NVML = os.environ.get("POWERTRAIN_FAKE_NVML", os.path.join(BUILD_DIR, "libnvidia-ml-fake.so"))
DATA_DIR = os.path.join(SOURCE_DIR, "..", "shared", "data")

SCHEDULE = [["forward", 1410], ["forward", 1200], ["backward", 1410], ["backward", 1005]]


class StubPlanServer:
    """Loopback Zeus PFO stub: answers the documented routes and records requests."""

    def __init__(self, job_id="2024-01-01-00-00-00+dp1+pp2+tp1+py"):
        self.requests = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                stub.requests.append((method, self.path, body))
                if method == "POST" and self.path == "/register_job":
                    return self._answer(200, job_id)
                if self.path.startswith("/schedule/"):
                    rank = int(self.path.split("rank=")[1])
                    return self._answer(200, {"rank": rank, "frequencies": SCHEDULE})
                if self.path.startswith("/frontier/"):
                    return self._answer(200, {"points": [{"time": 1.0, "energy": 2.0}]})
                return self._answer(200, None)

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def to(self, prefix):
        return [r for r in self.requests if r[1].startswith(prefix)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plan_server():
    server = StubPlanServer()
    yield server
    server.close()


@pytest.fixture
def fake_nvml():
    if not os.path.exists(FAKE_NVML):
        pytest.skip("fake NVML not built: " + FAKE_NVML)
    return FAKE_NVML
