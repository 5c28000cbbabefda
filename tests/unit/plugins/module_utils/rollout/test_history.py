# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The revision history through in-place rollouts (history.py) and the in-place undo (undo.py), on the apps/v1
fake: what kubectl rollout history would list (ReplicaSets by revision annotation, ControllerRevisions) and
what kubectl rollout undo would go back to (the newest revision below the current one)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import history, undo
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, template, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import run_all, step, uids

V10, V11, V20 = 'reg/web:1.0', 'reg/web:1.1', 'reg/web:2.0'


@pytest.fixture(autouse=True)
def fake_watcher(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)


def rollout_history(kube, kind='Deployment'):
    """{revision: image} as kubectl rollout history lists it (with the change-cause)."""
    if kind == 'Deployment':
        return dict((history.revision_of(rs), (rs['spec']['template']['spec']['containers'][0]['image'],
                                               rs['metadata'].get('annotations', {}).get(history.CHANGE_CAUSE)))
                    for rs in kube.of_kind('ReplicaSet'))
    return dict((r['revision'], (r['data']['spec']['template']['spec']['containers'][0]['image'],
                                 (r['metadata'].get('annotations') or {}).get(history.CHANGE_CAUSE)))
                for r in kube.of_kind('ControllerRevision'))


def native_update(kube, kind, image):
    """kubectl set image: the controller rolls new pods out."""
    obj = kube.get(kind, 'web')
    obj['spec']['template'] = template(image)
    obj['metadata']['generation'] += 1
    kube.reconcile()


def deployment_at_11():
    kube = FakeApps([workload('Deployment', tmpl=template(V10))])
    native_update(kube, 'Deployment', V11)
    assert {k: v[0] for k, v in rollout_history(kube).items()} == {1: V10, 2: V11}
    return kube


# ---- pure

def test_change_cause_names_what_changed_and_that_it_was_in_place():
    tmpl = template(V11)
    assert history.change_cause(tmpl, {'app': V20}) == 'inplace.k8s: app image reg/web:1.1 -> reg/web:2.0 (in place)'
    cause = history.change_cause(tmpl, None, {'app': {'requests': {'cpu': '150m'}}})
    assert cause == ('inplace.k8s: app resources {requests cpu=100m memory=64Mi; limits cpu=200m memory=128Mi} -> '
                     '{requests cpu=150m memory=64Mi; limits cpu=200m memory=128Mi} (in place)')


def test_our_pod_template_hash_never_looks_like_the_controllers_and_avoids_taken_values():
    tmpl = template(V11)
    first = history.our_hash(tmpl, set())
    assert first.startswith('i') and len(first) == 10
    assert history.our_hash(tmpl, {first}) not in (first,)


def test_first_difference_names_the_field():
    a, b = template(V10), template(V10, env=[{'name': 'MODE', 'value': 'x'}])
    assert undo.first_difference(a, b) == 'spec.template.spec.containers[app].env'
    assert undo.first_difference(a, template(V10)) is None


# ---- Deployment

def test_in_place_rollout_keeps_the_revision_before_and_gives_the_reused_replicaset_the_next():
    kube = deployment_at_11()
    before = uids(kube)
    prepared, _finished = run_all(kube, 'Deployment', images={'app': V20})
    cause = 'inplace.k8s: app image reg/web:1.1 -> reg/web:2.0 (in place)'
    assert rollout_history(kube) == {1: (V10, None), 2: (V11, None), 3: (V20, cause)}
    assert uids(kube) == before
    kept = kube.get('ReplicaSet', prepared['history']['previous']['name'])
    assert kept['spec']['replicas'] == 0 and kept['metadata']['ownerReferences'][0]['controller'] is True
    value = kept['spec']['template']['metadata']['labels']['pod-template-hash']
    assert value.startswith('i') and kept['spec']['selector']['matchLabels']['pod-template-hash'] == value
    assert kube.get('Deployment', 'web')['metadata']['annotations'][history.CHANGE_CAUSE] == cause
    assert prepared['history']['revision'] == 3 and prepared['history']['message'].startswith(
        'history: revision 3 (in place, app=reg/web:2.0, setup=reg/setup:1); revision 2 (app=reg/web:1.1, '
        'setup=reg/setup:1) kept as ReplicaSet web-i')
    # what kubectl rollout undo picks: the newest revision below the current one, 1.1
    assert undo.previous(_workload(kube, 'Deployment'))['undo']['images'] == {'app': V11}


def test_check_mode_plans_the_history_and_writes_nothing():
    kube = deployment_at_11()
    sets = kube.of_kind('ReplicaSet')
    kube.calls = []
    result = step(kube, 'prepare', check_mode=True, kind='Deployment', images={'app': V20})
    assert result['history']['revision'] == 3 and result['history']['previous']['revision'] == 2
    # only the server's dry runs of the template writes (admission)
    assert kube.of_kind('ReplicaSet') == sets and all(call[3:] == ({'dryRun': 'All'},) for call in kube.apps_writes())
    assert not [call for call in kube.calls if call[1] in ('POST', 'DELETE')]


