# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The readiness gate's default name and the name of its policy: what the rollout role's first task needs of
operations/gates.py, without what gates.py imports to install and heal the policy (the client, the drain, the
records): the role's preflight imports this in each run's worker (docs/performance.md, "Facts behind the code")."""

import re

DEFAULT_GATE = 'inplace.k8s/ready'


def default_policy_name(gate):
    """inplace.k8s/ready -> inplace-k8s-gate-inplace-k8s-ready: one policy per gate."""
    return 'inplace-k8s-gate-' + re.sub(r'[^a-z0-9]+', '-', gate.lower()).strip('-')
