"""sysinfo: one script, parsed into a snapshot; checks turn it into warnings with remedies."""

from __future__ import annotations

import json
import os
import platform

import pytest

from jitterlab.model.errors import TargetLost
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import Warning_
from jitterlab.system import sysinfo
from jitterlab.targets.base import CommandTimeout, Completed
from jitterlab.targets.capabilities import AnswersSlowly, VirtualMachine, Wrapper
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.local import LocalTarget

KEYS = {
    "kernel_release",
    "kernel_version",
    "machine",
    "preemption",
    "cmdline",
    "cpu_model",
    "n_cpus",
    "cpus_online",
    "cpus",
    "isolcpus",
    "nohz_full",
    "rt_runtime_us",
    "rt_period_us",
    "clocksource",
    "clocksources_available",
    "loadavg",
    "uptime_s",
    "hostname",
    "os_name",
    "virtualization",
    "container",
    "user_id",
    "rt_permission",
    "runtimes",
    # tuning.py
    "mem_total_kb",
    "mem_available_kb",
    "bogomips",
    "cpu_vendor",
    "cpuidle_driver",
    "cpuidle_states",
    "cpu_dma_latency_us",
    "smt_active",
    "thread_siblings",
    "thp",
    "irqs",
    "msr_device",
    "rcu_nocbs",
    "tuning_checks",  # what a campaign's preflight asked the tunings: never a snapshot's own
    "programs_build",  # how the campaign's deploy made the programs: never a snapshot's own
}


def facts(**stored: object) -> SystemFacts:
    """The facts of a snapshot stored with these keys (as the store reads them back)."""
    return SystemFacts.from_json(stored)


def script_output(**sections: str) -> str:
    return "".join(f"\n@@jitterlab-section {name}\n{text}\n" for name, text in sections.items())


# A Raspberry-Pi-like RT board, as the script would print it.
PI = script_output(
    kernel_release="6.6.20-rt25-v8+",
    kernel_version="#1 SMP PREEMPT_RT Mon Mar 4 2024",
    machine="aarch64",
    hostname="pi4",
    os_release='NAME="Debian"\nPRETTY_NAME="Raspbian GNU/Linux 12 (bookworm)"\nID=raspbian',
    cmdline="console=ttyS0 isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3",
    cpuinfo="processor\t: 0\nprocessor\t: 1\nprocessor\t: 2\nprocessor\t: 3\n"
    "CPU implementer\t: 0x41\nCPU part\t: 0xd08\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4",
    hypervisor_flag="",
    online="0-3",
    isolated="2-3",
    nohz_full="2-3",
    cpufreq="0 ondemand 600000\n1 ondemand 1500000\n2 performance 1500000\n3 performance -",
    realtime="1",
    preempt_debugfs="",
    preempt_config="CONFIG_PREEMPT_RT=y",
    rt_runtime_us="-1",
    rt_period_us="1000000",
    clocksource="arch_sys_counter",
    clocksources="arch_sys_counter",
    loadavg="0.08 0.03 0.01 1/180 1234",
    uptime="3600.50 14000.00",
    virt="none",
    container="none",
    user_id="0",
    rt_permission="0",
    runtimes="bash\t/bin/bash\tGNU bash, version 5.2.15(1)-release\n"
    "python3\t/usr/bin/python3\tPython 3.11.2\n"
    "cc\t/usr/bin/cc\t",  # a --version that printed nothing
)


def test_snapshot_of_this_machine_has_every_key_with_sane_types():
    snapshot = sysinfo.snapshot(LocalTarget())
    info = snapshot.as_json()  # as the store keeps it
    assert set(info) == KEYS
    json.dumps(info)  # stored as JSON beside every run
    assert SystemFacts.from_json(json.loads(json.dumps(info))) == snapshot  # and read back the same
    assert isinstance(info["kernel_release"], str) and info["kernel_release"]
    assert isinstance(info["machine"], str)
    assert isinstance(info["n_cpus"], int) and info["n_cpus"] >= 1
    assert isinstance(info["cpus_online"], list) and all(
        isinstance(c, int) for c in info["cpus_online"]
    )
    assert len(info["loadavg"]) == 3 and all(isinstance(x, float) for x in info["loadavg"])
    assert isinstance(info["uptime_s"], float) and info["uptime_s"] > 0
    assert isinstance(info["rt_runtime_us"], int)
    assert info["isolcpus"] is None or isinstance(info["isolcpus"], list)
    assert info["rt_permission"] in (True, False, None)
    assert info["user_id"] == os.geteuid()  # who jitterlab is there
    assert info["runtimes"]["bash"]["path"].startswith("/")  # what runs the bash impl
    assert info["runtimes"]["bash"]["version"].startswith("GNU bash")
    assert all(w.remedy for w in sysinfo.checks(snapshot))


