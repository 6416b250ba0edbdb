"""How fast ETRecord metadata is read without torch (issue 4: gpt_portable in <= 0.1 s).

"Metadata" is what the Inspector needs: open the archive, the debug handle / delegate /
num-outs maps, and one method's graph (nodes, handles, op types, stack traces, module
stacks). Three measurements, medians over repeated runs:

* fresh process: a new interpreter per run, timing ``import delegate_lens.etrecord`` plus
  the read inside it (interpreter start-up excluded, reported separately);
* cold object: in one process, a fresh ETRecord per run (file in the OS page cache);
* for contrast, with ``--torch``: deserializing the ATen program into torch (what a reader
  that needs torch pays), in a fresh process including ``import torch``.

Usage: python benchmarks/bench_etrecord.py [--vector gpt_portable] [--runs 21] [--torch]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import VECTORS, user_env
from machine import describe as describe_machine

_READ = """
import time, sys
t0 = time.perf_counter()
from delegate_lens.etrecord import parse_etrecord
t1 = time.perf_counter()
record = parse_etrecord(sys.argv[1])
graph = record.graph("forward")
n = len(graph.nodes); h = graph.handles
dm = record.debug_handle_map; de = record.delegate_map; no = record.instruction_id_to_num_outs_map
for node in graph.nodes:
    node.module_hierarchy
t2 = time.perf_counter()
assert "torch" not in sys.modules
print(t1 - t0, t2 - t1, t2 - t0, n)
"""

_TORCH = """
import time, sys
t0 = time.perf_counter()
from delegate_lens.etrecord import parse_etrecord
record = parse_etrecord(sys.argv[1])
program = record.exported_program
t1 = time.perf_counter()
print(t1 - t0)
"""


def synthetic(count: int) -> bytes:
    """An ETRecord archive whose one method has ``count`` nodes shaped like real ones."""
    import json

    from delegate_lens.etrecord import ETRecord, dumps_json

    nodes = [
        {
            "name": f"aten_add_tensor_{i}",
            "target": "executorch.exir.dialects.edge.ops.aten.add.Tensor",
            "inputs": [],
            "outputs": [],
            "metadata": {
                "stack_trace": f'File "model.py", line {i % 500}, in forward\n    x = x + 1',
                "nn_module_stack": f"L__self__,,M;L__self___l{i % 50},l{i % 50},torch.nn.Linear",
                "debug_handle": str(i // 2 + 1),
            },
        }
        for i in range(count)
    ]
    entry = "edge_dialect_exported_program/forward"
    entries = {
        "ETRECORD_V0": b"",
        entry: json.dumps({"graph_module": {"graph": {"nodes": nodes}}}).encode(),
    }
    for suffix in ("_state_dict", "_constants", "_example_inputs"):
        entries[entry + suffix] = b""
    entries["debug_handle_map"] = dumps_json({"forward": {i: i + 1 for i in range(count // 2)}})
    entries["delegate_map"] = dumps_json({"forward": {}})
    return ETRecord.from_entries(entries).to_bytes()


def _fresh(code: str, path: Path) -> tuple[list[float], float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=user_env(),
    ).stdout
    return [float(x) for x in out.split()], time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--torch", action="store_true", help="also time torch deserialization")
    parser.add_argument(
        "--synthetic",
        type=int,
        default=100_000,
        metavar="N",
        help="also time a synthetic graph of N nodes (0: skip)",
    )
    args = parser.parse_args()
    path = VECTORS / args.vector / "etrecord.bin"

    from delegate_lens.etrecord import parse_etrecord

    print(f"machine: {describe_machine()}")
    print(f"file:    {path} ({path.stat().st_size:,} bytes)")

    imports, reads, totals, walls = [], [], [], []
    nodes = 0
    for _ in range(args.runs):
        (imp, read, total, n), wall = _fresh(_READ, path)
        imports.append(imp)
        reads.append(read)
        totals.append(total)
        walls.append(wall)
        nodes = int(n)
    print(f"\nfresh process, {args.runs} runs ({nodes} nodes), medians:")
    print(f"  import delegate_lens.etrecord   {statistics.median(imports) * 1e3:8.1f} ms")
    print(
        f"  read metadata                   {statistics.median(reads) * 1e3:8.1f} ms"
        f"  (min {min(reads) * 1e3:.1f} ms)"
    )
    print(
        f"  import + read                   {statistics.median(totals) * 1e3:8.1f} ms"
        f"  (min {min(totals) * 1e3:.1f} ms; bar: 100 ms)"
    )
    print(f"  whole process incl. start-up    {statistics.median(walls) * 1e3:8.1f} ms")

    cold = []
    for _ in range(max(args.runs, 50)):
        start = time.perf_counter()
        record = parse_etrecord(path)
        graph = record.graph("forward")
        _ = (
            record.debug_handle_map,
            record.delegate_map,
            [n.module_hierarchy for n in graph.nodes],
        )
        cold.append(time.perf_counter() - start)
    print(f"\ncold ETRecord object in one process, {len(cold)} runs:")
    print(f"  median {statistics.median(cold) * 1e3:.2f} ms, min {min(cold) * 1e3:.2f} ms")

    if args.synthetic:
        data = synthetic(args.synthetic)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            record = parse_etrecord(data)
            graph = record.graph("forward")
            times.append(time.perf_counter() - start)
            del record, graph
        print(f"\nsynthetic graph, {args.synthetic:,} nodes ({len(data) / 1e6:.1f} MB), 5 runs:")
        print(f"  median {statistics.median(times) * 1e3:.0f} ms")

    if args.torch:
        runs = max(3, args.runs // 4)
        times = []
        for _ in range(runs):
            (seconds,), _wall = _fresh(_TORCH, path)
            times.append(seconds)
        print(f"\nfor contrast: exported_program into torch (import torch included), {runs} runs:")
        print(f"  median {statistics.median(times) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
