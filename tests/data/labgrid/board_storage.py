"""The storage of an emulated farm board (tests/targets/emulated_farm_board.py) as a labgrid image
writer (imported by the env file): write_image copies the image into the file the board boots from,
as labgrid's USBStorageDriver writes an SD card through a USB-SD mux. The one driver of the farm
tests that is not labgrid's own: an emulated board has no USB storage to write."""

import shutil
import subprocess

import attr
from labgrid.driver.common import Driver
from labgrid.factory import target_factory


def _register(cls):
    """Register a driver once per process, however often an environment file imports this file."""
    if cls.__name__ not in target_factory.drivers:
        target_factory.reg_driver(cls)
    return cls


@_register
@attr.s(eq=False)
class BoardStorageWriter(Driver):
    path = attr.ib(validator=attr.validators.instance_of(str))

    @Driver.check_active
    def write_image(self, filename, **_):
        subprocess.run(["cp", "--sparse=always", filename, self.path + ".part"], check=True)
        shutil.move(self.path + ".part", self.path)
