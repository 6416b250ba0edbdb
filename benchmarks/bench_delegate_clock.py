"""The Inspector on many delegate-logged rows: the cost of the delegate clock hooks.

The big vector has no delegate; this builds an ETDump of ``--runs`` runs, each a delegate
call logging ``--events`` events (integer identifiers, backend ``BenchNPU`` in the
ETRecord's delegate map), and times ``Inspector(...)`` (median over ``--repeat``) with:

* ``built-ins only``: no plugin converts the clock (``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD``
  set); the built-in fallback applies the source/target factor, one call per row;
* ``installed plugins``: whatever entry points are installed (``cycle_clock``, not
  configured for ``BenchNPU``, declines each row on its array hook and, asked by the
  built-in ``tick_clock``, on the row's first tick);
* ``per-tick plugin``: a 500 MHz clock for ``BenchNPU`` on ``dl_delegate_time_scale``
  (one call per tick);
* ``array plugin``: the same clock on ``dl_delegate_time_scale_array`` (one call per row,
  vectorized; same samples);
* ``cycle_clock 500 MHz``: the installed ``delegate-lens-cycle-clock`` plugin configured
  (``DELEGATE_LENS_OPTIONS``) with the same clock for ``BenchNPU`` (same samples).

Usage: python benchmarks/bench_delegate_clock.py [--runs 1000] [--events 200] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from machine import describe as describe_machine

EDGE = "executorch.exir.dialects.edge.ops."


def make_etdump(runs: int, events: int) -> bytes:
    from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps

    def prof(name: str | None, start: int, end: int, **kw: Any) -> Event:
        return Event(
            profile_event=ProfileEvent(
                name=name, instruction_id=0, start_time=start, end_time=end, **kw
            )
        )

    data = []
    for r in range(runs):
        t0 = r * (events * 20 + 1000)
        run = [
            prof(None, t0 + 20 + 10 * i, t0 + 27 + 10 * i + r % 3, delegate_debug_id_int=i)
            for i in range(events)
        ]
        run.append(prof("DELEGATE_CALL", t0 + 10, t0 + 20 + 10 * events + 50))
        run.append(prof("Method::execute", t0, t0 + 20 + 10 * events + 100, chain_index=-1))
        data.append(RunData(name="Execute", events=run))
    return dumps(ETDump(run_data=data))


def make_etrecord(events: int) -> Any:
    from delegate_lens.etrecord import ETRecord

    node = {
        "name": "aten_conv",
        "target": EDGE + "aten.convolution.default",
        "inputs": [],
        "outputs": [],
        "metadata": {"debug_handle": "1"},
    }
    key = "edge_dialect_exported_program/forward"
    entries = {
        "ETRECORD_V0": b"",
        key: json.dumps({"graph_module": {"graph": {"nodes": [node]}}}).encode(),
        key + "_state_dict": b"",
        key + "_constants": b"",
        key + "_example_inputs": b"",
        "debug_handle_map": json.dumps({"forward": {"0": [1]}}).encode(),
        "delegate_map": json.dumps(
            {
                "forward": {
                    "0": {
                        "name": "BenchNPU",
                        "delegate_map": {str(i): [1] for i in range(events)},
                    }
                }
            }
        ).encode(),
    }
    return ETRecord.from_entries(entries)


class TickClock:
    """The same clock, one tick at a time (the per-tick hook)."""

    def dl_delegate_time_scale(self, backend_id: str, ticks: int) -> float | None:
        return ticks * 2.0 if backend_id == "BenchNPU" else None


class ArrayClock:
    """A 500 MHz clock for BenchNPU, a whole row at a time."""

    def dl_delegate_time_scale_array(self, backend_id: str, ticks: Any) -> Any:
        return ticks * 2.0 if backend_id == "BenchNPU" else None


def measure(data: bytes, record: Any, repeat: int) -> tuple[float, list[list[float]]]:
    from delegate_lens.inspector import Inspector

    times = []
    inspector = None
    for _ in range(repeat):
        start = time.perf_counter()
        inspector = Inspector(etdump_data=data, etrecord=record)
        times.append(time.perf_counter() - start)
    assert inspector is not None
    samples = [t.samples.tolist() for t in inspector.tables]
    return statistics.median(times), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from delegate_lens.config import OPTIONS_ENV
    from delegate_lens.pluginmanager import AUTOLOAD_ENV, get_plugin_manager, reset_plugin_manager

    print(describe_machine())
    data = make_etdump(args.runs, args.events)
    record = make_etrecord(args.events)
    print(
        f"ETDump: {args.runs} runs x {args.events} delegate events ({len(data) / 1e6:.1f} MB); "
        f"Inspector(...) median of {args.repeat}:"
    )
    os.environ[AUTOLOAD_ENV] = "1"
    reset_plugin_manager()
    median, reference = measure(data, record, args.repeat)
    print(f"  built-ins only      {median:.3f} s")
    del os.environ[AUTOLOAD_ENV]
    reset_plugin_manager()
    median, samples = measure(data, record, args.repeat)
    assert samples == reference, "installed plugins changed the samples"
    print(f"  installed plugins   {median:.3f} s")
    pm = get_plugin_manager()
    pm.register(TickClock(), name="bench_tick_clock")
    median, converted = measure(data, record, max(1, args.repeat // 2))
    print(f"  per-tick plugin     {median:.3f} s  (median of {max(1, args.repeat // 2)})")
    pm.unregister(name="bench_tick_clock")
    if pm.get_plugin("cycle_clock") is None:
        print("  cycle_clock 500 MHz - (delegate-lens-cycle-clock not installed)")
    else:
        options = os.environ.get(OPTIONS_ENV)
        os.environ[OPTIONS_ENV] = 'cycle_clock.backends.BenchNPU = "500 MHz"'
        median, samples = measure(data, record, args.repeat)
        if options is None:
            del os.environ[OPTIONS_ENV]
        else:
            os.environ[OPTIONS_ENV] = options
        assert samples == converted, "cycle_clock's samples differ from the per-tick plugin's"
        print(f"  cycle_clock 500 MHz {median:.3f} s")
    if getattr(pm.hook, "dl_delegate_time_scale_array", None) is None:
        print("  array plugin        - (no dl_delegate_time_scale_array hook)")
        return
    pm.register(ArrayClock(), name="bench_array_clock")
    median, samples = measure(data, record, args.repeat)
    assert samples == converted, "the array plugin's samples differ from the per-tick one's"
    print(f"  array plugin        {median:.3f} s")


if __name__ == "__main__":
    main()
