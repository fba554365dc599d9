"""`hindsight serve --workers 2` on a real PostgreSQL, with one of its two worker processes SIGKILLed while client
threads retain: every retain acknowledged is kept, the other worker serves on, the bank passes its check, and so it
stays after a restart.

The kill lands while the victim holds a client's connection, so retains are in flight on it. A client retries only
a request that failed with a connection error (a retain of the same document id again changes nothing, so the retry
is safe); any other answer but 200 (or 202, and its operation done) fails the test.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.postgres_server import fresh_database, postgres_dsn
from tests.served import served

CLIENTS, PER_CLIENT = 4, 8  # the last client retains with "wait": false and waits on the operation
KILL_AFTER = 4  # acknowledged retains before the kill
DRAINED = 6  # retains answered 202 just before SIGTERM
BANK = "shared"
NAMES = ("Omar", "Lena", "Kenji", "Priya", "Ava")


def document(client: int, n: int) -> tuple[str, str]:
    name = NAMES[(client + n) % len(NAMES)]
    return f"c{client}-{n}", f"Maya met {name} in Denver about item {client}-{n}; they planned a hike for week {n}."


# -- processes and connections, from /proc ---------------------------------------------------------------------------

def serve_pid(port: int) -> int:
    """The `hindsight serve` process listening on `port`."""
    wanted = f"serve\0--port\0{port}\0".encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if wanted in cmdline.read_bytes():
                return int(cmdline.parent.name)
        except OSError:
            continue
    raise AssertionError(f"no hindsight serve process on port {port}")


def workers(parent: int) -> list[int]:
    """uvicorn's worker processes of `parent` (spawned by multiprocessing)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(found)


def connections(pid: int, port: int) -> int:
    """How many established connections to `port` the process holds: requests it has accepted."""
    try:
        inodes = {os.readlink(fd)[8:-1] for fd in Path(f"/proc/{pid}/fd").iterdir()
                  if os.readlink(fd).startswith("socket:[")}
    except OSError:
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "01" and int(parts[1].rsplit(":", 1)[1], 16) == port and parts[9] in inodes:
                count += 1
    return count


# -- the clients ---------------------------------------------------------------------------------------------------

@dataclass
class Stream:
    """What the client threads sent and were told."""

    url: str
    acked: dict[str, list[str]] = field(default_factory=dict)  # document id -> unit ids of its acknowledged retain
    refused: list[str] = field(default_factory=list)  # any answer but 200, 202 or a done operation
    connection_errors: int = 0
    interrupted: int = 0  # operations of the killed worker, failed as interrupted and sent again
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def retain(self, client: int, n: int) -> None:
        doc_id, text = document(client, n)
        wait = client != CLIENTS - 1
        for _ in range(20):
            try:
                with self.lock:
                    self.requests += 1
                r = httpx.post(f"{self.url}/v1/banks/{BANK}/retain", timeout=120,
                               json={"content": text, "document_id": doc_id, "timestamp": "2024-05-01T10:00:00",
                                     "wait": wait})
                if r.status_code == 202:
                    r = self._finished(r.json()["id"])
                    if r is None:
                        continue
            except httpx.TransportError:  # the worker died under the request: send it again
                with self.lock:
                    self.connection_errors += 1
                time.sleep(0.2)
                continue
            with self.lock:
                if r.status_code == 200:
                    self.acked[doc_id] = [u["id"] for u in r.json()["results"][0]["units"]]
                else:
                    self.refused.append(f"{doc_id}: {r.status_code} {r.text[:300]}")
            return
        with self.lock:
            self.refused.append(f"{doc_id}: still failing after 20 tries")

    def _finished(self, op_id: str) -> httpx.Response | None:
        """The operation's result as a 200, once done; None when the killed worker's restart marked it
        interrupted."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            r = httpx.get(f"{self.url}/v1/operations/{op_id}", params={"wait": 10}, timeout=60)
            op = r.json()
            if r.status_code != 200 or op["status"] == "done":
                return httpx.Response(r.status_code, json=op.get("result") if r.status_code == 200 else op)
            if op["status"] == "failed":
                if op["error"]["type"] != "OperationInterruptedError":
                    return httpx.Response(500, json=op)
                with self.lock:
                    self.interrupted += 1
                return None
        return httpx.Response(504, json={"operation": op_id, "stuck": "pending"})

    def run(self, client: int) -> None:
        for n in range(PER_CLIENT):
            self.retain(client, n)


def kept(url: str) -> tuple[dict[str, set[str]], list[Any]]:
    """The bank's units by document id, and its integrity problems."""
    units = httpx.get(f"{url}/v1/banks/{BANK}/units", params={"limit": 1000}, timeout=60).json()["items"]
    by_doc: dict[str, set[str]] = {}
    for u in units:
        by_doc.setdefault(u["source"]["document_id"], set()).add(u["id"])
    return by_doc, httpx.get(f"{url}/v1/banks/{BANK}/check", timeout=120).json()["problems"]


