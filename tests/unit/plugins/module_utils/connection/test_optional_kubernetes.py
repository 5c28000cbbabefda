# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The kubernetes package is optional: without it a module connects with a token or certificate, and the paths that
need it (pods/exec, exec / auth-provider kubeconfig users) fail with a ConfigError naming it."""

import sys

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import options
from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, settings
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import podexec


@pytest.fixture
def without_kubernetes(monkeypatch):
    for name in [m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, 'kubernetes', None)   # import kubernetes raises ImportError


def test_a_token_connects_and_pods_exec_names_the_missing_package(without_kubernetes):
    assert client.HAS_URLLIB3
    kube = client.Kube.connect(options.Connection(host='https://127.0.0.1:6443', api_key='t', validate_certs=False))
    assert kube.host == 'https://127.0.0.1:6443'
    with pytest.raises(ConfigError, match='kubernetes'):
        podexec.run_exec(kube, 'shop', 'web-0', 'app', ['true'])


def test_an_exec_user_names_the_missing_package(without_kubernetes):
    with pytest.raises(ConfigError, match='kubernetes'):
        settings.kubernetes('config')
