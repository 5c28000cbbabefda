# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils import conftest


def pod(name, node=None, **labels):
    """conftest.pod with the labels given as keywords."""
    return conftest.pod(name, labels=labels, node=node)


@pytest.mark.parametrize('value, total, round_up, expected', [
    (None, 10, True, None), ('', 10, True, None), (3, 10, True, 3), ('3', 10, True, 3),
    ('25%', 10, True, 3), ('25%', 10, False, 2), ('1%', 10, True, 1), ('0%', 10, True, 0),
    ('100%', 7, True, 7), ('50 %', 3, True, 2),
])
def test_resolve_count(value, total, round_up, expected):
    assert batching.resolve_count(value, total, round_up=round_up) == expected


@pytest.mark.parametrize('value', ['x', '-1', True, '10%%'])
def test_resolve_count_rejects(value):
    with pytest.raises(ValidationError):
        batching.resolve_count(value, 10)


def test_ordinal_from_label_or_name():
    assert batching.ordinal(pod('db-7', **{'apps.kubernetes.io/pod-index': '3'})) == 3
    assert batching.ordinal(pod('db-12')) == 12
    assert batching.ordinal(pod('web-5db858d46f-xn4cc')) is None


def test_a_generated_name_that_ends_in_digits_is_no_ordinal():
    """A Deployment's pod web-64b57b4bcd-54895 (a random suffix, all digits by chance) was ordered first, as
    ordinal 54895: the canary was not the first pod by name (seen on the local cluster)."""
    for kind in ('ReplicaSet', 'DaemonSet'):
        generated = pod('web-64b57b4bcd-54895')
        generated['metadata']['ownerReferences'] = [{'kind': kind, 'name': 'web-64b57b4bcd', 'controller': True}]
        assert batching.ordinal(generated) is None
    owned = pod('db-12')
    owned['metadata']['ownerReferences'] = [{'kind': 'StatefulSet', 'name': 'db', 'controller': True}]
    assert batching.ordinal(owned) == 12


def names(pods):
    return [p['metadata']['name'] for p in pods]


def test_orders():
    pods = [pod('db-10', 'node-a', tier='2'), pod('db-2', 'node-b', tier='10'), pod('db-1', 'node-b'),
            pod('other', 'node-a', tier='1')]
    assert names(batching.order_pods(pods, 'ordinal')) == ['db-1', 'db-2', 'db-10', 'other']
    assert names(batching.order_pods(pods, 'reverse_ordinal')) == ['db-10', 'db-2', 'db-1', 'other']
    assert names(batching.order_pods(pods, 'node')) == ['db-10', 'other', 'db-1', 'db-2']
    assert names(batching.order_pods(pods, 'label', 'tier')) == ['other', 'db-10', 'db-2', 'db-1']
    assert names(batching.order_pods(pods, 'name')) == ['db-1', 'db-10', 'db-2', 'other']


def test_order_errors():
    with pytest.raises(ValidationError):
        batching.order_pods([], 'random')
    with pytest.raises(ValidationError):
        batching.order_pods([], 'label')


@pytest.mark.parametrize('total, size, max_unavailable, allowed, expected', [
    (10, '25%', None, None, 3), (10, 4, '2', None, 2), (10, 4, '10%', None, 1), (10, 4, None, 1, 1),
    (10, 4, None, 0, 1), (3, '100%', '50%', 5, 1), (5, 0, None, None, 1),
])
def test_batch_size(total, size, max_unavailable, allowed, expected):
    assert batching.batch_size(total, size, max_unavailable, allowed) == expected


ORDERED = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5']


def test_plan_batches_plain():
    assert batching.plan_batches(ORDERED, ORDERED, 4) == {'batches': [ORDERED[:4], ORDERED[4:]], 'kept': []}


def test_plan_batches_canary_and_partition():
    result = batching.plan_batches(ORDERED, ORDERED, 2, canary=1, partition=2)
    assert result == {'batches': [['p0'], ['p1', 'p2'], ['p3']], 'kept': ['p4', 'p5']}


def test_plan_batches_resume_skips_done_pods_and_canary():
    result = batching.plan_batches(ORDERED, ['p3', 'p4', 'p5'], 2, canary=1, done=3)
    assert result['batches'] == [['p3', 'p4'], ['p5']]


def test_plan_batches_nothing_to_do():
    assert batching.plan_batches(ORDERED, [], 2, canary='50%') == {'batches': [], 'kept': []}


def test_a_percentage_over_100_is_refused():
    with pytest.raises(ValidationError) as err:
        batching.resolve_count('150%', 4, 'batch_size')
    assert 'batch_size must be at most 100%' in str(err.value)


# The one grammar of a count: what the role's preflight accepts is exactly what the module's loop resolves.
@pytest.mark.parametrize('value, expected', [
    (None, None), ('', None), ('   ', None), (0, (0, False)), (7, (7, False)), ('7', (7, False)),
    (' 7 ', (7, False)), ('25%', (25.0, True)), ('12.5 %', (12.5, True)), (' 0% ', (0.0, True)),
    ('100%', (100.0, True)),
])
def test_parse_count_accepts(value, expected):
    assert batching.parse_count(value, 'canary') == expected


@pytest.mark.parametrize('value, message', [
    ('+3', 'canary must be a number or a percentage'), ('3.5', 'canary must be a number or a percentage'),
    ('1_000', 'canary must be a number or a percentage'), ('10%%', 'canary must be a number or a percentage'),
    ('%', 'canary must be a number or a percentage'), ('two', 'canary must be a number or a percentage'),
    (True, 'canary must be a number or a percentage'), (3.0, 'canary must be a number or a percentage'),
    ('-1', 'canary must not be negative (-1)'), (-2, 'canary must not be negative (-2)'),
    ('100.5%', 'canary must be at most 100%, not 100.5%'),
])
def test_parse_count_refuses_naming_the_option(value, message):
    with pytest.raises(ValidationError) as err:
        batching.parse_count(value, 'canary')
    assert message in str(err.value)


@pytest.mark.parametrize('value', ['', ' ', '3', ' 3 ', '25%', '12.5 %', '100%', '+3', '3.5', '1_000', '-1', '101%',
                                   'x', '%', 0, 4])
def test_the_preflight_and_the_module_agree_on_every_count(value):
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout.inputs import input_errors
    try:
        batching.resolve_count(value, 10, 'canary')
        module_ok = True
    except ValidationError:
        module_ok = False
    role = {'action': 'apply', 'target': {'kind': 'Deployment', 'name': 'web', 'namespace': 'shop'},
            'images': {'app': 'web:2'}, 'canary': value}
    assert (input_errors(role) == []) == module_ok, value