def test_two_in_place_rollouts_then_the_in_place_undo_moves_the_history_on_as_kubectl_undo():
    kube = deployment_at_11()
    before = uids(kube)
    run_all(kube, 'Deployment', images={'app': V20})
    run_all(kube, 'Deployment', images={'app': 'reg/web:3.0'})
    assert {k: v[0] for k, v in rollout_history(kube).items()} == {1: V10, 2: V11, 3: V20, 4: 'reg/web:3.0'}
    back = undo.previous(_workload(kube, 'Deployment'))['undo']
    assert (back['revision'], back['current_revision'], back['images']) == (3, 4, {'app': V20})
    prepared, _finished = run_all(kube, 'Deployment', images=back['images'])
    # revision 3 (2.0) moved to 5, as kubectl rollout undo moves it; 3.0 kept as revision 4
    assert {k: v[0] for k, v in rollout_history(kube).items()} == {1: V10, 2: V11, 4: 'reg/web:3.0', 5: V20}
    assert prepared['history']['moved']['revision'] == 3 and uids(kube) == before
    templates = [history.stored_template(rs) for rs in kube.of_kind('ReplicaSet')]
    assert all(templates.count(t) == 1 for t in templates)


def test_a_rollback_moves_the_history_like_an_undo():
    kube = deployment_at_11()
    step(kube, 'prepare', kind='Deployment', images={'app': V20})
    step(kube, 'rollback', kind='Deployment', images={'app': V20})
    assert {k: v[0] for k, v in rollout_history(kube).items()} == {1: V10, 3: V20, 4: V11}


def test_undo_to_revision_and_refusals():
    kube = deployment_at_11()
    run_all(kube, 'Deployment', images={'app': V20})
    w = _workload(kube, 'Deployment')
    assert undo.previous(w, to_revision=1)['undo']['images'] == {'app': V10}
    with pytest.raises(ValidationError, match='has no revision 7'):
        undo.previous(w, to_revision=7)
    with pytest.raises(ValidationError, match='revision 3 is the current template'):
        undo.previous(w, to_revision=3)
    fresh = FakeApps([workload('Deployment', tmpl=template(V10))])
    with pytest.raises(ValidationError, match='no revision before its current one'):
        undo.previous(_workload(fresh, 'Deployment'))


def test_undo_refuses_a_revision_that_differs_in_more_than_images_and_resources():
    kube = FakeApps([workload('Deployment', tmpl=template(V10, env=[{'name': 'MODE', 'value': 'a'}]))])
    native_update(kube, 'Deployment', V11)
    with pytest.raises(ValidationError, match=r'differs in spec.template.spec.containers\[app\].env.*kubectl rollout '
                                              r'undo does it natively'):
        undo.previous(_workload(kube, 'Deployment'))


def test_undo_brings_resources_back():
    kube = deployment_at_11()
    run_all(kube, 'Deployment', resources={'app': {'requests': {'cpu': '150m'}}})
    back = undo.previous(_workload(kube, 'Deployment'))['undo']
    assert back['images'] == {} and back['resources'] == {'app': {'requests': {'cpu': '100m', 'memory': '64Mi'},
                                                                  'limits': {'cpu': '200m', 'memory': '128Mi'}}}


# ---- StatefulSet, DaemonSet

@pytest.mark.parametrize('kind', ['StatefulSet', 'DaemonSet'])
def test_controller_revisions_get_the_change_cause_and_the_undo_finds_the_one_before(kind):
    kube = FakeApps([workload(kind, tmpl=template(V10))])
    before = uids(kube)
    prepared, _finished = run_all(kube, kind, images={'app': V20})
    cause = 'inplace.k8s: app image reg/web:1.0 -> reg/web:2.0 (in place)'
    assert rollout_history(kube, kind) == {1: (V10, None), 2: (V20, cause)}
    assert kube.get(kind, 'web')['metadata']['annotations'][history.CHANGE_CAUSE] == cause
    assert prepared['history']['previous']['revision'] == 1 and uids(kube) == before
    back = undo.previous(_workload(kube, kind))['undo']
    assert (back['revision'], back['images']) == (1, {'app': V10})


def test_rollout_workload_state_previous_needs_a_workload():
    kube = FakeApps([workload('Deployment')])
    with pytest.raises(ValidationError, match='state previous needs kind and name'):
        step(kube, 'previous', kind=None, label_selectors=['app=web'])


def _workload(kube, kind):
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import Workload
    return Workload(kube, kind, 'shop', 'web')


def test_credentials_without_the_history_permissions_roll_out_and_say_the_history_was_not_kept(monkeypatch):
    kube = deployment_at_11()

    def forbidden(resource, body):
        raise ForbiddenError('replicasets.apps is forbidden: User "u" cannot create resource "replicasets"', status=403)
    monkeypatch.setattr(kube, '_post', forbidden)
    prepared, finished = run_all(kube, 'Deployment', images={'app': V20})
    assert finished['old'] == [] and {k: v[0] for k, v in rollout_history(kube).items()} == {1: V10, 3: V20}
    assert any('the revision history is not kept' in w and 'create replicasets' in w for w in prepared['warnings'])
