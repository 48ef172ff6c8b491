"""Start-up cost: ``import harness`` and ``harness --help`` against a bare interpreter.

Each command runs in a fresh process; the rounds interleave the commands, so
a slow moment on the machine falls on all of them alike. The figures are the
median wall time of each command and its ratio to ``python -c pass`` timed in
the same rounds, plus what ``python -X importtime`` gives as the cumulative
import time of the ``harness`` package and how many modules it loads.

``--against DIR`` measures another checkout of the project (a git worktree of
an older commit, say) in the same rounds, so a change can be judged by one run.

Run: ``python benchmarks/startup.py`` (``--rounds 30`` by default; ``--quick`` for 8).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The modules that ``import harness`` loads on top of a bare interpreter.
COUNT = "import sys; n = len(sys.modules); import harness; print(len(sys.modules) - n)"


def _script(name: str) -> str:
    """The console script ``name`` installed beside this interpreter."""
    path = Path(sys.executable).parent / name
    if not path.is_file():
        sys.exit(f"{path} not found: install the project (pip install -e .) first")
    return str(path)


def _commands() -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import harness": [sys.executable, "-c", "import harness"],
        "harness --help": [_script("harness"), "--help"],
    }


def _env(tree: Path) -> dict[str, str]:
    # The tree comes first on the path, ahead of the editable install's finder.
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def _wall(command: Sequence[str], tree: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=tree, env=_env(tree), check=True, capture_output=True)
    return time.perf_counter() - started


def _import_time_us(tree: Path) -> int:
    """The cumulative import time of ``harness`` as ``-X importtime`` reports it, in µs."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import harness"],
        cwd=tree,
        env=_env(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    for line in done.stderr.splitlines():
        # import time: self [us] | cumulative | imported package
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "harness":
            return int(parts[1])
    raise RuntimeError(f"no line for harness in -X importtime's output from {tree}")


def _module_count(tree: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", COUNT],
        cwd=tree,
        env=_env(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def measure(trees: Sequence[Path], rounds: int) -> dict[Path, dict[str, float]]:
    """Median seconds per command and tree, and the median ``-X importtime`` figure."""
    commands = _commands()
    for tree in trees:  # warm the file cache and fail early on a broken tree
        for command in commands.values():
            _wall(command, tree)
    walls: dict[Path, dict[str, list[float]]] = {t: {c: [] for c in commands} for t in trees}
    imports: dict[Path, list[int]] = {tree: [] for tree in trees}
    for _ in range(rounds):
        for tree in trees:
            for name, command in commands.items():
                walls[tree][name].append(_wall(command, tree))
            imports[tree].append(_import_time_us(tree))
    return {
        tree: {
            **{name: statistics.median(times) for name, times in walls[tree].items()},
            "importtime_ms": statistics.median(imports[tree]) / 1000,
        }
        for tree in trees
    }


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="8 rounds")
    parser.add_argument("--against", type=Path, help="another checkout, measured alongside")
    args = parser.parse_args()
    rounds = 8 if args.quick else args.rounds
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])

    figures = measure(trees, rounds)
    print(f"median of {rounds} interleaved rounds, each command in a fresh process")
    for tree in trees:
        row = figures[tree]
        bare = row["python -c pass"]
        print(f"\n{tree}  ({_module_count(tree)} modules loaded by import harness)")
        for name in _commands():
            print(f"  {name:16} {row[name] * 1000:8.1f} ms  {row[name] / bare:5.2f}x bare")
        print(f"  -X importtime    {row['importtime_ms']:8.1f} ms  (harness, cumulative)")


if __name__ == "__main__":
    main()
