# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kubeconfig tests share: a one-context kubeconfig, written to a file, and one whose user is an exec plugin."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import sys
import textwrap

import yaml

SERVER = 'https://api.example:6443'


def config(cluster=None, user=None, name='ctx', current='ctx', **extra):
    """A one-context kubeconfig dict; ``cluster`` / ``user``: the fields of its cluster and user."""
    document = {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': current,
        'clusters': [{'name': 'c-' + name, 'cluster': dict({'server': SERVER}, **(cluster or {}))}],
        'users': [{'name': 'u-' + name, 'user': dict(user or {})}],
        'contexts': [{'name': name, 'context': {'cluster': 'c-' + name, 'user': 'u-' + name}}],
    }
    document.update(extra)
    return document


def write(path, document):
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return str(path)


def exec_kubeconfig(tmp_path):
    plugin = tmp_path / 'plugin.py'
    plugin.write_text(textwrap.dedent('''\
        import json
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                          "status": {"token": "exec-token"}}))
    '''))
    return config({'insecure-skip-tls-verify': True}, {'exec': {
        'apiVersion': 'client.authentication.k8s.io/v1beta1', 'command': sys.executable, 'args': [str(plugin)],
        'interactiveMode': 'Never'}})