def assert_kept(url: str, stream: Stream) -> None:
    by_doc, problems = kept(url)
    assert problems == []
    lost = {doc: ids for doc, ids in stream.acked.items() if doc not in by_doc or not set(ids) <= by_doc[doc]}
    assert not lost, f"acknowledged retains lost: {lost}"


def exited(pid: int) -> bool:
    """Whether the process is gone or a zombie (its parent, the test, reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_worker_killed_mid_retain_loses_no_acknowledged_retain_and_the_other_serves_on(tmp_path: Path) -> None:
    config = {"store": {"backend": "postgres", "dsn": fresh_database(postgres_dsn())}, "llm": {"backend": "none"},
              "server": {"threads": 4}}
    started = time.monotonic()
    with served(tmp_path / "memdir", config, args=["--workers", "2"], ready_s=240) as url:
        ready = time.monotonic()
        port = int(url.rsplit(":", 1)[1])
        parent = serve_pid(port)
        pair = workers(parent)
        assert len(pair) == 2, pair
        stream = Stream(url)
        threads = [threading.Thread(target=stream.run, args=(c,)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        # Both workers accept before the kill, and the victim holds a client's connection when it dies.
        seen: set[int] = set()
        victim = None
        deadline = time.monotonic() + 180
        while victim is None and time.monotonic() < deadline:
            busy = [pid for pid in pair if connections(pid, port)]
            seen.update(busy)
            if seen == set(pair) and len(stream.acked) >= KILL_AFTER and busy:
                victim = busy[0]
            time.sleep(0.005)
        assert victim is not None, f"both workers never served with retains acknowledged: seen {seen}"
        os.kill(victim, signal.SIGKILL)
        killed_at, acked_at_kill = time.monotonic(), len(stream.acked)
        survivor = next(pid for pid in pair if pid != victim)
        # Until the worker uvicorn starts in the victim's place takes a request, the survivor serves alone.
        alone = None
        while any(t.is_alive() for t in threads) and time.monotonic() < killed_at + 240:
            if alone is None and any(connections(pid, port) for pid in set(workers(parent)) - set(pair)):
                alone = len(stream.acked) - acked_at_kill
            time.sleep(0.02)
        alone = len(stream.acked) - acked_at_kill if alone is None else alone
        streamed = time.monotonic()
        assert not any(t.is_alive() for t in threads)
        assert stream.refused == []
        assert len(stream.acked) == CLIENTS * PER_CLIENT
        assert survivor in workers(parent), "the other worker died too"
        assert alone > 0, "the other worker acknowledged nothing before the victim's replacement served"
        for n in range(6):  # and after the stream, every request is answered
            r = httpx.post(f"{url}/v1/banks/{BANK}/recall", json={"query": f"item 0-{n}"}, timeout=60)
            assert r.status_code == 200, r.text
        assert_kept(url, stream)
        # SIGTERM right after retains answered 202: the server finishes them before it exits.
        queued = {}
        for n in range(DRAINED):
            doc_id, text = document(CLIENTS, n)
            r = httpx.post(f"{url}/v1/banks/{BANK}/retain", json={"content": text, "document_id": doc_id,
                                                                  "wait": False}, timeout=60)
            assert r.status_code == 202, r.text
            queued[doc_id] = r.json()["id"]
        os.kill(parent, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while not exited(parent) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert exited(parent), "the server did not exit on SIGTERM"
    stopped = time.monotonic()
    with served(tmp_path / "memdir", config, ready_s=240) as url:  # a restart keeps it all, on one worker
        restarted = time.monotonic()
        assert_kept(url, stream)
        for doc_id, op_id in queued.items():
            op = httpx.get(f"{url}/v1/operations/{op_id}", timeout=60).json()
            assert op["status"] == "done", (doc_id, op)
            assert {u["id"] for u in op["result"]["results"][0]["units"]} <= kept(url)[0][doc_id]
    print(f"\npostgres faults: {len(stream.acked)} retains acknowledged (200) and kept, 0 lost; {stream.requests} "
          f"requests, {stream.connection_errors} connection errors retried, {stream.interrupted} operations "
          f"interrupted and sent again; {acked_at_kill} acknowledged before the kill, {alone} by the surviving "
          f"worker alone after it; {DRAINED} retains answered 202 before SIGTERM, all done after the restart. "
          f"{time.monotonic() - started:.1f} s: start {ready - started:.1f} s, kill at {killed_at - ready:.1f} s, "
          f"stream done {streamed - killed_at:.1f} s later, SIGTERM and stop {stopped - streamed:.1f} s, restart "
          f"{restarted - stopped:.1f} s")
