import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.registry import Registry


def test_duplicate_name_raises():
    reg: Registry[int] = Registry("thing")
    reg.add("a", "first", 1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("a", "again", 2)


def test_unknown_suggests_closest():
    reg: Registry[int] = Registry("impl")
    reg.add("python", "", 1)
    reg.add("bash", "", 2)
    with pytest.raises(UserError, match="^f.toml: matrix.impl: unknown impl 'pyton'; did you mean 'python'"):
        reg.get("pyton", "f.toml: matrix.impl")


def test_builtin_registries_have_help():
    from jitterlab.plugins import ALL

    for kind, registry in ALL.items():
        assert registry.names(), kind
        for entry in registry:
            assert entry.help.strip(), (kind, entry.name)


def test_list_shows_every_benchmark_key(capsys):
    from jitterlab.cli.main import main

    assert main(["list"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "squarewave" in out and "period — the wave's nominal period (required" in out
    assert "probe — how edges are observed (default vpin" in out
