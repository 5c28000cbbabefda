# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""readiness_gate through its main(): state=healed with kind and name opens the stranded gates of the pods that
workload controls, and of no other pod (the workload's pods are found by the workload layer the module gives)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import json
import zipimport

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, template, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import module_args

GATE = 'inplace.k8s/ready'


class Cluster(FakeApps):
    """FakeApps on a server that does not serve MutatingAdmissionPolicy (healing alone reports no policy)."""

    def request(self, method, path, query=None, body=None, content_type=None):
        if path.startswith('/apis/admissionregistration.k8s.io/'):
            raise NotFoundError('the server could not find the requested resource', status=404)
        return super(Cluster, self).request(method, path, query, body, content_type)


def gated(name, app):
    tmpl = template(labels={'app': app})
    tmpl['spec']['readinessGates'] = [{'conditionType': GATE}]
    return workload('Deployment', name=name, replicas=2, tmpl=tmpl)


def test_healed_for_a_deployment_opens_the_gates_of_its_pods_only(monkeypatch, capsys):
    kube = Cluster([gated('web', 'web'), gated('api', 'api')])
    # The module's import patches zipimport (module_utils/startup.py): put back after the test.
    monkeypatch.setattr(zipimport, '_get_module_code', getattr(zipimport, '_get_module_code', None), raising=False)
    readiness_gate = importlib.import_module('ansible_collections.inplace.k8s.plugins.modules.readiness_gate')
    monkeypatch.setattr(runner, 'client', lambda params, pool_size=10: kube)
    with module_args({'state': 'healed', 'namespace': 'shop', 'kind': 'Deployment', 'name': 'web'}):
        with pytest.raises(SystemExit):
            readiness_gate.main()
    result = json.loads(capsys.readouterr().out)
    web = sorted(name for name, pod in kube.pods.items() if pod['metadata']['labels']['app'] == 'web')
    assert result['changed'] and sorted(result['opened']) == web and len(web) == 2
    assert result['policies'] is None
    for name, pod in kube.pods.items():
        opened = [c['status'] for c in pod['status']['conditions'] if c['type'] == GATE]
        assert opened == (['True'] if name in web else []), name
