"""`python -m cockpit` runs the CLI."""

from cockpit.cli.main import main

main()
