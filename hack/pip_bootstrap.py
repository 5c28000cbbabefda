"""Stand-in for the get-pip.py script that ansible-test downloads to bootstrap pip into the
virtualenvs of its sanity tests (that download host is not reachable here).

ansible-test runs it as ``python get_pip_X_Y.py [pip options] pip==X.Y`` inside an empty virtualenv:
install the bundled pip with ensurepip, then let that pip install what was asked from the index.
"""
import ensurepip
import os
import subprocess
import sys

env = dict(os.environ)
ensurepip.bootstrap(upgrade=True)  # (it points PIP_CONFIG_FILE at /dev/null in this process only)
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args, env=env)
