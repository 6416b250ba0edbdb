"""``EdgeProgramManager.to_program()``: the serialized program and its debug maps.

Every method's (lowered) graph becomes a value table and a list of instructions in
execution order: one :class:`~delegate_lens.program.OperatorInstruction` per operator
node, one :class:`~delegate_lens.program.DelegateCallInstruction` per delegate call
(``getitem`` nodes only pick outputs and make no instruction). Alongside come the maps an
ETRecord stores, keyed by instruction id (its index in the method):

* ``debug_handle_map`` — ``{method: {instruction id: tuple of handles}}``; a delegate call
  maps to every handle of its partition;
* ``delegate_map`` — ``{method: {instruction id: {"name": backend id, "delegate_map":
  {identifier: handles}}}}`` for delegate calls;
* ``instruction_id_to_num_outs_map`` — ``{method: {instruction id: outputs}}`` for
  delegate calls (as the reference writes it).
"""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from delegate_lens.aot._lowering import (
    LoweredBackendModule,
    is_delegate_call,
    lowered_module_of,
    placeholder_specs,
    state_of,
)
from delegate_lens.errors import DelegateLensError, UsageError
from delegate_lens.program import (
    BoolValue,
    DelegateCallInstruction,
    DelegateData,
    DeviceValue,
    DTypeValue,
    FloatValue,
    Instruction,
    IntValue,
    LayoutValue,
    ListValue,
    MemoryFormatValue,
    MethodData,
    NoneValue,
    OperatorInstruction,
    ProgramData,
    StringValue,
    TensorValue,
    Value,
    serialize,
)

if TYPE_CHECKING:
    from delegate_lens.aot._edge import EdgeProgramManager
    from delegate_lens.etrecord import ETRecord


DebugHandleMap = dict[str, dict[int, tuple[int, ...]]]
DelegateMapByMethod = dict[str, dict[int, dict[str, Any]]]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def op_name(target: object) -> str:
    """``torch.ops.aten.linear.default`` -> ``"aten.linear.default"``."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    return str(getattr(target, "__name__", target))


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The C-contiguous little-endian bytes of a tensor (any dtype)."""
    t = tensor.detach().to("cpu").contiguous()
    if t.numel() == 0:
        return b""
    return bytes(t.reshape(-1).view(torch.uint8).numpy().tobytes())


def _static_shape(node: torch.fx.Node, value: torch.Tensor) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in value.shape)
    except (TypeError, RuntimeError):
        raise UsageError(
            f"node {node.name}: dynamic shape {tuple(value.shape)} is not supported by "
            "the program format"
        ) from None


