"""The RT tuning checks (tuning.py): the snapshot sections parsed, each check on synthetic snapshots
with the warning and remedy it must give, and silence where all is well or nothing is known."""

from __future__ import annotations

import pytest

from jitterlab.system import sysinfo, tuning
from tests.test_sysinfo import facts, script_output

# An Intel server with SMT, deep C-states, THP always and an IRQ on an isolated CPU, as the script prints it
SERVER = script_output(
    machine="x86_64",
    cmdline="BOOT_IMAGE=/vmlinuz isolcpus=2-3 nohz_full=2 quiet",
    cpuinfo="processor\t: 0\nprocessor\t: 1\nprocessor\t: 2\nprocessor\t: 3",
    isolated="2-3",
    nohz_full="2",
    virt="none",
    meminfo="MemTotal:        8046616 kB\nMemAvailable:    6123456 kB",
    bogomips="bogomips\t: 5799.77\nbogomips\t: 5799.77\nbogomips\t: 5799.77\nbogomips\t: 5799.77",
    vendor="vendor_id\t: GenuineIntel",
    cpuidle_driver="intel_idle",
    cpuidle="0 0 POLL\n2 0 C1\n10 0 C1E\n133 0 C6\n390 1 C8",
    cpu_dma_latency="  2000000000",
    smt_active="1",
    siblings="0 0,2\n1 1,3\n2 0,2\n3 1,3",
    thp="[always] madvise never",
    irqs="0 0 timer\n9 0 acpi\n24 2 eth0-rx-0\n25 1 eth0-tx-0,eth0-extra\n30 - nvme0q0",
    msr="no",
)


def test_the_sections_are_parsed():
    info = sysinfo.parse(SERVER).as_json()  # as stored
    assert (info["mem_total_kb"], info["mem_available_kb"]) == (8046616, 6123456)
    assert info["bogomips"] == [5799.77] * 4 and info["cpu_vendor"] == "GenuineIntel"
    assert info["cpuidle_states"][3] == {"name": "C6", "latency_us": 133, "disabled": False}
    assert info["cpuidle_states"][4]["disabled"] and info["cpu_dma_latency_us"] == 2_000_000_000
    assert info["smt_active"] is True and info["thread_siblings"]["2"] == [0, 2]
    assert info["thp"] == "always" and info["msr_device"] is False
    assert info["irqs"][2] == {"irq": 24, "cpus": [2], "actions": "eth0-rx-0"}
    assert info["irqs"][4] == {"irq": 30, "cpus": None, "actions": "nvme0q0"}
    assert (info["isolcpus"], info["nohz_full"], info["rcu_nocbs"]) == ([2, 3], [2], [])


def test_every_tuning_check_fires_on_the_server_with_its_remedy():
    info = sysinfo.parse(SERVER)
    found = {check.__name__: check(info) for check in tuning.CHECKS}
    cstates, nohz, irqs, smt = (found[f"check_{k}"] for k in ("cstates", "nohz_rcu", "irq_affinity", "smt"))
    assert cstates.message == ("CPU idle states up to C6 (exit latency 133 µs) are enabled: a CPU that slept "
                               "wakes that much later")
    assert "idle=poll" in cstates.remedy and "cpu_dma_latency" in cstates.remedy
    assert nohz.message == ("isolated CPUs 2-3 still take the scheduler tick or RCU callbacks (nohz_full=2, "
                            "rcu_nocbs=none)")
    assert nohz.remedy == "boot with nohz_full=2-3 rcu_nocbs=2-3 beside isolcpus=2-3"
    assert irqs.message == "1 interrupt(s) are delivered to isolated CPUs 2-3: 24 (eth0-rx-0)"
    assert "write 0-1 to /proc/irq/N/smp_affinity_list" in irqs.remedy
    assert smt.message.startswith("isolated CPUs 2-3 share a core with CPUs that are not isolated")
    assert "smt/control" in found["check_smt"].remedy
    assert "always on" in found["check_thp"].message and "madvise" in found["check_thp"].remedy
    assert found["check_smi_counter"].remedy.startswith("modprobe msr")
    assert all(w in sysinfo.checks(info) for w in found.values())


@pytest.mark.parametrize(("sections", "check"), [
    ({"cmdline": "isolcpus=2-3 nohz_full=2 idle=poll"}, tuning.check_cstates),
    ({"cpu_dma_latency": "0"}, tuning.check_cstates),
    ({"cpuidle": "0 0 POLL\n2 0 C1\n133 1 C6"}, tuning.check_cstates),
    ({"cmdline": "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=0-3", "nohz_full": "2-3"}, tuning.check_nohz_rcu),
    ({"irqs": "24 0-1 eth0-rx-0\n25 1 eth0"}, tuning.check_irq_affinity),
    ({"siblings": "0 0\n1 1\n2 2,3\n3 2,3"}, tuning.check_smt),
    ({"smt_active": "0"}, tuning.check_smt),
    ({"thp": "always [madvise] never"}, tuning.check_thp),
    ({"msr": "yes"}, tuning.check_smi_counter),
    ({"vendor": "vendor_id\t: AuthenticAMD"}, tuning.check_smi_counter),
    ({"virt": "kvm"}, tuning.check_smi_counter),
])
def test_each_check_is_silent_once_fixed(sections, check):
    base = dict(line.split("\n", 1) for line in SERVER.split("\n@@jitterlab-section ")[1:])
    info = sysinfo.parse(script_output(**{**{k: v.rstrip("\n") for k, v in base.items()}, **sections}))
    assert check(info) is None


def test_nothing_known_means_no_warning_and_smt_without_isolation_still_warns():
    assert [check(facts()) for check in tuning.CHECKS] == [None] * len(tuning.CHECKS)
    warning = tuning.check_smt(facts(smt_active=True, isolcpus=[]))
    assert warning.message.startswith("SMT (hyperthreading) is on")


