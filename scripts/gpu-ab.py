#!/usr/bin/env python3
"""A/B runs of one kfuse-bench command on the GPU machine, side by side.

Each variant is the same command under its own environment (temporary
switches such as KFUSE_NO_CLUSTER=1) and its own kernel cache directory, so
that no variant loads another's kernels. Rounds go variant by variant
(a, b, a, b, ...) so that a machine drifting over the call shows in every
variant alike. The table gives each row's figure (by default the x-floor
column of `kfuse-bench sweep`) for every variant and round.

On the GPU machine, through scripts/gpu-steps.sh's `ab` step:
  AB_VARIANTS='new|old:KFUSE_NO_CLUSTER=1' AB_ARGS='sweep --workload rows' \
  AB_GREP=_bf16_ bash scripts/gpu-steps.sh ab
Here, on logs of such a run: scripts/gpu-ab.py --from-logs DIR
"""
import argparse
import os
import re
import subprocess
import sys
import time


def parse_variants(text):
    """'name:K=V,K=V|name2' -> [(name, {K: V})]."""
    variants = []
    for item in filter(None, text.split("|")):
        name, _, assignments = item.partition(":")
        env = {}
        for assignment in filter(None, assignments.split(",")):
            key, eq, value = assignment.partition("=")
            if not eq or not key:
                sys.exit(f"gpu-ab: '{assignment}' in variant '{name}' is not KEY=VALUE")
            env[key.strip()] = value
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            sys.exit(f"gpu-ab: variant name '{name}' must be letters, digits, _ . -")
        variants.append((name, env))
    if len(variants) < 2:
        sys.exit("gpu-ab: AB_VARIANTS needs at least two variants, '|'-separated")
    return variants


def figures(log, pattern, column):
    """Row name -> the figure in `column` (0 = the name) of its table line."""
    rows = {}
    for line in log.splitlines():
        fields = line.split()
        if len(fields) <= column or not re.search(pattern, fields[0]):
            continue
        try:
            rows[fields[0]] = float(fields[column])
        except ValueError:
            continue
    return rows


def table(results, variants, rounds):
    """Markdown: a row per table line, a column per variant, rounds '/'."""
    names = []
    for r in range(rounds):
        for name, _ in variants:
            for row in results.get((name, r), {}):
                if row not in names:
                    names.append(row)
    lines = ["| row | " + " | ".join(n for n, _ in variants) + " |",
             "| --- |" + " --- |" * len(variants)]
    for row in names:
        cells = []
        for name, _ in variants:
            got = [results.get((name, r), {}).get(row) for r in range(rounds)]
            cells.append(" / ".join("-" if v is None else f"{v:.3f}" for v in got))
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args, variants):
    bench = os.path.join(os.environ["bin"], "kfuse-bench")
    peers = os.path.join(os.environ["bin"], "peers.py")
    out = os.environ.get("out", ".")
    command = [bench] + args.args.split() + ["--peers", peers]
    results = {}
    for r in range(args.rounds):
        for name, env in variants:
            started = time.time()
            full_env = dict(os.environ, KFUSE_CACHE_DIR=f"/tmp/ab-{name}", **env)
            try:
                done = subprocess.run(command, env=full_env, capture_output=True,
                                      text=True, timeout=args.limit)
                log, status = done.stdout + done.stderr, done.returncode
            except subprocess.TimeoutExpired as e:
                log = (e.stdout or b"").decode() + (e.stderr or b"").decode()
                status = "timeout"
            with open(os.path.join(out, f"ab-{name}-{r}.log"), "w") as f:
                f.write(log)
            results[(name, r)] = figures(log, args.grep, args.column)
            print(f"{name} round {r + 1}: rc={status} {time.time() - started:.0f}s "
                  f"{len(results[(name, r)])} rows", flush=True)
    return results


def from_logs(directory, variants_seen):
    results, rounds = {}, 0
    for entry in sorted(os.listdir(directory)):
        m = re.fullmatch(r"ab-(.+)-(\d+)\.log", entry)
        if not m:
            continue
        name, r = m.group(1), int(m.group(2))
        if name not in variants_seen:
            variants_seen.append(name)
        rounds = max(rounds, r + 1)
        with open(os.path.join(directory, entry)) as f:
            results[(name, r)] = f.read()
    return results, rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=os.environ.get("AB_VARIANTS", ""))
    parser.add_argument("--args", default=os.environ.get("AB_ARGS", "sweep"))
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("AB_ROUNDS", 2)))
    parser.add_argument("--grep", default=os.environ.get("AB_GREP", "."))
    parser.add_argument("--column", type=int, default=int(os.environ.get("AB_COL", 5)),
                        help="the figure's field, 0 being the row's name "
                             "(5: sweep's x floor)")
    parser.add_argument("--limit", type=int, default=int(os.environ.get("AB_LIMIT", 120)),
                        help="seconds a run may take")
    parser.add_argument("--from-logs", help="tabulate the ab-*.log of a run")
    args = parser.parse_args()
    if args.from_logs:
        names = []
        logs, rounds = from_logs(args.from_logs, names)
        variants = [(n, {}) for n in names]
        results = {k: figures(v, args.grep, args.column) for k, v in logs.items()}
    else:
        variants = parse_variants(args.variants)
        if "bin" not in os.environ:
            sys.exit("gpu-ab: run through scripts/gpu-steps.sh (it sets $bin)")
        rounds = args.rounds
        results = run(args, variants)
    print(table(results, variants, rounds))


if __name__ == "__main__":
    main()
