"""The machines a qemu target can be: one profile module each, registered in registry.py."""
