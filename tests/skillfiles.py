"""Helpers for snapshot tests: write small skill folders and drive real git repositories in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SKILL_V1 = {
    "SKILL.md": """---
name: fast-slow-routing
description: 判断车载助手的请求走快系统还是慢系统
---
# 快慢路由

根据知识库判断。

## 规则
- 快系统能做的，走 fast
- 其他走 slow
""",
    "knowledge/车控.md": """# 车控

## 空调
- 打开空调：fast

## 车窗
- 打开车窗：fast

## 空调
- 空调温度调到 22 度：fast
""",
    "knowledge/media.md": "# Media\n\n## Play\n- play music: fast\n",
}


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (relative path -> text or bytes) under `root` and return `root`."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def git_env() -> dict[str, str]:
    """An environment in which git commits work the same on any machine."""
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )
    return env


class GitRepo:
    """A real git repository in a temporary folder."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        """Run git in the repository and return its stdout."""
        proc = subprocess.run(
            ["git", *args], cwd=self.path, env=git_env(), capture_output=True, text=True, check=True
        )
        return proc.stdout.strip()

    def write(self, files: dict[str, str | bytes]) -> None:
        """Write files relative to the repository's top."""
        write_files(self.path, files)

    def commit(self, message: str, tag: str | None = None) -> str:
        """Commit everything and return the commit id."""
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        if tag:
            self.git("tag", tag)
        return self.git("rev-parse", "HEAD")

    def state(self) -> dict[str, object]:
        """Everything a snapshot must leave untouched: HEAD, branch, status, index and work-tree bytes."""
        files = {}
        for p in sorted(self.path.rglob("*")):
            if p.is_file() and ".git" not in p.relative_to(self.path).parts:
                files[p.relative_to(self.path).as_posix()] = (p.read_bytes(), p.stat().st_mtime_ns)
        return {
            "head": self.git("rev-parse", "HEAD"),
            "branch": self.git("symbolic-ref", "HEAD"),
            "status": self.git("status", "--porcelain", "--untracked-files=all", "--ignored"),
            "index": (self.path / ".git" / "index").read_bytes(),
            "files": files,
        }
