"""`jitterlab list` and its --help are read from the registries when shown: what is registered since
(a qemu machine here) is in them at once, and the `fake` target kind of the tests is in none of them."""

from __future__ import annotations

import dataclasses

import pytest

from jitterlab.cli.commands import list as list_command
from jitterlab.cli.main import main
from jitterlab.model.errors import UserError
from jitterlab.model.registry import Entry
from jitterlab.plugins import ALL
from jitterlab.report.formats import EXPORTERS
from jitterlab.store.backends import BACKENDS
from jitterlab.targets.qemu.machines.registry import MACHINES
from jitterlab.targets.qemu.machines.virt import VIRT_ARM64
from jitterlab.targets.qemu.options import option_help, parse_options
from jitterlab.targets.registry import KINDS, TARGETS, declare


def listed(capsys, *argv: str) -> list[str]:
    if "--help" in argv:
        with pytest.raises(SystemExit) as done:
            main(["list", *argv])
        assert done.value.code == 0
    else:
        assert main(["list", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_every_registry_is_a_section_of_list():
    titles = [s.title for s in list_command.SECTIONS]
    assert set(ALL) <= set(titles), "a registry of plugins.ALL that `jitterlab list` does not show"
    assert {"export formats", "store backends"} <= set(titles)


def test_list_shows_target_kinds_with_their_options_machines_exporters_and_backends(capsys):
    lines = [" ".join(line.split()) for line in listed(capsys)]
    assert 'options of a [[target]] with kind = "ssh":' in lines
    assert "cc — " + KINDS["ssh"].options()["cc"] in lines
    assert any(line.startswith("packages — a board's root") for line in lines)
    virt = next(e for e in MACHINES if e.name == "virt-arm64")
    at = lines.index(f"virt-arm64 {virt.help}")
    assert lines[at + 1:at + 3] == ["arch — arm64 (AArch64; qemu-system-aarch64)",
                                    "kernel — standard = linux-image-arm64, rt = linux-image-rt-arm64"]
    for entry in EXPORTERS:
        assert f"{entry.name} {entry.help}" in lines
    for backend in BACKENDS:
        assert f"{backend.name} --results takes {backend.form}" in lines


def test_the_fake_kind_is_for_tests_only_never_shown_nor_suggested(capsys, tmp_path):
    lines = listed(capsys)
    assert not [line for line in lines if line.startswith("fake ")]
    assert "fake" not in TARGETS.names() and "fake" in TARGETS  # still there for the tests
    target = TARGETS.get("fake", "test")("board", {"workdir": str(tmp_path)})
    assert target.workdir == str(tmp_path)
    assert declare("board", "fake", {}, "t").described == 'kind "fake"'
    with pytest.raises(UserError) as e:
        TARGETS.get("fak", "t.kind")
    assert str(e.value) == "t.kind: unknown target kind 'fak'; known: labgrid, local, qemu, ssh"


def test_a_machine_registered_now_is_in_list_its_help_and_the_qemu_options(capsys, monkeypatch):
    raspi = dataclasses.replace(VIRT_ARM64, name="raspi3b", machine_args=("-machine", "raspi3b"))
    monkeypatch.setitem(MACHINES._entries, "raspi3b", Entry("raspi3b", "qemu's Raspberry Pi 3B", raspi))

    lines = [" ".join(line.split()) for line in listed(capsys)]
    at = lines.index("raspi3b qemu's Raspberry Pi 3B")
    assert lines[at + 1].startswith("arch — arm64 ")
    assert "qemu machines: pc, raspi3b, sabrelite, virt-arm64, virt-armhf" in listed(capsys, "--help")

    assert '"pc", "raspi3b", "sabrelite"' in option_help()["machine"]
    assert "linux-image-arm64 on raspi3b and virt-arm64" in option_help()["kernel"]
    assert parse_options({"machine": "raspi3b", "kernel": "rt"}, "t").profile is raspi
    with pytest.raises(UserError, match=r"known: pc, raspi3b, sabrelite, virt-arm64, virt-armhf$"):
        parse_options({"machine": "raspi3"}, "t")