def test_snapshot_is_one_fixed_command():
    target = FakeTarget()
    target.respond(["sh", "-c"], PI)
    sysinfo.snapshot(target)
    sysinfo.snapshot(target)
    assert len(target.calls) == 2 and target.calls[0] == target.calls[1]
    assert target.calls[0][:2] == ("sh", "-c") and len(target.calls[0]) == 3


class _VM(Wrapper, VirtualMachine):
    """A target that is a VM jitterlab booted, emulated."""

    @property
    def vm_accel(self) -> str:
        return "tcg"

    @property
    def boot_s(self) -> float | None:
        return 12.5


def test_a_vm_jitterlab_booted_records_its_accelerator_and_boot_time():
    target = FakeTarget()
    target.respond(["sh", "-c"], PI)
    assert sysinfo.snapshot(target).vm is None
    assert not {"vm_accel", "vm_boot_s"} & set(sysinfo.snapshot(target).as_json())
    info = sysinfo.snapshot(_VM(target))
    assert info.vm is not None and (info.vm.accel, info.vm.boot_s) == ("tcg", 12.5)
    assert info.vm.host_machine == platform.machine()  # the controller that runs it
    stored = info.as_json()
    assert (stored["vm_accel"], stored["vm_boot_s"]) == ("tcg", 12.5)
    assert stored["vm_host_machine"] == platform.machine()
    assert any("tcg" in w.message or "emulat" in w.message for w in sysinfo.checks(info))


@pytest.mark.parametrize("guest, host, said, not_said", [
    ("armv7l", "x86_64", "KVM cannot run an armv7l board on this x86_64 controller", "kvm_intel"),
    ("aarch64", "aarch64", "on an ARM machine whose /dev/kvm exists", "vmx/svm"),
    ("x86_64", "x86_64", "vmx/svm and the kvm_intel/kvm_amd module", "board"),
])
def test_the_remedy_for_emulation_knows_what_kvm_can_run(guest, host, said, not_said):
    [warning] = [w for w in sysinfo.checks(facts(machine=guest, vm_host_machine=host, vm_accel="tcg"))
                 if "TCG" in w.message]
    assert said in warning.remedy and not_said not in warning.remedy


def test_parse_a_raspberry_pi_with_rt_kernel():
    target = FakeTarget()
    target.respond(["sh", "-c"], PI)
    info = sysinfo.snapshot(target)
    assert info.as_json() == {
        "kernel_release": "6.6.20-rt25-v8+",
        "kernel_version": "#1 SMP PREEMPT_RT Mon Mar 4 2024",
        "machine": "aarch64",
        "preemption": "rt",
        "cmdline": "console=ttyS0 isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3",
        "cpu_model": "Raspberry Pi 4 Model B Rev 1.4",
        "n_cpus": 4,
        "cpus_online": [0, 1, 2, 3],
        "cpus": [
            {"cpu": 0, "governor": "ondemand", "cur_mhz": 600.0},
            {"cpu": 1, "governor": "ondemand", "cur_mhz": 1500.0},
            {"cpu": 2, "governor": "performance", "cur_mhz": 1500.0},
            {"cpu": 3, "governor": "performance", "cur_mhz": None},
        ],
        "isolcpus": [2, 3],
        "nohz_full": [2, 3],
        "rt_runtime_us": -1,
        "rt_period_us": 1000000,
        "clocksource": "arch_sys_counter",
        "clocksources_available": ["arch_sys_counter"],
        "loadavg": [0.08, 0.03, 0.01],
        "uptime_s": 3600.5,
        "hostname": "pi4",
        "os_name": "Raspbian GNU/Linux 12 (bookworm)",
        "virtualization": "none",
        "container": "none",
        "user_id": 0,
        "rt_permission": True,
        "runtimes": {
            "bash": {"path": "/bin/bash", "version": "GNU bash, version 5.2.15(1)-release"},
            "python3": {"path": "/usr/bin/python3", "version": "Python 3.11.2"},
            "cc": {"path": "/usr/bin/cc", "version": ""},
        },
        "rcu_nocbs": [2, 3],  # from the command line; the other tuning sections were not printed
        **dict.fromkeys(("mem_total_kb", "mem_available_kb", "bogomips", "cpu_vendor", "cpuidle_driver",
                         "cpuidle_states", "cpu_dma_latency_us", "smt_active", "thread_siblings", "thp",
                         "irqs", "msr_device", "tuning_checks", "programs_build")),
    }
    warnings = sysinfo.checks(info)
    assert [w.message.split(" ")[:3] for w in warnings] == [["CPU", "frequency", "governor"]]
    assert "CPUs 0-1" in warnings[0].message


