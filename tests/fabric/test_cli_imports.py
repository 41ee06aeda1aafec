"""``import tui.program`` (the ``ibfab`` script: what ``ibfab --help`` pays for) must not load
textual, paramiko or pandas."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("textual", "paramiko", "pandas")


def test_cli_import_leaves_heavy_packages_unloaded() -> None:
    code = (
        "import json, sys; import tui.program; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []


def test_the_check_sees_a_heavy_import() -> None:
    # the same probe after importing the TUI does see textual: the test above can fail
    code = "import json, sys; import tui.app; print(json.dumps('textual' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) is True
