"""The error context: where an input is formats itself as the one-line errors show it."""

import pytest

from jitterlab.model.errors import UserError, Where


def test_a_place_formats_as_errors_name_it():
    matrix = Where("c.toml", ("matrix",))
    assert str(matrix) == "c.toml: matrix"
    assert str(matrix.key("period")) == "c.toml: matrix.period"
    assert str(matrix.at("probes", "sigrok").key("samplerate")) == "c.toml: probes.sigrok.samplerate"
    assert str(Where(keys=("pins", "gpiomem"))) == "pins.gpiomem"  # at run time: no file
    assert str(Where("c.toml")) == "c.toml"
    assert matrix.at("pins", "gpiod").keys[-1] == "gpiod"


def test_a_place_makes_its_one_line_error():
    error = Where("c.toml", ("matrix",)).key("pin").error("impl 'x' cannot drive pin 'y'")
    assert isinstance(error, UserError)
    assert str(error) == "c.toml: matrix.pin: impl 'x' cannot drive pin 'y'"
    with pytest.raises(AttributeError):
        Where("c.toml").source = "d.toml"  # type: ignore[misc]  # frozen: shared safely down the chain
