"""Where the square wave goes: one module per pin kind (vpin, and the GPIO pins of a board)."""
