"""`jitterlab doctor`: what it reports, its exit status, and how it reaches targets."""

from __future__ import annotations

import tempfile

import pytest

from jitterlab.cli.commands import doctor as command
from jitterlab.cli.main import main
from jitterlab.measure.squarewave.probes import visa
from jitterlab.model.facts import SystemFacts
from jitterlab.system import doctor
from jitterlab.targets.capabilities import CrossBuilt, ExaminesMemory, HostKeyStatus, RecordsGpioOutputs
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.ssh.loopback_sshd import available, free_port

HEALTHY = {
    "os_name": "Debian GNU/Linux 12",
    "kernel_release": "6.1.0-rt",
    "machine": "x86_64",
    "n_cpus": 4,
    "cpus": [{"cpu": c, "governor": "performance", "cur_mhz": 2000.0} for c in range(4)],
    "isolcpus": [2, 3],
    "clocksource": "tsc",
    "preemption": "rt",
    "rt_runtime_us": -1,
    "rt_period_us": 1000000,
    "rt_permission": True,
    "virtualization": "none",
    "loadavg": [0.1, 0.1, 0.1],
}
TOPICS = ("tools", "RT permission", "CPU governor", "isolcpus", "clocksource", "preemption", "RT throttling")


def fake_machine(monkeypatch, missing=(), **changes):
    facts = SystemFacts.from_json({**HEALTHY, **changes})
    monkeypatch.setattr(doctor.sysinfo, "snapshot", lambda target: facts)
    monkeypatch.setattr(doctor, "_missing", lambda target, tools: [t for t in missing if t in tools])


def test_a_healthy_machine_exits_0(monkeypatch, capsys):
    fake_machine(monkeypatch)
    assert main(["doctor", "local"]) == 0
    out = capsys.readouterr().out
    assert "local: Debian GNU/Linux 12, kernel 6.1.0-rt (x86_64), 4 CPUs" in out
    for topic in TOPICS:
        assert f"ok    {topic}" in out or f"ok   {topic}" in out, topic
    assert "all is well" in out


def test_what_needs_fixing_is_listed_with_its_fix_and_exits_1(monkeypatch, capsys):
    fake_machine(
        monkeypatch,
        missing=("stress-ng", "node"),
        cpus=[{"cpu": 0, "governor": "powersave", "cur_mhz": 800.0}],
        isolcpus=[],
        rt_runtime_us=950000,
        preemption="voluntary",
        rt_permission=False,
    )
    assert main(["doctor", "local"]) == 1
    out = capsys.readouterr().out
    assert "apt install nodejs stress-ng" in out
    assert "node (nodejs) for impl node" in out
    assert "cpupower frequency-set -g performance" in out
    assert "sysctl -w kernel.sched_rt_runtime_us=-1" in out
    assert "isolcpus=" in out and "PREEMPT_RT" in out and "CAP_SYS_NICE" in out
    assert "6 to fix" in out


def test_every_tool_of_every_benchmark_and_load_is_looked_for():
    needs = command.needed_tools()
    assert needs["node"][0] == "nodejs" and "impl node" in needs["node"][1]
    assert needs["stress-ng"][0] == "stress-ng" and "load cpu" in needs["stress-ng"][1]
    assert needs["cc"][0] == "gcc"


class CrossBuiltLocal(LocalTarget, CrossBuilt):
    def __init__(self, workdir: str, cc: str) -> None:
        super().__init__(workdir=workdir)
        self._cc = cc

    @property
    def cross_cc(self) -> str:
        return self._cc


def test_a_cross_compiling_target_needs_no_compiler(monkeypatch, tmp_path):
    fake_machine(monkeypatch, missing=("make", "cc"))
    _, findings = doctor.examine(CrossBuiltLocal(str(tmp_path), "gcc"), command.needed_tools())
    assert not [f for f in findings if f.topic == "missing tools"]
    assert "make" not in findings[0].state
    assert [f.fix for f in findings if f.topic == "cross cc"] == [None]  # gcc is installed here


def test_a_cross_compiler_missing_on_the_controller_is_to_fix(monkeypatch, tmp_path):
    fake_machine(monkeypatch)
    target = CrossBuiltLocal(str(tmp_path), "no-such-cc -m32")
    _, findings = doctor.examine(target, {"cc": ("gcc", {"x"})})
    [cross] = [f for f in findings if f.topic == "cross cc"]
    assert cross.state == "no-such-cc is not installed here"
    assert cross.fix == "install no-such-cc, the cross compiler for the target, on the controller"


