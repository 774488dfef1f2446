"""The offline bundle's device description: the manylinux tags a device's glibc takes, and options
checked one line each, naming the option (exit 2); what a bundle holds with and without the
installed tree (pip replaced by a fake that makes the files)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import bundle
from jitterlab.execution.bundle import Device, device, machines


def test_a_device_takes_every_manylinux_tag_up_to_its_glibc_with_the_legacy_names():
    tags = Device("3.11", "aarch64", "2.17").platforms()
    assert tags[:2] == ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
    assert tags[-3:] == ["manylinux_2_6_aarch64", "manylinux_2_5_aarch64", "manylinux1_aarch64"]
    assert "manylinux2010_aarch64" in tags and "manylinux_2_18_aarch64" not in tags
    assert len(tags) == 13 + 3  # 2.17 down to 2.5, and the three legacy names
    assert Device("3.11", "x86_64", "2.36").abi == "cp311"


def test_the_machines_are_unames_of_known_architectures():
    assert {"x86_64", "aarch64"} <= set(machines())


@pytest.mark.parametrize(("args", "said"), [
    (["--python", "3"], "--python: expected the device's Python version like 3.11, got '3'"),
    (["--machine", "amd64"], "got 'amd64' (Debian's amd64 is --machine x86_64)"),
    (["--glibc", "236"], "--glibc: expected the device's glibc version like 2.36"),
])
def test_bad_options_are_one_line_naming_the_option(tmp_path, capsys, args, said):
    assert main(["lava-bundle", str(tmp_path / "b"), *args]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "b").exists()


def test_a_directory_of_other_files_is_refused(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    assert main(["lava-bundle", str(tmp_path / "b")]) == 2
    assert "is a directory with other files than a bundle" in capsys.readouterr().err
    assert (tmp_path / "b" / "notes.txt").read_text() == "mine"


def test_checked_options_make_a_device():
    assert device("3.12", "x86_64", "2.39") == Device("3.12", "x86_64", "2.39")


def _fake_pip(args: list[str], doing: str) -> None:
    """pip as bundle.build calls it, making files instead of fetching: the wheel built, the
    dependencies downloaded, jitterlab installed into a tree."""
    where = Path(args[args.index("--wheel-dir" if args[0] == "wheel" else
                                 "--dest" if args[0] == "download" else "--target") + 1])
    where.mkdir(parents=True, exist_ok=True)
    names = {"wheel": ["jitterlab-1.0-py3-none-any.whl"], "download": ["numpy-2.0-cp311.whl", "pip-24.0.whl"],
             "install": ["jitterlab/__init__.py", "numpy/__init__.py", "bin/jitterlab"]}[args[0]]
    for name in names:
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(name)


@pytest.mark.parametrize("tree", [False, True])
def test_the_installed_tree_is_packed_only_when_asked(tmp_path, monkeypatch, tree):
    monkeypatch.setattr(bundle, "_pip", _fake_pip)
    done = bundle.build(tmp_path / "b", bundle.this_device(), tmp_path, tmp_path / "b.tar", tree=tree)
    record = json.loads((tmp_path / "b" / bundle.RECORD).read_text())
    assert sorted(record["wheels"]) == sorted(done.wheels) == ["jitterlab-1.0-py3-none-any.whl",
                                                                "numpy-2.0-cp311.whl", "pip-24.0.whl"]
    with tarfile.open(tmp_path / "b.tar") as archive:
        shipped = set(archive.getnames())
    assert ((tmp_path / "b" / bundle.TREE).exists(), "tree" in record, bundle.TREE in shipped) == (tree,) * 3
    assert (done.tree_bytes > 0) == tree
    if tree:
        with tarfile.open(tmp_path / "b" / bundle.TREE) as site:
            names = sorted(site.getnames())
        assert names == ["jitterlab", "jitterlab/__init__.py", "numpy", "numpy/__init__.py"]  # no bin/