def test_doctor_topics_show_the_state_of_each():
    topics = {name: (state, warning) for name, state, warning in tuning.topics(sysinfo.parse(SERVER))}
    assert topics["idle states"][0] == "POLL 0µs, C1 2µs, C1E 10µs, C6 133µs, C8 390µs off"
    assert topics["memory"] == ("5979 MiB available of 7858 MiB", None)
    assert topics["BogoMIPS"] == ("5799.77 (x4 CPUs)", None)
    assert topics["SMT"][0] == "on" and topics["SMI counter"][0] == "cyclictest --smi can count SMIs"
    held = tuning.topics(sysinfo.parse(script_output(cpu_dma_latency="0", cpuidle="0 0 POLL")))
    assert held[0][1] == "POLL 0µs; cpu_dma_latency 0 µs held"


# --- advice by architecture: each architecture's own, or none; never x86's elsewhere --------------

X86_ADVICE = ("idle=poll", "intel_idle", "max_cstate", "smt/control", "nosmt", "SMI", "msr", "vmx", "svm",
              "kvm_intel", "kvm_amd")


def untuned(machine: str, host: str = "x86_64") -> dict:
    """A snapshot, as stored, on which every check warns: deep idle states, SMT beside isolated CPUs,
    an IRQ on them, THP always, an Intel vendor string without the msr device, throttling, a TCG
    VM on `host`, BogoMIPS."""
    return {
        "machine": machine, "kernel_release": "6.12.0", "preemption": "voluntary", "n_cpus": 4,
        "cpus": [{"cpu": 0, "governor": "powersave", "cur_mhz": 800.0}], "isolcpus": [2, 3], "nohz_full": [2],
        "rcu_nocbs": [], "cmdline": "isolcpus=2-3", "clocksource": "jiffies",
        "clocksources_available": ["jiffies"],
        "cpuidle_states": [{"name": "POLL", "latency_us": 0, "disabled": False},
                           {"name": "deep", "latency_us": 300, "disabled": False}],
        "cpu_dma_latency_us": 2_000_000_000, "smt_active": True,
        "thread_siblings": {"0": [0, 2], "1": [1, 3], "2": [0, 2], "3": [1, 3]}, "thp": "always",
        "irqs": [{"irq": 24, "cpus": [2], "actions": "eth0"}], "cpu_vendor": "GenuineIntel",
        "msr_device": False,
        "bogomips": [100.0], "rt_runtime_us": 950000, "rt_period_us": 1000000, "rt_permission": True,
        "virtualization": "qemu", "vm_accel": "tcg", "vm_host_machine": host, "vm_machine": "virt",
        "loadavg": [0.1, 0.1, 0.1],
    }


def advice(monkeypatch, stored: dict) -> str:
    """Every word the checks, doctor and the report's limits say of a target with this snapshot."""
    from jitterlab.model.fakes import run_record, squarewave_cell
    from jitterlab.report import limits
    from jitterlab.system import doctor
    from jitterlab.targets.local import LocalTarget

    info = facts(**stored)
    monkeypatch.setattr(doctor.sysinfo, "snapshot", lambda target: info)
    monkeypatch.setattr(doctor, "_missing", lambda target, tools: [])
    _, findings = doctor.examine(LocalTarget(), {})
    limited = limits.limits([run_record(squarewave_cell(), sysinfo_id=1)], lambda sid: info)
    return "\n".join([*(f"{w.message} {w.remedy}" for w in sysinfo.checks(info)),
                      *(f"{f.topic} {f.state} {f.fix}" for f in findings),
                      *(f"{x.what} {x.fix} {x.likely}" for x in limited)])


def bare_metal(stored: dict) -> dict:
    """The snapshot on the machine itself, no VM: where SMIs are seen."""
    return {**{k: v for k, v in stored.items() if not k.startswith("vm_")}, "virtualization": "none"}


def test_an_x86_machine_is_given_x86_advice(monkeypatch):
    said = advice(monkeypatch, untuned("x86_64")) + advice(monkeypatch, bare_metal(untuned("x86_64")))
    assert all(word in said for word in X86_ADVICE), [w for w in X86_ADVICE if w not in said]


def test_riscv64_gets_its_own_advice_and_none_of_x86s(monkeypatch):
    said = advice(monkeypatch, untuned("riscv64")) + advice(monkeypatch, bare_metal(untuned("riscv64")))
    assert not [word for word in X86_ADVICE if word in said], said
    info = facts(**untuned("riscv64"))
    assert "boot with cpuidle.off=1" in tuning.check_cstates(info).remedy  # the cpuidle framework's own
    assert tuning.check_smt(info).remedy.startswith("isolate whole cores")  # no SMT switch known for it
    assert "SMI counter" not in {topic for topic, _, _ in tuning.topics(info)}
    [tcg] = [w for w in sysinfo.checks(info) if "TCG" in w.message]
    assert tcg.remedy.startswith("KVM cannot run an riscv64 board on this x86_64 controller")
    [tcg] = [w for w in sysinfo.checks(facts(**untuned("riscv64", host="riscv64"))) if "TCG" in w.message]
    assert "H (hypervisor) extension" in tcg.remedy


def test_an_architecture_jitterlab_does_not_know_gets_no_architectures_advice(monkeypatch):
    said = advice(monkeypatch, untuned("e2k")) + advice(monkeypatch, bare_metal(untuned("e2k")))  # no Arch
    assert not [word for word in (*X86_ADVICE, "cpuidle.off", "/online") if word in said], said
    assert "hold /dev/cpu_dma_latency at 0" in said  # what holds on any architecture is still said