@pytest.mark.parametrize(
    "output", ["", "garbage\nwithout sections\n", script_output(machine="x86_64")]
)
def test_missing_sections_are_none_never_an_exception(output):
    target = FakeTarget()
    target.respond(["sh", "-c"], output, rc=1)
    info = sysinfo.snapshot(target)
    assert set(info.as_json()) == KEYS
    unknown = {k for k, v in info.as_json().items() if v is None}
    assert unknown >= KEYS - {"machine"}
    assert sysinfo.checks(info) == []


def test_absent_and_empty_isolation_files_differ():
    absent = sysinfo.parse(script_output(isolated="@@absent", nohz_full="@@absent"))
    empty = sysinfo.parse(script_output(isolated="", nohz_full="(null)"))
    assert (absent.isolcpus, absent.nohz_full) == (None, None)
    assert (empty.isolcpus, empty.nohz_full) == ((), ())


def test_frequency_falls_back_to_cpuinfo_mhz():
    info = sysinfo.parse(
        script_output(
            cpuinfo="processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2445.404\n"
            "processor\t: 1\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2300.000",
            cpufreq="0 - -\n1 - -",
            hypervisor_flag="yes",
            machine="x86_64",
        )
    )
    assert info.cpu_model == "AMD EPYC" and info.n_cpus == 2
    assert info.as_json()["cpus"] == [
        {"cpu": 0, "governor": None, "cur_mhz": 2445.404},
        {"cpu": 1, "governor": None, "cur_mhz": 2300.0},
    ]
    assert info.virtualization == "vm"


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        (
            {
                "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
                "preempt_debugfs": "none voluntary (full) lazy",
            },
            "dynamic:full",
        ),
        (
            {"kernel_version": "#1 SMP PREEMPT_DYNAMIC", "cmdline": "quiet preempt=voluntary"},
            "dynamic:voluntary",
        ),
        (
            {
                "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
                "preempt_config": "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y",
            },
            "dynamic:none",
        ),
        ({"kernel_version": "#1 SMP PREEMPT_DYNAMIC"}, "dynamic"),
        ({"kernel_version": "#1 SMP PREEMPT Tue Jan 2"}, "full"),
        ({"kernel_version": "#1 SMP PREEMPT_RT"}, "rt"),
        ({"kernel_version": "#1 SMP", "realtime": "1"}, "rt"),
        ({"kernel_version": "#1 SMP", "preempt_config": "CONFIG_PREEMPT_VOLUNTARY=y"}, "voluntary"),
        ({"kernel_version": "#1 SMP Debian"}, None),
    ],
)
def test_preemption_model(sections, expected):
    assert sysinfo.parse(script_output(**sections)).preemption == expected


GOOD = dict(
    machine="x86_64",
    n_cpus=4,
    cpus=[{"cpu": 0, "governor": "performance", "cur_mhz": 3e3}],
    rt_runtime_us=-1,
    rt_period_us=1000000,
    rt_permission=True,
    virtualization="none",
    isolcpus=[3],
    clocksource="tsc",
    clocksources_available=["tsc", "hpet"],
    loadavg=[0.1, 0.1, 0.1],
)


def test_a_well_prepared_machine_has_no_warnings():
    assert sysinfo.checks(facts(**GOOD)) == []


