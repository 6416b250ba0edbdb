"""DelegateMappingBuilder: the issue's rules, and random call sequences against a model."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens import DelegateMappingBuilder, MappingError
from delegate_lens.errors import DelegateLensError


class FakeNode:
    """Anything with a ``meta`` dict is a node to the builder."""

    def __init__(self, handle: Any) -> None:
        self.meta: dict[str, Any] = {} if handle is None else {"debug_handle": handle}


# --------------------------------------------------------------------------- examples


def test_manual_insert_and_upsert() -> None:
    b = DelegateMappingBuilder()
    assert b.insert_delegate_mapping_entry(handles=[3, 1, None, 3], identifier="fused") == "fused"
    assert b.insert_delegate_mapping_entry(nodes=[FakeNode(7), FakeNode(None)], identifier=4) == 4
    assert b.upsert_delegate_mapping_entry([FakeNode(2)], identifier="fused") == "fused"
    assert b.upsert_delegate_mapping_entry(FakeNode(9), identifier="new") == "new"
    assert b.get_delegate_mapping() == {"fused": (1, 2, 3), 4: (7,), "new": (9,)}


def test_generated_identifiers_are_dense() -> None:
    b = DelegateMappingBuilder(generated_identifiers=True)
    assert b.insert_delegate_mapping_entry(handles=5) == 0
    with pytest.raises(MappingError):
        b.insert_delegate_mapping_entry(handles=[None])  # failed: does not use up id 1
    assert b.upsert_delegate_mapping_entry(nodes=[FakeNode(5)]) == 1
    assert b.insert_delegate_mapping_entry(nodes=FakeNode(6)) == 2
    assert b.get_delegate_mapping() == {0: (5,), 1: (5,), 2: (6,)}


def test_insert_existing_identifier_is_an_error_and_changes_nothing() -> None:
    b = DelegateMappingBuilder()
    b.insert_delegate_mapping_entry(handles=[1], identifier="a")
    with pytest.raises(MappingError, match="'a'") as info:
        b.insert_delegate_mapping_entry(handles=[2], identifier="a")
    assert isinstance(info.value, ValueError) and isinstance(info.value, DelegateLensError)
    assert b.get_delegate_mapping() == {"a": (1,)}


@pytest.mark.parametrize(
    ("generated", "kwargs", "needle"),
    [
        (False, {"handles": [1]}, "needs one"),  # manual builder without identifier
        (True, {"handles": [1], "identifier": 3}, "must not be given"),
        (False, {"handles": [1], "nodes": [FakeNode(1)], "identifier": "x"}, "exactly one"),
        (False, {"identifier": "x"}, "exactly one"),
        (False, {"handles": [None, None], "identifier": "x"}, "no valid debug handle"),
        (False, {"nodes": [FakeNode(None)], "identifier": "x"}, "no valid debug handle"),
        (False, {"handles": [1], "identifier": -1}, ">= 0"),
        (False, {"handles": [1], "identifier": 2**31}, "int32"),
        (False, {"handles": [1], "identifier": ""}, "must not be empty"),
        (False, {"handles": [1], "identifier": 1.5}, "int or a str"),
        (False, {"handles": [1], "identifier": True}, "int or a str"),
        (False, {"handles": ["1"], "identifier": "x"}, "not an int"),
        (False, {"handles": [-2], "identifier": "x"}, "negative"),
        (False, {"handles": "12", "identifier": "x"}, "iterable of ints"),
        (False, {"handles": {1: 2}, "identifier": "x"}, "iterable of ints"),
        (False, {"nodes": [object()], "identifier": "x"}, "not a graph node"),
    ],
)
def test_misuse_raises_mapping_error(generated: bool, kwargs: dict[str, Any], needle: str) -> None:
    b = DelegateMappingBuilder(generated_identifiers=generated)
    with pytest.raises(MappingError, match=needle):
        b.insert_delegate_mapping_entry(**kwargs)
    assert b.get_delegate_mapping() == {}


def test_error_names_the_identifier() -> None:
    b = DelegateMappingBuilder()
    with pytest.raises(MappingError, match="'conv_relu_fused'"):
        b.upsert_delegate_mapping_entry(nodes=[FakeNode(None)], identifier="conv_relu_fused")


def test_numpy_integers_are_handles() -> None:
    np = pytest.importorskip("numpy")
    b = DelegateMappingBuilder()
    b.insert_delegate_mapping_entry(handles=[np.int64(4), np.int32(2)], identifier=np.int64(0))
    mapping = b.get_delegate_mapping()
    assert mapping == {0: (2, 4)}
    assert all(type(h) is int for h in mapping[0]) and type(next(iter(mapping))) is int


def test_any_iterable_of_nodes_or_handles() -> None:
    """As in the reference: ``graph.nodes``, generators, sets, numpy arrays all work."""
    np = pytest.importorskip("numpy")

    class NodeList:  # like torch.fx's graph.nodes: iterable, but not a list
        def __init__(self, nodes: list[FakeNode]) -> None:
            self._nodes = nodes

        def __iter__(self) -> Any:
            return iter(self._nodes)

    b = DelegateMappingBuilder()
    b.insert_delegate_mapping_entry(nodes=NodeList([FakeNode(3), FakeNode(None)]), identifier=0)
    b.insert_delegate_mapping_entry(nodes=(FakeNode(h) for h in (5, 4)), identifier=1)
    b.insert_delegate_mapping_entry(handles=np.array([7, 6]), identifier=2)
    b.insert_delegate_mapping_entry(handles=(h for h in (9, None, 8)), identifier=3)
    b.upsert_delegate_mapping_entry(NodeList([FakeNode(1)]), identifier=0)
    b.upsert_delegate_mapping_entry(handles=range(10, 12), identifier=1)
    assert b.get_delegate_mapping() == {0: (1, 3), 1: (4, 5, 10, 11), 2: (6, 7), 3: (8, 9)}


def test_result_is_a_copy() -> None:
    b = DelegateMappingBuilder()
    b.insert_delegate_mapping_entry(handles=1, identifier="a")
    b.get_delegate_mapping()["b"] = (2,)
    assert b.get_delegate_mapping() == {"a": (1,)}


def test_import_is_torch_free() -> None:
    code = (
        "import sys, delegate_lens as d; d.DelegateMappingBuilder; d.CompileSpec; "
        "d.PreprocessResult; d.BackendDetails; d.Partitioner; d.PartitionResult; "
        "d.DelegationSpec; import delegate_lens.builtins.mapping_validator; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --------------------------------------------------------------------------- model-based

handle_st = st.one_of(st.none(), st.integers(0, 30))
identifier_st = st.one_of(st.integers(0, 6), st.sampled_from(["a", "b", "c", "0"]))


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, bool, list[Any], Any]:
    kind = draw(st.sampled_from(["insert", "upsert"]))
    as_nodes = draw(st.booleans())
    handles = draw(st.lists(handle_st, max_size=4))
    identifier = draw(st.one_of(st.none(), identifier_st))
    return kind, as_nodes, handles, identifier


@settings(max_examples=300, deadline=None)
@given(generated=st.booleans(), sequence=st.lists(calls(), max_size=25))
def test_random_call_sequences_match_a_model(
    generated: bool, sequence: list[tuple[str, bool, list[Any], Any]]
) -> None:
    builder = DelegateMappingBuilder(generated_identifiers=generated)
    model: dict[Any, set[int]] = {}
    next_id = 0
    for kind, as_nodes, handles, identifier in sequence:
        valid = {h for h in handles if h is not None}
        # what the model says should happen
        if generated:
            ok = identifier is None and bool(valid)
            key: Any = next_id
        else:
            ok = identifier is not None and bool(valid)
            key = identifier
            if ok and kind == "insert" and key in model:
                ok = False
        before = builder.get_delegate_mapping()
        args: dict[str, Any] = {"identifier": identifier}
        if as_nodes:
            args["nodes"] = [FakeNode(h) for h in handles]
        else:
            args["handles"] = handles
        call = (
            builder.insert_delegate_mapping_entry
            if kind == "insert"
            else builder.upsert_delegate_mapping_entry
        )
        if ok:
            assert call(**args) == key
            model.setdefault(key, set()).update(valid)
            if generated:
                next_id += 1
        else:
            with pytest.raises(MappingError):
                call(**args)
            assert builder.get_delegate_mapping() == before
        expected = {k: tuple(sorted(v)) for k, v in model.items()}
        assert builder.get_delegate_mapping() == expected
    if generated:  # dense identifiers
        assert sorted(builder.get_delegate_mapping()) == list(range(len(model)))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 50), min_size=1, max_size=5), min_size=1, max_size=10),
)
def test_upsert_is_a_union(chunks: list[list[int]]) -> None:
    b = DelegateMappingBuilder()
    for chunk in chunks:
        b.upsert_delegate_mapping_entry(nodes=[FakeNode(h) for h in chunk], identifier="x")
    assert b.get_delegate_mapping() == {"x": tuple(sorted({h for c in chunks for h in c}))}
