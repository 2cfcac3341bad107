"""Run an MCP stdio server and record every line on the wire, for schema checks afterwards.

Usage: ``python tee_server.py LOG_DIR COMMAND [ARG...]``. Bytes are relayed unchanged both ways;
each line is also appended to ``LOG_DIR/<pid>.jsonl`` as ``{"from": "client"|"server",
"line": ...}``, one file per server process so each connection can be checked on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO


class _Recorder:
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115  # closed in close()
        self._lock = threading.Lock()

    def record(self, origin: str, line: bytes) -> None:
        text = line.rstrip(b"\n").decode("utf-8", errors="replace")
        with self._lock:
            self._file.write(json.dumps({"from": origin, "line": text}) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _relay(source: IO[bytes], sink: IO[bytes], recorder: _Recorder, origin: str) -> None:
    try:
        for line in iter(source.readline, b""):
            recorder.record(origin, line)
            sink.write(line)
            sink.flush()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.close()


def main(argv: list[str]) -> int:
    """Relay stdio between this process's parent and the server command in ``argv[1:]``."""
    log_dir, command = argv[0], argv[1:]
    os.makedirs(log_dir, exist_ok=True)
    recorder = _Recorder(os.path.join(log_dir, f"{os.getpid()}.jsonl"))
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    to_child = threading.Thread(
        target=_relay, args=(sys.stdin.buffer, child.stdin, recorder, "client"), daemon=True
    )
    to_child.start()
    _relay(child.stdout, sys.stdout.buffer, recorder, "server")
    code = child.wait()
    recorder.close()
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
