# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the connection tests."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No default kubeconfig, no in-cluster environment, no proxy variables."""
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'no-default-kubeconfig'))
    for name in ('KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'HTTPS_PROXY', 'https_proxy',
                 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
