"""Runs the embedded Kafka broker in the foreground: ``python -m sluice.testing``.

Prints ``Kafka bootstrap servers: 127.0.0.1:PORT`` and serves until Ctrl-C (or SIGTERM).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from sluice.testing import EmbeddedKafka, KafkaBrokerError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sluice.testing",
        description="Run a single-node Kafka broker (KRaft) on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, help="client port (default: a free one)")
    parser.add_argument(
        "--data-dir",
        help="keep the broker's data here across runs " "(default: a temporary directory, deleted on exit)",
    )
    args = parser.parse_args(argv)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    try:
        kafka = EmbeddedKafka(port=args.port, data_dir=args.data_dir).start()
    except KafkaBrokerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        print(f"Kafka bootstrap servers: {kafka.bootstrap_servers}", flush=True)
        print(
            f"(started in {kafka.startup_seconds:.1f} s; Ctrl-C stops it)",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            if not kafka.running:
                print("error: the Kafka broker exited", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        kafka.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
