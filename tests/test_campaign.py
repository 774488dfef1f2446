"""Campaign parsing: what the matrix expands to, and every bad input named by file and key."""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
from pathlib import Path

import pytest

from jitterlab.campaign.file import load_campaign
from jitterlab.model.errors import UserError
from jitterlab.model.records import StoredSettings

GOOD = """
[campaign]
name = "t"
repetitions = 2
duration = "1s"
[campaign.labels]
image = "1.10"
[[target]]
name = "local"
kind = "local"
[matrix]
benchmark = "squarewave"
impl = ["bash", "c-fifo"]
period = ["10ms", "100us"]
load = ["idle", "cpu"]
probe = ["vpin", "self"]
pin = "vpin"
[[exclude]]
impl = "bash"
period = "100us"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_matrix_expands_with_excludes(tmp_path):
    campaign = load_campaign(write(tmp_path, GOOD))
    # 2 impls x 2 periods x 2 loads x 2 probes = 16, minus bash@100us (2 loads x 2 probes)
    assert len(campaign.cells) == 12
    assert not any(c.param("impl") == "bash" and c.param("period") == 100_000 for c in campaign.cells)
    assert len(campaign.runs()) == 24
    assert campaign.settings.duration_ns == 1_000_000_000
    assert campaign.labels == {"image": "1.10"}
    assert len({c.key for c in campaign.cells}) == 12


def test_runs_interleave_repetitions_every_other_round_reversed(tmp_path):
    campaign = load_campaign(write(tmp_path, GOOD))
    runs = campaign.runs()
    assert [r for _, r in runs] == [0] * 12 + [1] * 12
    assert [c for c, _ in runs[:12]] == list(campaign.cells)
    assert [c for c, _ in runs[12:]] == list(campaign.cells)[::-1]
    # each cell's two runs lie at the same mean position: a linear drift shifts every cell alike
    positions = {c.key: [i for i, (x, _) in enumerate(runs) if x == c] for c in campaign.cells}
    assert {sum(p) for p in positions.values()} == {23}


def test_fingerprint_changes_with_settings(tmp_path):
    a = load_campaign(write(tmp_path, GOOD))
    b = load_campaign(write(tmp_path, GOOD.replace('duration = "1s"', 'duration = "2s"')))
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('name = "t"', 'name = "t"\nrepetition = 3'),
            "campaign.repetition: unknown key; did you mean 'repetitions'",
        ),
        (
            ('impl = ["bash", "c-fifo"]', 'impl = ["bahs"]'),
            "matrix.impl: unknown impl 'bahs'; did you mean 'bash'",
        ),
        (
            ('load = ["idle", "cpu"]', 'load = ["idle", "cpuu"]'),
            "matrix.load: unknown load 'cpuu'; did you mean 'cpu'",
        ),
        (
            ('probe = ["vpin", "self"]', 'probe = "slef"'),
            "matrix.probe: unknown probe 'slef'; did you mean 'self'",
        ),
        (('duration = "1s"', 'duration = "1 sec"'), "campaign.duration: cannot read duration '1 sec'"),
        (('duration = "1s"', "duration = 1"), "campaign.duration: expected a duration string"),
        (
            ('period = ["10ms", "100us"]', 'period = ["10ms", "4us"]'),
            "matrix.period: 4us is too short for the vpin probe",
        ),
        (("repetitions = 2", "repetitions = 0"), "campaign.repetitions: expected a whole number from 1"),
        (('kind = "local"', 'kind = "lokal"'), "target[0].kind: unknown target kind 'lokal'"),
        (
            ('[[exclude]]\nimpl = "bash"', '[[exclude]]\nimpl = "bash"\nspeed = 1'),
            "exclude[0].speed: unknown key",
        ),
        (('pin = "vpin"', 'pin = "vpin"\ncolour = 1'), "matrix.colour: unknown key"),
        (
            ('period = ["10ms", "100us"]', 'period = ["10ms", "10ms"]'),
            "matrix.period: a value is listed twice",
        ),
        (('period = ["10ms", "100us"]', "period = []"), "matrix.period: the list is empty"),
    ],
)
def test_bad_input_names_file_and_key(tmp_path, change, expected):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(UserError) as info:
        load_campaign(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert expected in message


def test_malformed_toml(tmp_path):
    with pytest.raises(UserError, match="not valid TOML"):
        load_campaign(write(tmp_path, "[campaign\nname="))


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such campaign file"):
        load_campaign(tmp_path / "nope.toml")


def test_everything_excluded(tmp_path):
    text = GOOD + '[[exclude]]\nload = ["idle", "cpu"]\n'
    with pytest.raises(UserError, match="every cell of the matrix is excluded"):
        load_campaign(write(tmp_path, text))


EXAMPLES = Path(__file__).parent.parent / "examples"
SIX_MODELS = {"bash", "python", "node", "c-file", "c-mmap", "c-fifo"}
# what each example's comments say it measures: targets, benchmarks, impls (squarewave), loads
PROMISED = {
    "arm-board": ({"board", "board-rt"}, {"squarewave"},
                  SIX_MODELS | {"c-gpiod", "kmod-busy", "kmod-hrtimer", "kmod-rt"}, {"idle", "cpu"}),
    "board-basics": ({"pi4"}, {"ssh-transfer", "tmpfs-write"}, set(), {"idle"}),
    "boards": ({"pi4", "bbb"}, {"squarewave"}, {"python", "c-mmap", "c-fifo"}, {"idle", "cpu"}),
    "command": ({"local"}, {"command"}, set(), {"idle", "cpu"}),
    "image-compare": ({"board"}, {"sysbench-cpu", "iperf3"}, set(), {"idle", "net"}),
    "kernel-compare": ({"standard", "rt"}, {"squarewave"},
                       {"c-fifo", "python", "c-gpiod", "kmod-hrtimer", "kmod-rt"}, {"idle"}),
    "labgrid": ({"bbb"}, {"squarewave"}, {"bash", "python", "c-mmap", "c-fifo"}, {"idle", "cpu"}),
    "loads": ({"local"}, {"squarewave"}, {"c-fifo", "python"},
              {"idle", "cpu", "memory", "net", "disk", "sched", "cpu+net"}),
    "paper": ({"local"}, {"squarewave"}, SIX_MODELS, {"idle", "cpu", "net"}),
    "quickstart": ({"local"}, {"squarewave"}, SIX_MODELS, {"idle", "cpu"}),
    "rt-kernel": ({"local"}, {"timerlat", "osnoise", "hwlat", "switch", "ipc-latency"}, set(),
                  {"idle", "cpu"}),
    "rt-latency": ({"local"}, {"cyclictest"}, set(), {"idle", "cpu", "sched"}),
    "sigrok-demo": ({"local"}, {"squarewave"}, {"python", "c-mmap"}, {"idle"}),
    "udp-echo-sched": ({"local"}, {"udp-echo"}, set(), {"idle", "cpu"}),
    "unit": ({"local"}, {"squarewave"}, {"unit"}, {"idle", "cpu"}),
    "lava": ({"device"}, {"squarewave"}, {"python", "bash"}, {"idle"}),
}


def _expected_cells(data: dict) -> int:
    """How many cells an example's file asks for, counted from its TOML alone: each [matrix] table
    is the product of its lists (a `whole` key's list is one value) on every target, an [[exclude]]
    drops the combinations whose values it names, and an impl meets only the pins it drives (what
    they declare: their needs and offers)."""
    from jitterlab import plugins
    from jitterlab.measure.squarewave.pins.offers import serves

    def paired(combo: dict) -> bool:
        if combo["benchmark"] != "squarewave":
            return True
        impl = plugins.IMPLS.get(combo["impl"], "test")
        return serves(impl.needs, plugins.PINS.get(combo.get("pin", "vpin"), "test").offers)

    targets = [t["name"] for t in data["target"]]
    tables = data["matrix"] if isinstance(data["matrix"], list) else [data["matrix"]]
    rules = data.get("exclude", [])
    count = 0
    for table in tables:
        table = {"benchmark": "squarewave", "load": "idle", **table}
        whole = {p.name for p in plugins.BENCHMARKS.get(table["benchmark"], "test").params if p.whole}
        axes = {k: v if isinstance(v, list) and k not in whole else [v] for k, v in table.items()}
        for target in targets:
            for values in itertools.product(*axes.values()):
                combo = {"target": target, **dict(zip(axes, values, strict=True))}
                if not any(all(combo.get(k) in (v if isinstance(v, list) else [v]) for k, v in rule.items())
                           for rule in rules) and paired(combo):
                    count += 1
    return count


def test_every_example_is_promised_here():
    assert {p.stem for p in EXAMPLES.glob("*.toml")} == set(PROMISED)


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_examples_parse_to_what_they_promise(monkeypatch, name):
    monkeypatch.chdir(EXAMPLES.parent)  # files of a command are found from where jitterlab runs
    path = EXAMPLES / f"{name}.toml"
    cells = load_campaign(path).cells
    targets, benchmarks, impls, loads = PROMISED[name]
    assert {c.target for c in cells} == targets
    assert {c.benchmark for c in cells} == benchmarks
    assert {c.param("impl") for c in cells if c.benchmark == "squarewave"} == impls
    assert {c.load for c in cells} == loads
    assert len(cells) == len(set(cells)) == _expected_cells(tomllib.loads(path.read_text()))


def test_cpu_placement_parses_cpu_lists(tmp_path):
    text = GOOD.replace(
        'image = "1.10"', 'image = "1.10"\n[campaign.cpus]\nprogram = "0-1,3"\nprobe = 2\nload = [0, 1]'
    )
    campaign = load_campaign(write(tmp_path, text))
    assert campaign.cpus == {"program": (0, 1, 3), "probe": (2,), "load": (0, 1)}


@pytest.mark.parametrize(
    ("cpus", "expected"),
    [
        ('probe = "1-2"', "campaign.cpus.probe: the probe busy-polls one CPU"),
        ('load = "a"', "campaign.cpus.load: cannot read CPU list 'a'"),
        ('load = "3-1"', "campaign.cpus.load: cannot read CPU list"),
        ('progam = "0"', "campaign.cpus.progam: unknown key; did you mean 'program'"),
    ],
)
def test_bad_cpu_placement(tmp_path, cpus, expected):
    text = GOOD.replace('image = "1.10"', f'image = "1.10"\n[campaign.cpus]\n{cpus}')
    with pytest.raises(UserError, match=expected):
        load_campaign(write(tmp_path, text))


TWO_MATRICES = """
[campaign]
name = "t"
[[matrix]]
benchmark = "squarewave"
impl = "c-fifo"
period = ["10ms", "1ms"]
[[matrix]]
benchmark = "squarewave"
impl = "python"
period = "10ms"
probe = "self"
load = ["idle", "cpu"]
"""


def test_several_matrix_tables_add_up(tmp_path):
    campaign = load_campaign(write(tmp_path, TWO_MATRICES))
    assert [(c.param("impl"), c.param("period"), c.load, c.param("probe")) for c in campaign.cells] == [
        ("c-fifo", 10_000_000, "idle", "vpin"),
        ("c-fifo", 1_000_000, "idle", "vpin"),
        ("python", 10_000_000, "idle", "self"),
        ("python", 10_000_000, "cpu", "self"),
    ]
    # params are canonical: the same cell spelled "10ms" or "10000us" has one identity
    assert campaign.cells[0].param("period") == 10_000_000
    assert campaign.cells[0].key.startswith("target=local benchmark=squarewave load=idle impl=c-fifo")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TWO_MATRICES.replace('impl = "python"', 'impl = "c-fifo"').replace('probe = "self"\n', ""),
         "two [[matrix]] tables give the same cell"),
        (TWO_MATRICES.replace('impl = "python"', 'imp = "python"'),
         "matrix[1].imp: unknown key for benchmark 'squarewave'; did you mean 'impl'?"),
        (TWO_MATRICES.replace('period = "10ms"\nprobe', 'probe'),
         "matrix[1].period: missing; benchmark 'squarewave' needs it"),
        (TWO_MATRICES.replace('period = "10ms"\nprobe', 'period = "ten"\nprobe'),
         "matrix[1].period"),
        (TWO_MATRICES.replace('benchmark = "squarewave"\nimpl = "python"', 'benchmark = "squarewav"'),
         "matrix[1].benchmark: unknown benchmark 'squarewav'; did you mean 'squarewave'?"),
        ('[campaign]\nname = "t"\nmatrix = 3\n', "campaign.matrix: unknown key"),
        ('[campaign]\nname = "t"\n[[matrix]]\n', "matrix[0].impl: missing"),
    ],
)
def test_bad_matrix_tables(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_campaign(path)
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)


def test_exclude_uses_the_benchmark_parser(tmp_path):
    text = TWO_MATRICES + '[[exclude]]\nperiod = "1000us"\n'
    campaign = load_campaign(write(tmp_path, text))
    assert all(c.param("period") != 1_000_000 for c in campaign.cells)


def test_plugin_option_tables_are_read_with_their_params(tmp_path):
    text = GOOD + '[loads.cpu]\nworkers = 1\n[probes.vpin]\n[pins.vpin]\n'
    campaign = load_campaign(write(tmp_path, text))
    assert campaign.settings.options_of("loads", "cpu") == {"workers": 1, "cpu_load": 100, "method": "all"}
    assert campaign.settings.options_of("probes", "vpin") == {}
    for table, expected in (("[probes.vpin]\nrate = 1", "probes.vpin.rate: unknown option of this probe"),
                            ("[pins.vpin]\nchip = 1", "pins.vpin.chip: unknown option of this pin"),
                            ("[probes.scope]", "probes.scope: unknown probe 'scope'"),
                            ("[pins]\nvpin = 3", "pins.vpin: expected a table of options")):
        with pytest.raises(UserError, match=expected):
            load_campaign(write(tmp_path, GOOD + table + "\n"))


def test_an_impl_meets_only_pins_it_drives_and_a_pin_only_probes_that_see_it(tmp_path, monkeypatch):
    """A new pin kind is a class that declares its offers: impls and probes bind to it by form."""
    from jitterlab import plugins
    from jitterlab.measure.squarewave.pins.base import PinBase
    from jitterlab.measure.squarewave.pins.offers import Offer, ValueFile
    from jitterlab.model.registry import Entry

    class Wire(Offer):
        what = "a wire"

    class Wired(PinBase):  # a pin only an impl that needs a wire can drive, only self can watch
        offers = frozenset({Wire})

    monkeypatch.setitem(plugins.PINS._entries, "wired", Entry("wired", "test pin", Wired))
    hint = r" \(exclude the combination with \[\[exclude\]\]\)$"
    one_impl = GOOD.replace('pin = "vpin"', 'pin = "wired"').replace('["bash", "c-fifo"]', '"bash"')
    with pytest.raises(UserError, match=r"^[^\n]*c.toml: matrix.pin: impl 'bash' cannot drive pin 'wired': "
                                        r"it needs a value file to write '0'/'1' into, which pins external, "
                                        r"sysfs, vpin offer; no registered impl drives it: remove it from "
                                        r"matrix.pin$"):
        load_campaign(write(tmp_path, one_impl))
    bash = plugins.IMPLS.get("bash", "test")
    monkeypatch.setitem(plugins.IMPLS._entries, "bash", Entry(
        "bash", "test", dataclasses.replace(bash, needs=(ValueFile, Wire))))
    text = one_impl
    with pytest.raises(UserError, match=r"^[^\n]*c.toml: matrix.probe: probe 'vpin' cannot observe pin "
                                        r"'wired': it needs a level byte an observer can map and poll, which "
                                        r"pin vpin offers; pin 'wired' can be observed by self" + hint):
        load_campaign(write(tmp_path, text))
    campaign = load_campaign(write(tmp_path, text.replace('probe = ["vpin", "self"]', 'probe = "self"')))
    assert {c.param("pin") for c in campaign.cells} == {"wired"}


def test_envelope_rules(tmp_path):
    campaign = load_campaign(write(tmp_path, GOOD))
    assert campaign.settings.envelope == ("max", "p99")  # the default
    text = GOOD.replace('duration = "1s"', 'duration = "1s"\nenvelope = ["p99.9", "max"]')
    chosen = load_campaign(write(tmp_path, text))
    assert chosen.settings.envelope == ("p99.9", "max")
    assert StoredSettings.of(chosen.settings).as_json()["envelope"] == ["p99.9", "max"]  # as runs keep it
    assert chosen.fingerprint == campaign.fingerprint  # the envelope measures nothing
    bad = GOOD.replace('duration = "1s"', 'duration = "1s"\nenvelope = ["p95"]')
    with pytest.raises(UserError, match=r"c.toml: campaign.envelope: .*'p99.9'.*got \['p95'\]"):
        load_campaign(write(tmp_path, bad))


BOARD_PROBE = """
[campaign]
name = "t"
duration = "1s"
[[target]]
name = "b"
{target}
[matrix]
impl = "c-gpiod"
period = "10ms"
pin = "gpiod"
probe = "{probe}"
[pins.gpiod]
chip = "9030000.pl061"
line = {line}
[probes.emulator]
line = {line}
[probes.register-poll]
soc = "{soc}"
line = {line}
"""
EMULATOR_NEEDS = ("probe 'emulator' needs a target that can record its GPIO outputs outside the board (an "
                  "emulated board with a traced GPIO controller)")
REGISTERS_NEED = ("probe 'register-poll' needs a target that can show its physical memory from outside (an "
                  "emulated board with a monitor socket)")
VIRT = 'kind = "qemu"\nmachine = "virt-arm64"'


@pytest.mark.parametrize(("target", "probe", "line", "soc", "says"), [
    ('kind = "local"', "emulator", 2, "pl061", f"matrix.probe: {EMULATOR_NEEDS}; target 'b' (kind \"local\") "
     'cannot; targets that can: kind "qemu" with machine = "virt-arm64" or "virt-armhf"'),
    ('kind = "ssh"\nhost = "b"', "emulator", 2, "pl061", f"matrix.probe: {EMULATOR_NEEDS}; target 'b' (kind "
     '"ssh") cannot'),
    ('kind = "qemu"', "emulator", 2, "pl061", f"matrix.probe: {EMULATOR_NEEDS}; target 'b' (kind \"qemu\", "
     'machine = "pc") cannot'),
    ('kind = "qemu"\nmachine = "sabrelite"', "emulator", 2, "imx6", "matrix.probe: probe 'emulator' needs"),
    ('kind = "local"', "register-poll", 2, "pl061", f"matrix.probe: {REGISTERS_NEED}; target 'b' (kind "
     '"local") cannot; targets that can: kind "qemu" with machine = "sabrelite", "virt-arm64" or '
     '"virt-armhf"'),
    ('kind = "qemu"', "register-poll", 2, "pl061", f"matrix.probe: {REGISTERS_NEED}; target 'b' (kind "
     '"qemu", machine = "pc") cannot'),
    # the lines register-poll refuses on a PL061, the emulator probe refuses too: out of range, gpio-keys
    (VIRT, "emulator", 8, "pl061", "probes.emulator.line: pl061 has lines 0-7, not 8"),
    (VIRT, "emulator", 3, "pl061", "probes.emulator.line: pl061 line 3 belongs to gpio-keys (qemu virt's "
     "power button); drive another line"),
    (VIRT, "register-poll", 3, "pl061", "probes.register-poll.line: pl061 line 3 belongs to gpio-keys"),
    # the register map must be the board's own: imx6 registers read on virt are no GPIO at all
    (VIRT, "register-poll", 2, "imx6", "probes.register-poll.soc: target 'b' (qemu machine 'virt-arm64') has "
     "the GPIO registers of soc \"pl061\", not \"imx6\"; give soc = \"pl061\""),
    ('kind = "qemu"\nmachine = "sabrelite"', "register-poll", 2, "pl061",
     "probes.register-poll.soc: target 'b' (qemu machine 'sabrelite') has the GPIO registers of soc "
     '"imx6"'),
])
def test_a_probe_its_target_cannot_serve_is_refused_when_read(tmp_path, capsys, target, probe, line, soc,
                                                              says):
    """What a real run found only on the target (runs stored as unavailable, or unmeasurable), refused
    from the campaign file alone: by load_campaign and so by run --dry-run."""
    from jitterlab.cli.main import main

    path = write(tmp_path, BOARD_PROBE.format(target=target, probe=probe, line=line, soc=soc))
    with pytest.raises(UserError) as refused:
        load_campaign(path)
    assert str(refused.value).startswith(f"{path}: {says}"), str(refused.value)
    assert "\n" not in str(refused.value)
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}: {says}")


@pytest.mark.parametrize(("key", "line", "says"), [
    # without a line of its own, the emulator probe follows the pin's, and a refusal names the pin's key
    ("", 8, "pins.gpiod.line: pl061 has lines 0-7, not 8"),
    ("", 3, "pins.gpiod.line: pl061 line 3 belongs to gpio-keys (qemu virt's power button); drive another "
            "line"),
    ("line = 5", 2, "probes.emulator.line: 5 is not the line pin 'gpiod' drives (2); remove it (the probe "
                    "reads the pin's) or make the two agree"),
])
def test_the_emulator_probe_follows_the_line_of_its_pin(tmp_path, key, line, says):
    text = BOARD_PROBE.format(target=VIRT, probe="emulator", line=line, soc="pl061")
    text = text.replace(f"[probes.emulator]\nline = {line}", f"[probes.emulator]\n{key}")
    with pytest.raises(UserError) as refused:
        load_campaign(write(tmp_path, text))
    assert str(refused.value).endswith(f"c.toml: {says}"), str(refused.value)
    fine = BOARD_PROBE.format(target=VIRT, probe="emulator", line=2, soc="pl061")
    assert load_campaign(write(tmp_path, fine.replace("[probes.emulator]\nline = 2\n", "")))


@pytest.mark.parametrize(("target", "probe", "soc"), [
    (VIRT, "emulator", "pl061"), (VIRT, "register-poll", "pl061"),
    ('kind = "qemu"\nmachine = "virt-armhf"', "emulator", "pl061"),
    ('kind = "qemu"\nmachine = "sabrelite"', "register-poll", "imx6"),
])
def test_a_probe_its_board_serves_is_accepted(tmp_path, target, probe, soc):
    path = write(tmp_path, BOARD_PROBE.format(target=target, probe=probe, line=2, soc=soc))
    assert [c.param("probe") for c in load_campaign(path).cells] == [probe]


MMAP = """
[campaign]
name = "t"
duration = "1s"
[[target]]
name = "b"
{target}
[matrix]
impl = "c-mmap"
period = "10ms"
pin = "gpiomem"
probe = "{probe}"
[pins.gpiomem]
soc = "{soc}"
line = 2
{extra}
"""


@pytest.mark.parametrize(("target", "probe", "soc", "extra", "says"), [
    # another SoC's registers on an emulated board are no GPIO at all: the wave would go nowhere
    (VIRT, "self", "bcm2711", "", "pins.gpiomem.soc: target 'b' (qemu machine 'virt-arm64') has the GPIO "
     'registers of soc "pl061", not "bcm2711"; give soc = "pl061"'),
    ('kind = "qemu"\nmachine = "sabrelite"\ncpus = 2', "self", "pl061", "",
     "pins.gpiomem.soc: target 'b' (qemu machine 'sabrelite') has the GPIO registers of soc \"imx6\""),
    # what preflight refuses once the VM is up, known from its cpus
    (VIRT, "vpin", "pl061", "", "matrix.probe: probe vpin needs a CPU of its own beside the program, and "
     "target 'b' has one CPU; give it cpus = 2"),
    (VIRT + "\ncpus = 2", "self", "pl061", '[campaign.cpus]\nprogram = "2"',
     "campaign.cpus.program: CPU 2 does not exist on target 'b', which has 2 CPUs (0-1, its cpus)"),
])
def test_a_pin_or_placement_an_emulated_board_cannot_have_is_refused_when_read(tmp_path, target, probe, soc,
                                                                               extra, says):
    text = MMAP.format(target=target, probe=probe, soc=soc, extra="")
    if probe == "vpin":  # it watches a virtual pin
        text = text.replace('pin = "gpiomem"', 'pin = "vpin"')
    if extra:  # [campaign.cpus] belongs to [campaign]
        text = text.replace('duration = "1s"\n', f'duration = "1s"\n{extra}\n')
    path = write(tmp_path, text)
    with pytest.raises(UserError) as refused:
        load_campaign(path)
    assert str(refused.value).startswith(f"{path}: {says}"), str(refused.value)


def test_the_same_pin_and_placement_on_a_board_that_has_them_are_accepted(tmp_path):
    text = MMAP.format(target=VIRT + "\ncpus = 2", probe="vpin", soc="pl061", extra="")
    text = text.replace('pin = "gpiomem"', 'pin = "vpin"')
    text = text.replace('duration = "1s"\n', 'duration = "1s"\n[campaign.cpus]\nprogram = "0"\nprobe = "1"\n')
    assert len(load_campaign(write(tmp_path, text)).cells) == 1


@pytest.mark.parametrize(("labels", "option", "says"), [
    ('[campaign.labels]\nload = "heavy"\n', [], "campaign.labels.load: the label 'load' is named like a key "
     "of this campaign's cells, and compare selects by labels first: load=... would no longer select cells; "
     "name the label otherwise"),
    ('[campaign.labels]\nimpl = "mine"\n', [], "campaign.labels.impl: the label 'impl' is named like a key"),
    ("", ["--label", "target=rt"], "--label 'target=rt': the label 'target' is named like a key"),
])
def test_a_label_named_like_a_key_of_the_cells_is_refused(tmp_path, capsys, labels, option, says):
    from jitterlab.cli.main import main

    path = write(tmp_path, GOOD.replace('[campaign.labels]\nimage = "1.10"\n', labels))
    assert main(["run", str(path), "--dry-run", *option]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {says}" if not option else f"error: {says}"), err
    # a key the cells do not have is a label like any other
    path.write_text(GOOD.replace('image = "1.10"', 'period_set = "a"'))
    assert main(["run", str(path), "--dry-run", "--label", "kernel=6.12"]) == 0


TABLES = """
[campaign]
name = "t"
repetitions = 1
duration = "1s"
warmup = "50ms"
[[target]]
name = "local"
kind = "local"
[[matrix]]
impl = "c-fifo"
period = "1ms"
probe = "self"
pin = "vpin"
[[matrix]]
impl = "bash"
period = "100ms"
probe = "self"
pin = "vpin"
duration = "3s"
tuning = ["none", "mlock"]
"""


def test_a_table_of_its_own_duration_sets_its_cells_runs_and_no_other(tmp_path):
    campaign = load_campaign(write(tmp_path, TABLES))
    by_impl = {(c.param("impl"), c.tuning): campaign.settings_for(c).duration_ns for c in campaign.cells}
    assert by_impl == {("c-fifo", "none"): 1_000_000_000, ("bash", "none"): 3_000_000_000,
                       ("bash", "mlock"): 3_000_000_000}
    assert campaign.duration_range_ns == (1_000_000_000, 3_000_000_000)
    # the rest of the settings are the campaign's, and the cells' identities are as without it
    bash = next(c for c in campaign.cells if c.param("impl") == "bash")
    assert dataclasses.replace(campaign.settings_for(bash), duration_ns=1_000_000_000) == campaign.settings
    assert "duration" not in bash.key
    plain = load_campaign(write(tmp_path, TABLES.replace('duration = "3s"\n', "")))
    assert {c.key for c in plain.cells} == {c.key for c in campaign.cells}
    assert all(plain.settings_for(c) == plain.settings for c in plain.cells)


def test_a_tables_duration_is_in_the_fingerprint_only_when_set(tmp_path):
    plain = load_campaign(write(tmp_path, TABLES.replace('duration = "3s"\n', "")))
    three = load_campaign(write(tmp_path, TABLES))
    two = load_campaign(write(tmp_path, TABLES.replace('duration = "3s"', 'duration = "2s"')))
    assert len({plain.fingerprint, three.fingerprint, two.fingerprint}) == 3
    # a campaign without table durations keeps the fingerprint it had before they existed
    assert plain.fingerprint == dataclasses.replace(plain, durations={}).fingerprint


@pytest.mark.parametrize(("change", "expected"), [
    (('duration = "3s"', 'duration = ["1s", "3s"]'),
     "matrix[1].duration: one duration per table, not a list (it is not an axis); write one [[matrix]] "
     'table per duration, e.g. duration = "1s"'),
    (('duration = "3s"', 'duration = 3'), "matrix[1].duration"),
    (('duration = "3s"', 'duration = "40ms"'),
     "matrix[1].duration: 40ms is not longer than campaign.warmup (50ms), so nothing would be measured; "
     "lengthen it or shorten campaign.warmup"),
    (('duration = "3s"', 'duraton = "3s"'), "matrix[1].duraton: unknown key for benchmark 'squarewave'; "
                                            "did you mean 'duration'"),
])
def test_a_bad_table_duration_is_named(tmp_path, change, expected):
    with pytest.raises(UserError) as err:
        load_campaign(write(tmp_path, TABLES.replace(*change)))
    assert expected in str(err.value)
    assert str(tmp_path / "c.toml") in str(err.value)


def test_one_cell_under_two_tunings_keeps_one_duration(tmp_path):
    split = TABLES.replace('tuning = ["none", "mlock"]', 'tuning = "none"') + """
[[matrix]]
impl = "bash"
period = "100ms"
probe = "self"
pin = "vpin"
duration = "2s"
tuning = "mlock"
"""
    with pytest.raises(UserError, match=r"matrix\[2\]\.duration: matrix\[1\] gives its cell .*impl=bash.* "
                                        r"another duration under another tuning; a tuning is compared with "
                                        r"none on runs of one length"):
        load_campaign(write(tmp_path, split))
    assert load_campaign(write(tmp_path, split.replace('duration = "2s"', 'duration = "3s"'))).cells
