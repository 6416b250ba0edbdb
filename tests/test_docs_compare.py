"""docs/compare.md: every ```python block runs (in order, one namespace) on two GPT
vectors without torch, and prints what the doc says (a decimal may differ by one unit in
its last shown digit: rounding on another CPU or maths library)."""

from __future__ import annotations

import re
from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free, same_output

DOC = DOCS / "compare.md"


def _expected_outputs() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"^prints\n\n```text\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def test_python_examples_run(vectors_dir: Path, tmp_path: Path) -> None:
    for side, vector in (("base", "gpt_portable"), ("new", "gpt_portable_big")):
        (tmp_path / side).mkdir()
        for name in ("etdump.etdp", "etrecord.bin"):
            (tmp_path / side / name).symlink_to(vectors_dir / vector / name)
    assert len(blocks(DOC)) == 5
    result = run_blocks_torch_free(
        DOC, "docs_compare_example", tmp_path, env={"DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    expected = _expected_outputs()
    assert len(expected) == 5
    assert same_output(result.stdout, "".join(expected)), result.stdout


def test_outputs_compare_numbers_to_the_last_shown_digit() -> None:
    shown = "1.45 [1.11, 1.79] slower\nExecute 3.6607525 3.485056\n50 2000\n"
    assert same_output(shown.replace("1.11", "1.12"), shown)  # rounding tipped
    assert same_output(shown.replace("3.6607525", "3.6607524"), shown)
    assert not same_output(shown.replace("1.11", "1.13"), shown)
    assert not same_output(shown.replace("1.11", "1.1"), shown)
    assert not same_output(shown.replace("2000", "2001"), shown)  # counts are exact
    assert not same_output(shown.replace("slower", "faster"), shown)
