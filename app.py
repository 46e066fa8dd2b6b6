"""The study app's entry point (a Hugging Face Space runs this file): `python app.py` serves the app,
subcommands import studies and manage participants. The server is the web/ package, the command line cli.py."""

import sys

from cli import main

if __name__ == "__main__":
    sys.exit(main())