class _MethodBuilder:
    def __init__(self, name: str, program: ExportedProgram, delegates: list[DelegateData]):
        self.name = name
        self.program = program
        self.delegates = delegates
        self.values: list[Value] = []
        self.node_value: dict[torch.fx.Node, int] = {}
        self.instructions: list[Instruction] = []
        self.debug_handle_map: dict[int, tuple[int, ...]] = {}
        self.delegate_map: dict[int, dict[str, Any]] = {}
        self.num_outs: dict[int, int] = {}

    def add(self, value: Value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def tensor_spec(self, node: torch.fx.Node, value: object) -> int:
        if not isinstance(value, torch.Tensor):
            raise UsageError(
                f"method {self.name!r}: node {node.name} produces {type(value).__name__}, "
                "expected a tensor"
            )
        return self.add(TensorValue(dtype_name(value.dtype), _static_shape(node, value)))

    def arg(self, value: object, where: str) -> int:
        if isinstance(value, torch.fx.Node):
            try:
                return self.node_value[value]
            except KeyError:
                raise UsageError(
                    f"method {self.name!r}: {where} uses {value.name}, which has no value"
                ) from None
        if value is None:
            return self.add(NoneValue())
        if isinstance(value, bool):
            return self.add(BoolValue(value))
        if isinstance(value, int):
            return self.add(IntValue(value))
        if isinstance(value, float):
            return self.add(FloatValue(value))
        if isinstance(value, str):
            return self.add(StringValue(value))
        if isinstance(value, (list, tuple)):
            return self.add(ListValue([self.arg(v, where) for v in value]))
        if isinstance(value, torch.dtype):
            return self.add(DTypeValue(dtype_name(value)))
        if isinstance(value, torch.memory_format):
            return self.add(MemoryFormatValue(str(value).removeprefix("torch.")))
        if isinstance(value, torch.layout):
            return self.add(LayoutValue(str(value).removeprefix("torch.")))
        if isinstance(value, torch.device):
            return self.add(DeviceValue(str(value)))
        raise UsageError(
            f"method {self.name!r}: {where}: argument {value!r} of type "
            f"{type(value).__name__} is not supported by the program format"
        )

    def outputs_of(self, node: torch.fx.Node) -> tuple[int, ...]:
        value = node.meta.get("val")
        if value is None and not node.users:
            # an operator run for its checks only (e.g. aten._assert_tensor_metadata)
            return ()
        if isinstance(value, (tuple, list)):
            picks = {
                int(user.args[1]): user  # type: ignore[arg-type]
                for user in node.users
                if user.op == "call_function" and user.target is operator.getitem
            }
            out = []
            for k, item in enumerate(value):
                user = picks.get(k)
                if user is None:
                    out.append(-1)
                    continue
                vid = self.tensor_spec(user, item)
                self.node_value[user] = vid
                out.append(vid)
            return tuple(out)
        vid = self.tensor_spec(node, value)
        self.node_value[node] = vid
        return (vid,)

    def placeholders(self) -> list[int]:
        inputs = []
        for node, spec in placeholder_specs(self.program).items():  # in graph order
            if spec.kind == InputKind.USER_INPUT:
                value = node.meta.get("val")
                if isinstance(value, torch.Tensor):
                    vid = self.tensor_spec(node, value)
                else:
                    vid = self.arg(value, f"input {node.name}")
                self.node_value[node] = vid
                inputs.append(vid)
                continue
            try:
                _, tensor = state_of(self.program, spec)
            except UsageError as exc:
                raise UsageError(f"method {self.name!r}: {exc}") from None
            if not isinstance(tensor, torch.Tensor):
                raise UsageError(
                    f"method {self.name!r}: input {node.name} ({spec.target}) is not a tensor"
                )
            self.node_value[node] = self.add(
                TensorValue(
                    dtype_name(tensor.dtype),
                    _static_shape(node, tensor),
                    tensor_bytes(tensor),
                )
            )
        return inputs

    def operator(self, node: torch.fx.Node) -> None:
        if not isinstance(node.target, torch._ops.OpOverload):
            raise UsageError(
                f"method {self.name!r}: node {node.name} calls {node.target!r}, which is "
                "not an ATen operator the runtime can run"
            )
        where = f"node {node.name}"
        args = [self.arg(a, where) for a in node.args]
        kwargs = [(k, self.arg(v, where)) for k, v in node.kwargs.items()]
        outputs = self.outputs_of(node)
        handle = node.meta.get("debug_handle")
        handles = (handle,) if isinstance(handle, int) else ()
        index = len(self.instructions)
        self.instructions.append(
            OperatorInstruction(op_name(node.target), args, outputs, kwargs, handles)
        )
        if handles:
            self.debug_handle_map[index] = handles

    def delegate(self, node: torch.fx.Node) -> None:
        module: LoweredBackendModule = lowered_module_of(node)
        delegate_index = len(self.delegates)
        self.delegates.append(
            DelegateData(
                module.backend_id,
                module.processed_bytes,
                module.compile_specs,  # DelegateData converts them to CompileSpecData
            )
        )
        args = [self.arg(a, f"delegate call {node.name}") for a in node.args[1:]]
        outputs = self.outputs_of(node)
        handles = module.debug_handles
        index = len(self.instructions)
        self.instructions.append(DelegateCallInstruction(delegate_index, args, outputs, handles))
        self.debug_handle_map[index] = handles
        self.delegate_map[index] = {
            "name": module.backend_id,
            "delegate_map": dict(module.debug_handle_map or {}),
        }
        self.num_outs[index] = len(outputs)

    def build(self) -> MethodData:
        inputs = self.placeholders()
        outputs: list[int] = []
        for node in self.program.graph.nodes:
            if node.op == "call_function":
                if node.target is operator.getitem:
                    if node not in self.node_value:
                        raise UsageError(
                            f"method {self.name!r}: {node.name} picks from "
                            f"{node.args[0]!r}, which is not a multi-output operator"
                        )
                    continue
                if is_delegate_call(node):
                    self.delegate(node)
                else:
                    self.operator(node)
            elif node.op == "output":
                for item in torch.utils._pytree.tree_leaves(node.args[0]):
                    outputs.append(self.arg(item, "the method's outputs"))
            elif node.op == "get_attr":
                continue  # lowered modules, read by the delegate call
            elif node.op != "placeholder":
                raise UsageError(f"method {self.name!r}: unsupported node {node.op} {node.name}")
        return MethodData(self.name, inputs, outputs, self.values, self.instructions)


class ProgramManager:
    """The program for the runtime, and the debug maps of its instructions.

    :ivar program: the :class:`~delegate_lens.program.ProgramData`.
    :ivar debug_handle_map: ``{method: {instruction id: handles}}``.
    :ivar delegate_map: ``{method: {instruction id: {"name", "delegate_map"}}}``.
    :ivar instruction_id_to_num_outs_map: ``{method: {instruction id: outputs}}``.
    """

    def __init__(
        self,
        program: ProgramData,
        debug_handle_map: DebugHandleMap,
        delegate_map: DelegateMapByMethod,
        instruction_id_to_num_outs_map: dict[str, dict[int, int]],
        edge_manager: EdgeProgramManager | None = None,
    ) -> None:
        self.program = program
        self.debug_handle_map = debug_handle_map
        self.delegate_map = delegate_map
        self.instruction_id_to_num_outs_map = instruction_id_to_num_outs_map
        self._edge_manager = edge_manager
        self._buffer: bytes | None = None
        self._etrecord: ETRecord | None = None

    @property
    def methods(self) -> list[str]:
        return self.program.method_names

    @property
    def buffer(self) -> bytes:
        """The serialized program (``delegate_lens.program``), made once."""
        if self._buffer is None:
            self._buffer = serialize(self.program)
        return self._buffer

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :attr:`buffer` to ``path`` atomically (temp file, then rename)."""
        from delegate_lens.fileio import write_bytes_atomic

        try:
            return write_bytes_atomic(path, self.buffer)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise UsageError(f"cannot write the program to {Path(path)}: {reason}") from exc

    def write_to_file(self, open_file: BinaryIO) -> None:
        """Write :attr:`buffer` to an open binary file (ExecuTorch's name for it)."""
        open_file.write(self.buffer)

    def get_etrecord(self, representative_inputs: object = None) -> ETRecord:
        """The ETRecord of this program (needs ``generate_etrecord=True`` in ``to_edge``).

        It stores representative inputs for numeric debugging: ``representative_inputs``
        when given, else the exported program's example inputs (``False``: none)."""
        manager = self._edge_manager
        if manager is None or not manager.generate_etrecord:
            raise UsageError(
                "no ETRecord: pass generate_etrecord=True to to_edge / to_edge_transform_and_lower"
            )
        from delegate_lens.etrecord import build_etrecord

        if representative_inputs is not None:
            return build_etrecord(manager, self, representative_inputs=representative_inputs)
        if self._etrecord is None:
            self._etrecord = build_etrecord(manager, self)
        return self._etrecord

    def __repr__(self) -> str:
        counts = {m.name: len(m.instructions) for m in self.program.methods}
        return f"ProgramManager(instructions={counts}, delegates={len(self.program.delegates)})"


def build_program_manager(manager: EdgeProgramManager) -> ProgramManager:
    delegates: list[DelegateData] = []
    methods: list[MethodData] = []
    debug_handle_map: DebugHandleMap = {}
    delegate_map: DelegateMapByMethod = {}
    num_outs: dict[str, dict[int, int]] = {}
    for name in manager.methods:
        builder = _MethodBuilder(name, manager.exported_program(name), delegates)
        try:
            methods.append(builder.build())
        except DelegateLensError:
            raise
        except (TypeError, ValueError) as exc:
            raise UsageError(f"method {name!r}: cannot make a program: {exc}") from exc
        debug_handle_map[name] = builder.debug_handle_map
        delegate_map[name] = builder.delegate_map
        num_outs[name] = builder.num_outs
    program = ProgramData(methods, delegates)
    return ProgramManager(program, debug_handle_map, delegate_map, num_outs, manager)
