"""A damaged store (a table or a column gone, a JSON column that does not read, a metric that is no
number, a schema version that is none, a database file cut short) is bad input: every command that
reads it says in one line which store, what is damaged and what to do, and exits 2; never a
traceback. `jitterlab check` lists every damage; `jitterlab push` keeps the sound runs."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.store.catalog import Store
from jitterlab.store.damage import StoreDamaged, remedy
from tests.support import imported_store

RUN = "RUN"  # stands for the id of the first run in a command or a message
ONE = f" WHERE id = '{RUN}'"


@pytest.fixture(scope="module")
def sound(tmp_path_factory) -> Path:
    """A results directory: one campaign of four imported runs (image a and b), one sysinfo row."""
    root = tmp_path_factory.mktemp("sound")
    imported_store(root, "aabb")
    store = Store(root / "r")
    sysinfo_id = store.add_sysinfo(1, "local", SystemFacts.given(kernel_release="6.1"))
    store.close()
    _sql(root / "r", f"UPDATE runs SET sysinfo_id = {sysinfo_id}")
    return root / "r"


def _sql(root: Path, *statements: str) -> None:
    db = sqlite3.connect(root / "results.sqlite")
    # cell_json's generated columns would refuse text that is not JSON: the damage is made by hand
    db.create_function("json_extract", 2, lambda *_: None, deterministic=True)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def damaged(sound: Path, where: Path, *statements: str) -> tuple[Path, str]:
    """A copy of the sound store at `where` with `statements` run on it; (its path, its first run)."""
    shutil.copytree(sound, where)
    first = sqlite3.connect(where / "results.sqlite").execute(
        "SELECT id FROM runs ORDER BY started_ns, id LIMIT 1").fetchone()[0]
    _sql(where, *(s.replace(RUN, first) for s in statements))
    return where, first


def commands(results: Path, out: Path, run_id: str) -> dict[str, list[str]]:
    r = ["--results", str(results)]
    trend = ["--trend", "max_rel_period_error"]
    return {
        "show": ["show", *r], "show RUN": ["show", run_id, *r], "summary": ["summary", *r],
        "report": ["report", *r, "-o", str(out / "r.html"), "--no-figure-files"],
        "report --trend": ["report", *r, *trend, "-o", str(out / "t.html")],
        "compare": ["compare", *r, "--baseline", "image=a", "--candidate", "image=b"],
        **{f"export {f}": ["export", *r, "--format", f, "-o", str(out / f"x.{f}")]
           for f in ("csv", "json", "parquet")},
        "export envelope": ["export", *r, "--format", "csv", "--table", "envelope", "-o", str(out / "e.csv")],
        "export --trend": ["export", *r, "--format", "csv", *trend, "-o", str(out / "t.csv")],
        "push": ["push", *r, "--to", str(out / "pushed")],
    }


def refused(capsys, argv: list[str]) -> str:
    """The one line a command refused the store with (exit 2)."""
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip().replace("\n", "")


# the parts only some commands read: a damaged one goes unnoticed by the others (they exit 0)
NOT_READ = {
    "campaigns": {"show RUN", "compare", "export envelope"},
    "sysinfo": {"show", "report --trend", "export envelope", "export --trend"},  # show: the campaigns
    "orphan": {"show", "summary", "report", "push"},  # they read the runs of campaigns: not one of none
}
ROWS = {  # damage -> (statement, what the line says, which part)
    "campaign labels not JSON": ("UPDATE campaigns SET labels_json = '{not json'",
                                 "campaign #1: labels_json is not JSON (Expecting property name enclosed "
                                 "in double quotes: line 1 column 2 (char 1))", "campaigns"),
    "campaign labels a list": ("UPDATE campaigns SET labels_json = '[1, 2]'",
                               "campaign #1: labels_json is a list, not a JSON object", "campaigns"),
    "sysinfo not JSON": ("UPDATE sysinfo SET json = '{\"kernel'",
                         "sysinfo #1: json is not JSON (Unterminated string starting at: line 1 column 2 "
                         "(char 1))", "sysinfo"),
    "sysinfo null": ("UPDATE sysinfo SET json = 'null'", "sysinfo #1: json is null, not a JSON object",
                     "sysinfo"),
    "sysinfo value": ("UPDATE sysinfo SET json = '{\"n_cpus\": \"two\"}'",
                      "sysinfo #1: json's n_cpus is 'two', not a whole number", "sysinfo"),
    "sysinfo nested value": ("UPDATE sysinfo SET json = '{\"cpus\": [{\"cpu\": 0, \"cur_mhz\": \"fast\"}]}'",
                             "sysinfo #1: json's cpus[0].cur_mhz is 'fast', not a number", "sysinfo"),
    "run cell": (f"UPDATE runs SET cell_json = 'x' WHERE id = '{RUN}'",
                 f"run {RUN}: cell_json is not JSON (Expecting value: line 1 column 1 (char 0))", "runs"),
    "run labels": (f"UPDATE runs SET labels_json = '\"a\"' WHERE id = '{RUN}'",
                   f"run {RUN}: labels_json is a string, not a JSON object", "runs"),
    "run params": (f"UPDATE runs SET params_json = '[]' WHERE id = '{RUN}'",
                   f"run {RUN}: params_json is a list, not a JSON object", "runs"),
    "label not text": (f"UPDATE runs SET labels_json = '{{\"image\": {{\"a\": 1}}}}' WHERE id = '{RUN}'",
                       f"run {RUN}: labels_json's label 'image' is not text", "runs"),
    "campaign label not text": ("UPDATE campaigns SET labels_json = '{\"lab\": [1]}'",
                                "campaign #1: labels_json's label 'lab' is not text", "campaigns"),
    "campaign created_ns": ("UPDATE campaigns SET created_ns = 'monday'",
                            "campaign #1: created_ns is 'monday', not a whole number", "campaigns"),
    "cell period text": (f"UPDATE runs SET cell_json = json_set(cell_json, '$.period', '1ms'){ONE}",
                         f"run {RUN}: cell_json's period is '1ms', not a whole number", "runs"),
    "cell value a list": (f"UPDATE runs SET cell_json = json_set(cell_json, '$.x', json('[1]')){ONE}",
                          f"run {RUN}: cell_json's x is [1], not a single value", "runs"),
    "cell without period": (f"UPDATE runs SET cell_json = json_remove(cell_json, '$.period'){ONE}",
                            f"run {RUN}: cell_json lacks period, which its cell_key names", "runs"),
    "settings in ns": (f"UPDATE runs SET params_json = json_set(params_json, '$.warmup_ns', 'x'){ONE}",
                       f"run {RUN}: params_json's warmup_ns is 'x', not a whole number of ns", "runs"),
    "settings record": (f"UPDATE runs SET params_json = json_set(params_json, '$.rt_throttling', 'x'){ONE}",
                        f"run {RUN}: params_json's rt_throttling is 'x', not an object", "runs"),
    "run campaign_id": (f"UPDATE runs SET campaign_id = 7{ONE}",
                        f"run {RUN}: campaign_id 7 names no campaign", "orphan"),
    "run started_ns": (f"UPDATE runs SET started_ns = 1e300 WHERE id = '{RUN}'",
                       f"run {RUN}: started_ns is 1e+300, not a whole number", "runs"),
    "run wall_s": (f"UPDATE runs SET wall_s = 'x'{ONE}", f"run {RUN}: wall_s is 'x', not a number", "runs"),
    "metric direction": (f"UPDATE metrics SET direction = 'up' WHERE run_id = '{RUN}' AND name = 'n_periods'",
                         f"run {RUN}: metric import.n_periods has the direction 'up', not lower, higher, "
                         "none or empty", "runs"),
    "metric scale": (f"UPDATE metrics SET scale = 'log' WHERE run_id = '{RUN}' AND name = 'n_periods'",
                     f"run {RUN}: metric import.n_periods has the scale 'log', not ratio, count, signed "
                     "or empty", "runs"),
    "metric text": (f"UPDATE metrics SET value = 'abc' WHERE run_id = '{RUN}' AND name = 'n_periods'",
                    f"run {RUN}: metric import.n_periods is 'abc', not a number", "runs"),
}


@pytest.mark.parametrize("case", ROWS)
def test_a_row_that_does_not_read_is_one_line_naming_it_in_every_command_that_reads_it(
        sound, tmp_path, capsys, case):
    statement, what, part = ROWS[case]
    results, first = damaged(sound, tmp_path / "r", statement)
    what = what.replace(RUN, first)
    for name, argv in commands(results, tmp_path, first).items():
        if name in NOT_READ.get(part, ()):
            assert main(argv) == 0, name
            capsys.readouterr()
            continue
        if name == "push":  # it copies the sound runs and names the others (below)
            assert main(argv) == 1
            assert capsys.readouterr().err.startswith("run "), name
            continue
        assert refused(capsys, argv) == (f"error: {results}: the store is damaged: {what}; "
                                         f"{remedy(str(results), rows=True)}"), name


STRUCTURE = {  # damage -> (statement, what the line says, whether it names results.sqlite)
    **{f"table {t} dropped": (f"DROP TABLE {t}", f"its table {t} is missing", t == "schema_version")
       for t in ("schema_version", "campaigns", "sysinfo", "runs", "metrics", "attachments", "warnings")},
    "column dropped": ("ALTER TABLE metrics DROP COLUMN unit", "its table metrics lacks the column unit",
                       False),
    "schema_version empty": ("DELETE FROM schema_version", "its table schema_version holds 0 rows, not 1",
                             True),
    "schema_version text": ("UPDATE schema_version SET version = 'x'",
                            "its schema version is 'x', not a whole number", True),
}


@pytest.mark.parametrize("case", STRUCTURE)
def test_a_store_without_a_table_or_column_is_refused_when_opened(sound, tmp_path, capsys, case):
    statement, what, names_file = STRUCTURE[case]
    results, _ = damaged(sound, tmp_path / "r", statement)
    where = results / "results.sqlite" if names_file else results
    assert refused(capsys, ["summary", "--results", str(results)]) == (
        f"error: {where}: the store is damaged: {what}; {remedy(str(results), rows=False)}")


def test_a_dropped_table_is_refused_by_every_command(sound, tmp_path, capsys):
    results, first = damaged(sound, tmp_path / "r", "DROP TABLE metrics")
    line = f"error: {results}: the store is damaged: its table metrics is missing; "
    for name, argv in commands(results, tmp_path, first).items():
        assert refused(capsys, argv).startswith(line), name


def test_a_database_file_cut_short_is_damaged_not_foreign(sound, tmp_path, capsys):
    results, _ = damaged(sound, tmp_path / "r")
    db = sqlite3.connect(results / "results.sqlite")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = (results / "results.sqlite").read_bytes()
    (results / "results.sqlite").write_bytes(data[: len(data) // 2])
    assert refused(capsys, ["compare", "--results", str(results), "--baseline", "image=a", "--candidate",
                            "image=b"]) == (
        f"error: {results / 'results.sqlite'}: the store is damaged: its database file does not read "
        f"(database disk image is malformed); {remedy(str(results), rows=False)}")


def test_a_table_dropped_while_a_store_is_open_is_damage_too(sound, tmp_path):
    results, _ = damaged(sound, tmp_path / "r")
    store = Store(results, create=False)
    _sql(results, "DROP TABLE sysinfo")
    with pytest.raises(StoreDamaged, match=r"the store is damaged: its table sysinfo is missing; restore"):
        store.sysinfo(1)
    store.close()


# --- jitterlab check: every damage, one per line; push keeps the sound runs -------------------------


def test_check_says_a_sound_store_is_sound(sound, capsys):
    assert main(["check", "--results", str(sound)]) == 0
    assert capsys.readouterr().out == f"{sound}: sound (1 campaign, 4 runs and their 4 raw files checked)\n"


def test_check_names_every_damaged_row_and_file_and_exits_1(sound, tmp_path, capsys):
    results, first = damaged(sound, tmp_path / "r", f"UPDATE runs SET cell_json = '[' WHERE id = '{RUN}'",
                             "UPDATE sysinfo SET json = '[]'")
    later = [r.id for r in Store(results, create=False).runs(damaged={})]
    (results / "raw" / f"{later[-1]}.parquet").unlink()
    assert main(["check", "--results", str(results)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"run {first}: cell_json is not JSON (Expecting value: line 1 column 2 (char 1))",
        "sysinfo #1: json is a list, not a JSON object",
        f"run {later[-1]}: raw/{later[-1]}.parquet is missing",
        f"{results}: 3 damaged (1 campaign, 4 runs and their 3 raw files checked); copy the sound runs into "
        f"a new store with jitterlab push --results {results} --to NEW, or restore the store from a backup; "
        f"a run whose raw file is damaged is measured again by jitterlab run CAMPAIGN --results {results} "
        "--resume --retry-damaged (with its campaign's --label options)"]


def test_check_reports_a_store_that_does_not_open(sound, tmp_path, capsys):
    results, _ = damaged(sound, tmp_path / "r", "DROP TABLE warnings")
    assert main(["check", "--results", str(results)]) == 1
    assert capsys.readouterr().err.replace("\n", "") == (
        f"{results}: the store is damaged: its table warnings is missing; {remedy(str(results), rows=False)}")


def test_push_copies_the_sound_runs_of_a_damaged_store_and_names_the_others(sound, tmp_path, capsys):
    results, first = damaged(sound, tmp_path / "r", f"UPDATE runs SET labels_json = 'x' WHERE id = '{RUN}'")
    assert main(["push", "--results", str(results), "--to", str(tmp_path / "new")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("pushed 3 runs")
    assert err.splitlines()[0] == (f"run {first} was not pushed: its labels_json is not JSON (Expecting "
                                   "value: line 1 column 1 (char 0))")
    assert main(["check", "--results", str(tmp_path / "new")]) == 0
    assert first not in {r.id for r in Store(tmp_path / "new", create=False).runs()}


def test_push_leaves_out_the_runs_of_a_campaign_or_sysinfo_that_does_not_read(sound, tmp_path):
    from jitterlab.store.push import push

    results, _ = damaged(sound, tmp_path / "r", "UPDATE sysinfo SET json = '{'")
    source = Store(results, create=False)
    done = push(source, Store(tmp_path / "new"))
    assert done.runs == 0 and {why for _, why in done.damaged} == {
        "its sysinfo #1's json is not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))"}
    _sql(results, "UPDATE campaigns SET labels_json = 'null'")
    done = push(Store(results, create=False), Store(tmp_path / "other"))
    assert (done.campaigns, done.runs, len(done.damaged)) == (0, 0, 4)
    assert {why for _, why in done.damaged} == {"its campaign #1's labels_json is null, not a JSON object"}
