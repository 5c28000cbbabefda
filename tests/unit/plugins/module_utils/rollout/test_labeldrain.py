# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""State drain_label (rollout/labeldrain.py): a workload made drainable by a serving label in place - the label
on every pod, on the template under the usual hold, then on the Service's selector - on the apps/v1 fake."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock

LABEL = 'serving=true'


class WithService(FakeApps):
    """FakeApps with Services (GET and merge PATCH of one)."""

    def __init__(self, objects=(), services=()):
        super(WithService, self).__init__(objects)
        self.services = dict((svc['metadata']['name'], svc) for svc in services)

    def request(self, method, path, query=None, body=None, content_type=None):
        parts = path.strip('/').split('/')
        if parts[:3] != ['api', 'v1', 'namespaces'] or len(parts) != 6 or parts[4] != 'services':
            return super(WithService, self).request(method, path, query, body, content_type)
        self.calls.append(('request', method, path))
        if parts[5] not in self.services:
            raise NotFoundError('services "%s" not found' % parts[5], status=404)
        service = self.services[parts[5]]
        if method == 'PATCH':
            service['spec']['selector'].update(body['spec']['selector'])
        return copy.deepcopy(service)


def service(selector):
    return {'metadata': {'name': 'web', 'namespace': 'shop', 'resourceVersion': '1'}, 'spec': {'selector': selector}}


def drain_label(kube, check_mode=False, **params):
    values = dict(state='drain_label', namespace='shop', kind='StatefulSet', name='web', drain_label=LABEL,
                  service='web', run_id='test-run')
    values.update(params)
    clock = ManualClock()
    return Rollout(kube, RolloutOptions.from_params(values), check_mode, clock=clock, sleep=clock.sleep).run()


def labels(kube):
    return dict((name, pod['metadata']['labels'].get('serving')) for name, pod in sorted(kube.pods.items()))


def test_check_mode_reports_what_is_missing_and_writes_nothing():
    kube = WithService([workload('StatefulSet')], [service({'app': 'web'})])
    result = drain_label(kube, check_mode=True)
    report = result['drain_label']
    assert result['changed'] is True and report['label'] == LABEL and report['pods'] == 3
    assert report['unlabelled'] == ['web-0', 'web-1', 'web-2'] and report['drained'] == []
    assert report['template_labelled'] is False and report['service'] == 'web' and report['service_selects'] is False
    assert set(labels(kube).values()) == {None} and kube.services['web']['spec']['selector'] == {'app': 'web'}


def test_the_label_goes_on_pods_template_then_service_and_a_rerun_changes_nothing():
    kube = WithService([workload('StatefulSet')], [service({'app': 'web'})])
    uids = dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items())
    result = drain_label(kube)
    assert result['changed'] is True
    assert set(labels(kube).values()) == {'true'}
    sts = kube.get('StatefulSet', 'web')
    assert sts['spec']['template']['metadata']['labels']['serving'] == 'true'
    assert kube.services['web']['spec']['selector'] == {'app': 'web', 'serving': 'true'}
    assert dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items()) == uids   # no pod recreated
    again = drain_label(kube)
    assert again['changed'] is False and again['drain_label']['unlabelled'] == []
    assert again['drain_label']['template_labelled'] is True and again['drain_label']['service_selects'] is True


def test_without_a_service_only_pods_and_template_are_labelled():
    kube = WithService([workload('StatefulSet')])
    result = drain_label(kube, service=None)
    assert result['changed'] is True and result['drain_label']['service'] is None
    assert set(labels(kube).values()) == {'true'}


@pytest.mark.parametrize('params, services, message', [
    ({'drain_label': None}, [], 'state drain_label needs kind and name of a workload and drain_label'),
    ({'kind': None, 'name': None, 'label_selectors': ['app=web']}, [], 'state drain_label needs kind and name'),
    ({'drain_label': 'app=web'}, [], 'selects its pods by app; choose a label only the Service selects'),
    ({'service': 'other'}, [], 'service: cannot read Service shop/other'),
    ({}, [service({'app': 'db'})], 'service: Service shop/web does not select the pods of StatefulSet web'),
])
def test_refused_naming_why_and_nothing_written(params, services, message):
    kube = WithService([workload('StatefulSet')], services)
    with pytest.raises(ValidationError) as err:
        drain_label(kube, **params)
    assert message in str(err.value)
    assert set(labels(kube).values()) == {None} and kube.apps_writes() == []


def test_refused_while_another_rollout_is_unfinished():
    kube = WithService([workload('StatefulSet')], [service({'app': 'web'})])
    clock = ManualClock()
    prepare = RolloutOptions.from_params(dict(state='prepare', namespace='shop', kind='StatefulSet', name='web',
                                              images={'app': 'reg/app:2'}, run_id='test-run'))
    Rollout(kube, prepare, clock=clock, sleep=clock.sleep).run()
    with pytest.raises(ValidationError) as err:
        drain_label(kube)
    assert 'has an unfinished rollout to' in str(err.value) and 'finish it first' in str(err.value)


class WithoutServiceRole(WithService):
    """Credentials without the opt-in role inplace-k8s-service: the access review denies patch services."""

    def request(self, method, path, query=None, body=None, content_type=None):
        if path.endswith('/selfsubjectaccessreviews'):
            attributes = body['spec']['resourceAttributes']
            return {'status': {'allowed': (attributes['verb'], attributes['resource']) != ('patch', 'services')}}
        return super(WithoutServiceRole, self).request(method, path, query, body, content_type)


def test_without_patch_services_nothing_is_labelled_and_the_permission_is_named():
    kube = WithoutServiceRole([workload('StatefulSet')], [service({'app': 'web'})])
    with pytest.raises(Exception) as raised:
        drain_label(kube)
    assert 'may not patch services in namespace shop; nothing was changed' in raised.value.msg
    assert set(labels(kube).values()) == {None} and kube.services['web']['spec']['selector'] == {'app': 'web'}
    assert 'serving' not in kube.get('StatefulSet', 'web')['spec']['template']['metadata']['labels']
    assert drain_label(kube, check_mode=True)['drain_label']['service_selects'] is False   # check mode needs no write