@pytest.mark.parametrize(
    ("change", "message", "remedy"),
    [
        (
            {
                "cpus": [
                    {"cpu": 0, "governor": "powersave", "cur_mhz": 800.0},
                    {"cpu": 1, "governor": "performance", "cur_mhz": 3e3},
                    {"cpu": 2, "governor": "schedutil", "cur_mhz": 800.0},
                    {"cpu": 3, "governor": "powersave", "cur_mhz": 800.0},
                ]
            },
            "governor is powersave/schedutil on CPUs 0,2-3",
            "cpupower frequency-set -g performance",
        ),
        ({"rt_runtime_us": 950000}, "loses 5% of each period", "sched_rt_runtime_us=-1"),
        ({"rt_permission": False}, "cannot get SCHED_FIFO", "CAP_SYS_NICE"),
        ({"virtualization": "kvm"}, "virtualized (kvm)", "bare metal"),
        ({"isolcpus": []}, "no CPUs are isolated", "isolcpus="),
        (
            {"clocksource": "hpet"},
            "clocksource is hpet, not tsc",
            "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
        (
            {"machine": "aarch64", "clocksource": "jiffies", "clocksources_available": ["jiffies"]},
            "not arch_sys_counter",
            "clocksource=arch_sys_counter",
        ),
        ({"loadavg": [3.5, 1.0, 0.5]}, "load average is 3.50 on 4 CPUs", "uptime"),
    ],
)
def test_each_check_warns_with_a_remedy(change, message, remedy):
    warnings = sysinfo.checks(facts(**{**GOOD, **change}))
    assert len(warnings) == 1
    assert isinstance(warnings[0], Warning_)
    assert message in warnings[0].message
    assert remedy in warnings[0].remedy


def test_unknown_arch_or_unknown_values_do_not_warn():
    assert sysinfo.checks(facts(**{**GOOD, "machine": "riscv64", "clocksource": "riscv_clocksource"})) == []
    assert sysinfo.checks(facts()) == []


def test_rt_throttling_in_a_container_names_the_host_not_root():
    from jitterlab.system.sysinfo import check_rt_throttling

    inside = check_rt_throttling(facts(rt_runtime_us=950000, rt_period_us=1000000, container="docker"))
    assert inside is not None and "belongs to its host" in inside.remedy and "as root" not in inside.remedy
    bare = check_rt_throttling(facts(rt_runtime_us=950000, rt_period_us=1000000, container="none"))
    assert bare is not None and "run jitterlab as root" in bare.remedy
    assert check_rt_throttling(facts(rt_runtime_us=-1, rt_period_us=1000000)) is None


THROTTLED = {"rt_runtime_us": 950000, "rt_period_us": 1000000, "container": "none"}
LIFTS = ('jitterlab lifts it for the runs of a probe that busy-polls on the target (campaign.rt_throttling = '
         '"lift", the default) and puts it back')
AS_ROOT = ('run jitterlab as root: with campaign.rt_throttling = "lift" (the default) it lifts it for the '
           "runs of a busy-polling probe and puts it back; or sysctl -w kernel.sched_rt_runtime_us=-1 "
           "(as root)")
OUTSIDE = ("nothing to do for the probes; a program of yours that keeps a real-time thread busy there "
           "(e.g. impl kmod-busy) is stopped that long: sysctl -w kernel.sched_rt_runtime_us=-1")


@pytest.mark.parametrize(("user_id", "plan", "remedy"), [
    # doctor: no campaign, so no probe to tell where it runs
    (0, None, LIFTS),
    (1000, None, AS_ROOT),
    (None, None, AS_ROOT),  # a snapshot that could not tell who jitterlab is
    # a probe that busy-polls on the target (vpin)
    (0, {"setting": "lift", "needed": True}, LIFTS),
    (1000, {"setting": "lift", "needed": True}, AS_ROOT),
    (0, {"setting": "lift", "needed": True, "changed": False, "why": "writing -1 to it failed"},
     "jitterlab could not lift it (writing -1 to it failed): sysctl -w kernel.sched_rt_runtime_us=-1"),
    (0, {"setting": "keep", "needed": True}, 'campaign.rt_throttling = "lift" lifts it for the runs and puts '
     "it back; or sysctl -w kernel.sched_rt_runtime_us=-1"),
    (1000, {"setting": "keep", "needed": True}, 'campaign.rt_throttling = "lift" lifts it for the runs and '
     "puts it back, when jitterlab runs as root there; or sysctl -w kernel.sched_rt_runtime_us=-1 (as root)"),
    # probes outside the target (emulator, register-poll on the controller; an instrument): nothing to lift
    (0, {"setting": "lift", "needed": False}, OUTSIDE),
    (1000, {"setting": "lift", "needed": False}, OUTSIDE + " (as root)"),
    (0, {"setting": "lift", "needed": False, "changed": False,
         "why": "no cell of this target busy-polls at SCHED_FIFO"}, OUTSIDE),
])  # fmt: skip
def test_rt_throttling_remedy_fits_where_the_probe_runs_and_who_jitterlab_is(user_id, plan, remedy):
    from jitterlab.system.sysinfo import check_rt_throttling

    info = {**THROTTLED, "user_id": user_id} | ({"rt_throttling": plan} if plan else {})
    warning = check_rt_throttling(facts(**info))
    assert warning is not None and warning.remedy == remedy
    assert warning.message.startswith("RT throttling is active (sched_rt_runtime_us=950000, "
                                      "sched_rt_period_us=1000000): a busy real-time task loses 5% of each")
    outside = plan is not None and plan["needed"] is False
    assert ("no probe of these runs polls on the target" in warning.message) == outside
    assert ("a busy-polling probe is blind then" in warning.message) == (not outside)
    if user_id == 0:
        assert "as root" not in warning.remedy


def test_rt_throttling_inside_a_container_is_the_hosts_whatever_the_probe():
    from jitterlab.system.sysinfo import check_rt_throttling

    host = "inside a container (docker) the setting belongs to its host: there, sysctl -w"
    for plan in (None, {"setting": "lift", "needed": True}, {"setting": "lift", "needed": False}):
        info = {**THROTTLED, "container": "docker", "user_id": 0} | ({"rt_throttling": plan} if plan else {})
        warning = check_rt_throttling(facts(**info))
        assert warning is not None and host in warning.remedy and "as root" not in warning.remedy


class _Hanging(Wrapper, AnswersSlowly):
    """A slow board over SSH whose commands never answer: each run times out at the timeout given."""

    timeouts: list[float]

    @property
    def alive_timeout_s(self) -> float:
        return 90.0

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        self.timeouts.append(timeout_s)
        raise CommandTimeout(f"{argv[0]} ran past {timeout_s:g} s")


def test_a_slow_target_is_given_its_alive_timeout_and_a_hang_is_a_lost_target():
    target = _Hanging(FakeTarget())
    target.timeouts = []
    with pytest.raises(TargetLost, match=r"longer than 360 s; .*raise alive_timeout in its \[\[target\]\]"):
        sysinfo.snapshot(target)
    assert target.timeouts == [360.0]  # 4 x its alive_timeout, not a fixed 30 s
    quick = FakeTarget()
    quick.respond(["sh", "-c"], PI)
    assert sysinfo.snapshot(quick).machine == "aarch64"  # this machine's kind answers in the old 30 s


@pytest.mark.parametrize("sections, expected", [
    ({"dt_model": "linux,dummy-virt", "dt_compatible": "linux,dummy-virt"}, "qemu"),  # qemu's virt
    ({"dt_model": "QEMU Raspberry Pi 3B emulation"}, "qemu"),
    ({"dt_compatible": "qemu,virt linux,dummy-virt", "virt": "none"}, "qemu"),
    ({"virt": "qemu", "dt_model": "Raspberry Pi 3 Model B"}, "qemu"),  # systemd-detect-virt said so
    ({"virt": "none", "dt_model": "Freescale i.MX6 Quad SABRE Lite Board"}, "none"),  # a real board
])
def test_emulation_is_read_from_the_device_tree(sections, expected):
    assert sysinfo.parse(script_output(machine="armv7l", **sections)).virtualization == expected


def test_an_emulated_board_jitterlab_booted_is_never_bare_metal():
    sabrelite = script_output(machine="armv7l", virt="none", dt_model="Freescale i.MX6 Quad SABRE Lite Board")
    target = FakeTarget()
    target.respond(["sh", "-c"], sabrelite)
    assert sysinfo.snapshot(target).virtualization == "none"
    info = sysinfo.snapshot(_VM(target))
    assert info.vm is not None and (info.virtualization, info.vm.accel) == ("qemu", "tcg")
    assert sysinfo.check_virtualized(info) is not None
