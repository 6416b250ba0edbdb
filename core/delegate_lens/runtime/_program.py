"""Load a serialized program and run its methods.

``Program.load(path_or_bytes)`` reads what ``ProgramManager.buffer`` holds (see
:mod:`delegate_lens.program`); ``program.load_method(name, event_tracer)`` prepares
one method: resolves every operator to its torch kernel and initializes every delegate
through the ``dl_runtime_backend`` plugin of its backend (``init`` once, here);
``method.execute(inputs)`` runs the instructions in order and returns the outputs.

With an event tracer (e.g. :class:`~delegate_lens.runtime.ETDumpGen`) the method records
the reference runtime's events: ``Method::init`` and ``Program::load_method`` at load, and
per execute ``OPERATOR_CALL`` + ``native_call_<op>.out`` per operator, ``DELEGATE_CALL`` per
delegate call and ``Method::execute``. Without one, nothing is timed or recorded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import torch

from delegate_lens.backend import CompileSpec
from delegate_lens.errors import DelegateLensError, ProgramFormatError, RuntimeBackendError
from delegate_lens.fileio import read_input
from delegate_lens.program import (
    DelegateCallInstruction,
    ListValue,
    MethodData,
    ProgramData,
    TensorValue,
    deserialize,
)
from delegate_lens.runtime._event_tracer import EventTracer, check_clock_value
from delegate_lens.runtime._kernels import constant_value, kernel_event_name, resolve_op

if TYPE_CHECKING:
    from delegate_lens.hookspecs import RuntimeBackend
    from delegate_lens.program import Instruction, Value


@attrs.frozen
class BackendExecutionContext:
    """What a backend's ``execute(context, handle, args)`` gets besides its inputs.

    Pass ``context.event_tracer`` to the ``event_tracer_*`` functions (it is ``None`` when
    the method runs untraced).
    """

    event_tracer: EventTracer | None
    instruction_id: int
    backend_id: str
    method_name: str
    delegate_index: int


class Program:
    """A loaded program: its methods and delegates, ready to be run."""

    def __init__(self, data: ProgramData, source: str = "<bytes>") -> None:
        self.data = data
        self.source = source

    @classmethod
    def load(
        cls, path_or_bytes: str | os.PathLike[str] | bytes | bytearray | memoryview
    ) -> Program:
        """Load a program from a file or from the bytes ``ProgramManager.buffer`` holds."""
        if isinstance(path_or_bytes, bytes | bytearray | memoryview):
            return cls(deserialize(path_or_bytes))
        path = Path(path_or_bytes)
        data = read_input(path, "program")
        try:
            return cls(deserialize(data), str(path))
        except ProgramFormatError as exc:
            raise ProgramFormatError(f"{path}: {exc}") from None

    @property
    def method_names(self) -> list[str]:
        return self.data.method_names

    def load_method(self, name: str = "forward", event_tracer: EventTracer | None = None) -> Method:
        """Prepare method ``name``; with a tracer, its load is recorded (Default block)."""
        method_data = self.data.method(name)
        if event_tracer is None:
            return Method(self, method_data, None)
        clock = event_tracer.clock
        t_load = clock()
        check_clock_value(t_load)
        t_init = clock()
        method = Method(self, method_data, event_tracer)
        t_init_end = clock()
        event_tracer.add_profile_event("Method::init", -1, 0, t_init, t_init_end)
        event_tracer.add_profile_event("Program::load_method", -1, 0, t_load, clock())
        return method


def _runtime_backend(backend_id: str) -> RuntimeBackend:
    from delegate_lens import hooks

    backend = hooks.runtime_backend(backend_id)
    if backend is None:
        raise RuntimeBackendError(
            f"no plugin provides a runtime for backend {backend_id!r} "
            "(dl_runtime_backend returned nothing; is its plugin installed?)"
        )
    if not (
        callable(getattr(backend, "init", None)) and callable(getattr(backend, "execute", None))
    ):
        raise RuntimeBackendError(
            f"the runtime of backend {backend_id!r} ({type(backend).__name__}) lacks "
            "init(processed_bytes, compile_specs) / execute(context, handle, args)"
        )
    return backend


def _to_runtime(value: object) -> object:
    if isinstance(value, np.ndarray | np.generic):
        return torch.from_numpy(np.ascontiguousarray(value))
    return value


class Method:
    """One loaded method. ``execute(inputs)`` returns the list of outputs."""

    def __init__(
        self, program: Program, data: MethodData, event_tracer: EventTracer | None
    ) -> None:
        self.program = program
        self.data = data
        self.name = data.name
        self.event_tracer = event_tracer
        self.outputs: list[Any] = []
        """The outputs of the last :meth:`execute`."""
        self._loaded_inputs: list[Any] | None = None
        self._bundled_input_index = -1
        values = data.values
        runtime = set(data.inputs)
        for inst in data.instructions:
            runtime.update(self._flat_outputs(inst.outputs))
        produced = set(runtime)
        for vid in data.outputs:
            value = values[vid]
            if isinstance(value, TensorValue) and value.data is None and vid not in produced:
                raise ProgramFormatError(
                    f"method {self.name!r}: output value {vid} is never produced (neither an "
                    "input nor the output of an instruction)"
                )
        runtime.update(
            i for i, v in enumerate(values) if isinstance(v, TensorValue) and v.data is None
        )
        base: list[Any] = []
        for vid, value in enumerate(values):
            try:
                base.append(constant_value(value))
            except RuntimeBackendError as exc:
                raise RuntimeBackendError(f"method {self.name!r} value {vid}: {exc}") from None
        dynamic_lists: set[int] = set()

        def resolve_list(vid: int, seen: frozenset[int] = frozenset()) -> bool:
            """Fill ``base`` for a static list; returns True when the list is dynamic."""
            if vid in seen:
                raise ProgramFormatError(f"method {self.name!r}: list value {vid} contains itself")
            item_ids = values[vid].items  # type: ignore[union-attr]
            dyn = False
            for i in item_ids:
                if isinstance(values[i], ListValue):
                    dyn |= resolve_list(i, seen | {vid})
                else:
                    dyn |= i in runtime
            if dyn:
                dynamic_lists.add(vid)
            else:
                base[vid] = [base[i] for i in item_ids]
            return dyn

        for vid, v in enumerate(values):
            if isinstance(v, ListValue):
                resolve_list(vid)
        self._base = base
        self._input_ids = data.inputs
        self._output_ids = data.outputs
        # A step is a flat tuple, cheap to unpack in the hot loop:
        #   operator: (0, iid, kernel, kernel event name, arg ids, out ids, lists, kwargs, op)
        #   delegate: (1, iid, backend, handle, arg ids, out ids, lists, context)
        # ``lists``: ((list value id, item ids), ...), rebuilt before the step because
        # they hold values produced at run time.
        self._steps: list[tuple[Any, ...]] = []
        self._delegate_handles: dict[int, tuple[RuntimeBackend, object]] = {}
        for iid, inst in enumerate(data.instructions):
            lists = self._lists_needed(inst, values, dynamic_lists)
            outs = self._flat_outputs(inst.outputs)
            if isinstance(inst, DelegateCallInstruction):
                backend, handle = self._init_delegate(inst.delegate_index)
                context = BackendExecutionContext(
                    event_tracer,
                    iid,
                    program.data.delegates[inst.delegate_index].backend_id,
                    self.name,
                    inst.delegate_index,
                )
                self._steps.append((1, iid, backend, handle, inst.args, outs, lists, context))
            else:
                try:
                    fn = resolve_op(inst.op)
                except RuntimeBackendError as exc:
                    raise RuntimeBackendError(
                        f"method {self.name!r} instruction {iid}: {exc}"
                    ) from None
                self._steps.append(
                    (
                        0,
                        iid,
                        fn,
                        kernel_event_name(inst.op),
                        inst.args,
                        outs,
                        lists,
                        inst.kwargs,
                        inst.op,
                    )
                )

    def _flat_outputs(self, ids: Sequence[int]) -> tuple[int, ...]:
        out: list[int] = []
        for vid in ids:
            value = self.data.values[vid] if vid >= 0 else None
            if isinstance(value, ListValue):
                out.extend(value.items)
            else:
                out.append(vid)
        return tuple(out)

    @staticmethod
    def _lists_needed(
        inst: Instruction, values: Sequence[Value], dynamic: set[int]
    ) -> tuple[tuple[int, tuple[int, ...]], ...]:
        order: list[int] = []

        def items(vid: int) -> tuple[int, ...]:
            value = values[vid]
            return value.items if isinstance(value, ListValue) else ()

        def visit(vid: int) -> None:
            if vid in dynamic and vid not in order:
                for i in items(vid):
                    visit(i)
                order.append(vid)

        ids = list(inst.args) + [v for _, v in getattr(inst, "kwargs", ())]
        for vid in ids:
            visit(vid)
        return tuple((vid, items(vid)) for vid in order)

    def _init_delegate(self, index: int) -> tuple[RuntimeBackend, object]:
        if index in self._delegate_handles:
            return self._delegate_handles[index]
        delegate = self.program.data.delegates[index]
        backend = _runtime_backend(delegate.backend_id)
        try:
            specs = [CompileSpec(s.key, s.value) for s in delegate.compile_specs]
            handle = backend.init(delegate.processed_bytes, specs)
        except DelegateLensError:
            raise
        except Exception as exc:
            raise RuntimeBackendError(
                f"backend {delegate.backend_id!r} failed to init delegate {index} of method "
                f"{self.name!r}: {exc}"
            ) from exc
        self._delegate_handles[index] = (backend, handle)
        return backend, handle

    # ------------------------------------------------------------------ execution

    def set_inputs(self, inputs: Sequence[object], bundled_input_index: int = -1) -> None:
        """Keep ``inputs`` for the next :meth:`execute` called without inputs (as the C++
        ``Method::set_input``); ``bundled_input_index`` names the bundled test case they
        came from, which the event tracer records in each run's block (-1: none)."""
        self._check_inputs(inputs)
        self._loaded_inputs = list(inputs)
        self._bundled_input_index = int(bundled_input_index)

    def execute(self, inputs: Sequence[object] | None = None) -> list[Any]:
        """Run the method on ``inputs`` (tensors, arrays or scalars); returns the outputs.

        Without ``inputs``, runs on those given to :meth:`set_inputs` (or loaded from a
        bundled program by ``load_bundled_input``). The outputs are also kept in
        :attr:`outputs`.
        """
        bundled = -1
        if inputs is None:
            loaded = self._loaded_inputs
            if loaded is None:
                raise RuntimeBackendError(
                    f"method {self.name!r}: no inputs given and none set (call set_inputs "
                    "or load_bundled_input first)"
                )
            inputs, bundled = loaded, self._bundled_input_index
        self._check_inputs(inputs)
        if self.event_tracer is not None:
            self.event_tracer.bundled_input_index = bundled
        self.outputs = self._execute(inputs)
        return self.outputs

    def _check_inputs(self, inputs: Sequence[object]) -> None:
        if not isinstance(inputs, Sequence) or isinstance(inputs, str | bytes):
            raise RuntimeBackendError(
                f"method {self.name!r} takes a list or tuple of inputs, got "
                f"{type(inputs).__name__} (pass [x] for one input)"
            )
        if len(inputs) != len(self._input_ids):
            raise RuntimeBackendError(
                f"method {self.name!r} takes {len(self._input_ids)} inputs, got {len(inputs)}"
            )

    def _execute(self, inputs: Sequence[object]) -> list[Any]:
        vals = self._base.copy()
        for vid, value in zip(self._input_ids, inputs):
            vals[vid] = _to_runtime(value)
        tracer = self.event_tracer
        if tracer is None:
            for step in self._steps:
                self._run_step(step, vals)
            return [vals[i] for i in self._output_ids]
        return self._execute_traced(tracer, vals)

    def _execute_traced(self, tracer: EventTracer, vals: list[object]) -> list[object]:
        tracer.create_event_block("Execute")
        clock = tracer.clock
        add = tracer.add_profile_event
        log_values = bool(getattr(tracer, "log_intermediate_outputs", False))
        t_exec = clock()
        if type(t_exec) is not int:
            check_clock_value(t_exec)
        for step in self._steps:
            iid = step[1]
            if step[0] == 0:
                if log_values:
                    tracer.set_chain_debug_handle(0, iid)
                t_op = clock()
                t_kernel = clock()
                result = self._run_step(step, vals)
                if log_values and step[5]:
                    # as the reference's kernels: each out argument once, unused ones too;
                    # a Tensor[] return (a list) is one TensorList value
                    if type(result) is tuple:
                        for item in result:
                            tracer.log_evalue(item)
                    else:
                        tracer.log_evalue(result)
                t_kernel_end = clock()
                add(step[3], 0, iid, t_kernel, t_kernel_end)
                add("OPERATOR_CALL", 0, iid, t_op, clock())
            else:
                tracer.set_chain_debug_handle(0, iid)
                tracer.delegate_backend_id = step[7].backend_id
                t_call = clock()
                try:
                    self._run_step(step, vals)
                    if log_values:
                        for vid in (*step[4], *step[5]):
                            if vid >= 0:
                                tracer.log_evalue(vals[vid])
                finally:
                    tracer.delegate_backend_id = None
                add("DELEGATE_CALL", 0, iid, t_call, clock())
        add("Method::execute", -1, 0, t_exec, clock())
        outputs = [vals[i] for i in self._output_ids]
        if log_values:
            tracer.set_chain_debug_handle(-1, 0)
            for value in outputs:
                tracer.log_evalue(value, output=True)
        return outputs

    def _run_step(self, step: tuple[Any, ...], vals: list[object]) -> object:
        """Run one step, storing its outputs in ``vals``; returns an operator's raw result."""
        for vid, items in step[6]:
            vals[vid] = [vals[i] for i in items]
        if step[0] == 0:
            _, iid, fn, _name, arg_ids, outs, _lists, kwargs, op = step
            args = [vals[i] for i in arg_ids]
            try:
                result = fn(*args, **{k: vals[v] for k, v in kwargs}) if kwargs else fn(*args)
            except DelegateLensError:
                raise
            except Exception as exc:
                raise RuntimeBackendError(
                    f"method {self.name!r} instruction {iid} ({op}) failed: {exc}"
                ) from exc
            if not outs:
                pass  # run for its checks only (e.g. aten._assert_tensor_metadata)
            elif isinstance(result, tuple | list):
                if len(outs) == 1 and len(result) != 1:
                    vals[outs[0]] = result
                else:
                    for k, vid in enumerate(outs):
                        if vid >= 0:
                            vals[vid] = result[k]
            else:
                vals[outs[0]] = result
            return result
        _, iid, backend, handle, arg_ids, outs, _lists, context = step
        try:
            result = backend.execute(context, handle, [vals[i] for i in arg_ids])
        except DelegateLensError:
            raise
        except Exception as exc:
            raise RuntimeBackendError(
                f"backend {context.backend_id!r} failed in delegate call (method "
                f"{self.name!r} instruction {iid}): {exc}"
            ) from exc
        if not isinstance(result, tuple | list):
            result = [result]
        if len(result) != len(outs):
            raise RuntimeBackendError(
                f"backend {context.backend_id!r} returned {len(result)} outputs for method "
                f"{self.name!r} instruction {iid}, expected {len(outs)}"
            )
        for vid, value in zip(outs, result):
            if vid >= 0:
                vals[vid] = _to_runtime(value)
        return None
