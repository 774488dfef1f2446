"""labgrid drivers standing in for a board's hardware in tests (imported by the env file): power
that logs, an image writer that records what it wrote, and a console that shows the boot messages
of the image written last, then a login prompt (or never, for an image named "broken")."""

import os
from pathlib import Path

import attr
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.factory import target_factory
from labgrid.protocol import ConsoleProtocol, PowerProtocol


def _log_path() -> Path:  # read at each use: labgrid imports this file again for every environment
    return Path(os.environ["JITTERLAB_FAKE_BOARD_LOG"])


def _register(cls):
    """Register a driver once per process, however often an environment file imports this file."""
    if cls.__name__ not in target_factory.drivers:
        target_factory.reg_driver(cls)
    return cls


def _log(line: str) -> None:
    with _log_path().open("a") as f:
        f.write(line + "\n")


def _last_image() -> str:
    lines = [x for x in _log_path().read_text().splitlines() if x.startswith("write ")]
    return lines[-1].removeprefix("write ") if lines else ""


@_register
@attr.s(eq=False)
class FakeBoardPower(Driver, PowerProtocol):
    @Driver.check_active
    def on(self):
        _log("power on")

    @Driver.check_active
    def off(self):
        _log("power off")

    @Driver.check_active
    def cycle(self):
        self.off()
        self.on()


@_register
@attr.s(eq=False)
class FakeImageWriter(Driver):
    @Driver.check_active
    def write_image(self, filename, **_):
        _log(f"write {filename}")


@_register
@attr.s(eq=False)
class FakeBootConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    txdelay = attr.ib(default=0.0)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._boots_shown = 0

    def _read(self, size=1, timeout=0.0, max_size=None):
        log = _log_path()
        boots = log.read_text().splitlines().count("power on") if log.exists() else 0
        if boots == self._boots_shown:  # nothing new until the board is powered on again
            return b""
        self._boots_shown = boots
        image = Path(_last_image()).name
        text = f"Booting {image}\r\nStarting kernel ...\r\n"
        return (text + ("Kernel panic - not syncing\r\n" if "broken" in image else "bbb login: ")).encode()

    def _write(self, data, *_):
        return len(data)

    def open(self):
        pass

    def close(self):
        pass
