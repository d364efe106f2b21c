"""Command-line entry points: one module per command group, registered in main."""
