"""Programming models that produce the square wave: one module per family of impls."""
