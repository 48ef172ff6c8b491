"""Start-up cost: ``import harness``, ``harness --help`` and commands' starts, against bare Python.

Each command runs in a fresh process; the rounds interleave the commands (and
the trees, with ``--against``), so a slow moment on the machine falls on all of
them alike. For each command the table gives its wall time and its ratio to
``python -c pass`` timed in the same round: the median over the rounds, and
the spread (min–max). The ratio is what to compare from one machine to another.
Every process finds the modules already compiled, as an installed package
has them (the bytecode goes to a temporary directory, not into the trees).
Also shown: what ``python -X importtime`` gives as the cumulative import time of
``harness.cli`` and how many modules ``harness --help`` loads.

The commands: ``import harness`` and ``import harness.cli``; ``harness --help``
(it reads every command's help, the channel plugins' included); ``harness run
--help`` (one command's declaration); ``harness schema`` (a small command, run
whole); ``harness run --list`` (a suite command's start: it loads the bundled
scenarios, stopping before it runs them).

``--against DIR`` measures another checkout of the project (a git worktree of
an older commit, say) in the same rounds, so a change can be judged by one run.
The checkout runs with its own ``DIR/.venv`` when it has one (its console
script and entry points are its own), else with this interpreter.

Run: ``python benchmarks/startup.py`` (``--rounds 30`` by default; ``--quick`` for 8).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The modules `harness --help` loads on top of a bare interpreter.
COUNT = (
    "import contextlib, io, sys\n"
    "n = len(sys.modules)\n"
    "from harness.cli.main import main\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    main(['--help'])\n"
    "print(len(sys.modules) - n)\n"
)


def _bin(tree: Path) -> Path:
    """The directory of the interpreter that runs ``tree``: its own venv's, or this one's."""
    own = tree / ".venv" / "bin"
    return own if (own / "python").is_file() and tree != ROOT else Path(sys.executable).parent


def _python(tree: Path) -> str:
    return str(_bin(tree) / "python") if tree != ROOT else sys.executable


def _script(tree: Path, name: str) -> str:
    """The console script ``name`` installed beside the tree's interpreter."""
    path = _bin(tree) / name
    if not path.is_file():
        sys.exit(f"{path} not found: install the project (pip install -e .) first")
    return str(path)


def _commands(tree: Path) -> dict[str, list[str]]:
    python, harness = _python(tree), _script(tree, "harness")
    return {
        "python -c pass": [python, "-c", "pass"],
        "import harness": [python, "-c", "import harness"],
        "import harness.cli": [python, "-c", "import harness.cli"],
        "harness --help": [harness, "--help"],
        "harness run --help": [harness, "run", "--help"],
        "harness schema": [harness, "schema"],
        "harness run --list": [harness, "run", "--list", "scenarios/booking"],
    }


# Compiled modules are kept, as an installed package has them, but outside the trees: in a
# directory of this run's own, filled by the warm-up pass.
_PYCACHE = tempfile.mkdtemp(prefix="harness-startup-pyc-")


def _env(tree: Path) -> dict[str, str]:
    # The tree comes first on the path, ahead of the editable install's finder.
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": _PYCACHE}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _wall(command: Sequence[str], tree: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=tree, env=_env(tree), check=True, capture_output=True)
    return time.perf_counter() - started


def _import_time_us(tree: Path, module: str) -> int:
    """The cumulative import time of ``module`` as ``-X importtime`` reports it, in µs."""
    done = subprocess.run(
        [_python(tree), "-X", "importtime", "-c", f"import {module}"],
        cwd=tree,
        env=_env(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    for line in done.stderr.splitlines():
        # import time: self [us] | cumulative | imported package
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no line for {module} in -X importtime's output from {tree}")


def _module_count(tree: Path) -> int:
    done = subprocess.run(
        [_python(tree), "-c", COUNT],
        cwd=tree,
        env=_env(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def measure(
    trees: Sequence[Path], rounds: int
) -> tuple[dict[Path, dict[str, list[float]]], dict[Path, list[int]]]:
    """Seconds per round for each command and tree, and the ``-X importtime`` figures."""
    for tree in trees:  # warm the file cache and fail early on a broken tree
        for command in _commands(tree).values():
            _wall(command, tree)
    walls: dict[Path, dict[str, list[float]]] = {
        tree: {name: [] for name in _commands(tree)} for tree in trees
    }
    imports: dict[Path, list[int]] = {tree: [] for tree in trees}
    for _ in range(rounds):
        for tree in trees:
            for name, command in _commands(tree).items():
                walls[tree][name].append(_wall(command, tree))
            imports[tree].append(_import_time_us(tree, "harness.cli"))
    return walls, imports


def _spread(values: Sequence[float], scale: float = 1.0, unit: str = "") -> str:
    """The median and (min–max) of ``values`` times ``scale``, in two aligned columns."""
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{f'{mid:.1f}{unit}':>8} {f'({low:.1f}–{high:.1f})':<15}"


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="8 rounds")
    parser.add_argument("--against", type=Path, help="another checkout, measured alongside")
    args = parser.parse_args()
    rounds = 8 if args.quick else args.rounds
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])

    try:
        _report(trees, rounds)
    finally:
        shutil.rmtree(_PYCACHE, ignore_errors=True)


def _report(trees: Sequence[Path], rounds: int) -> None:
    walls, imports = measure(trees, rounds)
    print(f"{rounds} interleaved rounds, each command in a fresh process: median (min–max)")
    for tree in trees:
        bare = walls[tree]["python -c pass"]
        print(f"\n{tree}  ({_module_count(tree)} modules loaded by harness --help)")
        print(f"  {'command':20} {'wall ms':<24}   x python -c pass")
        for name, times in walls[tree].items():
            ratios = [t / b for t, b in zip(times, bare, strict=True)]
            print(f"  {name:20} {_spread(times, 1000)}   {_spread(ratios, unit='x')}")
        importtime = _spread(imports[tree], 1 / 1000)
        print(f"  {'-X importtime':20} {importtime}   (harness.cli, cumulative ms)")


if __name__ == "__main__":
    main()
