# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the config rollout scenarios (issue 48): opt-in and selectable by name or SCENARIOS=config, the
role's task rolls the ConfigMap instead of images, the native side sends what `kubectl rollout restart` sends, the
pods on the new config are counted, and the target is judged from result rows."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

import pytest

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import ARGS, load

run = load('run')
reloader = load('reloader')
workloads = load('workloads')


def test_the_config_scenarios_are_opt_in_and_selected_together_or_by_name():
    assert not any(reloader.is_config({'scenario': s[0]}) for s in run.parse(ARGS).wanted)
    args = run.parse(ARGS + ['--scenarios', 'config', '--pods', '100,300'])
    assert [s[0] for s in args.wanted] == [reloader.ROLE, reloader.NATIVE, reloader.UNDRAINED]
    assert args.traffic == [] and args.sizes == [100, 300]
    assert 'config' in reloader.ROLE and 'rollout restart' in reloader.NATIVE
    args = run.parse(ARGS + ['--scenarios', '%s,%s' % (reloader.ROLE, reloader.NATIVE)])
    assert [s[1:] for s in args.wanted] == [('config', 'Deployment', '25%', True),
                                            ('restart', 'Deployment', '25%/0', False)]


def test_the_config_scenarios_need_the_traffic_client(capsys):
    with pytest.raises(SystemExit):
        run.parse(ARGS[:-2] + ['--scenarios', reloader.ROLE])
    assert '--cluster-bin' in capsys.readouterr().err


def test_the_role_task_rolls_the_configmap_not_images():
    task = reloader.role_task(run.ROLE_TASK)
    assert task['vars']['rollout_config'] == ['ConfigMap/' + reloader.CONFIGMAP]
    assert 'rollout_images' not in task['vars']
    assert 'rollout_images' in run.ROLE_TASK['vars']           # the image scenarios' task is left as it was
    assert task['vars']['rollout_readiness_gate'] == run.ROLE_TASK['vars']['rollout_readiness_gate']


def test_the_pods_read_the_configmap_through_env_and_envfrom():
    container = workloads.pod_template(False, True, reloader.env_consumer)['spec']['containers'][0]
    assert container['envFrom'] == [{'configMapRef': {'name': reloader.CONFIGMAP}}]
    assert container['env'][0]['valueFrom']['configMapKeyRef'] == {'name': reloader.CONFIGMAP, 'key': reloader.KEY}
    assert 'env' not in workloads.pod_template(False, True)['spec']['containers'][0]
    assert reloader.configmap('two')['data'][reloader.KEY] == 'two'


def test_the_native_side_sends_what_kubectl_rollout_restart_sends():
    now = datetime.datetime(2026, 1, 31, 12, 0, 5, 123, tzinfo=datetime.timezone.utc)
    assert reloader.restart_patch(now) == {'spec': {'template': {'metadata': {'annotations': {
        'kubectl.kubernetes.io/restartedAt': '2026-01-31T12:00:05Z'}}}}}


def test_a_pod_runs_the_new_config_when_it_is_new_or_its_app_container_restarted():
    before = {'a': 0, 'b': 1, 'c': 0}
    assert reloader.new_config_pods(before, {'a': 1, 'b': 2, 'c': 0}) == 2      # c did not restart
    assert reloader.new_config_pods(before, {'x': 0, 'y': 0, 'z': 0}) == 3      # all recreated
    assert reloader.new_config_pods(before, {}) == 0


def row(scenario, wall, recreated=0, failed=0, pods=100):
    return {'pods': pods, 'scenario': scenario, 'wall': wall, 'recreated': recreated,
            'traffic': {'failed': failed, 'sent': 1000}}


def judge(rows):
    return reloader.targets(rows, run.by_name, run.verdict)


def test_the_target_is_half_the_native_wall_no_pod_recreated_no_failed_request():
    (name, outcome), = judge([row(reloader.ROLE, 10), row(reloader.NATIVE, 20, recreated=100, failed=40)]).items()
    assert name.startswith('N=100 ') and outcome['status'] == 'PASS'
    assert outcome['value'].startswith('0.5x: 10 s vs 20 s; recreated 0 vs 100; failed requests 0 of 1000 vs 40 of')
    assert judge([row(reloader.ROLE, 11), row(reloader.NATIVE, 20)]).popitem()[1]['status'] == 'MISS'
    assert judge([row(reloader.ROLE, 10, failed=1), row(reloader.NATIVE, 20)]).popitem()[1]['status'] == 'MISS'
    assert judge([row(reloader.ROLE, 10, recreated=1), row(reloader.NATIVE, 20)]).popitem()[1]['status'] == 'MISS'
    assert judge([row(reloader.ROLE, 10)]).popitem()[1]['status'] == 'n/a'
    assert judge([row(reloader.NATIVE, 10)]) == {}


def test_the_undrained_role_is_told_beside_and_each_size_is_judged():
    rows = [row(reloader.ROLE, 10), row(reloader.NATIVE, 20), row(reloader.UNDRAINED, 5, failed=7),
            row(reloader.ROLE, 30, pods=300), row(reloader.NATIVE, 40, pods=300)]
    found = judge(rows)
    assert [name.split()[0] for name in found] == ['N=100', 'N=300']
    first, second = found.values()
    assert first['value'].endswith('; without the drain 5 s (0.25x), failed 7 of 1000')
    assert second['status'] == 'MISS' and second['value'].startswith('0.75x')


def test_the_config_rows_have_a_table_of_their_own_and_stay_out_of_the_image_targets():
    rows = [dict(row(reloader.ROLE, 10), cluster_requests={'GET pods': 5}),
            dict(row(reloader.NATIVE, 20), cluster_requests={'GET pods': 9})]
    found = run.targets(rows)
    assert list(found) == [n for n in found if 'config restart' in n]
    text = run.report(rows, found)
    assert '| 100 | role config 25% | 10 |' in text and '| 100 | native rollout restart 25%/0 | 20 |' in text