class UnverifiedLocal(LocalTarget, HostKeyStatus):
    host_key_verified = False
    host_key_unverified = ("connected without checking the host key", "set known_hosts")


def test_an_unverified_host_key_follows_the_tools(monkeypatch, tmp_path):
    fake_machine(monkeypatch, missing=("node",))
    needs = {"node": ("nodejs", {"impl node"})}
    _, findings = doctor.examine(UnverifiedLocal(workdir=str(tmp_path)), needs)
    assert [f.topic for f in findings[:3]] == ["tools", "missing tools", "host key"]
    said = doctor.Finding("host key", "connected without checking the host key", "set known_hosts")
    assert findings[2] == said
    _, findings = doctor.examine(LocalTarget(workdir=str(tmp_path)), needs)
    assert "host key" not in [f.topic for f in findings]


def test_the_probes_usable_are_listed_after_the_checks(monkeypatch, capsys):
    fake_machine(monkeypatch)
    monkeypatch.setattr(visa, "resources", lambda: ["USB0::1::2::INSTR"])
    assert main(["doctor", "local"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    [probes] = [i for i, line in enumerate(lines) if line.split()[1:2] == ["probes"]]
    assert probes > next(i for i, line in enumerate(lines) if "RT throttling" in line)
    assert lines[probes].endswith("scpi") and "USB0::1::2::INSTR" in out  # an instrument on USB: scpi


def test_the_real_local_machine(capsys):
    assert main(["doctor", "local"]) in (0, 1)  # this VM has things to fix; either is a diagnosis
    out = capsys.readouterr().out
    for topic in TOPICS:
        assert topic in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["doctor", "board"], "error: TARGET 'board': give `local` (this machine: jitterlab doctor local), "
                              "ssh://user@host:port, or a target name with --campaign FILE\n"),
        (["doctor", "locl"], "error: TARGET 'locl': did you mean `local`? give `local` (this machine"),
        (["doctor"], "error: jitterlab doctor: which target? give `local` (this machine: jitterlab doctor "
                     "local), ssh://"),
        (["doctor", "local", "--key", "/k"], "--key, --known-hosts, --accept-new-host-key"),
        (["doctor", "ssh://"], "write it like ssh://user@host:22"),
    ],
)
def test_bad_input_exits_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


needs_sshd = pytest.mark.skipif(available() is not None, reason=str(available()))


