"""Which git URLs `prepare_from_url` lets git see, and that git itself refuses the rest."""

from __future__ import annotations

import subprocess

import pytest

from abbench.snapshot import GitFetchError, url_scheme
from abbench.snapshot._fetch import _git_args


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("https://example.invalid/o/r.git", "https"),
        ("ssh://git@example.invalid/o/r", "ssh"),
        ("git+ssh://example.invalid/o/r", "ssh"),
        ("git@example.invalid:o/r.git", "ssh"),
        ("example.invalid:o/r", "ssh"),
        ("file:///srv/repo", "file"),
        ("/srv/repo", "file"),
        ("./a:b", "file"),
    ],
)
def test_the_scheme_git_would_use(url, scheme):
    assert url_scheme(url) == scheme


@pytest.mark.parametrize(
    "url", ["ext::sh -c id", "fd::3", "foo::bar", "-uhack", "ftp://example.invalid/r", ""]
)
def test_transports_options_and_unknown_schemes_are_refused(url):
    with pytest.raises(GitFetchError) as refused:
        url_scheme(url)
    assert refused.value.kind == "refused"


def test_git_itself_refuses_ext_even_when_asked_directly(tmp_path):
    marker = tmp_path / "ran"
    args = _git_args(frozenset({"https", "ssh", "file"}))
    done = subprocess.run(
        [*args, "ls-remote", "--", f"ext::sh -c touch% {marker}"], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "not allowed" in done.stderr
    assert not marker.exists()
