"""Stand-in for the pip bootstrap script ansible-test downloads (get-pip-<version>.py).

ansible-test bootstraps pip into each sanity-test virtual environment with a script it downloads
from ci-files.testing.ansible.com, which this project's machines cannot reach.  ``tools/sanity.sh``
places this file where ansible-test caches that download
(``$HOME/.ansible/test/cache/get_pip_<version>.py``); it accepts the same arguments as get-pip.py
(pip install arguments plus ``--no-setuptools`` / ``--no-wheel``), installs Python's bundled pip
with ensurepip and then installs the requested packages (e.g. ``pip==24.2``) from the package
index.
"""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    no_setuptools = "--no-setuptools" in args
    no_wheel = "--no-wheel" in args
    pip_args = [a for a in args if a not in ("--no-setuptools", "--no-wheel")]
    # In a subprocess: ensurepip.bootstrap() in-process sets PIP_CONFIG_FILE=/dev/null in os.environ,
    # which would hide the machine's pip configuration (index, CA bundle) from the install below.
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *pip_args])
    requested = " ".join(pip_args)
    unwanted = [n for n, off in (("setuptools", no_setuptools), ("wheel", no_wheel)) if off and n not in requested]
    if unwanted:
        # get-pip.py would not have installed them; ensurepip may have.
        subprocess.call([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", *unwanted])
    return 0


if __name__ == "__main__":
    sys.exit(main())
