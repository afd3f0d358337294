"""The one skip allowed under CI=true (tests/conftest.py): a missing optional binary the README names."""

from types import SimpleNamespace

import pytest

from tests.conftest import optional_binaries, skip_allowed_in_ci


def _item(*binaries: str):
    marker = pytest.mark.requires_binary(*binaries).mark if binaries else None
    return SimpleNamespace(get_closest_marker=lambda name: marker if name == "requires_binary" else None)


def test_the_readme_names_the_optional_binaries():
    assert {"node", "npm"} <= optional_binaries()


def test_only_a_missing_binary_the_readme_names_may_skip(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)  # nothing installed
    assert skip_allowed_in_ci(_item("node", "npm"))
    assert not skip_allowed_in_ci(_item())  # unmarked: a skip fails
    assert not skip_allowed_in_ci(_item("node", "some-tool"))  # not named in the README


def test_a_present_binary_may_not_skip(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    assert not skip_allowed_in_ci(_item("node", "npm"))
