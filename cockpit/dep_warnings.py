"""Known warnings of the cockpit's dependencies, silenced where they arise.

A user sees only the cockpit's own lines. Each filter names the module that warns and the warning's
category (never a blanket filter), so a warning nobody has judged yet still shows, and
`.ci/newest` (the newest versions the dependency ranges allow) catches it the day it appears.
"""

from __future__ import annotations

import warnings


def silence_known() -> None:
    """Install the filters; cheap (no dependency is imported but cryptography's warning class).

    A process without cryptography (a node tool run with `python -S`) has no asyncssh either.
    """
    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:
        return

    # asyncssh keeps DSA in its key-type unions (asyncssh/crypto/misc.py, dsa.py); cryptography 47+
    # deprecates DSA and warns ten times at asyncssh's import. The cockpit uses no DSA key.
    warnings.filterwarnings(
        "ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)"
    )
