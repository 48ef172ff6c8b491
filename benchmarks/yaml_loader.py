"""Reading scenario YAML: the harness's own reader against ruamel.yaml's round-trip loader.

The harness reads scenarios with ``harness.suites.yamlpos.read_yaml``: PyYAML's
safe loader with YAML 1.2 core-schema scalars, duplicate keys refused and the
line of every value kept. ruamel.yaml's round-trip loader (``typ="rt"``) keeps
lines and columns natively and speaks YAML 1.2, so it is the obvious library to
replace it with; this measures what that would cost in load time.

Each round loads every bundled scenario file once with each reader, in an order
that rotates from round to round, so a slow moment on the machine falls on all
of them alike. The figures are the median time per round and each reader's
ratio to plain ``yaml.safe_load`` (no lines, YAML 1.1) timed in the same rounds,
with the spread (min–max) of the per-round ratios.

ruamel.yaml comes with the dev extra (``pip install -e ".[dev]"``).

Run: ``python benchmarks/yaml_loader.py`` (``--rounds 30`` by default).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from harness.suites.yamlpos import read_yaml

ROOT = Path(__file__).resolve().parent.parent


def _readers() -> dict[str, Callable[[str, Path], object]]:
    try:
        from ruamel.yaml import YAML
    except ImportError:
        sys.exit("ruamel.yaml is not installed: pip install ruamel.yaml")
    ruamel = YAML(typ="rt")

    return {
        "yaml.safe_load": lambda text, path: yaml.safe_load(text),
        "harness read_yaml": lambda text, path: read_yaml(text, path=path),
        "ruamel.yaml rt": lambda text, path: ruamel.load(text),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)

    files = sorted((ROOT / "scenarios").rglob("*.yaml"))
    files = [path for path in files if "fixtures" not in path.parts]
    texts = [(path.read_text(encoding="utf-8"), path) for path in files]
    readers = _readers()
    names = list(readers)
    times: dict[str, list[float]] = {name: [] for name in names}

    for round_ in range(args.rounds + 1):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            read = readers[name]
            started = time.perf_counter()
            for text, path in texts:
                read(text, path)
            elapsed = time.perf_counter() - started
            if round_:  # the first round warms caches and is not counted
                times[name].append(elapsed)

    baseline = times["yaml.safe_load"]
    print(f"{len(texts)} scenario files, {args.rounds} rounds")
    print(f"{'reader':<20} {'median ms':>10} {'ratio (median, min-max)':>28}")
    for name in names:
        ratios = [t / b for t, b in zip(times[name], baseline, strict=True)]
        print(
            f"{name:<20} {statistics.median(times[name]) * 1000:>10.2f} "
            f"{statistics.median(ratios):>12.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        )
    ours = times["harness read_yaml"]
    theirs = times["ruamel.yaml rt"]
    ratios = [t / o for t, o in zip(theirs, ours, strict=True)]
    print(
        f"ruamel.yaml rt / harness read_yaml: {statistics.median(ratios):.2f}x "
        f"({min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
