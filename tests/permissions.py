"""Running a child process for which file permissions apply, also when the tests run as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import REPO, subprocess_env


def without_write_permission() -> list[str] | None:
    """A command prefix under which a read-only file or folder is read-only, or None if none exists.

    Root ignores permission bits; dropping the two capabilities that let it (with util-linux's
    ``setpriv``) makes a child process see them as any user does.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--"]


def run_abbench_restricted(*args, timeout=300, **env) -> subprocess.CompletedProcess:
    """``python -m abbench ARGS`` in a child process that file permissions bind (see above)."""
    prefix = without_write_permission()
    assert prefix is not None, "call without_write_permission() first and skip when it is None"
    return subprocess.run(
        [*prefix, sys.executable, "-m", "abbench", *map(str, args)],
        cwd=REPO,
        env=subprocess_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