@needs_sshd
def test_a_target_of_a_campaign_file(sshd, tmp_path, capsys):
    path = tmp_path / "boards.toml"
    target = sshd.toml("b1", workdir=str(tmp_path / "w"))
    path.write_text(f'[campaign]\nname = "b"\n{target}[matrix]\nimpl = ["python"]\nperiod = ["10ms"]\n')
    assert main(["doctor", "--campaign", str(path), "b1"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.startswith("b1: ") and "RT throttling" in out
    assert main(["doctor", "--campaign", str(path), "b9"]) == 2
    assert "its targets: b1" in capsys.readouterr().err


@needs_sshd
def test_an_ssh_url(sshd, capsys):
    url = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}"
    argv = ["doctor", url, "--key", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]
    assert main(argv) in (0, 1)
    assert capsys.readouterr().out.startswith(f"{url}: ")


@needs_sshd
def test_an_unreachable_target_exits_2_and_leaves_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the control socket's directory goes
    for _ in range(2):
        assert main(["doctor", f"ssh://127.0.0.1:{free_port()}", "--connect-timeout", "1s"]) == 2
        assert "cannot connect: connection refused" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_probes_of_the_virtual_pin_follow_the_cpus(monkeypatch):
    monkeypatch.setattr(visa, "resources", lambda: [])
    assert command.probe_findings(SystemFacts(n_cpus=4))[0].state.startswith("self, vpin")
    alone = command.probe_findings(SystemFacts(n_cpus=1))[0]
    assert alone.state.startswith("self, (vpin needs a second CPU)")


@pytest.mark.parametrize("machine, package", [
    ("x86_64", "apt install linux-image-rt-amd64"),
    ("aarch64", "apt install linux-image-rt-arm64"),
    ("armv7l", "apt install linux-image-rt-armmp"),  # armhf: the multiplatform ARM kernel
    ("riscv64", "Debian has no PREEMPT_RT kernel package for riscv64"),
])
def test_the_rt_kernel_hint_names_the_package_of_the_targets_architecture(monkeypatch, machine, package):
    fake_machine(monkeypatch, preemption="voluntary", machine=machine)
    _, findings = doctor.examine(LocalTarget(), {})
    [preemption] = [f for f in findings if f.topic == "preemption"]
    assert package in preemption.fix
    others = {"amd64", "arm64", "armmp"} - {package.rsplit("-", 1)[-1]}
    assert not [o for o in others if f"rt-{o}" in preemption.fix]


# --- an emulated ARM board ------------------------------------------------------------------------

BOARD = {"machine": "aarch64", "n_cpus": 1, "cpus": None, "isolcpus": [], "clocksource": "arch_sys_counter",
         "virtualization": "qemu", "vm_accel": "tcg", "vm_host_machine": "x86_64", "vm_machine": "virt-arm64",
         "vm_root": "bookworm arm64 root", "cpu_vendor": None, "bogomips": [125.0],
         "cpuidle_states": [{"name": "WFI", "latency_us": 1, "disabled": False},
                            {"name": "cpu-sleep", "latency_us": 300, "disabled": False}],
         "smt_active": True, "thread_siblings": {"0": [0]}}


class BoardLocal(CrossBuiltLocal, RecordsGpioOutputs, ExaminesMemory):
    """A board as the doctor sees one: cross-built, its pin traced and its memory read from outside."""

    def gpio_trace(self):
        raise AssertionError("the doctor does not read the trace")

    def word_reader(self, address):
        raise AssertionError("the doctor does not read the monitor")


def board_findings(monkeypatch, tmp_path, missing=(), **changes):
    fake_machine(monkeypatch, missing=missing, **{**BOARD, **changes})
    target = BoardLocal(str(tmp_path), "aarch64-linux-gnu-gcc --sysroot=/cache/tree")
    monkeypatch.setattr(doctor.shutil, "which", lambda word: f"/usr/bin/{word}")
    _, findings = doctor.examine(target, command.needed_tools())
    return {f.topic: f for f in findings}


def test_a_board_gets_no_x86_advice(monkeypatch, tmp_path):
    found = board_findings(monkeypatch, tmp_path)
    assert "SMI counter" not in found  # ARM has no SMIs
    idle = found["idle states"].fix
    assert "cpuidle.off=1" in idle and "intel_idle" not in idle and "idle=poll" not in idle
    smt = found["SMT"].fix
    assert "nosmt" not in smt and "smt/control" not in smt and "/online" in smt
    assert found["BogoMIPS"].state == "125 (on ARM the timer's rate, not the CPU's speed)"
    tcg = [f for f in found.values() if "TCG" in f.state]
    assert tcg and "kvm_intel" not in tcg[0].fix and "vmx" not in tcg[0].fix
    assert "aarch64 board on this x86_64 controller" in tcg[0].fix


def test_an_x86_machine_keeps_its_own_advice(monkeypatch, tmp_path):
    fake_machine(monkeypatch, cpu_vendor="GenuineIntel", msr_device=False, smt_active=True, isolcpus=[],
                 cpuidle_states=[{"name": "C6", "latency_us": 133, "disabled": False}])
    _, findings = doctor.examine(LocalTarget(workdir=str(tmp_path)), {})
    found = {f.topic: f for f in findings}
    assert "intel_idle.max_cstate=0" in found["idle states"].fix and "nosmt" in found["SMT"].fix
    assert found["SMI counter"].fix.startswith("modprobe msr")


def test_tools_missing_on_a_board_go_into_its_root_not_apt_and_no_compiler(monkeypatch, tmp_path):
    found = board_findings(monkeypatch, tmp_path, missing=("fio", "node", "make", "cc"))
    missing = found["missing tools"]
    assert missing.fix == ('in [[target]] "local": packages = ["fio", "nodejs"] '
                           "(jitterlab builds the board's root again with them)")
    assert "gcc" not in missing.state and "make" not in missing.state
    assert found["cross cc"].fix is None
    assert found["cross cc"].state == "aarch64-linux-gnu-gcc on the controller builds the board's programs"


def test_a_missing_cross_compiler_names_its_debian_package(monkeypatch, tmp_path):
    fake_machine(monkeypatch)
    monkeypatch.setattr(doctor.shutil, "which", lambda word: None)
    for cc, package in (("arm-linux-gnueabihf-gcc --sysroot=/t", "gcc-arm-linux-gnueabihf"),
                        ("aarch64-linux-gnu-gcc-12", "gcc-12-aarch64-linux-gnu")):
        _, findings = doctor.examine(CrossBuiltLocal(str(tmp_path), cc), {})
        [cross] = [f for f in findings if f.topic == "cross cc"]
        assert cross.fix == f"apt install {package}"


@pytest.mark.parametrize("model, fix, not_said", [
    ("voluntary", 'in [[target]] "local": kernel = "rt" (linux-image-rt-arm64)', "preempt=full"),
    ("dynamic:voluntary", 'in [[target]] "local": cmdline = "preempt=full", or kernel = "rt"', "apt install"),
])
def test_a_board_jitterlab_boots_gets_its_kernel_from_its_target(monkeypatch, tmp_path, model, fix, not_said):
    found = board_findings(monkeypatch, tmp_path, preemption=model)
    assert found["preemption"].fix.startswith(fix) and not_said not in found["preemption"].fix


def test_preempt_full_is_offered_only_where_the_kernel_can_switch(monkeypatch):
    fake_machine(monkeypatch, preemption="voluntary", machine="x86_64")
    _, findings = doctor.examine(LocalTarget(), {})
    [preemption] = [f for f in findings if f.topic == "preemption"]
    assert "preempt=full" not in preemption.fix and "apt install linux-image-rt-amd64" in preemption.fix


def test_the_probes_outside_a_board_are_listed_by_its_capabilities(monkeypatch, tmp_path):
    monkeypatch.setattr(visa, "resources", lambda: [])
    board = command.probe_findings(SystemFacts(n_cpus=1), BoardLocal(str(tmp_path), "cc"))[0].state
    assert "emulator" in board and "register-poll" in board
    assert "(on a board line: pins " in board
    plain = command.probe_findings(SystemFacts(n_cpus=1), LocalTarget(workdir=str(tmp_path)))[0].state
    assert "emulator" not in plain and "register-poll" not in plain


def test_a_board_without_an_arch_timer_is_not_told_to_boot_with_one(monkeypatch, tmp_path):
    # i.MX6Q's Cortex-A9 has no architected timer: mxc_timer1 is its clocksource
    found = board_findings(monkeypatch, tmp_path, machine="armv7l", clocksource="mxc_timer1",
                           clocksources_available=["mxc_timer1"])
    assert found["clocksource"].fix is None
    found = board_findings(monkeypatch, tmp_path, machine="armv7l", clocksource="mxc_timer1",
                           clocksources_available=["mxc_timer1", "arch_sys_counter"])
    assert found["clocksource"].fix.startswith("echo arch_sys_counter > ")


def test_a_kernel_whose_uname_names_no_preempt_is_not_preemptible(monkeypatch, tmp_path):
    version = "#1 SMP Debian 6.1.176-1 (2025-07-01)"  # no PREEMPT word: none or voluntary
    found = board_findings(monkeypatch, tmp_path, machine="armv7l", preemption=None, kernel_version=version)
    assert found["preemption"].state.startswith("none or voluntary")
    assert found["preemption"].fix == 'in [[target]] "local": kernel = "rt" (linux-image-rt-armmp)'
    found = board_findings(monkeypatch, tmp_path, preemption=None, kernel_version=None)
    assert found["preemption"] == doctor.Finding("preemption", "unknown (no kernel config readable)")


def test_a_unit_beside_the_target_says_what_it_needs(monkeypatch, tmp_path):
    from jitterlab.model.errors import RunFailed
    from jitterlab.targets.unit import firmware
    from jitterlab.targets.unit.target import UnitTarget, loader_for, read_unit

    def unit_findings(table: dict) -> dict:
        spec = read_unit(table, "t.unit", "local")
        target = UnitTarget(LocalTarget(workdir=str(tmp_path)), loader_for(spec, "t.unit", "local"))
        try:
            return {f.topic: f for f in doctor.examine(target, {})[1]}
        finally:
            target.close()

    monkeypatch.setattr(firmware, "build", lambda profile: firmware.Firmware(tmp_path / "x.elf", "ab" * 32,
                                                                             2972, 4, 376))
    found = unit_findings({"kind": "emulated", "profile": "lm3s6965evb"})
    assert found["unit firmware"].state == ("lm3s6965evb (emulated): built here with arm-none-eabi-gcc, "
                                            "2976 B flash, 380 B RAM, sha256 abababababab")
    assert found["unit firmware"].fix is None and found["unit"].state.startswith("emulated lm3s6965evb")

    def missing(profile):
        raise RunFailed("the unit's firmware is built on this machine, which lacks arm-none-eabi-gcc: apt "
                        "install gcc-arm-none-eabi", status="unavailable")

    monkeypatch.setattr(firmware, "build", missing)
    found = unit_findings({"kind": "serial", "profile": "lm3s6965evb", "tty": "/dev/ttyJL9", "flash": [
        "lm4flash", "{firmware}"]})
    assert found["unit firmware"].fix.endswith("apt install gcc-arm-none-eabi")
    assert found["unit tty"].state == "/dev/ttyJL9 is missing" and "dialout" in found["unit tty"].fix
