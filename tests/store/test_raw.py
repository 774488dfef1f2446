"""Raw series files: round trip, checksum, damage, and atomic replacement."""

from __future__ import annotations

import numpy as np
import pytest

import jitterlab.store.raw as raw
from jitterlab.analysis.synthetic import blind_intervals, square_wave
from jitterlab.model.errors import UserError
from jitterlab.model.series import EdgeSeries, blind_series, blind_spans
from jitterlab.store.raw import read_raw, sha256_file, write_raw


@pytest.fixture
def series():
    t, level = square_wave(1_000_000, 5_000, jitter_ns=3_000, outlier_rate=1e-3, outlier_ns=100_000)
    spans = blind_intervals((int(t[10]), int(t[12])), (int(t[400]), int(t[400]) + 7))
    return {
        "vpin": EdgeSeries(t, level),
        "self": EdgeSeries(t[1::3] + 5, level[1::3]),
        "empty": EdgeSeries(np.empty(0, np.int64), np.empty(0, np.uint8)),
        "vpin.blind": blind_series(spans),
    }


def test_round_trip_of_several_series(tmp_path, series):
    path = tmp_path / "1.parquet"
    digest = write_raw(path, series)
    assert digest == sha256_file(path)
    back = read_raw(path, expected_sha256=digest)
    assert list(back) == list(series)
    for name, s in series.items():
        assert back[name].t_ns.dtype == np.int64 and back[name].level.dtype == np.uint8
        assert np.array_equal(back[name].t_ns, s.t_ns), name
        assert np.array_equal(back[name].level, s.level), name
    assert blind_spans(back["vpin.blind"]).tolist() == blind_spans(series["vpin.blind"]).tolist()


def test_file_layout_and_compactness(tmp_path, series):
    import pyarrow.parquet as pq

    path = tmp_path / "1.parquet"
    write_raw(path, {"vpin": series["vpin"]})
    schema = pq.read_schema(path)
    assert str(schema.field("series").type) == "dictionary<values=string, indices=int32, ordered=0>"
    assert (str(schema.field("t_ns").type), str(schema.field("level").type)) == ("int64", "uint8")
    column = pq.ParquetFile(path).metadata.row_group(0).column(1)
    assert "DELTA_BINARY_PACKED" in column.encodings and column.compression == "ZSTD"
    assert path.stat().st_size < 4 * len(series["vpin"])  # far below the 9 bytes of raw


def test_blind_series_is_a_start_end_signal():
    s = blind_series(np.array([[5, 7], [9, 20]]))
    assert s.t_ns.tolist() == [5, 7, 9, 20] and s.level.tolist() == [1, 0, 1, 0]
    with pytest.raises(ValueError):
        blind_spans(EdgeSeries([5, 7], [0, 1]))


def test_edge_series_checks_shapes_and_coerces_types():
    s = EdgeSeries([1, 2], [1, 0])
    assert s.t_ns.dtype == np.int64 and s.level.dtype == np.uint8
    with pytest.raises(ValueError):
        EdgeSeries([1, 2, 3], [1, 0])


def test_checksum_mismatch_names_the_file_and_the_fix(tmp_path, series):
    path = tmp_path / "7.parquet"
    write_raw(path, series)
    with pytest.raises(UserError) as error:
        read_raw(path, expected_sha256="0" * 64)
    assert str(path) in str(error.value)
    assert "--resume --retry-damaged" in str(error.value)


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_truncated_file_is_a_user_error(tmp_path, series, keep):
    path = tmp_path / "7.parquet"
    write_raw(path, series)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(UserError) as error:
        read_raw(path)
    assert str(path) in str(error.value) and "backup" in str(error.value)


def test_garbage_and_missing_files_are_user_errors(tmp_path):
    garbage = tmp_path / "g.parquet"
    garbage.write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match="cannot read"):
        read_raw(garbage)
    with pytest.raises(UserError, match="missing"):
        read_raw(tmp_path / "absent.parquet")


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path, series, monkeypatch):
    path = tmp_path / "3.parquet"
    old = write_raw(path, {"vpin": series["vpin"]})
    assert [p.name for p in tmp_path.iterdir()] == ["3.parquet"]

    def broken_writer(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(raw.pq, "write_table", broken_writer)
    with pytest.raises(OSError, match="disk full"):
        write_raw(path, series)
    assert [p.name for p in tmp_path.iterdir()] == ["3.parquet"]
    assert sha256_file(path) == old  # the committed file is untouched

    monkeypatch.undo()
    new = write_raw(path, series)  # replacing an existing file works too
    assert new != old and list(read_raw(path, new)) == list(series)
    assert [p.name for p in tmp_path.iterdir()] == ["3.parquet"]


def test_samples_round_trip_beside_edges(tmp_path):
    from jitterlab.model.series import Samples

    rtt = np.array([51_000, 48_500, 1_200_000, 50_100], dtype=np.int64)
    path = tmp_path / "r.parquet"
    write_raw(path, {"rtt": Samples(rtt, "ns"), "edges": EdgeSeries([1, 2, 3], [1, 0, 1]),
                     "empty": Samples([], "ns")})
    back = read_raw(path)
    assert isinstance(back["rtt"], Samples) and back["rtt"].unit == "ns"
    assert back["rtt"].values.tolist() == rtt.tolist()
    assert isinstance(back["edges"], EdgeSeries) and back["edges"].t_ns.tolist() == [1, 2, 3]
    assert len(back["empty"]) == 0
