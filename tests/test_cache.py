"""The user's cache directory: one place decides it, and every part of jitterlab uses that place."""

from pathlib import Path

from jitterlab.cache import user_cache
from jitterlab.targets.qemu import kernels
from jitterlab.targets.unit import firmware
from jitterlab.tracing import reader


def test_xdg_cache_home_is_honoured_everywhere(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache() == tmp_path / "jitterlab"
    assert kernels.cache_root() == reader.cache_dir() == tmp_path / "jitterlab"
    assert firmware.cache_dir() == tmp_path / "jitterlab" / "firmware"


def test_without_xdg_cache_home_it_is_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_cache() == Path(tmp_path) / ".cache" / "jitterlab"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # set but empty: the default, as the spec says
    assert user_cache() == Path(tmp_path) / ".cache" / "jitterlab"
