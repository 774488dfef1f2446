"""A target's system facts and a run's settings as typed records (model/facts.py, model/records.py on
model/stored.py): read from the JSON every jitterlab stored, older layouts included, and written back
key for key; a value of another kind is named by its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitterlab.model.arch import AMD64
from jitterlab.model.facts import SystemFacts, ThrottleRecord, VmFacts, preemption_words
from jitterlab.model.records import RunSettings, StoredSettings
from jitterlab.model.stored import Unreadable
from jitterlab.system import sysinfo

DATA = Path(__file__).parent / "data" / "sysinfo"
# a snapshot as this jitterlab stored it (a KVM guest in a container), and the first layout jitterlab
# stored (no runtimes, who it ran as, tuning facts or RT throttling's plan yet)
STORED = (DATA / "kvm-guest-2026-12.json").read_text().strip()
FIRST = (DATA / "first-layout-2026-11.json").read_text().strip()


def test_a_stored_snapshot_reads_back_typed_and_is_written_back_key_for_key():
    facts = SystemFacts.from_json(json.loads(STORED))
    assert json.dumps(facts.as_json(), sort_keys=True) == STORED
    assert (facts.kernel_release, facts.preemption, facts.n_cpus) == ("6.18.44-fc-v1300", "dynamic:none", 2)
    assert facts.arch is AMD64 and facts.virtualized and facts.in_container and not facts.emulated
    assert facts.cpus is not None and (facts.cpus[0].cpu, facts.cpus[0].governor) == (0, None)
    assert facts.cpus[0].cur_mhz == 2596.146 and facts.isolcpus == () and facts.nohz_full is None
    assert facts.thread_siblings == {0: (0,), 1: (1,)} and facts.loadavg == (6.76, 7.33, 4.03)
    assert facts.cpuidle_states is not None and facts.cpuidle_states[1].name == "haltpoll idle"
    assert facts.irqs is not None and (facts.irqs[2].irq, facts.irqs[2].cpus, facts.irqs[2].actions) == (
        26, (1,), "ttyS0")
    assert facts.runtimes is not None and facts.runtimes["python3"].path == "/root/.pyenv/shims/python3"
    assert facts.rt_throttling == ThrottleRecord(
        setting="lift", needed=True, changed=False, why="a container (docker): the kernel's setting belongs "
        "to its host", runtime_before_us=950000, runtime_during_us=950000)
    assert (facts.vm, facts.unit, facts.image, facts.extra) == (None, None, None, {})


def test_the_first_layout_reads_with_the_newer_facts_unknown_and_gains_no_keys():
    facts = SystemFacts.from_json(json.loads(FIRST))
    assert (facts.runtimes, facts.user_id, facts.rt_throttling, facts.cpuidle_states, facts.irqs) == (
        None, None, None, None, None)
    assert facts.kernel_release == "6.18.44-fc-v1300" and facts.rt_runtime_us == 950000
    assert json.dumps(facts.as_json(), sort_keys=True) == FIRST  # no null keys added
    assert [w.message.split(":")[0] for w in sysinfo.checks(facts)] == [
        "RT throttling is active (sched_rt_runtime_us=950000, sched_rt_period_us=1000000)",
        "the target is virtualized (kvm)", "no CPUs are isolated", "load average is 6.76 on 2 CPUs at start"]


def test_keys_this_jitterlab_does_not_know_are_kept_where_they_belong():
    stored = {**json.loads(FIRST), "dt_model": "a board", "vm_gpu": "virtio", "unit_clock_hz": 50_000_000,
              "cpus": [{"cpu": 0, "governor": "performance", "cur_mhz": 1800, "max_mhz": 2400}]}
    facts = SystemFacts.from_json(stored)
    assert facts.extra == {"dt_model": "a board"}
    assert facts.vm == VmFacts(extra={"vm_gpu": "virtio"}) and facts.vm.accel is None
    assert facts.unit is not None and facts.unit.extra == {"unit_clock_hz": 50_000_000}
    assert facts.cpus is not None and facts.cpus[0].extra == {"max_mhz": 2400}
    assert facts.as_json() == dict(sorted(stored.items()))
    assert isinstance(facts.as_json()["cpus"][0]["cur_mhz"], int)  # a whole number stays one


def test_what_a_vm_unit_or_image_adds_is_its_own_record_under_its_own_keys():
    stored = {"machine": "aarch64", "vm_accel": "tcg", "vm_host_machine": "x86_64", "vm_boot_s": None,
              "vm_machine": "virt-arm64", "unit_kind": "serial", "unit_tty": None, "unit_baud": 115200,
              "image": "/images/a.img", "image_sha256": "ab" * 32, "console_boot_s": 12.5}
    facts = SystemFacts.from_json(stored)
    assert facts.emulated and facts.vm is not None and facts.vm.machine == "virt-arm64"
    assert facts.unit is not None and (facts.unit.kind, facts.unit.tty, facts.unit.baud) == (
        "serial", None, 115200)
    assert facts.image is not None and (facts.image.path, facts.image.console_boot_s) == (
        "/images/a.img", 12.5)
    assert facts.as_json() == dict(sorted(stored.items()))  # vm_boot_s and unit_tty stay null, not absent


@pytest.mark.parametrize("stored, key, what", [
    ({"n_cpus": "2"}, "n_cpus", "is '2', not a whole number"),
    ({"n_cpus": True}, "n_cpus", "is True, not a whole number"),
    ({"rt_permission": 1}, "rt_permission", "is 1, not true or false"),
    ({"isolcpus": "2-3"}, "isolcpus", "is '2-3', not a list"),
    ({"cpus": [{"cpu": 0}, {"cpu": 1, "cur_mhz": "fast"}]}, "cpus[1].cur_mhz", "is 'fast', not a number"),
    ({"thread_siblings": {"zero": [0]}}, "thread_siblings", "is {'zero': [0]}, not an object keyed by whole "
                                                            "numbers"),
    ({"runtimes": {"bash": {"path": 7}}}, "runtimes.bash.path", "is 7, not text"),
    ({"rt_throttling": "lift"}, "rt_throttling", "is 'lift', not an object"),
])
def test_a_value_of_another_kind_is_named_by_its_key(stored, key, what):
    with pytest.raises(Unreadable) as raised:
        SystemFacts.from_json(stored)
    assert (raised.value.key, raised.value.detail) == (key, what)


# the settings of a run as the first jitterlab stored them, and as this one does
FIRST_SETTINGS = {"blind_threshold_ns": 5000, "duration_ns": 1_000_000_000, "load_options": {"cpu": {}},
                  "probe_cpu": 1, "program_cpus": [0], "rt_permitted": True, "warmup_ns": 50_000_000}


def test_a_runs_settings_are_stored_as_they_were_measured_and_read_back_from_older_layouts():
    throttle = ThrottleRecord.given(setting="lift", changed=False, runtime_before_us=950000,
                                    runtime_during_us=950000, why="a container (docker)")
    settings = RunSettings(duration_ns=10**9, options={"loads": {"cpu": {"workers": 1}}, "probes": {}})
    stored = StoredSettings.of(settings, probe_cpu=1, program_cpus=(0,), load_cpus=None, rt_permitted=True,
                               rt_throttling=throttle).as_json()
    assert stored == {
        "blind_threshold_ns": 5000, "duration_ns": 10**9, "envelope": ["max", "p99"],
        "load_cpus": None, "load_options": {"cpu": {"workers": 1}}, "load_warmup_ns": 300_000_000,
        "on_missing_rt": "error", "probe_cpu": 1, "probe_options": {}, "program_cpus": [0],
        "rt_permitted": True, "rt_throttling": {
            "changed": False, "sched_rt_runtime_us_before": 950000, "sched_rt_runtime_us_during": 950000,
            "setting": "lift", "why": "a container (docker)"},
        "run_timeout_ns": 20_000_000_000, "warmup_ns": 50_000_000}
    assert StoredSettings.from_json(stored).as_json() == stored
    first = StoredSettings.from_json(FIRST_SETTINGS)
    assert (first.program_cpus, first.load_cpus, first.envelope, first.rt_throttling) == (
        (0,), None, None, None)
    assert first.as_json() == FIRST_SETTINGS  # an export of an older store shows the columns it had


def test_an_imported_captures_settings_say_its_file():
    stored = {"duration_ns": 5, "warmup_ns": 0, "source": "cap.vcd", "source_sha256": "ab", "time_resolution":
              "1 ps"}
    settings = StoredSettings.from_json(stored)
    assert settings.imported is not None and settings.imported.time_resolution == "1 ps"
    assert settings.as_json() == dict(sorted(stored.items()))
    assert StoredSettings.from_json({"duration_ns": 5}).imported is None


@pytest.mark.parametrize("model, words", [
    ("rt", "PREEMPT_RT"), ("full", "PREEMPT"), ("voluntary", "PREEMPT_VOLUNTARY"), ("none", "PREEMPT_NONE"),
    ("lazy", "PREEMPT_LAZY"), ("dynamic:none", "PREEMPT_DYNAMIC, preempt=none"),
    ("dynamic:full", "PREEMPT_DYNAMIC, preempt=full"), ("dynamic", "PREEMPT_DYNAMIC"),
    (None, "preemption model unknown"),
])
def test_the_preemption_model_in_the_kernels_words(model, words):
    assert preemption_words(model) == words
